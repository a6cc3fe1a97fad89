//! Values in and out: every `RowValues` kind round-trips exactly (NULLs, NUMERIC, JSON scalars,
//! special floats, sub-second timestamps, big blobs), parameters convert to the column's type,
//! and placeholders are translated for each engine.
//!
//! On MySQL a value reads back as the kind its column holds (`helpers::read_back`: `BOOLEAN`
//! is an integer, `DATETIME` has no zone, a UUID in `CHAR(36)` is text, `JSON` is text on
//! MariaDB) and decodes into the Rust type that went in.

use std::str::FromStr;

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Timelike, Utc};
use rust_decimal::Decimal;
use serde_json::json;
use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;
use uuid::Uuid;

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb, expect_kind};
use crate::helpers::*;

// ---------------------------------------------------------------------------------------------
// value round trips
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

        // Through the ResultSet: exactly the RowValues that went in (on MySQL, as its columns
        // hold them).
        let mut expected = vec![("id", RowValues::Int(id))];
        expected.extend(
            RT_COLS
                .iter()
                .map(|(n, _)| *n)
                .zip(read_back_row(db, &r.values()).await),
        );
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
/// MySQL's `DECIMAL(p,s)` has a fixed scale: the value comes back exact, at the column's scale
/// (`1.50` as `1.5000…`), so there the values compare as numbers. Its column here is the
/// widest that holds them all: 29 integer digits and 28 decimal places.
async fn t_round_trip_numeric(db: &TestDb) {
    let mut conn = db.conn().await;
    let cols = [("n", Logical::Numeric)];
    match db.kind {
        Kind::Mysql => {
            batch(
                &mut conn,
                "CREATE TABLE num (id BIGINT PRIMARY KEY, n DECIMAL(57,28))",
            )
            .await
        }
        Kind::Sqlite | Kind::Postgres | Kind::Turso => {
            create_table(db, &mut conn, "num", &cols).await
        }
    }
    let same = |got: &Decimal, want: &Decimal| match db.kind {
        Kind::Mysql => got == want,
        Kind::Sqlite | Kind::Postgres | Kind::Turso => got.to_string() == want.to_string(),
    };
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
            Some(RowValues::Numeric(got)) if same(got, &d) => {}
            other => bad.push(format!("  {v}: ResultSet gave {other:?}")),
        }
        match row.try_get::<Decimal>("n") {
            Ok(got) if same(&got, &d) => {}
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

/// JSON scalars (numbers, strings, booleans, JSON `null`) come back as JSON, not as SQL values
/// (on MariaDB as the JSON text, which decodes into `serde_json::Value` all the same).
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
        if got != Some(read_back(db, &RowValues::JSON(v.clone())).await) {
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
/// as an integer on disk, so `-0.0` comes back as `+0.0`; MySQL drops the sign of zero too
/// (already when it reads the parameter). Postgres `float8` and Turso keep the sign of zero.
/// MySQL's `DOUBLE` has no infinities: binding one is a `ParameterType` error, and nothing is
/// stored.
async fn t_round_trip_float_specials(db: &TestDb) {
    let mut conn = db.conn().await;
    let cols = [("f", Logical::Float)];
    create_table(db, &mut conn, "fl", &cols).await;
    if db.kind == Kind::Mysql {
        for (k, v) in [f64::INFINITY, f64::NEG_INFINITY].into_iter().enumerate() {
            expect_kind(
                &format!("[{}] {v} into DOUBLE", db.kind.name()),
                conn.query("INSERT INTO fl (id, f) VALUES ($1, $2)")
                    .params(&[RowValues::Int(100 + k as i64), RowValues::Float(v)])
                    .dml()
                    .await,
                ErrorKind::ParameterType,
            );
        }
        assert_eq!(count(&mut conn, "fl").await, 0, "[mysql] nothing stored");
    }
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
    let finite = |v: &f64| db.kind != Kind::Mysql || v.is_finite();
    for (k, v) in values.iter().enumerate().filter(|(_, v)| finite(v)) {
        dml(
            &mut conn,
            "INSERT INTO fl (id, f) VALUES ($1, $2)",
            &[RowValues::Int(k as i64), RowValues::Float(*v)],
        )
        .await;
    }
    for (k, v) in values.iter().enumerate().filter(|(_, v)| finite(v)) {
        let rs = select(
            &mut conn,
            "SELECT f FROM fl WHERE id = $1",
            &[RowValues::Int(k as i64)],
        )
        .await;
        let got = rs.results[0].try_get::<f64>("f").unwrap();
        let expected_bits = match db.kind {
            // Engine difference: the sign of zero is lost by SQLite's REAL storage and by
            // MySQL.
            Kind::Sqlite | Kind::Mysql if *v == 0.0 => 0.0_f64.to_bits(),
            Kind::Sqlite | Kind::Postgres | Kind::Turso | Kind::Mysql => v.to_bits(),
        };
        assert_eq!(
            got.to_bits(),
            expected_bits,
            "[{}] float {v:e} came back as {got:e}",
            db.kind.name()
        );
        assert_eq!(
            rs.results[0].get("f"),
            Some(&RowValues::Float(f64::from_bits(expected_bits)))
        );
    }
}

/// Sub-microsecond timestamps. SQLite and Turso store the text form with nanoseconds, so they
/// round-trip exactly; Postgres and MySQL (`DATETIME(6)`) store microseconds, so the value
/// comes back at microsecond precision. (The sub-µs part below is 400 ns, so truncation and
/// rounding agree.)
/// Sub-second timestamps round-trip exactly: to the nanosecond on SQLite and Turso (stored as
/// text); on Postgres and MySQL, which keep microseconds, a value with finer digits is refused
/// with `ParameterType` (never silently truncated) and its microsecond form round-trips.
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
    let micros_only = matches!(db.kind, Kind::Postgres | Kind::Mysql);
    for (k, n) in naive.iter().enumerate() {
        let sql = "INSERT INTO sub (id, ts, tz) VALUES ($1, $2, $3)";
        let finer = n.nanosecond() % 1_000 != 0;
        if micros_only && finer {
            for v in [
                RowValues::Timestamp(*n),
                RowValues::TimestampTz(n.and_utc()),
            ] {
                let r = conn
                    .query(sql)
                    .params(&[RowValues::Int(k as i64), v.clone(), RowValues::Null])
                    .dml()
                    .await;
                expect_kind(
                    &format!("[{}] {v:?}", db.kind.name()),
                    r,
                    ErrorKind::ParameterType,
                );
            }
        }
        let stored = if micros_only {
            n.with_nanosecond(n.nanosecond() / 1_000 * 1_000).unwrap()
        } else {
            *n
        };
        dml(
            &mut conn,
            sql,
            &[
                RowValues::Int(k as i64),
                RowValues::Timestamp(stored),
                RowValues::TimestampTz(stored.and_utc()),
            ],
        )
        .await;
    }
    for (k, n) in naive.iter().enumerate() {
        let want = if micros_only {
            n.with_nanosecond(n.nanosecond() / 1_000 * 1_000).unwrap()
        } else {
            *n
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
                (
                    "tz",
                    read_back(db, &RowValues::TimestampTz(want.and_utc())).await,
                ),
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
    // MySQL's DATETIME takes no zone: text with an offset is refused, text in UTC is taken.
    let tz_text = match db.kind {
        Kind::Mysql => {
            expect_kind(
                &format!("[{k}] text with an offset into DATETIME"),
                conn.query("INSERT INTO cv (id, tz) VALUES ($1, $2)")
                    .params(&[3.into(), "2024-01-02T03:04:05+02:00".into()])
                    .dml()
                    .await,
                ErrorKind::ParameterType,
            );
            "2024-01-02 01:04:05"
        }
        Kind::Sqlite | Kind::Postgres | Kind::Turso => "2024-01-02T03:04:05+02:00",
    };
    dml(
        &mut conn,
        "INSERT INTO cv (id, ts, tz, d, u, j) VALUES ($1, $2, $3, $4, $5, $6)",
        &[
            2.into(),
            "2024-01-02 03:04:05".into(),
            tz_text.into(),
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
    // On MySQL the text stays text where the column is text (`CHAR(36)`, MariaDB's `JSON`).
    let (uuid_back, json_back) = match db.kind {
        Kind::Mysql => (
            RowValues::Text(u.into()),
            if db.is_mariadb().await {
                RowValues::Text(r#"{"a": [1, 2]}"#.into())
            } else {
                RowValues::JSON(json!({"a": [1, 2]}))
            },
        ),
        Kind::Sqlite | Kind::Postgres | Kind::Turso => (
            RowValues::Uuid(Uuid::parse_str(u).unwrap()),
            RowValues::JSON(json!({"a": [1, 2]})),
        ),
    };
    assert_row(
        db,
        "text parameters into typed columns",
        &rs.results[0],
        &[
            ("ts", RowValues::Timestamp(ts(2024, 1, 2, 3, 4, 5, 0))),
            (
                "tz",
                read_back(
                    db,
                    &RowValues::TimestampTz(Utc.with_ymd_and_hms(2024, 1, 2, 1, 4, 5).unwrap()),
                )
                .await,
            ),
            ("d", RowValues::Date(date(2024, 1, 2))),
            ("u", uuid_back),
            ("j", json_back),
        ],
    );
    // And they decode into the Rust types on every backend.
    let (tz, uu, jj): (DateTime<Utc>, Uuid, serde_json::Value) = conn
        .query("SELECT tz, u, j FROM cv WHERE id = 2")
        .one()
        .await
        .unwrap();
    assert_eq!(
        (tz, uu, jj),
        (
            Utc.with_ymd_and_hms(2024, 1, 2, 1, 4, 5).unwrap(),
            Uuid::parse_str(u).unwrap(),
            json!({"a": [1, 2]})
        ),
        "[{k}]"
    );
}

// ---------------------------------------------------------------------------------------------
// placeholder translation
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
    let native = format!(
        "SELECT id FROM tr WHERE a = {} AND b = {}",
        db.sql().param(1),
        db.sql().param(2)
    );
    let (id,): (i64,) = conn
        .query(&native)
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
        .query(&native)
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

/// The kinds added for Postgres' types (`Time`, `Interval`, `Array`) round-trip on every
/// backend: natively on Postgres, as their documented text forms on SQLite and Turso, read back
/// by the declared type; as parameters, as `ResultSet` values and through typed decoding.
async fn t_round_trip_time_interval_arrays(db: &TestDb) {
    if db.kind == Kind::Mysql {
        return mysql_time_interval_arrays(db).await;
    }
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let cols = [
        ("tm", Logical::Time),
        ("iv", Logical::Interval),
        ("ia", Logical::IntArray),
        ("ta", Logical::TextArray),
    ];
    create_table(db, &mut conn, "ext", &cols).await;
    let rows = [
        vec![
            RowValues::Time(chrono::NaiveTime::from_hms_micro_opt(23, 59, 59, 999_999).unwrap()),
            RowValues::Interval(sql_middleware::Interval {
                months: -14,
                days: 3,
                microseconds: 86_399_000_001,
            }),
            RowValues::Array(vec![
                RowValues::Int(i64::MAX),
                RowValues::Null,
                RowValues::Int(-1),
            ]),
            RowValues::array(["", "with, comma", "quote \" and ✓", "NULL"]),
        ],
        vec![
            RowValues::Time(chrono::NaiveTime::MIN),
            RowValues::Interval(sql_middleware::Interval::default()),
            RowValues::Array(vec![]),
            RowValues::Array(vec![RowValues::Null]),
        ],
        vec![
            RowValues::Null,
            RowValues::Null,
            RowValues::Null,
            RowValues::Null,
        ],
    ];
    let insert = insert_sql("ext", &cols);
    for (i, r) in rows.iter().enumerate() {
        let mut params = vec![RowValues::Int(i as i64 + 1)];
        params.extend(r.iter().cloned());
        assert_eq!(dml(&mut conn, &insert, &params).await, 1, "[{k}] row {i}");
    }
    let rs = select(&mut conn, "SELECT tm, iv, ia, ta FROM ext ORDER BY id", &[]).await;
    for (i, r) in rows.iter().enumerate() {
        for ((col, _), v) in cols.iter().zip(r) {
            assert_eq!(
                rs.results[i].get(col),
                Some(v),
                "[{k}] row {i} column {col}"
            );
        }
    }
    type Typed = (
        chrono::NaiveTime,
        sql_middleware::Interval,
        Vec<Option<i64>>,
        Vec<String>,
    );
    let got: Typed = conn
        .query("SELECT tm, iv, ia, ta FROM ext WHERE id = 1")
        .one()
        .await
        .unwrap_or_else(|e| panic!("[{k}] typed: {e:?}"));
    assert_eq!(
        got,
        (
            chrono::NaiveTime::from_hms_micro_opt(23, 59, 59, 999_999).unwrap(),
            sql_middleware::Interval {
                months: -14,
                days: 3,
                microseconds: 86_399_000_001
            },
            vec![Some(i64::MAX), None, Some(-1)],
            vec![
                "".to_owned(),
                "with, comma".into(),
                "quote \" and ✓".into(),
                "NULL".into()
            ],
        ),
        "[{k}]"
    );
}

/// An interval as one signed count of microseconds (MySQL's `TIME` has no months, so a day
/// is 24 hours there).
fn interval_micros(i: &sql_middleware::Interval) -> i64 {
    i64::from(i.days) * 86_400_000_000 + i.microseconds
}

/// [`t_round_trip_time_interval_arrays`] on MySQL: `TIME(6)` holds both kinds. A value within a
/// day reads back as `Time`, one outside it (negative, or 24 hours and more) as an `Interval`
/// of no months; both decode into either type. An `Interval` with months, or beyond `TIME`'s
/// ±838:59:59, cannot be bound (`ParameterType`), and neither can an array (MySQL has none).
async fn mysql_time_interval_arrays(db: &TestDb) {
    use sql_middleware::Interval;
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let cols = [
        ("tm", Logical::Time),
        ("iv", Logical::Interval),
        ("ia", Logical::IntArray),
        ("ta", Logical::TextArray),
    ];
    create_table(db, &mut conn, "ext", &cols).await;
    let late = chrono::NaiveTime::from_hms_micro_opt(23, 59, 59, 999_999).unwrap();
    let back = Interval {
        months: 0,
        days: 0,
        microseconds: -86_399_000_001,
    };
    let long = Interval {
        months: 0,
        days: 1,
        microseconds: 3_600_000_000,
    };
    let insert = "INSERT INTO ext (id, tm, iv) VALUES ($1, $2, $3)";
    for (id, tm, iv) in [
        (1, RowValues::Time(late), RowValues::Interval(back)),
        (
            2,
            RowValues::Time(chrono::NaiveTime::MIN),
            RowValues::Interval(long),
        ),
        (3, RowValues::Null, RowValues::Null),
        (
            4,
            RowValues::Interval(Interval::default()),
            RowValues::Time(late),
        ),
    ] {
        assert_eq!(
            dml(&mut conn, insert, &[RowValues::Int(id), tm, iv]).await,
            1,
            "[{k}] row {id}"
        );
    }
    let rs = select(&mut conn, "SELECT tm, iv FROM ext ORDER BY id", &[]).await;
    let got: Vec<(Option<&RowValues>, Option<&RowValues>)> = rs
        .results
        .iter()
        .map(|r| (r.get("tm"), r.get("iv")))
        .collect();
    let micros = |v: Option<&RowValues>| match v {
        Some(RowValues::Interval(i)) if i.months == 0 => Some(interval_micros(i)),
        _ => None,
    };
    assert_eq!(got[0].0, Some(&RowValues::Time(late)), "[{k}] {got:?}");
    assert_eq!(micros(got[0].1), Some(-86_399_000_001), "[{k}] {got:?}");
    assert_eq!(
        got[1].0,
        Some(&RowValues::Time(chrono::NaiveTime::MIN)),
        "[{k}] {got:?}"
    );
    assert_eq!(micros(got[1].1), Some(90_000_000_000), "[{k}] {got:?}");
    assert_eq!(
        got[2],
        (Some(&RowValues::Null), Some(&RowValues::Null)),
        "[{k}]"
    );
    // Within a day an interval is a time of day, and the other way round.
    assert_eq!(
        got[3],
        (
            Some(&RowValues::Time(chrono::NaiveTime::MIN)),
            Some(&RowValues::Time(late))
        ),
        "[{k}]"
    );
    // Typed decoding: either Rust type from either kind.
    let (tm, iv): (chrono::NaiveTime, Interval) = conn
        .query("SELECT tm, iv FROM ext WHERE id = 1")
        .one()
        .await
        .unwrap_or_else(|e| panic!("[{k}] typed: {e:?}"));
    assert_eq!((tm, interval_micros(&iv)), (late, -86_399_000_001), "[{k}]");
    let (short,): (Interval,) = conn
        .query("SELECT iv FROM ext WHERE id = 4")
        .one()
        .await
        .unwrap_or_else(|e| panic!("[{k}] a TIME within a day decoded as an Interval: {e:?}"));
    assert_eq!(interval_micros(&short), 86_399_999_999, "[{k}]");
    // What TIME cannot hold is refused before the server, and nothing is stored.
    for (what, v) in [
        (
            "an interval with months",
            RowValues::Interval(Interval {
                months: -14,
                days: 3,
                microseconds: 0,
            }),
        ),
        (
            "an interval beyond 838:59:59",
            RowValues::Interval(Interval {
                months: 0,
                days: 35,
                microseconds: 0,
            }),
        ),
        (
            "an integer array",
            RowValues::Array(vec![RowValues::Int(1), RowValues::Null]),
        ),
        ("a text array", RowValues::array(["a", "b"])),
        ("an empty array", RowValues::Array(vec![])),
    ] {
        let col = if matches!(v, RowValues::Array(_)) {
            "ia"
        } else {
            "iv"
        };
        expect_kind(
            &format!("[{k}] {what}"),
            conn.query(&format!("INSERT INTO ext (id, {col}) VALUES ($1, $2)"))
                .params(&[RowValues::Int(9), v])
                .dml()
                .await,
            ErrorKind::ParameterType,
        );
    }
    assert_eq!(
        count(&mut conn, "ext").await,
        4,
        "[{k}] nothing more stored"
    );
}

backend_tests! {
    async fn round_trip_time_interval_arrays(db) { t_round_trip_time_interval_arrays(&db).await }
    async fn round_trip_values(db) { t_round_trip_values(&db).await }
    async fn round_trip_nulls(db) { t_round_trip_nulls(&db).await }
    async fn round_trip_numeric(db) { t_round_trip_numeric(&db).await }
    async fn round_trip_json_scalars(db) { t_round_trip_json_scalars(&db).await }
    async fn round_trip_float_specials(db) { t_round_trip_float_specials(&db).await }
    async fn round_trip_subsecond_timestamps(db) { t_round_trip_subsecond_timestamps(&db).await }
    async fn round_trip_big_blob(db) { t_round_trip_big_blob(&db).await }
    async fn params_convert_to_column_type(db) { t_params_convert_to_column_type(&db).await }
    async fn translation(db) { t_translation(&db).await }
}
