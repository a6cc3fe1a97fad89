//! Helpers shared by the conformance topics: run a statement or script and panic with the SQL
//! on failure, create tables from logical column types, and compare rows.

use chrono::{NaiveDate, NaiveDateTime};
use sql_middleware::prelude::*;

use crate::common::backends::{Kind, Logical, TestDb};

pub type Conn = MiddlewarePoolConnection;

pub async fn batch(conn: &mut Conn, sql: &str) {
    conn.execute_batch(sql)
        .await
        .unwrap_or_else(|e| panic!("execute_batch({sql}) failed: {e:?}"));
}

pub async fn dml(conn: &mut Conn, sql: &str, params: &[RowValues]) -> u64 {
    conn.query(sql)
        .params(params)
        .dml()
        .await
        .unwrap_or_else(|e| panic!("dml({sql}) failed: {e:?}"))
}

pub async fn select(conn: &mut Conn, sql: &str, params: &[RowValues]) -> ResultSet {
    conn.query(sql)
        .params(params)
        .select()
        .await
        .unwrap_or_else(|e| panic!("select({sql}) failed: {e:?}"))
}

pub async fn count(conn: &mut Conn, table: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table}");
    let (n,): (i64,) = conn
        .query(&sql)
        .one()
        .await
        .unwrap_or_else(|e| panic!("{sql} failed: {e:?}"));
    n
}

/// `CREATE TABLE name (id <int> PRIMARY KEY, col <type>, ...)`.
pub async fn create_table(db: &TestDb, conn: &mut Conn, name: &str, cols: &[(&str, Logical)]) {
    let cols: Vec<String> = cols
        .iter()
        .map(|(n, l)| format!("{n} {}", db.ty(*l)))
        .collect();
    batch(
        conn,
        &format!(
            "CREATE TABLE {name} (id {} PRIMARY KEY, {})",
            db.ty(Logical::Int),
            cols.join(", ")
        ),
    )
    .await;
}

pub fn insert_sql(table: &str, cols: &[(&str, Logical)]) -> String {
    let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
    let ph: Vec<String> = (2..=cols.len() + 1).map(|i| format!("${i}")).collect();
    format!(
        "INSERT INTO {table} (id, {}) VALUES ($1, {})",
        names.join(", "),
        ph.join(", ")
    )
}

pub fn select_sql(table: &str, cols: &[(&str, Logical)]) -> String {
    let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
    format!("SELECT id, {} FROM {table} WHERE id = $1", names.join(", "))
}

pub fn ts(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, nano: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(y, mo, d)
        .unwrap()
        .and_hms_nano_opt(h, mi, s, nano)
        .unwrap()
}

pub fn date(y: i32, mo: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, mo, d).unwrap()
}

/// Compares every named column of `row` with `expected`, reporting all differences at once.
#[track_caller]
pub fn assert_row(db: &TestDb, what: &str, row: &CustomDbRow, expected: &[(&str, RowValues)]) {
    let mut bad = Vec::new();
    for (name, want) in expected {
        match row.get(name) {
            Some(got) if got == want => {}
            got => bad.push(format!("  column {name}: got {got:?}, expected {want:?}")),
        }
    }
    assert!(
        bad.is_empty(),
        "[{}] {what}: {} column(s) differ:\n{}",
        db.kind.name(),
        bad.len(),
        bad.join("\n")
    );
}

/// Waits (up to 5 s) until `f` holds for the pool's status; returns the last status.
pub async fn status_until(
    db: &ConfigAndPool,
    f: impl Fn(&sql_middleware::PoolStatus) -> bool,
) -> sql_middleware::PoolStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let st = db.status();
        if f(&st) || std::time::Instant::now() > deadline {
            return st;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// What a value bound on `db` reads back as from a column of its logical type: the value itself
/// on SQLite, Postgres and Turso; on MySQL the kinds its columns hold (the documented
/// differences): `BOOLEAN` is `TINYINT(1)`, so a `Bool` reads back as `Int` 0/1; `DATETIME`
/// has no zone, so a `TimestampTz` reads back as the UTC `Timestamp`; a UUID in `CHAR(36)` is
/// its text; `JSON` is text on MariaDB (a `LONGTEXT` alias); `TIME` reads back as `Time` when
/// it lies within a day, so an `Interval` of no months, no days and under 24 hours does too.
pub async fn read_back(db: &TestDb, v: &RowValues) -> RowValues {
    if db.kind != Kind::Mysql {
        return v.clone();
    }
    let mariadb = db.is_mariadb().await;
    match v {
        RowValues::Bool(b) => RowValues::Int(i64::from(*b)),
        RowValues::TimestampTz(t) => RowValues::Timestamp(t.naive_utc()),
        RowValues::Uuid(u) => RowValues::Text(u.hyphenated().to_string()),
        RowValues::JSON(j) if mariadb => RowValues::Text(j.to_string()),
        RowValues::Interval(i)
            if i.months == 0 && i.days == 0 && (0..86_400_000_000).contains(&i.microseconds) =>
        {
            let secs = (i.microseconds / 1_000_000) as u32;
            let micros = (i.microseconds % 1_000_000) as u32;
            RowValues::Time(
                chrono::NaiveTime::from_num_seconds_from_midnight_opt(secs, micros * 1_000)
                    .expect("within a day"),
            )
        }
        other => other.clone(),
    }
}

/// [`read_back`] for every value of a row.
pub async fn read_back_row(db: &TestDb, row: &[RowValues]) -> Vec<RowValues> {
    let mut out = Vec::with_capacity(row.len());
    for v in row {
        out.push(read_back(db, v).await);
    }
    out
}

/// MySQL stops a recursive CTE after 1000 rounds (MariaDB's `max_recursive_iterations` stops
/// it silently, MySQL's `cte_max_recursion_depth` with an error): the session allows more.
/// (The setting is the session's: the pool's reset undoes it when the connection goes back.)
pub async fn allow_deep_recursion(db: &TestDb, conn: &mut Conn) {
    if db.kind != Kind::Mysql {
        return;
    }
    let set = if db.is_mariadb().await {
        "SET SESSION max_recursive_iterations = 100000000"
    } else {
        "SET SESSION cte_max_recursion_depth = 100000000"
    };
    batch(conn, set).await;
}
