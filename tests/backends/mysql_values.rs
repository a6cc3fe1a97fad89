//! MySQL/MariaDB: a value is never silently changed, whatever the session.
//!
//! - A value that does not fit its column (too long, out of range, a character the column's
//!   character set lacks, more decimal places than the column keeps) is refused with a typed
//!   error, never stored changed: on the server's strict default, on a pool whose
//!   `after_connect` hook turns strict mode off, after a borrower turns it off, and with
//!   `INSERT IGNORE`. A refused write inside a `Tx` leaves nothing behind; one refused by the
//!   server before it wrote leaves nothing either.
//! - A borrower's `SET NAMES`, `SET time_zone` or `SET sql_mode` never makes the crate store
//!   another value than the one bound: an independent connection (UTC, utf8mb4) reads back the
//!   value bound, or the write was refused.
//!
//! Prints `mysql_narrow_values cases=N refused=R changed=C` and
//! `mysql_session_values cases=N exact=E refused=R changed=C`.
#![cfg(feature = "mysql")]

use std::str::FromStr;

use chrono::{DateTime, NaiveDate, Utc};
use mysql_async::prelude::Queryable;
use rust_decimal::Decimal;
use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::mysql;

const TABLES: &str = "
CREATE TABLE n_dec (id INT PRIMARY KEY, v DECIMAL(5,2));
CREATE TABLE n_var (id INT PRIMARY KEY, v VARCHAR(3));
CREATE TABLE n_mb3 (id INT PRIMARY KEY, v VARCHAR(10) CHARACTER SET utf8mb3);
CREATE TABLE n_lat (id INT PRIMARY KEY, v VARCHAR(10) CHARACTER SET latin1);
CREATE TABLE n_int (id INT PRIMARY KEY, v INT);
CREATE TABLE n_tiny (id INT PRIMARY KEY, v TINYINT UNSIGNED);
CREATE TABLE n_ts (id INT PRIMARY KEY, v TIMESTAMP(6) NULL);
CREATE TABLE n_date (id INT PRIMARY KEY, v DATE);
CREATE TABLE n_flt (id INT PRIMARY KEY, v DECIMAL(6,3));
CREATE TABLE n_txtnum (id INT PRIMARY KEY, v INT);
CREATE TABLE n_my (id INT PRIMARY KEY, v VARCHAR(3)) ENGINE = Aria;
";

/// A value that does not fit its table's column.
fn narrow_cases() -> Vec<(&'static str, RowValues)> {
    vec![
        (
            "n_dec",
            RowValues::Numeric(Decimal::from_str("1.235").expect("decimal")),
        ),
        (
            "n_dec",
            RowValues::Numeric(Decimal::from_str("1234.5").expect("decimal")),
        ),
        ("n_var", RowValues::Text("abcd".into())),
        ("n_mb3", RowValues::Text("😀".into())),
        ("n_lat", RowValues::Text("ĉ".into())),
        ("n_int", RowValues::Int(2_147_483_648)),
        ("n_tiny", RowValues::Int(-1)),
        (
            "n_ts",
            RowValues::Timestamp(
                NaiveDate::from_ymd_opt(2040, 1, 1)
                    .expect("date")
                    .and_hms_opt(0, 0, 0)
                    .expect("time"),
            ),
        ),
        ("n_date", RowValues::Text("2024-02-30".into())),
        ("n_flt", RowValues::Float(0.0005)),
        ("n_txtnum", RowValues::Text("12abc".into())),
        ("n_my", RowValues::Text("wxyz".into())),
    ]
}

/// How a case's session is set up.
#[derive(Debug, Clone, Copy)]
enum Session {
    /// The server's own default (strict on MariaDB 10.11).
    Default,
    /// The pool's `after_connect` hook turns strict mode off.
    HookNotStrict,
    /// The borrower turns strict mode off before writing.
    BorrowerNotStrict,
}

async fn pool_for(url: &str, s: Session) -> ConfigAndPool {
    let b = ConfigAndPool::mysql(url).max_size(1);
    let b = match s {
        Session::HookNotStrict => b.after_connect(|c| {
            Box::pin(async move { c.execute_batch("SET SESSION sql_mode = ''").await })
        }),
        _ => b,
    };
    b.build().await.expect("pool")
}

/// What a write that should be refused did: `Ok(n)` is a failure of the property.
async fn write(
    conn: &mut MiddlewarePoolConnection,
    sql: &str,
    id: i64,
    v: &RowValues,
    in_tx: bool,
) -> Result<u64, SqlMiddlewareDbError> {
    let params = [RowValues::Int(id), v.clone()];
    if in_tx {
        let mut tx = conn.begin().await?;
        let r = tx.query(sql).params(&params).dml().await;
        match r {
            Ok(n) => tx.commit().await.map(|()| n),
            Err(e) => {
                let _ = tx.rollback().await;
                Err(e)
            }
        }
    } else {
        conn.query(sql).params(&params).dml().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_that_do_not_fit_are_refused_in_every_session() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let setup = pool_for(&url, Session::Default).await;
        setup
            .get_connection()
            .await
            .expect("checkout")
            .execute_batch(TABLES)
            .await
            .expect("tables");
        let mut failures = Vec::new();
        let (mut cases, mut refused) = (0, 0);
        let mut id = 0i64;
        for session in [
            Session::Default,
            Session::HookNotStrict,
            Session::BorrowerNotStrict,
        ] {
            let db = pool_for(&url, session).await;
            for (table, v) in narrow_cases() {
                for ignore in [false, true] {
                    for in_tx in [false, true] {
                        id += 1;
                        cases += 1;
                        let mut conn = db.get_connection().await.expect("checkout");
                        if matches!(session, Session::BorrowerNotStrict) {
                            conn.execute_batch("SET SESSION sql_mode = ''")
                                .await
                                .expect("set");
                        }
                        let verb = if ignore { "INSERT IGNORE" } else { "INSERT" };
                        let sql = format!("{verb} INTO {table} (id, v) VALUES ($1, $2)");
                        let what = format!("{session:?} {sql} {v:?} in_tx={in_tx}");
                        match write(&mut conn, &sql, id, &v, in_tx).await {
                            Ok(n) => {
                                failures.push(format!("{what}: Ok({n}), the value was changed"))
                            }
                            Err(e) => {
                                refused += 1;
                                if !matches!(
                                    e.kind(),
                                    ErrorKind::ParameterType | ErrorKind::InvalidInput
                                ) {
                                    failures
                                        .push(format!("{what}: wrong kind {:?}: {e}", e.kind()));
                                }
                                // Nothing stays behind: inside a Tx it is rolled back, and a
                                // write the server refused before writing never took effect.
                                // (Outside a Tx, a value the server rounded with a note has
                                // taken effect before the note can be read: the error says
                                // so.)
                                let written: Option<(i64,)> = conn
                                    .query(&format!("SELECT id FROM {table} WHERE id = $1"))
                                    .params(&[RowValues::Int(id)])
                                    .optional()
                                    .await
                                    .expect("read");
                                let rounded_note = e.message().contains("took effect");
                                // An Aria (non-transactional) table keeps what a statement
                                // wrote even when its transaction rolls back: the error says
                                // so.
                                let kept = rounded_note
                                    || (table == "n_my"
                                        && e.message().contains("not transactional"));
                                if written.is_some() && ((in_tx && table != "n_my") || !kept) {
                                    failures.push(format!(
                                        "{what}: refused ({e}), yet the row was written"
                                    ));
                                }
                            }
                        }
                    }
                }
            }
        }
        println!(
            "mysql_narrow_values cases={cases} refused={refused} changed={}",
            failures.len()
        );
        assert!(
            failures.is_empty(),
            "{} case(s) failed:\n  {}",
            failures.len(),
            failures.join("\n  ")
        );
    })
    .await;
}

/// An independent connection that reads in UTC and utf8mb4.
async fn reader(url: &str) -> mysql_async::Conn {
    let mut c = mysql::raw_conn(url).await;
    c.query_drop("SET time_zone = '+00:00', NAMES utf8mb4")
        .await
        .expect("session");
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_borrowers_session_never_changes_what_is_stored() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let db = ConfigAndPool::mysql(&url)
            .max_size(1)
            .build()
            .await
            .expect("pool");
        let mut setup = db.get_connection().await.expect("checkout");
        setup
            .execute_batch(
                "CREATE TABLE s_txt (id INT PRIMARY KEY, v VARCHAR(40) CHARACTER SET utf8mb4);
                 CREATE TABLE s_ts (id INT PRIMARY KEY, v TIMESTAMP(6) NULL);
                 CREATE TABLE s_int (id INT PRIMARY KEY, v TINYINT)",
            )
            .await
            .expect("tables");
        drop(setup);
        let instant: DateTime<Utc> =
            DateTime::from_timestamp(1_700_000_000, 123_456_000).expect("instant");
        let cases: Vec<(&str, &str, RowValues)> = vec![
            ("SET NAMES latin1", "s_txt", RowValues::Text("é ü ß".into())),
            ("SET NAMES latin1", "s_txt", RowValues::Text("😀".into())),
            (
                "SET character_set_client = latin1",
                "s_txt",
                RowValues::Text("naïve".into()),
            ),
            (
                "SET time_zone = '+05:00'",
                "s_ts",
                RowValues::TimestampTz(instant),
            ),
            (
                "SET time_zone = '-08:00'",
                "s_ts",
                RowValues::TimestampTz(instant),
            ),
            ("SET sql_mode = ''", "s_int", RowValues::Int(1000)),
            ("SET sql_mode = 'ANSI'", "s_int", RowValues::Int(-1000)),
        ];
        let mut raw = reader(&url).await;
        let mut failures = Vec::new();
        let (mut n, mut exact, mut refused) = (0, 0, 0);
        let mut id = 0i64;
        for (set, table, v) in &cases {
            for prepared in [false, true] {
                id += 1;
                n += 1;
                let mut conn = db.get_connection().await.expect("checkout");
                let what = format!("{set}; {table} <- {v:?} (prepared={prepared})");
                if let Err(e) = conn.query(set).dml().await {
                    // The crate may refuse the setting itself; then nothing changed.
                    refused += 1;
                    if !matches!(
                        e.kind(),
                        ErrorKind::TransactionState
                            | ErrorKind::InvalidInput
                            | ErrorKind::Unsupported
                    ) {
                        failures.push(format!("{what}: the SET failed with {:?}: {e}", e.kind()));
                    }
                    continue;
                }
                let sql = format!("INSERT INTO {table} (id, v) VALUES ($1, $2)");
                let params = [RowValues::Int(id), v.clone()];
                let r = if prepared {
                    match conn.prepare(&sql).await {
                        Ok(mut s) => s.dml(&params).await,
                        Err(e) => Err(e),
                    }
                } else {
                    conn.query(&sql).params(&params).dml().await
                };
                drop(conn);
                let stored: Option<mysql_async::Row> = raw
                    .exec_first(format!("SELECT v FROM {table} WHERE id = ?"), (id,))
                    .await
                    .expect("read");
                match r {
                    Err(e) => {
                        refused += 1;
                        if !matches!(e.kind(), ErrorKind::ParameterType | ErrorKind::InvalidInput) {
                            failures.push(format!("{what}: refused with kind {:?}: {e}", e.kind()));
                        }
                        if stored.is_some() {
                            failures.push(format!("{what}: refused, yet a row was written"));
                        }
                    }
                    Ok(_) => {
                        let Some(mut row) = stored else {
                            failures.push(format!("{what}: Ok, yet no row"));
                            continue;
                        };
                        let got: mysql_async::Value = row.take(0).expect("column");
                        let same = match (v, &got) {
                            (RowValues::Text(t), mysql_async::Value::Bytes(b)) => {
                                t.as_bytes() == b.as_slice()
                            }
                            (RowValues::Int(i), mysql_async::Value::Int(j)) => i == j,
                            (
                                RowValues::TimestampTz(t),
                                mysql_async::Value::Date(y, mo, d, h, mi, s, us),
                            ) => {
                                let n = t.naive_utc();
                                use chrono::{Datelike, Timelike};
                                (
                                    i32::from(*y),
                                    u32::from(*mo),
                                    u32::from(*d),
                                    u32::from(*h),
                                    u32::from(*mi),
                                    u32::from(*s),
                                    *us,
                                ) == (
                                    n.year(),
                                    n.month(),
                                    n.day(),
                                    n.hour(),
                                    n.minute(),
                                    n.second(),
                                    n.nanosecond() / 1000,
                                )
                            }
                            _ => false,
                        };
                        if same {
                            exact += 1;
                        } else {
                            failures.push(format!("{what}: Ok, but the server holds {got:?}"));
                        }
                    }
                }
            }
        }
        let _ = raw.disconnect().await;
        println!(
            "mysql_session_values cases={n} exact={exact} refused={refused} changed={}",
            failures.len()
        );
        assert!(
            failures.is_empty(),
            "{} case(s) failed:\n  {}",
            failures.len(),
            failures.join("\n  ")
        );
    })
    .await;
}
