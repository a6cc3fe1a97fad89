//! The user's own types, through the same code on every engine: a `ToValue` impl bound with
//! `params!` on every path that takes parameters (query builder, prepared statement, pipeline,
//! bulk load), a `FromValue` impl decoding it back, `Json<T>` both ways in a JSON and in a text
//! column, wide integers kept exact, and (feature `time`) the `time` crate's types.

use std::collections::BTreeMap;

use rust_decimal::Decimal;
use sql_middleware::prelude::*;
use sql_middleware::{DecodeError, ValueRef, params};

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb};

/// A user type stored as an integer column: cents.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cents(i64);

impl ToValue for Cents {
    fn to_value(&self) -> Result<RowValues, SqlMiddlewareDbError> {
        Ok(RowValues::Int(self.0))
    }
}

impl FromValue for Cents {
    fn from_value(v: ValueRef<'_>) -> Result<Self, DecodeError> {
        i64::from_value(v).map(Cents)
    }
}

/// A user type stored as text: a status that refuses to bind when it is `Unknown`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Status {
    Open,
    Closed,
    Unknown,
}

impl ToValue for Status {
    fn to_value(&self) -> Result<RowValues, SqlMiddlewareDbError> {
        match self {
            Status::Open => Ok("open".into()),
            Status::Closed => Ok("closed".into()),
            Status::Unknown => Err(SqlMiddlewareDbError::new(
                ErrorKind::ParameterType,
                "an unknown status cannot be stored",
            )),
        }
    }
}

impl FromValue for Status {
    fn from_value(v: ValueRef<'_>) -> Result<Self, DecodeError> {
        match String::from_value(v)?.as_str() {
            "open" => Ok(Status::Open),
            "closed" => Ok(Status::Closed),
            _ => Err(DecodeError::new("Status", "unknown text")),
        }
    }
}

type Doc = BTreeMap<String, Vec<(String, i64)>>;

fn doc(n: i64) -> Doc {
    BTreeMap::from([
        (
            "lines".to_owned(),
            vec![("a ✓".to_owned(), n), ("b".to_owned(), -n)],
        ),
        ("empty".to_owned(), vec![]),
    ])
}

async fn t_user_types_bind_on_every_path(db: &TestDb) {
    let k = db.kind.name();
    let mut c = db.conn().await;
    c.execute_batch(&format!(
        "CREATE TABLE orders (id {int} PRIMARY KEY, total {int}, status {text}, doc {json}, note {text})",
        int = db.ty(Logical::Int),
        text = db.ty(Logical::Text),
        json = db.ty(Logical::Json),
    ))
    .await
    .unwrap();
    let insert = "INSERT INTO orders (id, total, status, doc, note) VALUES ($1, $2, $3, $4, $5)";

    // The query builder.
    let n = c
        .query(insert)
        .params(
            &params![
                1_i64,
                Cents(150),
                Status::Open,
                Json(doc(1)),
                Json(&doc(10))
            ]
            .unwrap(),
        )
        .dml()
        .await
        .unwrap();
    assert_eq!(n, 1, "[{k}]");
    // A prepared statement, with an optional user value.
    let mut stmt = c.prepare(insert).await.unwrap();
    stmt.dml(
        &params![
            2_i64,
            Some(Cents(-7)),
            Status::Closed,
            Json(doc(2)),
            None::<Json<Doc>>
        ]
        .unwrap(),
    )
    .await
    .unwrap();
    drop(stmt);
    // A pipeline.
    let p3 = params![3_i64, Cents(3), Status::Open, Json(doc(3)), "plain"].unwrap();
    let p4 = params![4_i64, Cents(4), Status::Closed, Json(doc(4)), "plain"].unwrap();
    let sets: [&[RowValues]; 2] = [&p3, &p4];
    c.pipeline(insert, &sets).await.unwrap();
    // A bulk load, rows built from user values.
    let rows: Vec<[RowValues; 5]> = (5..8_i64)
        .map(|i| params![i, Cents(i * 100), Status::Open, Json(doc(i)), Json(vec![i])].unwrap())
        .collect();
    let loaded = c
        .bulk_insert("orders", &["id", "total", "status", "doc", "note"], &rows)
        .await
        .unwrap();
    assert_eq!(loaded, 3, "[{k}]");

    // Decoded back with the same code on every engine.
    let got: Vec<(i64, Option<Cents>, Status, Json<Doc>)> = c
        .query("SELECT id, total, status, doc FROM orders ORDER BY id")
        .all()
        .await
        .unwrap();
    assert_eq!(got.len(), 7, "[{k}]");
    for (id, total, status, Json(d)) in &got {
        assert_eq!(d, &doc(*id), "[{k}] doc of {id}");
        let want = match id {
            1 => Cents(150),
            2 => Cents(-7),
            3 | 4 => Cents(*id),
            _ => Cents(id * 100),
        };
        assert_eq!(*total, Some(want), "[{k}] total of {id}");
        assert_eq!(
            *status == Status::Open,
            [1, 3, 5, 6, 7].contains(id),
            "[{k}]"
        );
    }
    // Json in a text column, and NULL into Option<Json<_>>.
    let notes: Vec<(Option<Json<Doc>>,)> = c
        .query("SELECT note FROM orders WHERE id IN (1, 2) ORDER BY id")
        .all()
        .await
        .unwrap();
    assert_eq!(notes[0].0.as_ref().map(|j| &j.0), Some(&doc(10)), "[{k}]");
    assert!(notes[1].0.is_none(), "[{k}]");

    // A document of another shape, and a user value that refuses to bind: typed errors that
    // quote nothing, and the connection stays usable.
    let e = c
        .query("SELECT doc FROM orders WHERE id = 1")
        .one::<(Json<Vec<i64>>,)>()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TypeMismatch, "[{k}] {e}");
    assert!(!e.to_string().contains("a ✓"), "[{k}] {e}");
    let e = params![9_i64, Cents(1), Status::Unknown, Json(doc(9)), "x"].unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ParameterType, "[{k}]");
    let (n,): (i64,) = c.query("SELECT count(*) FROM orders").one().await.unwrap();
    assert_eq!(n, 7, "[{k}]");
}

/// Integers wider than `i64` stay exact: in a numeric column, or on MySQL in its own
/// `BIGINT UNSIGNED` (read back as `Int` up to `i64::MAX` and as `Numeric` above it).
async fn t_wide_integers_stay_exact(db: &TestDb) {
    let k = db.kind.name();
    let mut c = db.conn().await;
    let num = match db.kind {
        Kind::Mysql => "BIGINT UNSIGNED",
        Kind::Sqlite | Kind::Postgres | Kind::Turso => db.ty(Logical::Numeric),
    };
    c.execute_batch(&format!(
        "CREATE TABLE wide (id {int}, n {num})",
        int = db.ty(Logical::Int),
    ))
    .await
    .unwrap();
    let cases: [(i64, u64); 3] = [(1, 0), (2, i64::MAX as u64), (3, u64::MAX)];
    for (id, n) in cases {
        c.query("INSERT INTO wide (id, n) VALUES ($1, $2)")
            .params(&params![id, n].unwrap())
            .dml()
            .await
            .unwrap_or_else(|e| panic!("[{k}] insert {n}: {e}"));
    }
    let got: Vec<(i64, Decimal)> = c
        .query("SELECT id, n FROM wide ORDER BY id")
        .all()
        .await
        .unwrap();
    for ((_, want), (_, back)) in cases.iter().zip(&got) {
        assert_eq!(back.to_string(), want.to_string(), "[{k}]");
    }
    if db.kind == Kind::Mysql {
        let rs = c
            .query("SELECT n FROM wide ORDER BY id")
            .select()
            .await
            .unwrap();
        let kinds: Vec<Option<&RowValues>> = rs.results.iter().map(|r| r.get("n")).collect();
        assert_eq!(
            kinds,
            [
                Some(&RowValues::Int(0)),
                Some(&RowValues::Int(i64::MAX)),
                Some(&RowValues::Numeric(Decimal::from(u64::MAX))),
            ],
            "[{k}] unsigned values above i64::MAX read back as Numeric"
        );
        let (max,): (u64,) = c
            .query("SELECT n FROM wide WHERE id = 3")
            .one()
            .await
            .unwrap();
        assert_eq!(max, u64::MAX, "[{k}]");
    }
}

#[cfg(feature = "time")]
async fn t_time_crate_round_trips(db: &TestDb) {
    use time::{Date, Month, OffsetDateTime, PrimitiveDateTime, Time, UtcOffset};
    let k = db.kind.name();
    let mut c = db.conn().await;
    c.execute_batch(&format!(
        "CREATE TABLE tt (id {int}, d {d}, t {t}, ts {ts}, tz {tz})",
        int = db.ty(Logical::Int),
        d = db.ty(Logical::Date),
        t = db.ty(Logical::Time),
        ts = db.ty(Logical::Timestamp),
        tz = db.ty(Logical::TimestampTz),
    ))
    .await
    .unwrap();
    let d = Date::from_calendar_date(2024, Month::February, 29).unwrap();
    let t = Time::from_hms_micro(23, 59, 58, 123_456).unwrap();
    let ts = PrimitiveDateTime::new(d, t);
    let tz = ts.assume_offset(UtcOffset::from_hms(5, 30, 0).unwrap());
    c.query("INSERT INTO tt (id, d, t, ts, tz) VALUES ($1, $2, $3, $4, $5)")
        .params(&params![1_i64, d, t, ts, tz].unwrap())
        .dml()
        .await
        .unwrap();
    c.query("INSERT INTO tt (id) VALUES (2)")
        .dml()
        .await
        .unwrap();
    type Row = (
        Option<Date>,
        Option<Time>,
        Option<PrimitiveDateTime>,
        Option<OffsetDateTime>,
    );
    let got: Vec<Row> = c
        .query("SELECT d, t, ts, tz FROM tt ORDER BY id")
        .all()
        .await
        .unwrap();
    assert_eq!(got[0], (Some(d), Some(t), Some(ts), Some(tz)), "[{k}]");
    assert_eq!(got[1], (None, None, None, None), "[{k}]");
}

#[cfg(feature = "time")]
backend_tests! {
    async fn time_crate_round_trips(db) { t_time_crate_round_trips(&db).await }
}

mod all {
    use super::*;
    backend_tests! {
        async fn user_types_bind_on_every_path(db) { t_user_types_bind_on_every_path(&db).await }
        async fn wide_integers_stay_exact(db) { t_wide_integers_stay_exact(&db).await }
    }
}
