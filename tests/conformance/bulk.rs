//! Bulk loading (`bulk_insert`): every `RowValues` kind round-trips, rows come from slices,
//! arrays or lazy iterators, and a load is all or nothing on every backend: a bad row (wrong
//! width, a constraint), a bad name, a rolled-back transaction or a dropped future leaves no row
//! behind and the connection usable.

use std::str::FromStr;

use chrono::{NaiveTime, TimeZone, Utc};
use rust_decimal::Decimal;
use serde_json::json;
use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;
use uuid::Uuid;

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb, expect_kind};
use crate::helpers::*;

const ALL_COLS: [(&str, Logical); 15] = [
    ("i", Logical::Int),
    ("f", Logical::Float),
    ("t", Logical::Text),
    ("b", Logical::Bool),
    ("bl", Logical::Blob),
    ("ts", Logical::Timestamp),
    ("tz", Logical::TimestampTz),
    ("d", Logical::Date),
    ("u", Logical::Uuid),
    ("n", Logical::Numeric),
    ("j", Logical::Json),
    ("tm", Logical::Time),
    ("iv", Logical::Interval),
    ("ia", Logical::IntArray),
    ("ta", Logical::TextArray),
];

fn every_kind_rows() -> Vec<Vec<RowValues>> {
    let full = vec![
        RowValues::Int(1),
        RowValues::Int(i64::MIN),
        RowValues::Float(-2.5e-10),
        RowValues::Text("héllo 🌍 'q' \"dq\" $1 ?1 -- x".into()),
        RowValues::Bool(true),
        RowValues::Blob((0..=255).collect()),
        RowValues::Timestamp(ts(2024, 2, 29, 23, 59, 58, 123_456_000)),
        RowValues::TimestampTz(
            Utc.with_ymd_and_hms(2023, 7, 14, 12, 34, 56).unwrap()
                + chrono::Duration::microseconds(654_321),
        ),
        RowValues::Date(chrono::NaiveDate::from_ymd_opt(1999, 12, 31).unwrap()),
        RowValues::Uuid(Uuid::parse_str("67e55044-10b1-426f-9247-bb680e5fe0c8").unwrap()),
        RowValues::Numeric(Decimal::from_str("12345.6789").unwrap()),
        RowValues::JSON(json!({"name": "Zoë", "tags": ["a", "b"], "n": 1})),
        RowValues::Time(NaiveTime::from_hms_micro_opt(23, 59, 59, 999_999).unwrap()),
        RowValues::Interval(sql_middleware::Interval {
            months: -14,
            days: 3,
            microseconds: 86_399_000_001,
        }),
        RowValues::Array(vec![RowValues::Int(i64::MAX), RowValues::Null]),
        RowValues::array(["", "with, comma", "quote \" and ✓"]),
    ];
    let second = vec![
        RowValues::Int(2),
        RowValues::Int(0),
        RowValues::Float(f64::MAX),
        RowValues::Text(String::new()),
        RowValues::Bool(false),
        RowValues::Blob(Vec::new()),
        RowValues::Timestamp(ts(1970, 1, 1, 0, 0, 0, 0)),
        RowValues::TimestampTz(Utc.with_ymd_and_hms(1970, 1, 1, 0, 0, 0).unwrap()),
        RowValues::Date(chrono::NaiveDate::from_ymd_opt(1, 1, 1).unwrap()),
        RowValues::Uuid(Uuid::nil()),
        RowValues::Numeric(Decimal::from_str("-0.01").unwrap()),
        RowValues::JSON(json!([])),
        RowValues::Time(NaiveTime::MIN),
        RowValues::Interval(sql_middleware::Interval::default()),
        RowValues::Array(vec![]),
        RowValues::Array(vec![RowValues::Null]),
    ];
    let mut nulls = vec![RowValues::Int(3)];
    nulls.extend(ALL_COLS.iter().map(|_| RowValues::Null));
    vec![full, second, nulls]
}

/// MySQL has no arrays (binding one is a `ParameterType` error, see `round_trips`) and its
/// `TIME` holds intervals of no months within ±838:59:59 only: it loads every other kind, and
/// intervals it can hold.
fn mysql_cols() -> Vec<(&'static str, Logical)> {
    ALL_COLS
        .iter()
        .copied()
        .filter(|(_, l)| !matches!(l, Logical::IntArray | Logical::TextArray))
        .collect()
}

fn mysql_rows() -> Vec<Vec<RowValues>> {
    let keep = ALL_COLS.len() + 1 - 2;
    let mut rows: Vec<Vec<RowValues>> = every_kind_rows()
        .into_iter()
        .map(|mut r| {
            r.truncate(keep);
            r
        })
        .collect();
    let iv = keep - 1;
    rows[0][iv] = RowValues::Interval(sql_middleware::Interval {
        months: 0,
        days: 0,
        microseconds: -1_500_000,
    });
    rows
}

fn names(cols: &[(&'static str, Logical)]) -> Vec<&'static str> {
    std::iter::once("id")
        .chain(cols.iter().map(|(n, _)| *n))
        .collect()
}

/// Every kind loads, and reads back as from any other insert (`read_back`: on MySQL as the
/// kinds its columns hold).
async fn t_round_trip_every_kind(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let (all_cols, rows) = match db.kind {
        Kind::Mysql => (mysql_cols(), mysql_rows()),
        Kind::Sqlite | Kind::Postgres | Kind::Turso => (ALL_COLS.to_vec(), every_kind_rows()),
    };
    // (MySQL's array columns are text, and stay NULL: binding an array is refused below.)
    create_table(db, &mut conn, "bk", &ALL_COLS).await;
    let cols = names(&all_cols);
    let n = conn.bulk_insert("bk", &cols, &rows).await.unwrap();
    assert_eq!(n, 3, "[{k}] rows loaded");
    let rs = select(&mut conn, "SELECT * FROM bk ORDER BY id", &[]).await;
    assert_eq!(rs.len(), 3, "[{k}]");
    for (i, r) in rows.iter().enumerate() {
        let expected: Vec<(&str, RowValues)> = cols
            .iter()
            .copied()
            .zip(read_back_row(db, r).await)
            .collect();
        assert_row(db, &format!("bulk row {i}"), &rs.results[i], &expected);
    }
    if db.kind == Kind::Mysql {
        // What MySQL cannot hold is refused by its kind, and loads nothing.
        let mut arrays = every_kind_rows()[1].clone();
        arrays[0] = RowValues::Int(4);
        let e = conn
            .bulk_insert("bk", &names(&ALL_COLS), &[arrays])
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ParameterType, "[{k}] arrays: {e}");
        let mut months = mysql_rows()[1].clone();
        months[0] = RowValues::Int(5);
        let iv = months.len() - 1;
        months[iv] = every_kind_rows()[0][ALL_COLS.len() - 2].clone();
        let e = conn.bulk_insert("bk", &cols, &[months]).await.unwrap_err();
        assert_eq!(
            e.kind(),
            ErrorKind::ParameterType,
            "[{k}] an interval with months: {e}"
        );
        assert_eq!(count(&mut conn, "bk").await, 3, "[{k}] nothing more loaded");
    }
}

async fn t_counts_from_slices_arrays_and_iterators(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "bc", &[("v", Logical::Text)]).await;
    // A lazy iterator of owned rows, more than one batch and one statement's worth.
    let lazy = (1..=2_345_i64).map(|i| vec![RowValues::Int(i), RowValues::Text(format!("v{i}"))]);
    assert_eq!(
        conn.bulk_insert("bc", &["id", "v"], lazy).await.unwrap(),
        2_345,
        "[{k}]"
    );
    // Fixed-size arrays by reference.
    let arrays = [
        [RowValues::Int(10_001), RowValues::Null],
        [RowValues::Int(10_002), "x".into()],
    ];
    assert_eq!(
        conn.bulk_insert("bc", &["id", "v"], &arrays).await.unwrap(),
        2,
        "[{k}]"
    );
    // Row slices.
    let a = [RowValues::Int(20_001), RowValues::from("s")];
    let slices: Vec<&[RowValues]> = vec![&a];
    assert_eq!(
        conn.bulk_insert("bc", &["id", "v"], slices).await.unwrap(),
        1,
        "[{k}]"
    );
    // Nothing to load: zero, and nothing changes.
    let empty: Vec<Vec<RowValues>> = Vec::new();
    assert_eq!(
        conn.bulk_insert("bc", &["id", "v"], &empty).await.unwrap(),
        0,
        "[{k}]"
    );
    assert_eq!(count(&mut conn, "bc").await, 2_348, "[{k}]");
    let (v,): (String,) = conn
        .query("SELECT v FROM bc WHERE id = $1")
        .params(&[RowValues::Int(1_234)])
        .one()
        .await
        .unwrap();
    assert_eq!(v, "v1234", "[{k}] values land in their own row and column");
    // Column order is the caller's, not the table's.
    let swapped = [[RowValues::from("w"), RowValues::Int(30_001)]];
    conn.bulk_insert("bc", &["v", "id"], &swapped)
        .await
        .unwrap();
    let (v,): (String,) = conn
        .query("SELECT v FROM bc WHERE id = 30001")
        .one()
        .await
        .unwrap();
    assert_eq!(v, "w", "[{k}]");
}

async fn t_wrong_width_loads_nothing(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "bw", &[("v", Logical::Int)]).await;
    let rows: Vec<Vec<RowValues>> = (1..=1_000_i64)
        .map(|i| {
            if i == 777 {
                vec![RowValues::Int(i)]
            } else {
                vec![RowValues::Int(i), RowValues::Int(i * 2)]
            }
        })
        .collect();
    let e = expect_kind(
        &format!("[{k}] row 777 has one value"),
        conn.bulk_insert("bw", &["id", "v"], &rows).await,
        ErrorKind::ParameterCount,
    );
    assert!(e.message().contains("row 777"), "[{k}] {e}");
    assert_eq!(count(&mut conn, "bw").await, 0, "[{k}] nothing loaded");
    // The connection goes on, and a good load works.
    let good = &rows[..776];
    assert_eq!(
        conn.bulk_insert("bw", &["id", "v"], good).await.unwrap(),
        776
    );
    assert_eq!(count(&mut conn, "bw").await, 776, "[{k}]");
}

async fn t_bad_identifiers_are_refused(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "bi", &[("v", Logical::Int)]).await;
    let row = [[RowValues::Int(1), RowValues::Int(2)]];
    for (table, cols) in [
        ("bi; DROP TABLE bi", ["id", "v"]),
        ("bi --", ["id", "v"]),
        ("\"bi", ["id", "v"]),
        ("", ["id", "v"]),
        ("a.b.bi", ["id", "v"]),
        ("bi", ["id", "v) VALUES (1, 1); DROP TABLE bi; --"]),
        ("bi", ["id", "v\0"]),
    ] {
        expect_kind(
            &format!("[{k}] table {table:?}, columns {cols:?}"),
            conn.bulk_insert(table, &cols, &row).await,
            ErrorKind::InvalidInput,
        );
    }
    expect_kind(
        &format!("[{k}] no columns"),
        conn.bulk_insert("bi", &[], &row).await,
        ErrorKind::InvalidInput,
    );
    // A refused name never reached the engine: inside a transaction it aborts nothing.
    let mut tx = conn.begin().await.unwrap();
    expect_kind(
        &format!("[{k}] in a Tx"),
        tx.bulk_insert("bi;", &["id", "v"], &row).await,
        ErrorKind::InvalidInput,
    );
    tx.bulk_insert("bi", &["id", "v"], &row).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(count(&mut conn, "bi").await, 1, "[{k}] the table is intact");
    // A missing table is the engine's error, and the connection goes on.
    let e = conn
        .bulk_insert("no_such_table", &["id"], &[[RowValues::Int(1)]])
        .await
        .unwrap_err();
    if matches!(db.kind, Kind::Postgres | Kind::Mysql) {
        assert_eq!(e.kind(), ErrorKind::UndefinedObject, "[{k}] {e}");
    }
    assert_eq!(count(&mut conn, "bi").await, 1, "[{k}]");
}

/// Quoted names pass through as written: a bulk load takes them in double quotes on every
/// backend, and writes them as the engine quotes (MySQL: backticks, as its own DDL here).
async fn t_quoted_names_work(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let (table, column) = (db.sql().quote("Bulk \"Mixed\""), db.sql().quote("Select"));
    batch(
        &mut conn,
        &format!(
            "CREATE TABLE {table} (id {} PRIMARY KEY, {column} {})",
            db.ty(Logical::Int),
            db.ty(Logical::Text)
        ),
    )
    .await;
    let rows = [
        [RowValues::Int(1), "a".into()],
        [RowValues::Int(2), "b".into()],
    ];
    let n = conn
        .bulk_insert("\"Bulk \"\"Mixed\"\"\"", &["ID", "\"Select\""], &rows)
        .await
        .unwrap();
    assert_eq!(n, 2, "[{k}]");
    assert_eq!(count(&mut conn, &table).await, 2, "[{k}]");
}

async fn t_constraint_violation_loads_nothing(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "bv", &[("v", Logical::Int)]).await;
    // Row 700 repeats id 1.
    let rows: Vec<Vec<RowValues>> = (1..=1_000_i64)
        .map(|i| {
            vec![
                RowValues::Int(if i == 700 { 1 } else { i }),
                RowValues::Int(i),
            ]
        })
        .collect();
    expect_kind(
        &format!("[{k}] duplicate key"),
        conn.bulk_insert("bv", &["id", "v"], &rows).await,
        ErrorKind::UniqueViolation,
    );
    assert_eq!(count(&mut conn, "bv").await, 0, "[{k}] nothing loaded");
    // The connection is usable, and not inside any transaction.
    let tx = conn.begin().await.expect("begin after a failed load");
    tx.rollback().await.unwrap();
    assert_eq!(
        dml(&mut conn, "INSERT INTO bv (id, v) VALUES (1, 1)", &[]).await,
        1
    );
    // A value the column cannot take is a typed error too, and loads nothing.
    let bad = [
        [RowValues::Int(2), RowValues::Int(2)],
        [RowValues::Int(3), RowValues::Float(f64::NAN)],
    ];
    let e = conn
        .bulk_insert("bv", &["id", "v"], &bad)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ParameterType, "[{k}] {e}");
    assert_eq!(
        count(&mut conn, "bv").await,
        1,
        "[{k}] only the row inserted by hand"
    );
}

async fn t_inside_a_transaction(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "bt", &[("v", Logical::Int)]).await;
    let rows: Vec<Vec<RowValues>> = (1..=500_i64)
        .map(|i| vec![RowValues::Int(i), RowValues::Int(i)])
        .collect();

    // Rolled back: nothing.
    let mut tx = conn.begin().await.unwrap();
    assert_eq!(
        tx.bulk_insert("bt", &["id", "v"], &rows).await.unwrap(),
        500
    );
    let (n,): (i64,) = tx.query("SELECT count(*) FROM bt").one().await.unwrap();
    assert_eq!(n, 500, "[{k}] visible inside the transaction");
    tx.rollback().await.unwrap();
    assert_eq!(count(&mut conn, "bt").await, 0, "[{k}] rolled back");

    // Dropped: nothing.
    {
        let mut tx = conn.begin().await.unwrap();
        tx.bulk_insert("bt", &["id", "v"], &rows).await.unwrap();
    }
    assert_eq!(count(&mut conn, "bt").await, 0, "[{k}] dropped Tx");

    // Committed, with other work around it.
    let mut tx = conn.begin().await.unwrap();
    tx.query("INSERT INTO bt (id, v) VALUES (0, 0)")
        .dml()
        .await
        .unwrap();
    tx.bulk_insert("bt", &["id", "v"], &rows).await.unwrap();
    tx.commit().await.unwrap();
    assert_eq!(count(&mut conn, "bt").await, 501, "[{k}] committed");

    // A failed load aborts the transaction: commit rolls everything back.
    let more: Vec<Vec<RowValues>> = (1_000..=1_100_i64)
        .map(|i| vec![RowValues::Int(i), RowValues::Int(i)])
        .chain(std::iter::once(vec![RowValues::Int(1), RowValues::Int(1)]))
        .collect();
    let mut tx = conn.begin().await.unwrap();
    tx.query("INSERT INTO bt (id, v) VALUES (-1, -1)")
        .dml()
        .await
        .unwrap();
    expect_kind(
        &format!("[{k}] duplicate inside the Tx"),
        tx.bulk_insert("bt", &["id", "v"], &more).await,
        ErrorKind::UniqueViolation,
    );
    expect_kind(
        &format!("[{k}] commit after a failed load"),
        tx.commit().await,
        ErrorKind::TransactionAborted,
    );
    assert_eq!(
        count(&mut conn, "bt").await,
        501,
        "[{k}] nothing of the failed Tx"
    );

    // In a savepoint: its rollback undoes the load only, and the transaction goes on.
    let mut tx = conn.begin().await.unwrap();
    {
        let mut sp = tx.savepoint().await.unwrap();
        let r = sp.bulk_insert("bt", &["id", "v"], &more).await;
        assert!(r.is_err(), "[{k}] duplicate in the savepoint");
        sp.rollback().await.unwrap();
    }
    tx.bulk_insert("bt", &["id", "v"], &more[..101])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        count(&mut conn, "bt").await,
        602,
        "[{k}] savepoint recovered"
    );
}

async fn load_through(db: &mut impl Executor, rows: &[Vec<RowValues>]) -> u64 {
    db.bulk_insert("be", &["id", "v"], rows).await.unwrap()
}

async fn t_through_executor(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "be", &[("v", Logical::Int)]).await;
    let rows: Vec<Vec<RowValues>> = (1..=10_i64)
        .map(|i| vec![RowValues::Int(i), RowValues::Int(i)])
        .collect();
    assert_eq!(load_through(&mut conn, &rows[..5]).await, 5);
    let mut tx = conn.begin().await.unwrap();
    assert_eq!(load_through(&mut tx, &rows[5..]).await, 5);
    tx.commit().await.unwrap();
    assert_eq!(count(&mut conn, "be").await, 10, "[{k}]");
}

/// A load whose future is dropped part-way leaves nothing behind, on the connection (its next
/// operation) and in the pool (the next checkout).
/// Whether the held connection was lost by a cancelled call (any other failure fails the test).
async fn lost(conn: &mut MiddlewarePoolConnection) -> bool {
    match conn.query("SELECT 1").select().await {
        Ok(_) => false,
        Err(e) if e.kind() == ErrorKind::ConnectionLost => true,
        Err(e) => panic!("unexpected error after a dropped load: {e}"),
    }
}

async fn t_dropped_load_leaves_nothing(db: &TestDb) {
    let k = db.kind.name();
    let pool = db.builder().max_size(1).build().await.unwrap();
    let mut conn = pool.get_connection().await.unwrap();
    create_table(db, &mut conn, "bd", &[("v", Logical::Text)]).await;
    let total = 300_000_i64;
    let rows = || (1..=total).map(|i| vec![RowValues::Int(i), RowValues::Text(format!("row {i}"))]);

    for return_to_pool in [false, true] {
        let finished = {
            let mut fut = Box::pin(conn.bulk_insert("bd", &["id", "v"], rows()));
            match futures::poll!(fut.as_mut()) {
                std::task::Poll::Ready(r) => Some(r.unwrap()),
                std::task::Poll::Pending => None,
            }
        };
        // A load dropped while it ran on the blocking pool (SQLite moves a batch there when it
        // overruns the inline budget) costs the held connection: it says so with a typed
        // error, and the pool replaces it.
        if return_to_pool || lost(&mut conn).await {
            drop(conn);
            conn = pool.get_connection().await.unwrap();
        }
        match finished {
            // The engine finished within one poll: the load is whole.
            Some(n) => {
                assert_eq!(n, total as u64, "[{k}]");
                batch(&mut conn, "DELETE FROM bd").await;
            }
            None => assert_eq!(
                count(&mut conn, "bd").await,
                0,
                "[{k}] a dropped load (returned to the pool: {return_to_pool}) leaves no row"
            ),
        }
        // Not inside a transaction, and loading works again.
        let tx = conn.begin().await.expect("begin");
        tx.rollback().await.unwrap();
        let few: Vec<Vec<RowValues>> = rows().take(10).collect();
        assert_eq!(
            conn.bulk_insert("bd", &["id", "v"], &few).await.unwrap(),
            10
        );
        batch(&mut conn, "DELETE FROM bd").await;
    }
}

backend_tests! {
    async fn round_trip_every_kind(db) { t_round_trip_every_kind(&db).await }
    async fn counts_from_slices_arrays_and_iterators(db) { t_counts_from_slices_arrays_and_iterators(&db).await }
    async fn wrong_width_loads_nothing(db) { t_wrong_width_loads_nothing(&db).await }
    async fn bad_identifiers_are_refused(db) { t_bad_identifiers_are_refused(&db).await }
    async fn quoted_names_work(db) { t_quoted_names_work(&db).await }
    async fn constraint_violation_loads_nothing(db) { t_constraint_violation_loads_nothing(&db).await }
    async fn inside_a_transaction(db) { t_inside_a_transaction(&db).await }
    async fn through_executor(db) { t_through_executor(&db).await }
    async fn dropped_load_leaves_nothing(db) { t_dropped_load_leaves_nothing(&db).await }
}
