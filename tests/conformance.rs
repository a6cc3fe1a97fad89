//! The conformance suite: the same test bodies run on SQLite, Postgres (feature `postgres`) and
//! Turso (feature `turso`) through the public API only. Where the engines differ by design, the
//! test says so with a comment and a `match db.kind`.

mod common;

use std::str::FromStr;
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Timelike, Utc};
use rust_decimal::Decimal;
use serde_json::json;
use sql_middleware::prelude::*;
use sql_middleware::{ErrorKind, SqlRow};
use uuid::Uuid;

use common::backends::{Kind, Logical, TestDb, expect_kind};

// ---------------------------------------------------------------------------------------------
// helpers
// ---------------------------------------------------------------------------------------------

type Conn = MiddlewarePoolConnection;

async fn batch(conn: &mut Conn, sql: &str) {
    conn.execute_batch(sql)
        .await
        .unwrap_or_else(|e| panic!("execute_batch({sql}) failed: {e:?}"));
}

async fn dml(conn: &mut Conn, sql: &str, params: &[RowValues]) -> usize {
    conn.query(sql)
        .params(params)
        .dml()
        .await
        .unwrap_or_else(|e| panic!("dml({sql}) failed: {e:?}"))
}

async fn select(conn: &mut Conn, sql: &str, params: &[RowValues]) -> ResultSet {
    conn.query(sql)
        .params(params)
        .select()
        .await
        .unwrap_or_else(|e| panic!("select({sql}) failed: {e:?}"))
}

async fn count(conn: &mut Conn, table: &str) -> i64 {
    let sql = format!("SELECT COUNT(*) FROM {table}");
    let (n,): (i64,) = conn
        .query(&sql)
        .one()
        .await
        .unwrap_or_else(|e| panic!("{sql} failed: {e:?}"));
    n
}

/// `CREATE TABLE name (id <int> PRIMARY KEY, col <type>, ...)`.
async fn create_table(db: &TestDb, conn: &mut Conn, name: &str, cols: &[(&str, Logical)]) {
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

fn insert_sql(table: &str, cols: &[(&str, Logical)]) -> String {
    let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
    let ph: Vec<String> = (2..=cols.len() + 1).map(|i| format!("${i}")).collect();
    format!(
        "INSERT INTO {table} (id, {}) VALUES ($1, {})",
        names.join(", "),
        ph.join(", ")
    )
}

fn select_sql(table: &str, cols: &[(&str, Logical)]) -> String {
    let names: Vec<&str> = cols.iter().map(|(n, _)| *n).collect();
    format!("SELECT id, {} FROM {table} WHERE id = $1", names.join(", "))
}

fn ts(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, nano: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(y, mo, d)
        .unwrap()
        .and_hms_nano_opt(h, mi, s, nano)
        .unwrap()
}

fn date(y: i32, mo: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, mo, d).unwrap()
}

/// Compares every named column of `row` with `expected`, reporting all differences at once.
#[track_caller]
fn assert_row(db: &TestDb, what: &str, row: &CustomDbRow, expected: &[(&str, RowValues)]) {
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

// ---------------------------------------------------------------------------------------------
// 1. value round trips
// ---------------------------------------------------------------------------------------------

const RT_COLS: [(&str, Logical); 10] = [
    ("i", Logical::Int),
    ("f", Logical::Float),
    ("t", Logical::Text),
    ("b", Logical::Bool),
    ("bl", Logical::Blob),
    ("ts", Logical::Timestamp),
    ("tz", Logical::TimestampTz),
    ("d", Logical::Date),
    ("u", Logical::Uuid),
    ("j", Logical::Json),
];

#[derive(Debug, Clone)]
struct RtRow {
    i: i64,
    f: f64,
    t: String,
    b: bool,
    bl: Vec<u8>,
    ts: NaiveDateTime,
    tz: DateTime<Utc>,
    d: NaiveDate,
    u: Uuid,
    j: serde_json::Value,
}

impl RtRow {
    fn values(&self) -> Vec<RowValues> {
        vec![
            RowValues::Int(self.i),
            RowValues::Float(self.f),
            RowValues::Text(self.t.clone()),
            RowValues::Bool(self.b),
            RowValues::Blob(self.bl.clone()),
            RowValues::Timestamp(self.ts),
            RowValues::TimestampTz(self.tz),
            RowValues::Date(self.d),
            RowValues::Uuid(self.u),
            RowValues::JSON(self.j.clone()),
        ]
    }
}

fn rt_rows() -> Vec<RtRow> {
    vec![
        RtRow {
            i: 42,
            f: 1.5,
            t: "héllo wörld 🌍🎉 你好，世界 こんにちは Ω≈ç√".into(),
            b: true,
            bl: vec![0, 1, 2, 0x7f, 0x80, 0xfe, 0xff],
            ts: ts(2024, 2, 29, 23, 59, 58, 123_456_000),
            tz: Utc.with_ymd_and_hms(2023, 7, 14, 12, 34, 56).unwrap()
                + chrono::Duration::microseconds(654_321),
            d: date(1999, 12, 31),
            u: Uuid::parse_str("67e55044-10b1-426f-9247-bb680e5fe0c8").unwrap(),
            j: json!({"name": "Zoë", "tags": ["a", "b"], "n": 1, "f": 2.5,
                      "nested": {"ok": true, "none": null}}),
        },
        RtRow {
            i: i64::MIN,
            f: -2.5e-10,
            t: String::new(),
            b: false,
            bl: Vec::new(),
            ts: ts(1970, 1, 1, 0, 0, 0, 0),
            tz: Utc.with_ymd_and_hms(1970, 1, 1, 0, 0, 0).unwrap(),
            d: date(2000, 1, 1),
            u: Uuid::nil(),
            j: json!([]),
        },
        RtRow {
            i: i64::MAX,
            f: f64::MAX,
            t: "line1\nline2\ttab 'single' \"double\" \\ backslash $1 ?1 -- not a comment".into(),
            b: true,
            bl: (0..=255).collect(),
            ts: ts(9999, 12, 31, 23, 59, 59, 999_999_000),
            tz: Utc.with_ymd_and_hms(2038, 1, 19, 3, 14, 8).unwrap(),
            d: date(2024, 2, 29),
            u: Uuid::parse_str("ffffffff-ffff-ffff-ffff-ffffffffffff").unwrap(),
            j: json!([1, "two", [3], {"four": 4}, null, true, 2.5]),
        },
        RtRow {
            i: 0,
            f: -0.5,
            t: "😀漢字".repeat(500),
            b: false,
            bl: vec![0; 1000],
            ts: ts(2000, 1, 1, 12, 0, 0, 1_000),
            tz: chrono::FixedOffset::west_opt(5 * 3600)
                .unwrap()
                .with_ymd_and_hms(2020, 6, 1, 20, 30, 0)
                .unwrap()
                .with_timezone(&Utc),
            d: date(1, 1, 1),
            u: Uuid::parse_str("00000000-0000-0000-0000-000000000001").unwrap(),
            j: json!({"unicode": "😀 你好", "escaped": "a\"b\\c\n", "empty": {}, "list": []}),
        },
    ]
}

async fn t_round_trip_values(db: &TestDb) {
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "rt", &RT_COLS).await;
    let insert = insert_sql("rt", &RT_COLS);
    let select_one = select_sql("rt", &RT_COLS);
    let rows = rt_rows();
    for (k, r) in rows.iter().enumerate() {
        let id = k as i64 + 1;
        let mut params = vec![RowValues::Int(id)];
        params.extend(r.values());
        assert_eq!(dml(&mut conn, &insert, &params).await, 1);
    }
    for (k, r) in rows.iter().enumerate() {
        let id = k as i64 + 1;
        let rs = select(&mut conn, &select_one, &[RowValues::Int(id)]).await;
        assert_eq!(rs.len(), 1, "[{}] row {id}", db.kind.name());
        let row = &rs.results[0];

        // Through the ResultSet: exactly the RowValues that went in.
        let mut expected = vec![("id", RowValues::Int(id))];
        expected.extend(RT_COLS.iter().map(|(n, _)| *n).zip(r.values()));
        assert_row(db, &format!("row {id} via ResultSet"), row, &expected);

        // Through typed accessors on the materialised row.
        let what = format!("[{}] row {id} try_get", db.kind.name());
        assert_eq!(row.try_get::<i64>("i").unwrap(), r.i, "{what}");
        assert_eq!(row.try_get::<f64>("f").unwrap(), r.f, "{what}");
        assert_eq!(row.try_get::<String>("t").unwrap(), r.t, "{what}");
        assert_eq!(row.try_get::<bool>("b").unwrap(), r.b, "{what}");
        assert_eq!(row.try_get::<Vec<u8>>("bl").unwrap(), r.bl, "{what}");
        assert_eq!(row.try_get::<NaiveDateTime>("ts").unwrap(), r.ts, "{what}");
        assert_eq!(row.try_get::<DateTime<Utc>>("tz").unwrap(), r.tz, "{what}");
        assert_eq!(row.try_get::<NaiveDate>("d").unwrap(), r.d, "{what}");
        assert_eq!(row.try_get::<Uuid>("u").unwrap(), r.u, "{what}");
        assert_eq!(
            row.try_get::<serde_json::Value>("j").unwrap(),
            r.j,
            "{what}"
        );
        assert_eq!(row.try_get::<Option<i64>>(1).unwrap(), Some(r.i), "{what}");

        // Typed decoding straight from the driver row (no ResultSet).
        type Full = (
            i64,
            f64,
            String,
            bool,
            Vec<u8>,
            NaiveDateTime,
            DateTime<Utc>,
            NaiveDate,
            Uuid,
            serde_json::Value,
        );
        let got: Full = conn
            .query("SELECT i, f, t, b, bl, ts, tz, d, u, j FROM rt WHERE id = $1")
            .params(&[RowValues::Int(id)])
            .one()
            .await
            .unwrap_or_else(|e| panic!("[{}] typed one() row {id}: {e:?}", db.kind.name()));
        let want: Full = (
            r.i,
            r.f,
            r.t.clone(),
            r.b,
            r.bl.clone(),
            r.ts,
            r.tz,
            r.d,
            r.u,
            r.j.clone(),
        );
        assert_eq!(got, want, "[{}] typed one() row {id}", db.kind.name());
    }

    // Every kind also works as a parameter in a comparison: look each row up by each value.
    for (k, r) in rows.iter().enumerate() {
        let id = k as i64 + 1;
        for ((col, _), v) in RT_COLS.iter().zip(r.values()) {
            let sql = format!("SELECT id FROM rt WHERE {col} = $1 ORDER BY id");
            let ids: Vec<(i64,)> = conn
                .query(&sql)
                .params(std::slice::from_ref(&v))
                .all()
                .await
                .unwrap_or_else(|e| panic!("[{}] {sql} with {v:?}: {e:?}", db.kind.name()));
            assert!(
                ids.contains(&(id,)),
                "[{}] row {id} not found by {col} = {v:?}: {ids:?}",
                db.kind.name()
            );
        }
    }
}

const NULL_COLS: [(&str, Logical); 11] = [
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
];

async fn t_round_trip_nulls(db: &TestDb) {
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "nl", &NULL_COLS).await;
    let mut params = vec![RowValues::Int(1)];
    params.extend(NULL_COLS.iter().map(|_| RowValues::Null));
    assert_eq!(
        dml(&mut conn, &insert_sql("nl", &NULL_COLS), &params).await,
        1
    );

    // NULL of every kind also through `Option<T>` parameters converted with `From`.
    let mut params = vec![RowValues::Int(2)];
    params.extend([
        RowValues::from(None::<i64>),
        RowValues::from(None::<f64>),
        RowValues::from(None::<String>),
        RowValues::from(None::<bool>),
        RowValues::from(None::<Vec<u8>>),
        RowValues::from(None::<NaiveDateTime>),
        RowValues::from(None::<DateTime<Utc>>),
        RowValues::from(None::<NaiveDate>),
        RowValues::from(None::<Uuid>),
        RowValues::from(None::<Decimal>),
        RowValues::from(None::<serde_json::Value>),
    ]);
    assert_eq!(
        dml(&mut conn, &insert_sql("nl", &NULL_COLS), &params).await,
        1
    );

    for id in [1_i64, 2] {
        let rs = select(
            &mut conn,
            &select_sql("nl", &NULL_COLS),
            &[RowValues::Int(id)],
        )
        .await;
        assert_eq!(rs.len(), 1);
        let row = &rs.results[0];
        let expected: Vec<(&str, RowValues)> = NULL_COLS
            .iter()
            .map(|(n, _)| (*n, RowValues::Null))
            .collect();
        assert_row(db, "NULL row", row, &expected);
        let what = format!("[{}] NULL row {id}", db.kind.name());
        assert_eq!(row.try_get::<Option<i64>>("i").unwrap(), None, "{what}");
        assert_eq!(row.try_get::<Option<f64>>("f").unwrap(), None, "{what}");
        assert_eq!(row.try_get::<Option<String>>("t").unwrap(), None, "{what}");
        assert_eq!(row.try_get::<Option<bool>>("b").unwrap(), None, "{what}");
        assert_eq!(
            row.try_get::<Option<Vec<u8>>>("bl").unwrap(),
            None,
            "{what}"
        );
        assert_eq!(
            row.try_get::<Option<NaiveDateTime>>("ts").unwrap(),
            None,
            "{what}"
        );
        assert_eq!(
            row.try_get::<Option<DateTime<Utc>>>("tz").unwrap(),
            None,
            "{what}"
        );
        assert_eq!(
            row.try_get::<Option<NaiveDate>>("d").unwrap(),
            None,
            "{what}"
        );
        assert_eq!(row.try_get::<Option<Uuid>>("u").unwrap(), None, "{what}");
        assert_eq!(row.try_get::<Option<Decimal>>("n").unwrap(), None, "{what}");
        assert_eq!(
            row.try_get::<Option<serde_json::Value>>("j").unwrap(),
            None,
            "{what}"
        );
        // A NULL is never silently turned into a default value.
        let e = expect_kind(&what, row.try_get::<i64>("i"), ErrorKind::TypeMismatch);
        assert!(e.message().contains("`i`"), "{what}: {e}");

        let typed: (
            Option<i64>,
            Option<String>,
            Option<Decimal>,
            Option<serde_json::Value>,
        ) = conn
            .query("SELECT i, t, n, j FROM nl WHERE id = $1")
            .params(&[RowValues::Int(id)])
            .one()
            .await
            .unwrap();
        assert_eq!(typed, (None, None, None, None), "{what}");
    }
}

/// NUMERIC is exact on every backend: the value, and its scale, come back as they went in.
async fn t_round_trip_numeric(db: &TestDb) {
    let mut conn = db.conn().await;
    let cols = [("n", Logical::Numeric)];
    create_table(db, &mut conn, "num", &cols).await;
    let values = [
        "12345.6789",
        "-0.000001",
        "0",
        "42",
        "1.50",
        "79228162514264337593543950335",
        "-123456789012345678.9",
        "0.1000000000000000055511151231",
    ];
    for (k, v) in values.iter().enumerate() {
        let d = Decimal::from_str(v).unwrap();
        dml(
            &mut conn,
            "INSERT INTO num (id, n) VALUES ($1, $2)",
            &[RowValues::Int(k as i64), RowValues::Numeric(d)],
        )
        .await;
    }
    let mut bad = Vec::new();
    for (k, v) in values.iter().enumerate() {
        let d = Decimal::from_str(v).unwrap();
        let rs = select(
            &mut conn,
            "SELECT n FROM num WHERE id = $1",
            &[RowValues::Int(k as i64)],
        )
        .await;
        let row = &rs.results[0];
        match row.get("n") {
            Some(RowValues::Numeric(got)) if got.to_string() == d.to_string() => {}
            other => bad.push(format!("  {v}: ResultSet gave {other:?}")),
        }
        match row.try_get::<Decimal>("n") {
            Ok(got) if got.to_string() == d.to_string() => {}
            other => bad.push(format!("  {v}: try_get::<Decimal> gave {other:?}")),
        }
    }
    assert!(
        bad.is_empty(),
        "[{}] NUMERIC values did not round-trip exactly:\n{}",
        db.kind.name(),
        bad.join("\n")
    );
}

/// JSON scalars (numbers, strings, booleans, JSON `null`) come back as JSON, not as SQL values.
async fn t_round_trip_json_scalars(db: &TestDb) {
    let mut conn = db.conn().await;
    let cols = [("j", Logical::Json)];
    create_table(db, &mut conn, "js", &cols).await;
    let values = [
        json!(42),
        json!(-1.5),
        json!("text"),
        json!(""),
        json!(true),
        json!(null),
        json!("123"),
    ];
    for (k, v) in values.iter().enumerate() {
        dml(
            &mut conn,
            "INSERT INTO js (id, j) VALUES ($1, $2)",
            &[RowValues::Int(k as i64), RowValues::JSON(v.clone())],
        )
        .await;
    }
    let mut bad = Vec::new();
    for (k, v) in values.iter().enumerate() {
        let rs = select(
            &mut conn,
            "SELECT j FROM js WHERE id = $1",
            &[RowValues::Int(k as i64)],
        )
        .await;
        let got = rs.results[0].get("j").cloned();
        if got.as_ref() != Some(&RowValues::JSON(v.clone())) {
            bad.push(format!("  {v}: ResultSet gave {got:?}"));
        }
        match rs.results[0].try_get::<serde_json::Value>("j") {
            Ok(got) if &got == v => {}
            other => bad.push(format!("  {v}: try_get::<Value> gave {other:?}")),
        }
    }
    assert!(
        bad.is_empty(),
        "[{}] JSON scalars did not round-trip:\n{}",
        db.kind.name(),
        bad.join("\n")
    );
}

/// Special floats. Documented engine difference: SQLite stores a REAL with no fractional part
/// as an integer on disk, so `-0.0` comes back as `+0.0`. Postgres `float8` and Turso keep the
/// sign of zero.
async fn t_round_trip_float_specials(db: &TestDb) {
    let mut conn = db.conn().await;
    let cols = [("f", Logical::Float)];
    create_table(db, &mut conn, "fl", &cols).await;
    let values = [
        -0.0_f64,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
        f64::MIN,
        0.1 + 0.2,
        -1.0e-300,
    ];
    for (k, v) in values.iter().enumerate() {
        dml(
            &mut conn,
            "INSERT INTO fl (id, f) VALUES ($1, $2)",
            &[RowValues::Int(k as i64), RowValues::Float(*v)],
        )
        .await;
    }
    for (k, v) in values.iter().enumerate() {
        let rs = select(
            &mut conn,
            "SELECT f FROM fl WHERE id = $1",
            &[RowValues::Int(k as i64)],
        )
        .await;
        let got = rs.results[0].try_get::<f64>("f").unwrap();
        let expected_bits = match db.kind {
            // Engine difference: the sign of zero is lost by SQLite's REAL storage.
            Kind::Sqlite if *v == 0.0 => 0.0_f64.to_bits(),
            Kind::Sqlite | Kind::Postgres | Kind::Turso => v.to_bits(),
        };
        assert_eq!(
            got.to_bits(),
            expected_bits,
            "[{}] float {v:e} came back as {got:e}",
            db.kind.name()
        );
        assert_eq!(rs.results[0].get("f"), Some(&RowValues::Float(*v)));
    }
}

/// Sub-microsecond timestamps. SQLite and Turso store the text form with nanoseconds, so they
/// round-trip exactly; Postgres stores microseconds, so the value comes back at microsecond
/// precision. (The sub-µs part below is 400 ns, so truncation and rounding agree.)
async fn t_round_trip_subsecond_timestamps(db: &TestDb) {
    let mut conn = db.conn().await;
    let cols = [("ts", Logical::Timestamp), ("tz", Logical::TimestampTz)];
    create_table(db, &mut conn, "sub", &cols).await;
    let naive = [
        ts(2024, 5, 6, 7, 8, 9, 123_456_400),
        ts(2024, 5, 6, 7, 8, 9, 1_400),
        ts(2024, 5, 6, 7, 8, 9, 999_999_400),
        ts(1999, 1, 1, 0, 0, 0, 500_000_000),
    ];
    for (k, n) in naive.iter().enumerate() {
        dml(
            &mut conn,
            "INSERT INTO sub (id, ts, tz) VALUES ($1, $2, $3)",
            &[
                RowValues::Int(k as i64),
                RowValues::Timestamp(*n),
                RowValues::TimestampTz(n.and_utc()),
            ],
        )
        .await;
    }
    for (k, n) in naive.iter().enumerate() {
        let want = match db.kind {
            Kind::Postgres => n.with_nanosecond(n.nanosecond() / 1_000 * 1_000).unwrap(),
            Kind::Sqlite | Kind::Turso => *n,
        };
        let rs = select(
            &mut conn,
            "SELECT ts, tz FROM sub WHERE id = $1",
            &[RowValues::Int(k as i64)],
        )
        .await;
        assert_row(
            db,
            &format!("timestamp {n}"),
            &rs.results[0],
            &[
                ("ts", RowValues::Timestamp(want)),
                ("tz", RowValues::TimestampTz(want.and_utc())),
            ],
        );
        let (a, b): (NaiveDateTime, DateTime<Utc>) = conn
            .query("SELECT ts, tz FROM sub WHERE id = $1")
            .params(&[RowValues::Int(k as i64)])
            .one()
            .await
            .unwrap();
        assert_eq!((a, b), (want, want.and_utc()), "[{}]", db.kind.name());
    }
}

/// Pseudo-random bytes (a fixed LCG), so a truncation or a zero-fill would show.
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 56) as u8
        })
        .collect()
}

async fn t_round_trip_big_blob(db: &TestDb) {
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "big", &[("bl", Logical::Blob)]).await;
    let data = noise(10 * 1024 * 1024);
    assert_eq!(
        dml(
            &mut conn,
            "INSERT INTO big (id, bl) VALUES ($1, $2)",
            &[RowValues::Int(1), RowValues::Blob(data.clone())],
        )
        .await,
        1
    );
    let (len,): (i64,) = conn
        .query("SELECT LENGTH(bl) FROM big WHERE id = $1")
        .params(&[RowValues::Int(1)])
        .one()
        .await
        .unwrap();
    assert_eq!(len, data.len() as i64, "[{}] stored length", db.kind.name());
    let rs = select(
        &mut conn,
        "SELECT bl FROM big WHERE id = $1",
        &[RowValues::Int(1)],
    )
    .await;
    assert!(
        rs.results[0].get("bl") == Some(&RowValues::Blob(data.clone())),
        "[{}] 10 MB blob differs via ResultSet",
        db.kind.name()
    );
    let (typed,): (Vec<u8>,) = conn
        .query("SELECT bl FROM big WHERE id = $1")
        .params(&[RowValues::Int(1)])
        .one()
        .await
        .unwrap();
    assert!(
        typed == data,
        "[{}] 10 MB blob differs via one()",
        db.kind.name()
    );
}

// ---------------------------------------------------------------------------------------------
// 2. columns by name
// ---------------------------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
struct Ab {
    a: i64,
    b: i64,
}

impl FromRow for Ab {
    fn from_row<R: SqlRow>(row: &R) -> Result<Self, SqlMiddlewareDbError> {
        Ok(Ab {
            a: row.get("a")?,
            b: row.get("b")?,
        })
    }
}

async fn t_columns_by_name(db: &TestDb) {
    let mut conn = db.conn().await;
    let int = db.ty(Logical::Int);
    let text = db.ty(Logical::Text);
    batch(
        &mut conn,
        &format!("CREATE TABLE cn (a {int}, b {int}, c {text})"),
    )
    .await;
    dml(
        &mut conn,
        "INSERT INTO cn (a, b, c) VALUES (10, 20, 'x')",
        &[],
    )
    .await;
    let k = db.kind.name();
    for round in 0..25 {
        let rs = select(&mut conn, "SELECT 1 AS a, 2 AS b", &[]).await;
        let r = &rs.results[0];
        assert_eq!(
            (r.get("a"), r.get("b")),
            (Some(&RowValues::Int(1)), Some(&RowValues::Int(2))),
            "[{k}] round {round}"
        );

        let rs = select(&mut conn, "SELECT 2 AS b, 1 AS a", &[]).await;
        let r = &rs.results[0];
        assert_eq!(r.get("a"), Some(&RowValues::Int(1)), "[{k}] round {round}");
        assert_eq!(r.get("b"), Some(&RowValues::Int(2)), "[{k}] round {round}");
        assert_eq!(r.column_names().collect::<Vec<_>>(), ["b", "a"], "[{k}]");

        let rs = select(&mut conn, "SELECT c, b, a FROM cn", &[]).await;
        let r = &rs.results[0];
        assert_eq!(r.get("a"), Some(&RowValues::Int(10)), "[{k}] round {round}");
        assert_eq!(r.get("b"), Some(&RowValues::Int(20)), "[{k}] round {round}");
        assert_eq!(
            r.get("c"),
            Some(&RowValues::Text("x".into())),
            "[{k}] round {round}"
        );
        assert_eq!(
            r.get("A"),
            Some(&RowValues::Int(10)),
            "[{k}] case-insensitive lookup"
        );

        let rs = select(&mut conn, "SELECT b AS a, a AS b FROM cn", &[]).await;
        let r = &rs.results[0];
        assert_eq!(r.get("a"), Some(&RowValues::Int(20)), "[{k}] round {round}");
        assert_eq!(r.get("b"), Some(&RowValues::Int(10)), "[{k}] round {round}");

        let rs = select(&mut conn, "SELECT c FROM cn", &[]).await;
        assert_eq!(
            rs.results[0].get("a"),
            None,
            "[{k}] no column a in this result"
        );

        // Typed decoding by name follows each statement's own columns as well.
        let ab: Ab = conn.query("SELECT 2 AS b, 1 AS a").one().await.unwrap();
        assert_eq!(ab, Ab { a: 1, b: 2 }, "[{k}] round {round}");
        let ab: Ab = conn.query("SELECT c, b, a FROM cn").one().await.unwrap();
        assert_eq!(ab, Ab { a: 10, b: 20 }, "[{k}] round {round}");
        let ab: Vec<Ab> = conn
            .query("SELECT a AS b, b AS a FROM cn")
            .all()
            .await
            .unwrap();
        assert_eq!(ab, [Ab { a: 20, b: 10 }], "[{k}] round {round}");
    }
}

/// A cached statement must not keep the column names of a table that has since been re-created
/// with its columns in another order (a migration between two runs of the same SQL text).
async fn t_columns_follow_schema_change(db: &TestDb) {
    let mut conn = db.conn().await;
    let int = db.ty(Logical::Int);
    batch(&mut conn, &format!("CREATE TABLE sc (a {int}, b {int})")).await;
    dml(&mut conn, "INSERT INTO sc (a, b) VALUES (1, 2)", &[]).await;
    let rs = select(&mut conn, "SELECT * FROM sc", &[]).await;
    assert_eq!(rs.results[0].get("a"), Some(&RowValues::Int(1)));
    let ab: Ab = conn.query("SELECT * FROM sc").one().await.unwrap();
    assert_eq!(ab, Ab { a: 1, b: 2 });

    batch(
        &mut conn,
        &format!("DROP TABLE sc; CREATE TABLE sc (b {int}, a {int})"),
    )
    .await;
    dml(&mut conn, "INSERT INTO sc (a, b) VALUES (1, 2)", &[]).await;

    let k = db.kind.name();
    let rs = conn
        .query("SELECT * FROM sc")
        .select()
        .await
        .unwrap_or_else(|e| panic!("[{k}] SELECT * after the table was re-created: {e:?}"));
    assert_eq!(
        rs.column_names().collect::<Vec<_>>(),
        ["b", "a"],
        "[{k}] column names after the table was re-created"
    );
    assert_eq!(
        rs.results[0].get("a"),
        Some(&RowValues::Int(1)),
        "[{k}] get(a)"
    );
    assert_eq!(
        rs.results[0].get("b"),
        Some(&RowValues::Int(2)),
        "[{k}] get(b)"
    );
    let ab: Ab = conn
        .query("SELECT * FROM sc")
        .one()
        .await
        .unwrap_or_else(|e| panic!("[{k}] one::<Ab> after the table was re-created: {e:?}"));
    assert_eq!(ab, Ab { a: 1, b: 2 }, "[{k}] typed decode by name");
}

// ---------------------------------------------------------------------------------------------
// 3. DML counts
// ---------------------------------------------------------------------------------------------

async fn t_dml_counts(db: &TestDb) {
    let mut conn = db.conn().await;
    let k = db.kind.name();
    create_table(db, &mut conn, "dc", &[("v", Logical::Int)]).await;
    let n = dml(
        &mut conn,
        "INSERT INTO dc (id, v) VALUES ($1, $2), ($3, $4), ($5, $6)",
        &[
            1.into(),
            10.into(),
            2.into(),
            20.into(),
            3.into(),
            20.into(),
        ],
    )
    .await;
    assert_eq!(n, 3, "[{k}] insert 3");
    assert_eq!(
        dml(
            &mut conn,
            "UPDATE dc SET v = v + 1 WHERE v = $1",
            &[20.into()]
        )
        .await,
        2,
        "[{k}] update 2"
    );
    assert_eq!(
        dml(&mut conn, "DELETE FROM dc WHERE v = $1", &[999.into()]).await,
        0,
        "[{k}] delete none"
    );
    let rs = select(&mut conn, "SELECT id, v FROM dc ORDER BY id", &[]).await;
    assert_eq!(rs.len(), 3);
    assert_eq!(rs.rows_affected, 0, "[{k}] rows_affected of a plain SELECT");
    assert_eq!(
        dml(&mut conn, "SELECT id FROM dc", &[]).await,
        0,
        "[{k}] dml() of a plain SELECT"
    );

    // select() of DML with RETURNING: the rows, and the count.
    let rs = select(
        &mut conn,
        "UPDATE dc SET v = 0 WHERE v = $1 RETURNING id",
        &[21.into()],
    )
    .await;
    let mut ids: Vec<i64> = rs.iter().map(|r| r.try_get::<i64>("id").unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [2, 3], "[{k}] RETURNING rows");
    assert_eq!(
        rs.rows_affected, 2,
        "[{k}] rows_affected of UPDATE .. RETURNING"
    );
    assert_eq!(
        dml(&mut conn, "DELETE FROM dc WHERE v = 0 RETURNING id", &[]).await,
        2,
        "[{k}] dml() of DELETE .. RETURNING"
    );
    assert_eq!(count(&mut conn, "dc").await, 1);

    // select() of DML without RETURNING: no rows, the count.
    let rs = select(&mut conn, "INSERT INTO dc (id, v) VALUES (4, 40)", &[]).await;
    assert_eq!(
        (rs.len(), rs.rows_affected),
        (0, 1),
        "[{k}] select() of INSERT"
    );

    // one() of DML .. RETURNING reads the first row, and the statement still runs to the end.
    dml(
        &mut conn,
        "INSERT INTO dc (id, v) VALUES (5, 50), (6, 50), (7, 50)",
        &[],
    )
    .await;
    let (id,): (i64,) = conn
        .query("UPDATE dc SET v = 51 WHERE v = 50 RETURNING id")
        .one()
        .await
        .unwrap();
    assert!((5..=7).contains(&id), "[{k}] RETURNING id {id}");
    let (n,): (i64,) = conn
        .query("SELECT COUNT(*) FROM dc WHERE v = 51")
        .one()
        .await
        .unwrap();
    assert_eq!(
        n, 3,
        "[{k}] one() of UPDATE .. RETURNING must update every matching row"
    );
}

/// A statement that changes no rows reports 0, even right after one that changed some: DDL
/// must not report the count of the previous DML statement.
async fn t_dml_count_of_ddl(db: &TestDb) {
    let k = db.kind.name();
    let int = db.ty(Logical::Int);
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "dd", &[("v", Logical::Int)]).await;
    assert_eq!(
        dml(
            &mut conn,
            "INSERT INTO dd (id, v) VALUES (1, 1), (2, 2)",
            &[]
        )
        .await,
        2
    );
    assert_eq!(
        dml(&mut conn, &format!("CREATE TABLE dd2 (x {int})"), &[]).await,
        0,
        "[{k}] dml() of CREATE TABLE right after an INSERT of 2 rows"
    );
    assert_eq!(dml(&mut conn, "UPDATE dd SET v = v + 1", &[]).await, 2);
    let rs = select(&mut conn, &format!("CREATE TABLE dd3 (x {int})"), &[]).await;
    assert_eq!(
        rs.rows_affected, 0,
        "[{k}] select() of CREATE TABLE right after an UPDATE of 2 rows"
    );
    assert_eq!(
        dml(&mut conn, "DROP TABLE dd2", &[]).await,
        0,
        "[{k}] dml() of DROP TABLE"
    );
}

/// Binding converts to the column's type: an `Int` into a float column, and text into
/// date, time, UUID and JSON columns, read back as the column's kind on every backend.
async fn t_params_convert_to_column_type(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let cols = [
        ("f", Logical::Float),
        ("n", Logical::Numeric),
        ("ts", Logical::Timestamp),
        ("tz", Logical::TimestampTz),
        ("d", Logical::Date),
        ("u", Logical::Uuid),
        ("j", Logical::Json),
    ];
    create_table(db, &mut conn, "cv", &cols).await;
    dml(
        &mut conn,
        "INSERT INTO cv (id, f, n) VALUES ($1, $2, $3)",
        &[1.into(), RowValues::Int(3), RowValues::Int(7)],
    )
    .await;
    let rs = select(&mut conn, "SELECT f, n FROM cv WHERE id = 1", &[]).await;
    assert_eq!(
        rs.results[0].get("f"),
        Some(&RowValues::Float(3.0)),
        "[{k}] Int into a float column"
    );
    assert_eq!(
        rs.results[0].try_get::<Decimal>("n").unwrap(),
        Decimal::from(7),
        "[{k}] Int into a numeric column"
    );
    let u = "67e55044-10b1-426f-9247-bb680e5fe0c8";
    dml(
        &mut conn,
        "INSERT INTO cv (id, ts, tz, d, u, j) VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            2.into(),
            "2024-01-02 03:04:05".into(),
            "2024-01-02T03:04:05+02:00".into(),
            "2024-01-02".into(),
            u.into(),
            r#"{"a": [1, 2]}"#.into(),
        ],
    )
    .await;
    let rs = select(
        &mut conn,
        "SELECT ts, tz, d, u, j FROM cv WHERE id = 2",
        &[],
    )
    .await;
    assert_row(
        db,
        "text parameters into typed columns",
        &rs.results[0],
        &[
            ("ts", RowValues::Timestamp(ts(2024, 1, 2, 3, 4, 5, 0))),
            (
                "tz",
                RowValues::TimestampTz(Utc.with_ymd_and_hms(2024, 1, 2, 1, 4, 5).unwrap()),
            ),
            ("d", RowValues::Date(date(2024, 1, 2))),
            ("u", RowValues::Uuid(Uuid::parse_str(u).unwrap())),
            ("j", RowValues::JSON(json!({"a": [1, 2]}))),
        ],
    );
}

/// Statements that run for a while (longer than SQLite's inline budget, so the adaptive model
/// interrupts and re-runs them off the async thread): exact results, nothing applied twice,
/// and a surrounding transaction intact.
async fn t_long_statements(db: &TestDb) {
    // Turso (compiled without optimisation in test builds) is far slower per row, and has no
    // inline budget to exceed, so it gets fewer rows.
    let n_rows: i64 = match db.kind {
        Kind::Sqlite | Kind::Postgres => 100_000,
        Kind::Turso => 10_000,
    };
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "lt", &[("v", Logical::Int)]).await;
    let cte = |lo: i64, hi: i64| {
        format!(
            "WITH RECURSIVE c(x) AS (SELECT {lo} UNION ALL SELECT x + 1 FROM c WHERE x < {hi}) "
        )
    };
    let read = format!("{}SELECT COUNT(*), SUM(x) FROM c", cte(1, n_rows));
    let write =
        |lo: i64, hi: i64| format!("{}INSERT INTO lt (id, v) SELECT x, x FROM c", cte(lo, hi));
    let (n, sum): (i64, i64) = conn.query(&read).one().await.unwrap();
    assert_eq!(
        (n, sum),
        (n_rows, n_rows * (n_rows + 1) / 2),
        "[{k}] long read, autocommit"
    );
    assert_eq!(
        dml(&mut conn, &write(1, n_rows), &[]).await,
        n_rows as usize,
        "[{k}] long insert, autocommit"
    );
    assert_eq!(
        count(&mut conn, "lt").await,
        n_rows,
        "[{k}] rows after the long insert"
    );

    let mut tx = conn.begin().await.unwrap();
    tx.query("INSERT INTO lt (id, v) VALUES (0, 0)")
        .dml()
        .await
        .unwrap();
    let (n, sum): (i64, i64) = tx.query(&read).one().await.unwrap();
    assert_eq!(
        (n, sum),
        (n_rows, n_rows * (n_rows + 1) / 2),
        "[{k}] long read in a tx"
    );
    let changed = tx
        .query(&write(n_rows + 1, 2 * n_rows))
        .dml()
        .await
        .unwrap();
    assert_eq!(changed, n_rows as usize, "[{k}] long insert in a tx");
    let (n,): (i64,) = tx.query("SELECT COUNT(*) FROM lt").one().await.unwrap();
    assert_eq!(n, 2 * n_rows + 1, "[{k}] the tx sees its rows");
    tx.commit().await.unwrap();
    let mut other = db.conn().await;
    assert_eq!(
        count(&mut other, "lt").await,
        2 * n_rows + 1,
        "[{k}] after commit"
    );

    let mut tx = conn.begin().await.unwrap();
    tx.query("DELETE FROM lt WHERE id > $1")
        .params(&[n_rows.into()])
        .dml()
        .await
        .unwrap();
    let (n, _): (i64, i64) = tx.query(&read).one().await.unwrap();
    assert_eq!(n, n_rows);
    tx.rollback().await.unwrap();
    assert_eq!(
        count(&mut other, "lt").await,
        2 * n_rows + 1,
        "[{k}] after rollback"
    );
}

/// A query whose future is dropped (a client-side timeout) leaves the pool healthy: the next
/// checkouts work at once, and the interrupted connection either still works or says it is lost.
async fn t_cancelled_query(db: &TestDb) {
    let k = db.kind.name();
    // Sized to run for a few seconds if nothing stops it (Turso is slower per row).
    let rows = match db.kind {
        Kind::Sqlite | Kind::Postgres => 5_000_000,
        Kind::Turso => 60_000,
    };
    let slow = format!(
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {rows}) \
         SELECT COUNT(*) FROM c"
    );
    let mut conn = db.conn().await;
    if db.kind == Kind::Turso {
        // TURSO DIFFERS BY DESIGN: Turso's async API yields only when it waits for I/O, so a
        // statement that needs none runs to completion inside one poll and a timeout cannot
        // cancel it. What must hold: the statement completes correctly and the connection
        // stays usable.
        let r = tokio::time::timeout(Duration::from_secs(30), conn.query(&slow).one::<(i64,)>())
            .await
            .expect("[turso] the statement finishes");
        assert_eq!(r.unwrap().0, rows);
        let (one,): (i64,) = conn.query("SELECT 1").one().await.unwrap();
        assert_eq!(one, 1);
        return;
    }
    let t0 = Instant::now();
    let r =
        tokio::time::timeout(Duration::from_millis(50), conn.query(&slow).one::<(i64,)>()).await;
    assert!(
        r.is_err(),
        "[{k}] a 50 ms timeout did not cancel the slow query: it returned {r:?} after {:?} \
         (the query future did not yield to the runtime while the statement ran)",
        t0.elapsed()
    );
    let started = Instant::now();
    match tokio::time::timeout(
        Duration::from_secs(3),
        conn.query("SELECT 1").one::<(i64,)>(),
    )
    .await
    {
        Err(_) => panic!("[{k}] the cancelled connection hangs"),
        Ok(Ok((1,))) => {}
        Ok(Err(e)) => assert_eq!(e.kind(), ErrorKind::ConnectionLost, "[{k}] {e:?}"),
        Ok(other) => panic!("[{k}] SELECT 1 gave {other:?}"),
    }
    drop(conn);
    let mut conns = Vec::new();
    for _ in 0..4 {
        let c = tokio::time::timeout(Duration::from_secs(3), db.db.get_connection())
            .await
            .unwrap_or_else(|_| panic!("[{k}] checkout hangs after a cancelled query"))
            .unwrap();
        conns.push(c);
    }
    for c in &mut conns {
        let (one,): (i64,) = c.query("SELECT 1").one().await.unwrap();
        assert_eq!(one, 1);
    }
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "[{k}] recovering after the cancelled query took {:?}",
        started.elapsed()
    );
}

/// Several connections writing at once, in autocommit and in transactions: no error, nothing lost.
async fn t_concurrent_writers(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "cw", &[("w", Logical::Int)]).await;
    drop(conn);
    let mut tasks = Vec::new();
    for w in 0..4_i64 {
        let pool = db.db.clone();
        tasks.push(tokio::spawn(async move {
            let mut c = pool.get_connection().await?;
            for i in 0..25 {
                c.query("INSERT INTO cw (id, w) VALUES ($1, $2)")
                    .params(&[(w * 1000 + i).into(), w.into()])
                    .dml()
                    .await?;
            }
            for t in 0..5 {
                let mut tx = c.begin().await?;
                for i in 0..5 {
                    tx.query("INSERT INTO cw (id, w) VALUES ($1, $2)")
                        .params(&[(w * 1000 + 100 + t * 10 + i).into(), w.into()])
                        .dml()
                        .await?;
                }
                tx.commit().await?;
            }
            Ok::<_, SqlMiddlewareDbError>(())
        }));
    }
    for (w, t) in tasks.into_iter().enumerate() {
        t.await
            .unwrap()
            .unwrap_or_else(|e| panic!("[{k}] writer {w}: {e:?}"));
    }
    let mut conn = db.conn().await;
    assert_eq!(
        count(&mut conn, "cw").await,
        200,
        "[{k}] rows written by 4 writers"
    );
}

/// Raw driver access sees the same database and leaves the connection usable.
async fn t_raw_access(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "raw", &[("v", Logical::Text)]).await;
    dml(
        &mut conn,
        "INSERT INTO raw (id, v) VALUES (1, 'middleware')",
        &[],
    )
    .await;
    let seen: String = match db.kind {
        #[cfg(feature = "sqlite")]
        Kind::Sqlite => conn
            .with_blocking_sqlite(|c| {
                c.execute("INSERT INTO raw (id, v) VALUES (2, 'raw')", [])?;
                c.query_row("SELECT v FROM raw WHERE id = 1", [], |r| r.get(0))
            })
            .await
            .unwrap(),
        #[cfg(feature = "postgres")]
        Kind::Postgres => {
            let client = conn.postgres_client().unwrap();
            client
                .execute("INSERT INTO raw (id, v) VALUES (2, 'raw')", &[])
                .await
                .unwrap();
            client
                .query_one("SELECT v FROM raw WHERE id = 1", &[])
                .await
                .unwrap()
                .get(0)
        }
        #[cfg(feature = "turso")]
        Kind::Turso => {
            let c = conn.turso_connection().unwrap();
            c.execute("INSERT INTO raw (id, v) VALUES (2, 'raw')", ())
                .await
                .unwrap();
            let mut rows = c.query("SELECT v FROM raw WHERE id = 1", ()).await.unwrap();
            let row = rows.next().await.unwrap().expect("one row");
            match row.get_value(0).unwrap() {
                sql_middleware::drivers::turso::Value::Text(t) => t,
                other => panic!("[{k}] raw read gave {other:?}"),
            }
        }
        #[allow(unreachable_patterns)]
        other => panic!("no raw access for {other:?} in this build"),
    };
    assert_eq!(seen, "middleware", "[{k}] raw read of a middleware write");
    let (v,): (String,) = conn
        .query("SELECT v FROM raw WHERE id = $1")
        .params(&[2.into()])
        .one()
        .await
        .unwrap();
    assert_eq!(v, "raw", "[{k}] middleware read of a raw write");
    drop(conn);
    let mut other = db.conn().await;
    assert_eq!(
        count(&mut other, "raw").await,
        2,
        "[{k}] from another connection"
    );
}

// ---------------------------------------------------------------------------------------------
// 4. transactions
// ---------------------------------------------------------------------------------------------

async fn tx_table(db: &TestDb, conn: &mut Conn) {
    create_table(db, conn, "tx", &[("v", Logical::Text)]).await;
}

async fn t_tx_commit_visible(db: &TestDb) {
    let k = db.kind.name();
    let mut a = db.conn().await;
    let mut b = db.conn().await;
    tx_table(db, &mut a).await;
    let mut tx = a.begin().await.unwrap();
    let n = tx
        .query("INSERT INTO tx (id, v) VALUES ($1, $2)")
        .params(&[1.into(), "one".into()])
        .dml()
        .await
        .unwrap();
    assert_eq!(n, 1);
    let mut st = tx
        .prepare("INSERT INTO tx (id, v) VALUES ($1, $2)")
        .await
        .unwrap();
    assert_eq!(st.execute(&[2.into(), "two".into()]).await.unwrap(), 1);
    drop(st);
    tx.execute_batch("INSERT INTO tx (id, v) VALUES (3, 'three')")
        .await
        .unwrap();
    let (inside,): (i64,) = tx.query("SELECT COUNT(*) FROM tx").one().await.unwrap();
    assert_eq!(inside, 3, "[{k}] the tx sees its own rows");
    assert_eq!(
        count(&mut b, "tx").await,
        0,
        "[{k}] not visible before commit"
    );
    tx.commit().await.unwrap();
    assert_eq!(count(&mut b, "tx").await, 3, "[{k}] visible after commit");
    assert_eq!(count(&mut a, "tx").await, 3);
    // A fresh connection from the pool sees it too.
    drop(b);
    let mut c = db.conn().await;
    assert_eq!(count(&mut c, "tx").await, 3);
}

async fn t_tx_rollback(db: &TestDb) {
    let k = db.kind.name();
    let mut a = db.conn().await;
    let mut b = db.conn().await;
    tx_table(db, &mut a).await;
    dml(&mut a, "INSERT INTO tx (id, v) VALUES (1, 'kept')", &[]).await;
    let mut tx = a.begin().await.unwrap();
    tx.query("INSERT INTO tx (id, v) VALUES (2, 'gone')")
        .dml()
        .await
        .unwrap();
    tx.query("UPDATE tx SET v = 'changed' WHERE id = 1")
        .dml()
        .await
        .unwrap();
    tx.rollback().await.unwrap();
    for (who, conn) in [("same", &mut a), ("other", &mut b)] {
        let rs = select(conn, "SELECT id, v FROM tx ORDER BY id", &[]).await;
        assert_eq!(rs.len(), 1, "[{k}] {who} connection after rollback");
        assert_eq!(
            rs.results[0].get("v"),
            Some(&RowValues::Text("kept".into())),
            "[{k}] {who}"
        );
    }
}

async fn t_tx_drop_rolls_back(db: &TestDb) {
    let k = db.kind.name();
    let mut a = db.conn().await;
    let mut b = db.conn().await;
    tx_table(db, &mut a).await;
    {
        let mut tx = a.begin().await.unwrap();
        tx.query("INSERT INTO tx (id, v) VALUES (1, 'dropped')")
            .dml()
            .await
            .unwrap();
        // dropped here without commit
    }
    assert_eq!(
        count(&mut a, "tx").await,
        0,
        "[{k}] same connection after drop"
    );
    assert_eq!(
        count(&mut b, "tx").await,
        0,
        "[{k}] other connection after drop"
    );
    // The same connection is outside any transaction: its next write autocommits.
    dml(
        &mut a,
        "INSERT INTO tx (id, v) VALUES (2, 'autocommit')",
        &[],
    )
    .await;
    assert_eq!(
        count(&mut b, "tx").await,
        1,
        "[{k}] autocommit after a dropped tx"
    );

    // A tx dropped on a connection that then goes back to the pool: the next user of any
    // connection sees nothing of it.
    {
        let mut c = db.conn().await;
        let mut tx = c.begin().await.unwrap();
        tx.query("INSERT INTO tx (id, v) VALUES (3, 'dropped with conn')")
            .dml()
            .await
            .unwrap();
        drop(tx);
        drop(c);
    }
    drop(a);
    drop(b);
    let mut conns = Vec::new();
    for _ in 0..4 {
        conns.push(db.conn().await);
    }
    for c in &mut conns {
        assert_eq!(
            count(c, "tx").await,
            1,
            "[{k}] pooled connection after dropped tx"
        );
        let tx = c.begin().await.unwrap();
        tx.rollback().await.unwrap();
    }
}

async fn t_tx_error_aborts(db: &TestDb) {
    let k = db.kind.name();
    let mut a = db.conn().await;
    let mut b = db.conn().await;
    tx_table(db, &mut a).await;
    let mut tx = a.begin().await.unwrap();
    tx.query("INSERT INTO tx (id, v) VALUES (1, 'first')")
        .dml()
        .await
        .unwrap();
    expect_kind(
        &format!("[{k}] duplicate key in tx"),
        tx.query("INSERT INTO tx (id, v) VALUES (1, 'dup')")
            .dml()
            .await,
        ErrorKind::UniqueViolation,
    );
    expect_kind(
        &format!("[{k}] select after error"),
        tx.query("SELECT 1").select().await,
        ErrorKind::TransactionAborted,
    );
    expect_kind(
        &format!("[{k}] insert after error"),
        tx.query("INSERT INTO tx (id, v) VALUES (2, 'second')")
            .dml()
            .await,
        ErrorKind::TransactionAborted,
    );
    expect_kind(
        &format!("[{k}] prepare after error"),
        tx.prepare("SELECT 2").await.map(|_| ()),
        ErrorKind::TransactionAborted,
    );
    expect_kind(
        &format!("[{k}] execute_batch after error"),
        tx.execute_batch("INSERT INTO tx (id, v) VALUES (3, 'third')")
            .await,
        ErrorKind::TransactionAborted,
    );
    expect_kind(
        &format!("[{k}] commit after error"),
        tx.commit().await,
        ErrorKind::TransactionAborted,
    );
    assert_eq!(
        count(&mut a, "tx").await,
        0,
        "[{k}] nothing saved (same connection)"
    );
    assert_eq!(
        count(&mut b, "tx").await,
        0,
        "[{k}] nothing saved (other connection)"
    );
    // The connection works normally again, including a new transaction.
    let mut tx = a.begin().await.unwrap();
    tx.query("INSERT INTO tx (id, v) VALUES (1, 'again')")
        .dml()
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(count(&mut b, "tx").await, 1);
}

// ---------------------------------------------------------------------------------------------
// 5. prepared statements
// ---------------------------------------------------------------------------------------------

async fn t_prepared_reuse(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(
        db,
        &mut conn,
        "ps",
        &[("name", Logical::Text), ("score", Logical::Float)],
    )
    .await;
    {
        let mut ins = conn
            .prepare("INSERT INTO ps (id, name, score) VALUES ($1, $2, $3)")
            .await
            .unwrap();
        assert!(
            ins.columns().is_empty(),
            "[{k}] INSERT has no result columns"
        );
        for i in 0..100_i64 {
            let n = ins
                .execute(&[
                    i.into(),
                    format!("name-{i}").into(),
                    (i as f64 * 0.5).into(),
                ])
                .await
                .unwrap();
            assert_eq!(n, 1, "[{k}] insert {i}");
        }
    }
    let mut get = conn
        .prepare("SELECT id, name, score FROM ps WHERE id = $1")
        .await
        .unwrap();
    assert_eq!(
        get.columns().names().collect::<Vec<_>>(),
        ["id", "name", "score"],
        "[{k}] columns()"
    );
    for i in (0..100_i64).rev() {
        let rs = get.query(&[i.into()]).await.unwrap();
        assert_eq!(rs.len(), 1, "[{k}] id {i}");
        let r = &rs.results[0];
        assert_eq!(r.get("id"), Some(&RowValues::Int(i)));
        assert_eq!(r.get("name"), Some(&RowValues::Text(format!("name-{i}"))));
        assert_eq!(r.get("score"), Some(&RowValues::Float(i as f64 * 0.5)));
        let (id, name, score): (i64, String, f64) = get.one(&[i.into()]).await.unwrap();
        assert_eq!((id, name, score), (i, format!("name-{i}"), i as f64 * 0.5));
    }
    assert!(
        get.optional::<(i64,)>(&[1000.into()])
            .await
            .unwrap()
            .is_none()
    );
    expect_kind(
        &format!("[{k}] prepared one() without a row"),
        get.one::<(i64,)>(&[1000.into()]).await,
        ErrorKind::NoRows,
    );
    drop(get);
    let mut range = conn
        .prepare("SELECT id FROM ps WHERE id >= $1 AND id < $2 ORDER BY id")
        .await
        .unwrap();
    let ids: Vec<(i64,)> = range.all(&[10.into(), 15.into()]).await.unwrap();
    assert_eq!(ids, [(10,), (11,), (12,), (13,), (14,)]);
    let ids: Vec<(i64,)> = range.all(&[98.into(), 1000.into()]).await.unwrap();
    assert_eq!(ids, [(98,), (99,)]);
    drop(range);
    let mut upd = conn
        .prepare("UPDATE ps SET score = score + 1 WHERE id < $1")
        .await
        .unwrap();
    assert_eq!(upd.execute(&[10.into()]).await.unwrap(), 10);
    assert_eq!(upd.execute(&[0.into()]).await.unwrap(), 0);
}

// ---------------------------------------------------------------------------------------------
// 6. execute_batch
// ---------------------------------------------------------------------------------------------

async fn t_execute_batch(db: &TestDb) {
    let k = db.kind.name();
    let int = db.ty(Logical::Int);
    let text = db.ty(Logical::Text);
    let mut conn = db.conn().await;
    batch(
        &mut conn,
        &format!(
            "CREATE TABLE b1 (id {int} PRIMARY KEY, v {text});
             INSERT INTO b1 (id, v) VALUES (1, 'a; not a separator');
             INSERT INTO b1 (id, v) VALUES (2, 'b');
             -- a comment; with a semicolon
             UPDATE b1 SET v = v || '!' WHERE id = 2;"
        ),
    )
    .await;
    let rs = select(&mut conn, "SELECT v FROM b1 ORDER BY id", &[]).await;
    let vs: Vec<String> = rs.iter().map(|r| r.try_get("v").unwrap()).collect();
    assert_eq!(
        vs,
        ["a; not a separator", "b!"],
        "[{k}] multi-statement script"
    );

    // A failing script leaves nothing behind: not the new table, not the rows before the error.
    let e = expect_kind(
        &format!("[{k}] failing script"),
        conn.execute_batch(&format!(
            "CREATE TABLE b2 (id {int} PRIMARY KEY);
             INSERT INTO b2 (id) VALUES (1);
             INSERT INTO b1 (id, v) VALUES (3, 'c');
             INSERT INTO b1 (id, v) VALUES (1, 'duplicate');
             INSERT INTO b1 (id, v) VALUES (4, 'd');"
        ))
        .await,
        ErrorKind::UniqueViolation,
    );
    assert!(e.driver_code().is_some(), "[{k}] {e:?}");
    assert_eq!(
        count(&mut conn, "b1").await,
        2,
        "[{k}] rows of the failed script"
    );
    // The table the failed script created is gone: creating it again works.
    conn.execute_batch(&format!("CREATE TABLE b2 (id {int} PRIMARY KEY)"))
        .await
        .unwrap_or_else(|e| panic!("[{k}] table b2 of the failed script still exists: {e:?}"));
    let mut other = db.conn().await;
    assert_eq!(count(&mut other, "b1").await, 2, "[{k}] other connection");
    drop(other);

    // A script with its own transaction control runs as written.
    batch(
        &mut conn,
        "BEGIN;
         INSERT INTO b1 (id, v) VALUES (10, 'x');
         INSERT INTO b1 (id, v) VALUES (11, 'y');
         COMMIT;",
    )
    .await;
    assert_eq!(count(&mut conn, "b1").await, 4, "[{k}] own BEGIN/COMMIT");
    let mut other = db.conn().await;
    assert_eq!(
        count(&mut other, "b1").await,
        4,
        "[{k}] own BEGIN/COMMIT, other conn"
    );

    // Inside a Tx the script is part of the transaction.
    let mut tx = conn.begin().await.unwrap();
    tx.execute_batch(
        "INSERT INTO b1 (id, v) VALUES (20, 'p'); INSERT INTO b1 (id, v) VALUES (21, 'q')",
    )
    .await
    .unwrap();
    tx.rollback().await.unwrap();
    assert_eq!(
        count(&mut other, "b1").await,
        4,
        "[{k}] script inside a rolled-back tx"
    );
}

/// A script with its own BEGIN that fails before its COMMIT must not leave the connection inside
/// that transaction: later statements on the same connection must autocommit as usual.
async fn t_execute_batch_own_tx_failure(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "ob", &[("v", Logical::Int)]).await;
    expect_kind(
        &format!("[{k}] failing script with its own BEGIN"),
        conn.execute_batch(
            "BEGIN;
             INSERT INTO ob (id, v) VALUES (1, 1);
             INSERT INTO ob (id, v) VALUES (1, 2);
             COMMIT;",
        )
        .await,
        ErrorKind::UniqueViolation,
    );
    let n = conn
        .query("INSERT INTO ob (id, v) VALUES (2, 2)")
        .dml()
        .await
        .unwrap_or_else(|e| panic!("[{k}] insert after the failed script: {e:?}"));
    assert_eq!(n, 1);
    let mut other = db.conn().await;
    let rs = select(&mut other, "SELECT id FROM ob ORDER BY id", &[]).await;
    let ids: Vec<i64> = rs.iter().map(|r| r.try_get("id").unwrap()).collect();
    assert_eq!(
        ids,
        [2],
        "[{k}] after a failed script with its own BEGIN, a later autocommit insert on the same \
         connection must be visible to others (and nothing of the failed script)"
    );
    drop(conn);
    let mut again = db.conn().await;
    assert_eq!(
        count(&mut again, "ob").await,
        1,
        "[{k}] after the connection was returned"
    );
}

// ---------------------------------------------------------------------------------------------
// 7. placeholder translation
// ---------------------------------------------------------------------------------------------

async fn t_translation(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(
        db,
        &mut conn,
        "tr",
        &[("a", Logical::Int), ("b", Logical::Text)],
    )
    .await;
    dml(
        &mut conn,
        "INSERT INTO tr (id, a, b) VALUES (1, 10, 'x'), (2, 20, 'y'), (3, 10, 'y')",
        &[],
    )
    .await;

    // Out of order: $2 before $1.
    let (id,): (i64,) = conn
        .query("SELECT id FROM tr WHERE a = $2 AND b = $1")
        .params(&["y".into(), 10.into()])
        .one()
        .await
        .unwrap();
    assert_eq!(id, 3, "[{k}] $2 before $1");
    let rs = select(
        &mut conn,
        "SELECT id FROM tr WHERE b = $2 AND a = $1",
        &[20.into(), "y".into()],
    )
    .await;
    assert_eq!(rs.results[0].get("id"), Some(&RowValues::Int(2)), "[{k}]");

    // `$1` in a string literal is text, not a placeholder.
    let rs = select(&mut conn, "SELECT '$1' AS s", &[]).await;
    assert_eq!(
        rs.results[0].get("s"),
        Some(&RowValues::Text("$1".into())),
        "[{k}]"
    );
    let (s, id): (String, i64) = conn
        .query("SELECT '$1 and ''$2''' AS s, id FROM tr WHERE id = $1")
        .params(&[2.into()])
        .one()
        .await
        .unwrap();
    assert_eq!((s.as_str(), id), ("$1 and '$2'", 2), "[{k}]");
    // ... and in a comment.
    let (id,): (i64,) = conn
        .query("SELECT id FROM tr -- where a = $7\n WHERE id = $1 /* $8 */")
        .params(&[1.into()])
        .one()
        .await
        .unwrap();
    assert_eq!(id, 1, "[{k}] placeholders in comments");

    // The same placeholder twice.
    let (n,): (i64,) = conn
        .query("SELECT COUNT(*) FROM tr WHERE a >= $1 AND a <= $1")
        .params(&[10.into()])
        .one()
        .await
        .unwrap();
    assert_eq!(n, 2, "[{k}] repeated $1");
    let (n,): (i64,) = conn
        .query("SELECT COUNT(*) FROM tr WHERE (a = $1 OR id = $1) AND b = $2")
        .params(&[2.into(), "y".into()])
        .one()
        .await
        .unwrap();
    assert_eq!(n, 1, "[{k}] repeated $1 with $2");

    // Prepared statements are translated too.
    let mut st = conn
        .prepare("SELECT id FROM tr WHERE b = $2 AND a = $1 ORDER BY id")
        .await
        .unwrap();
    let ids: Vec<(i64,)> = st.all(&[10.into(), "y".into()]).await.unwrap();
    assert_eq!(ids, [(3,)], "[{k}] prepared, out of order");
    drop(st);

    // Translation off: the SQL goes to the engine unchanged, in its own placeholder style.
    let native = match db.kind {
        Kind::Sqlite | Kind::Turso => "SELECT id FROM tr WHERE a = ?1 AND b = ?2",
        Kind::Postgres => "SELECT id FROM tr WHERE a = $1 AND b = $2",
    };
    let (id,): (i64,) = conn
        .query(native)
        .translation(TranslationMode::Off)
        .params(&[10.into(), "y".into()])
        .one()
        .await
        .unwrap();
    assert_eq!(id, 3, "[{k}] translation off with native placeholders");

    // Pool-wide default off, with a per-call override back on.
    let off = db
        .builder()
        .max_size(1)
        .translation(TranslationMode::Off)
        .build()
        .await
        .unwrap();
    drop(conn);
    let mut c = off.get_connection().await.unwrap();
    let (id,): (i64,) = c
        .query(native)
        .params(&[20.into(), "y".into()])
        .one()
        .await
        .unwrap();
    assert_eq!(id, 2, "[{k}] pool default off");
    let (id,): (i64,) = c
        .query("SELECT id FROM tr WHERE b = $2 AND a = $1")
        .translation(TranslationMode::On)
        .params(&[20.into(), "y".into()])
        .one()
        .await
        .unwrap();
    assert_eq!(id, 2, "[{k}] per-call translation on");
}

// ---------------------------------------------------------------------------------------------
// 8. error kinds
// ---------------------------------------------------------------------------------------------

async fn t_error_kinds(db: &TestDb) {
    let k = db.kind.name();
    let int = db.ty(Logical::Int);
    let text = db.ty(Logical::Text);
    let mut conn = db.conn().await;
    batch(
        &mut conn,
        &format!(
            "CREATE TABLE parent (id {int} PRIMARY KEY);
             CREATE TABLE ek (
                 id {int} PRIMARY KEY,
                 name {text} NOT NULL UNIQUE,
                 qty {int} CHECK (qty >= 0),
                 parent_id {int} REFERENCES parent (id)
             );
             INSERT INTO parent (id) VALUES (1);
             INSERT INTO ek (id, name, qty, parent_id) VALUES (1, 'one', 1, 1);"
        ),
    )
    .await;
    let ins = "INSERT INTO ek (id, name, qty, parent_id) VALUES ($1, $2, $3, $4)";
    let cases: Vec<(&str, Vec<RowValues>, ErrorKind)> = vec![
        (
            "duplicate primary key",
            vec![1.into(), "x".into(), 1.into(), 1.into()],
            ErrorKind::UniqueViolation,
        ),
        (
            "duplicate unique column",
            vec![2.into(), "one".into(), 1.into(), 1.into()],
            ErrorKind::UniqueViolation,
        ),
        (
            "NULL into NOT NULL",
            vec![3.into(), RowValues::Null, 1.into(), 1.into()],
            ErrorKind::NotNullViolation,
        ),
        (
            "CHECK (qty >= 0)",
            vec![4.into(), "four".into(), (-1).into(), 1.into()],
            ErrorKind::CheckViolation,
        ),
        (
            "missing parent row",
            vec![5.into(), "five".into(), 1.into(), 99.into()],
            ErrorKind::ForeignKeyViolation,
        ),
    ];
    for (what, params, kind) in cases {
        let e = expect_kind(
            &format!("[{k}] {what}"),
            conn.query(ins).params(&params).dml().await,
            kind,
        );
        assert!(
            e.driver_code().is_some(),
            "[{k}] {what}: no driver code: {e:?}"
        );
        assert!(
            std::error::Error::source(&e).is_some(),
            "[{k}] {what}: no source: {e:?}"
        );
    }
    expect_kind(
        &format!("[{k}] deleting a referenced parent"),
        conn.query("DELETE FROM parent WHERE id = 1").dml().await,
        ErrorKind::ForeignKeyViolation,
    );
    let e = expect_kind(
        &format!("[{k}] syntax"),
        conn.query("SELEC id FROM ek").select().await,
        ErrorKind::Syntax,
    );
    assert!(e.driver_code().is_some(), "[{k}] syntax: {e:?}");
    let e = expect_kind(
        &format!("[{k}] undefined table"),
        conn.query("SELECT * FROM no_such_table").select().await,
        ErrorKind::UndefinedObject,
    );
    assert!(e.driver_code().is_some(), "[{k}] undefined table: {e:?}");
    expect_kind(
        &format!("[{k}] undefined column"),
        conn.query("SELECT no_such_column FROM ek").select().await,
        ErrorKind::UndefinedObject,
    );
    expect_kind(
        &format!("[{k}] one() without a row"),
        conn.query("SELECT id FROM ek WHERE id = $1")
            .params(&[(-1).into()])
            .one::<(i64,)>()
            .await,
        ErrorKind::NoRows,
    );
    assert_eq!(
        conn.query("SELECT id FROM ek WHERE id = $1")
            .params(&[(-1).into()])
            .optional::<(i64,)>()
            .await
            .unwrap(),
        None
    );
    let e = expect_kind(
        &format!("[{k}] text decoded as i64"),
        conn.query("SELECT name FROM ek WHERE id = 1")
            .one::<(i64,)>()
            .await,
        ErrorKind::TypeMismatch,
    );
    assert!(
        e.message().contains("name"),
        "[{k}] message names the column: {e}"
    );
    let rs = select(&mut conn, "SELECT name FROM ek WHERE id = 1", &[]).await;
    let e = expect_kind(
        &format!("[{k}] try_get text as i64"),
        rs.results[0].try_get::<i64>("name"),
        ErrorKind::TypeMismatch,
    );
    assert!(
        e.message().contains("`name`"),
        "[{k}] message names the column: {e}"
    );
    expect_kind(
        &format!("[{k}] too few parameters"),
        conn.query("SELECT id FROM ek WHERE id = $1 AND name = $2")
            .params(&[1.into()])
            .select()
            .await,
        ErrorKind::ParameterCount,
    );
    expect_kind(
        &format!("[{k}] too many parameters"),
        conn.query("SELECT id FROM ek WHERE id = $1")
            .params(&[1.into(), 2.into()])
            .select()
            .await,
        ErrorKind::ParameterCount,
    );
    // Nothing of the failed inserts was stored, and the connection is fine.
    assert_eq!(count(&mut conn, "ek").await, 1, "[{k}]");
}

// ---------------------------------------------------------------------------------------------
// 9. user FromRow types
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
struct Item {
    id: i64,
    name: String,
    price: f64,
    note: Option<String>,
}

impl FromRow for Item {
    fn from_row<R: SqlRow>(row: &R) -> Result<Self, SqlMiddlewareDbError> {
        Ok(Item {
            id: row.get("id")?,
            name: row.get("name")?,
            price: row.get("price")?,
            note: row.get("note")?,
        })
    }
}

async fn t_from_row(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(
        db,
        &mut conn,
        "items",
        &[
            ("name", Logical::Text),
            ("price", Logical::Float),
            ("note", Logical::Text),
        ],
    )
    .await;
    let items = [
        Item {
            id: 1,
            name: "apple".into(),
            price: 0.5,
            note: None,
        },
        Item {
            id: 2,
            name: "pear".into(),
            price: 0.75,
            note: Some("ripe".into()),
        },
        Item {
            id: 3,
            name: "fig".into(),
            price: 2.0,
            note: Some(String::new()),
        },
    ];
    for it in &items {
        dml(
            &mut conn,
            "INSERT INTO items (id, name, price, note) VALUES ($1, $2, $3, $4)",
            &[
                it.id.into(),
                it.name.as_str().into(),
                it.price.into(),
                it.note.clone().into(),
            ],
        )
        .await;
    }
    // Columns deliberately in another order than the struct's fields.
    let by_id = "SELECT note, price, name, id FROM items WHERE id = $1";
    let one: Item = conn.query(by_id).params(&[2.into()]).one().await.unwrap();
    assert_eq!(one, items[1], "[{k}] one()");
    let some: Option<Item> = conn
        .query(by_id)
        .params(&[1.into()])
        .optional()
        .await
        .unwrap();
    assert_eq!(some.as_ref(), Some(&items[0]), "[{k}] optional() Some");
    let none: Option<Item> = conn
        .query(by_id)
        .params(&[9.into()])
        .optional()
        .await
        .unwrap();
    assert_eq!(none, None, "[{k}] optional() None");
    expect_kind(
        &format!("[{k}] one() None"),
        conn.query(by_id).params(&[9.into()]).one::<Item>().await,
        ErrorKind::NoRows,
    );
    let all: Vec<Item> = conn
        .query("SELECT price, id, note, name FROM items ORDER BY id")
        .all()
        .await
        .unwrap();
    assert_eq!(all, items, "[{k}] all()");
    let empty: Vec<Item> = conn
        .query("SELECT price, id, note, name FROM items WHERE id > $1")
        .params(&[100.into()])
        .all()
        .await
        .unwrap();
    assert!(empty.is_empty());
    let rs = select(&mut conn, "SELECT * FROM items ORDER BY id DESC", &[]).await;
    let decoded: Vec<Item> = rs.decode().unwrap();
    assert_eq!(
        decoded,
        items.iter().rev().cloned().collect::<Vec<_>>(),
        "[{k}] ResultSet::decode"
    );
    let mut st = conn
        .prepare("SELECT id, name, price, note FROM items WHERE price > $1 ORDER BY id")
        .await
        .unwrap();
    let cheap: Vec<Item> = st.all(&[0.6.into()]).await.unwrap();
    assert_eq!(cheap, items[1..], "[{k}] prepared all()");
    // A struct field without a column is an error naming it, not a default.
    let e = expect_kind(
        &format!("[{k}] missing column"),
        conn.query("SELECT id, name, price FROM items WHERE id = 1")
            .one::<Item>()
            .await,
        ErrorKind::ColumnNotFound,
    );
    assert!(e.message().contains("note"), "[{k}] {e}");
}

// ---------------------------------------------------------------------------------------------
// 10. pool
// ---------------------------------------------------------------------------------------------

async fn t_pool_timeout(db: &TestDb) {
    let k = db.kind.name();
    let small = db
        .builder()
        .max_size(1)
        .wait_timeout(Duration::from_millis(100))
        .build()
        .await
        .unwrap();
    let mut held = small.get_connection().await.unwrap();
    let start = Instant::now();
    let r = tokio::time::timeout(Duration::from_secs(5), small.get_connection())
        .await
        .unwrap_or_else(|_| panic!("[{k}] get_connection did not time out within 5 s"));
    let waited = start.elapsed();
    expect_kind(&format!("[{k}] exhausted pool"), r, ErrorKind::PoolTimeout);
    assert!(waited < Duration::from_secs(1), "[{k}] waited {waited:?}");
    assert!(
        waited >= Duration::from_millis(80),
        "[{k}] gave up after only {waited:?}"
    );
    // The held connection still works, and once returned the pool hands it out again.
    let (one,): (i64,) = held.query("SELECT 1").one().await.unwrap();
    assert_eq!(one, 1);
    drop(held);
    let mut again = small.get_connection().await.unwrap();
    let (two,): (i64,) = again.query("SELECT 2").one().await.unwrap();
    assert_eq!(two, 2);
    let status = small.status();
    assert_eq!((status.max_size, status.size), (1, 1), "[{k}] {status:?}");
}

async fn t_pipeline(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "pl", &[("v", Logical::Text)]).await;
    dml(
        &mut conn,
        "INSERT INTO pl (id, v) VALUES (1, 'a'), (2, 'b'), (3, 'c')",
        &[],
    )
    .await;
    let sets: [&[RowValues]; 4] = [&[3.into()], &[1.into()], &[9.into()], &[2.into()]];
    let out = conn
        .pipeline("SELECT v FROM pl WHERE id = $1", &sets)
        .await
        .unwrap();
    let got: Vec<Option<RowValues>> = out
        .iter()
        .map(|rs| rs.results.first().and_then(|r| r.get("v").cloned()))
        .collect();
    assert_eq!(
        got,
        [
            Some(RowValues::Text("c".into())),
            Some(RowValues::Text("a".into())),
            None,
            Some(RowValues::Text("b".into())),
        ],
        "[{k}] pipeline results in order"
    );
}

/// A connection goes back to the pool outside any transaction: a script that began one and
/// never ended it is rolled back on return, so the idle connection holds no lock and its write
/// is gone. Another connection then writes the same row at once (SQLite and Turso would report
/// `Busy` after the 200 ms busy timeout; Postgres would wait on the row lock forever).
async fn t_return_rolls_back_open_tx(db: &TestDb) {
    let k = db.kind.name();
    let mut builder = db.builder().max_size(2);
    if db.kind != Kind::Postgres {
        builder = builder.busy_timeout(Duration::from_millis(200));
    }
    let pool = builder.build().await.unwrap();
    let mut a = pool.get_connection().await.unwrap();
    let mut b = pool.get_connection().await.unwrap();
    batch(
        &mut a,
        "CREATE TABLE ret (id BIGINT PRIMARY KEY, v BIGINT NOT NULL)",
    )
    .await;
    for round in 0..3_i64 {
        batch(
            &mut a,
            &format!("BEGIN; INSERT INTO ret (id, v) VALUES ({round}, 1)"),
        )
        .await;
        drop(a);
        let r = tokio::time::timeout(
            Duration::from_secs(5),
            b.query("INSERT INTO ret (id, v) VALUES ($1, 2)")
                .params(&[round.into()])
                .dml(),
        )
        .await
        .unwrap_or_else(|_| {
            panic!("[{k}] round {round}: the returned connection still holds its lock")
        });
        assert_eq!(
            r.unwrap_or_else(|e| panic!("[{k}] round {round}: write after return failed: {e:?}")),
            1
        );
        a = pool.get_connection().await.unwrap();
    }
    let rows = select(&mut a, "SELECT v FROM ret ORDER BY id", &[]).await;
    let vs: Vec<Option<&RowValues>> = rows.results.iter().map(|r| r.get("v")).collect();
    assert_eq!(
        vs,
        [Some(&RowValues::Int(2)); 3],
        "[{k}] only the second writer's rows exist"
    );
}

/// A task that loops over calls lets the other tasks of its thread run: SQLite and Turso calls
/// complete without waiting, so only the middleware's cooperative-budget yield (about every 512
/// calls) gives the thread back. On a current-thread runtime, a counter task counts how often
/// it ran while another task made 4096 calls; without the yields it would never run.
async fn t_calls_yield_to_other_tasks(db: &TestDb) {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU64, Ordering};
    const CALLS: u64 = 4096;
    let k = db.kind.name();
    let builder = db.builder().max_size(1);
    let ran = tokio::task::spawn_blocking(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let pool = builder.build().await.unwrap();
            let mut conn = pool.get_connection().await.unwrap();
            let mut stmt = conn.prepare("SELECT 1").await.unwrap();
            let ticks = Arc::new(AtomicU64::new(0));
            let counter = {
                let ticks = Arc::clone(&ticks);
                tokio::spawn(async move {
                    loop {
                        ticks.fetch_add(1, Ordering::Relaxed);
                        tokio::task::yield_now().await;
                    }
                })
            };
            for _ in 0..CALLS {
                let (one,): (i64,) = stmt.one(&[]).await.unwrap();
                assert_eq!(one, 1);
            }
            let ran = ticks.load(Ordering::Relaxed);
            counter.abort();
            ran
        })
    })
    .await
    .unwrap();
    println!("calls_yield backend={k} calls={CALLS} other_task_ran={ran}");
    assert!(
        ran >= CALLS / 1024,
        "[{k}] another task ran only {ran} times during {CALLS} calls on its thread"
    );
}

backend_tests! {
    async fn round_trip_values(db) { t_round_trip_values(&db).await }
    async fn round_trip_nulls(db) { t_round_trip_nulls(&db).await }
    async fn round_trip_numeric(db) { t_round_trip_numeric(&db).await }
    async fn round_trip_json_scalars(db) { t_round_trip_json_scalars(&db).await }
    async fn round_trip_float_specials(db) { t_round_trip_float_specials(&db).await }
    async fn round_trip_subsecond_timestamps(db) { t_round_trip_subsecond_timestamps(&db).await }
    async fn round_trip_big_blob(db) { t_round_trip_big_blob(&db).await }
    async fn columns_by_name(db) { t_columns_by_name(&db).await }
    async fn columns_follow_schema_change(db) { t_columns_follow_schema_change(&db).await }
    async fn dml_counts(db) { t_dml_counts(&db).await }
    async fn dml_count_of_ddl(db) { t_dml_count_of_ddl(&db).await }
    async fn tx_commit_visible(db) { t_tx_commit_visible(&db).await }
    async fn tx_rollback(db) { t_tx_rollback(&db).await }
    async fn tx_drop_rolls_back(db) { t_tx_drop_rolls_back(&db).await }
    async fn tx_error_aborts(db) { t_tx_error_aborts(&db).await }
    async fn prepared_reuse(db) { t_prepared_reuse(&db).await }
    async fn execute_batch(db) { t_execute_batch(&db).await }
    async fn execute_batch_own_tx_failure(db) { t_execute_batch_own_tx_failure(&db).await }
    async fn translation(db) { t_translation(&db).await }
    async fn error_kinds(db) { t_error_kinds(&db).await }
    async fn from_row(db) { t_from_row(&db).await }
    async fn pool_timeout(db) { t_pool_timeout(&db).await }
    async fn return_rolls_back_open_tx(db) { t_return_rolls_back_open_tx(&db).await }
    async fn calls_yield_to_other_tasks(db) { t_calls_yield_to_other_tasks(&db).await }
    async fn pipeline(db) { t_pipeline(&db).await }
    async fn params_convert_to_column_type(db) { t_params_convert_to_column_type(&db).await }
    async fn long_statements(db) { t_long_statements(&db).await }
    async fn cancelled_query(db) { t_cancelled_query(&db).await }
    async fn concurrent_writers(db) { t_concurrent_writers(&db).await }
    async fn raw_access(db) { t_raw_access(&db).await }
}
