//! A value is never silently changed (property test): every value the crate binds, generated at
//! and beyond each engine's limits, either round-trips exactly or is refused with a typed error
//! before anything is written.
//!
//! Each case writes one row per logical type into a column wide enough for the type (see
//! `common::backends::ty`), then:
//! - when the write returns `Ok`, the value is read back through the crate (decoded into the
//!   Rust type that went in) and through the engine's own driver (an independent connection
//!   on SQLite and MySQL; the pooled connection's raw handle on Postgres and Turso), and both
//!   must equal the value bound;
//! - when it fails, the error must be a typed refusal (`ParameterType` or `InvalidInput`), and
//!   the row must not exist.
//!
//! The generated values include each type's edges: `i64::MIN`/`MAX`; the largest, smallest,
//! subnormal, negative-zero and non-finite floats; empty, 4-byte UTF-8, NUL-holding and large
//! text; every byte value and large blobs; dates and timestamps from chrono's minimum to its
//! maximum (past every engine's range in both directions), with nanoseconds and leap seconds;
//! decimals at rust_decimal's limits; nil and max UUIDs; nested and large JSON.
//!
//! Every edge value runs once, then `VALUE_LIMIT_CASES` generated rows of ordinary values
//! (default 24). Prints `value_limits backend=X cases=N values=V round_trips=R refused=F`.

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use rust_decimal::Decimal;
use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;
use uuid::Uuid;

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb};
use crate::common::reliability::{knob_usize, seed_for};
use crate::helpers::*;

/// A bound value of one logical type, in its Rust form.
#[derive(Debug, Clone)]
enum V {
    Int(i64),
    Float(f64),
    Text(String),
    Blob(Vec<u8>),
    Bool(bool),
    Timestamp(NaiveDateTime),
    TimestampTz(DateTime<Utc>),
    Date(NaiveDate),
    Time(NaiveTime),
    Numeric(Decimal),
    /// A decimal wider than a `Decimal` holds, bound as its text into the decimal column.
    WideDecimal(&'static str),
    Uuid(Uuid),
    Json(serde_json::Value),
}

impl V {
    fn logical(&self) -> Logical {
        match self {
            V::Int(_) => Logical::Int,
            V::Float(_) => Logical::Float,
            V::Text(_) => Logical::Text,
            V::Blob(_) => Logical::Blob,
            V::Bool(_) => Logical::Bool,
            V::Timestamp(_) => Logical::Timestamp,
            V::TimestampTz(_) => Logical::TimestampTz,
            V::Date(_) => Logical::Date,
            V::Time(_) => Logical::Time,
            V::Numeric(_) | V::WideDecimal(_) => Logical::Numeric,
            V::Uuid(_) => Logical::Uuid,
            V::Json(_) => Logical::Json,
        }
    }

    fn column(&self) -> &'static str {
        match self {
            V::Int(_) => "c_int",
            V::Float(_) => "c_float",
            V::Text(_) => "c_text",
            V::Blob(_) => "c_blob",
            V::Bool(_) => "c_bool",
            V::Timestamp(_) => "c_ts",
            V::TimestampTz(_) => "c_tz",
            V::Date(_) => "c_date",
            V::Time(_) => "c_time",
            V::Numeric(_) | V::WideDecimal(_) => "c_num",
            V::Uuid(_) => "c_uuid",
            V::Json(_) => "c_json",
        }
    }

    fn bind(&self) -> RowValues {
        match self {
            V::Int(v) => RowValues::Int(*v),
            V::Float(v) => RowValues::Float(*v),
            V::Text(v) => RowValues::Text(v.clone()),
            V::Blob(v) => RowValues::Blob(v.clone()),
            V::Bool(v) => RowValues::Bool(*v),
            V::Timestamp(v) => RowValues::Timestamp(*v),
            V::TimestampTz(v) => RowValues::TimestampTz(*v),
            V::Date(v) => RowValues::Date(*v),
            V::Time(v) => RowValues::Time(*v),
            V::Numeric(v) => RowValues::Numeric(*v),
            V::WideDecimal(v) => RowValues::Text((*v).to_owned()),
            V::Uuid(v) => RowValues::Uuid(*v),
            V::Json(v) => RowValues::JSON(v.clone()),
        }
    }

    /// The value as compared: one text per logical type, independent of the engine.
    fn canon(&self) -> String {
        match self {
            V::Int(v) => v.to_string(),
            V::Float(v) => float_canon(*v),
            V::Text(v) => format!("{v:?}"),
            V::Blob(v) => hex(v),
            V::Bool(v) => v.to_string(),
            V::Timestamp(v) => ts_canon(v),
            V::TimestampTz(v) => ts_canon(&v.naive_utc()),
            V::Date(v) => v.format("%Y-%m-%d").to_string(),
            V::Time(v) => v.format("%H:%M:%S%.9f").to_string(),
            V::Numeric(v) => decimal_canon(&v.to_string()),
            V::WideDecimal(v) => decimal_canon(v),
            V::Uuid(v) => v.hyphenated().to_string(),
            V::Json(v) => json_canon(v),
        }
    }
}

/// A float by its bits, except the sign of zero: `-0.0 == 0.0`, and SQLite and MySQL store
/// both as one zero.
fn float_canon(f: f64) -> String {
    let f = if f == 0.0 { 0.0 } else { f };
    format!("{f:e} ({:016x})", f.to_bits())
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2 + 8);
    s.push_str(&format!("{} bytes ", b.len()));
    for x in b.iter().take(64) {
        s.push_str(&format!("{x:02x}"));
    }
    // A digest of the rest, so large values compare whole without printing them whole.
    let sum = b.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, x| {
        (h ^ u64::from(*x)).wrapping_mul(0x0100_0000_01b3)
    });
    s.push_str(&format!(" #{sum:016x}"));
    s
}

fn ts_canon(t: &NaiveDateTime) -> String {
    t.format("%Y-%m-%d %H:%M:%S%.9f").to_string()
}

/// A decimal text with trailing fractional zeros, a lone point, leading zeros and the sign of
/// zero removed: the same number written the same way.
fn decimal_canon(s: &str) -> String {
    let s = s.trim();
    let (neg, digits) = match s.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let int = int.trim_start_matches('0');
    let frac = frac.trim_end_matches('0');
    let int = if int.is_empty() { "0" } else { int };
    let body = if frac.is_empty() {
        int.to_owned()
    } else {
        format!("{int}.{frac}")
    };
    if neg && body != "0" {
        format!("-{body}")
    } else {
        body
    }
}

/// JSON with object keys sorted, numbers as serde_json writes them.
fn json_canon(v: &serde_json::Value) -> String {
    fn sorted(v: &serde_json::Value) -> serde_json::Value {
        match v {
            serde_json::Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&m[k]));
                }
                serde_json::Value::Object(out)
            }
            serde_json::Value::Array(a) => serde_json::Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    // Keys are inserted in sorted order; `to_string` keeps that order (or sorts, without
    // `preserve_order`): the same document always prints the same.
    let s = sorted(v);
    let mut pairs: Vec<String> = Vec::new();
    if let serde_json::Value::Object(m) = &s {
        for (k, v) in m {
            pairs.push(format!("{k:?}:{}", json_canon(v)));
        }
        pairs.sort();
        return format!("{{{}}}", pairs.join(","));
    }
    if let serde_json::Value::Array(a) = &s {
        return format!(
            "[{}]",
            a.iter().map(json_canon).collect::<Vec<_>>().join(",")
        );
    }
    s.to_string()
}

// ---------------------------------------------------------------------------------------------
// generators: each type's edges, mixed with ordinary values
// ---------------------------------------------------------------------------------------------

fn naive(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, nano: u32) -> NaiveDateTime {
    NaiveDate::from_ymd_opt(y, mo, d)
        .expect("date")
        .and_hms_nano_opt(h, mi, s, nano)
        .expect("time")
}

fn timestamp_edges() -> Vec<NaiveDateTime> {
    vec![
        NaiveDateTime::MIN,
        NaiveDateTime::MAX,
        naive(-4713, 11, 24, 0, 0, 0, 0),
        naive(-1, 12, 31, 23, 59, 59, 999_999_000),
        naive(0, 1, 1, 0, 0, 0, 0),
        naive(1, 1, 1, 0, 0, 0, 0),
        naive(999, 12, 31, 23, 59, 59, 0),
        naive(1000, 1, 1, 0, 0, 0, 0),
        naive(1969, 12, 31, 23, 59, 59, 999_999_000),
        naive(1970, 1, 1, 0, 0, 0, 0),
        naive(2038, 1, 19, 3, 14, 8, 0),
        naive(9999, 12, 31, 23, 59, 59, 999_999_000),
        naive(10000, 1, 1, 0, 0, 0, 0),
        naive(-4714, 12, 31, 23, 59, 59, 0),
        naive(262_142, 12, 31, 23, 59, 59, 999_999_000),
        // Finer than a microsecond, and a leap second.
        naive(2024, 5, 6, 7, 8, 9, 123_456_789),
        naive(2016, 12, 31, 23, 59, 59, 1_500_000_000),
    ]
}

/// Ordinary timestamps, to the microsecond.
fn timestamps() -> BoxedStrategy<NaiveDateTime> {
    (0i64..4_102_444_800, 0u32..1_000_000)
        .prop_map(|(s, us)| {
            DateTime::from_timestamp(s, us * 1000)
                .expect("in range")
                .naive_utc()
        })
        .boxed()
}

fn float_edges() -> Vec<f64> {
    vec![
        f64::MAX,
        f64::MIN,
        f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        -0.0,
        0.0,
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.1,
        1.0 / 3.0,
        9_007_199_254_740_993.0,
    ]
}

fn text_edges() -> Vec<String> {
    vec![
        String::new(),
        "😀🎉 ünïcödé 你好 \u{10FFFF}\u{FFFE}".to_owned(),
        "a\0b".to_owned(),
        "'; --\"\\`$1?".to_owned(),
        "x".repeat(70_000),
        "🦀".repeat(20_000),
    ]
}

fn blob_edges() -> Vec<Vec<u8>> {
    vec![
        Vec::new(),
        (0..=255u8).collect(),
        vec![0u8; 3],
        (0..300_000u32).map(|i| (i % 251) as u8).collect(),
    ]
}

fn date_edges() -> Vec<NaiveDate> {
    let d = |y, m, d| NaiveDate::from_ymd_opt(y, m, d).expect("date");
    vec![
        NaiveDate::MIN,
        NaiveDate::MAX,
        d(-1, 1, 1),
        d(0, 2, 29),
        d(1000, 1, 1),
        d(9999, 12, 31),
        d(10000, 1, 1),
    ]
}

fn time_edges() -> Vec<NaiveTime> {
    vec![
        NaiveTime::MIN,
        NaiveTime::from_hms_micro_opt(23, 59, 59, 999_999).expect("time"),
        NaiveTime::from_hms_nano_opt(12, 0, 0, 1).expect("time"),
        NaiveTime::from_hms_nano_opt(23, 59, 59, 1_999_999_000).expect("leap second"),
    ]
}

fn decimal_edges() -> Vec<Decimal> {
    vec![
        Decimal::MAX,
        Decimal::MIN,
        Decimal::ZERO,
        Decimal::new(1, 28),
        Decimal::new(-1, 28),
        Decimal::from_i128_with_scale(12_345_678_901_234_567_890_123_456_789, 10),
        Decimal::new(150, 2),
    ]
}

fn json_edges() -> Vec<serde_json::Value> {
    vec![
        serde_json::json!({}),
        serde_json::json!([]),
        serde_json::json!({"b": [1, 2.5, "x", null, true], "a": {"z": "😀", "y": -7}}),
        serde_json::json!(i64::MIN),
        serde_json::json!(u64::MAX),
        serde_json::json!("a\u{0}b \" \\ \u{1F600}"),
        serde_json::json!({"deep": [[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}),
    ]
}

/// Every edge value of every type, each on its own.
fn edges() -> Vec<V> {
    let mut v: Vec<V> = [i64::MIN, i64::MAX, 0, -1]
        .into_iter()
        .map(V::Int)
        .collect();
    v.extend(float_edges().into_iter().map(V::Float));
    v.extend(text_edges().into_iter().map(V::Text));
    v.extend(blob_edges().into_iter().map(V::Blob));
    v.extend([V::Bool(true), V::Bool(false)]);
    for t in timestamp_edges() {
        v.push(V::Timestamp(t));
        v.push(V::TimestampTz(t.and_utc()));
    }
    v.extend(date_edges().into_iter().map(V::Date));
    v.extend(time_edges().into_iter().map(V::Time));
    v.extend(decimal_edges().into_iter().map(V::Numeric));
    v.extend(
        [
            // 65 digits, 35 before the point and 30 after: MySQL's widest DECIMAL.
            "12345678901234567890123456789012345.123456789012345678901234567890",
            "-99999999999999999999999999999999999.999999999999999999999999999999",
            // 66 digits, one more before the point than MySQL holds.
            "123456789012345678901234567890123456.123456789012345678901234567890",
            "0.000000000000000000000000000001",
        ]
        .map(V::WideDecimal),
    );
    v.extend([V::Uuid(Uuid::nil()), V::Uuid(Uuid::max())]);
    v.extend(json_edges().into_iter().map(V::Json));
    v
}

/// One ordinary value of every logical type.
fn row() -> impl Strategy<Value = Vec<V>> {
    (
        (
            any::<i64>(),
            any::<f64>().prop_filter("finite", |f| f.is_finite()),
            "\\PC{0,40}",
            proptest::collection::vec(any::<u8>(), 0..64),
            any::<bool>(),
            timestamps(),
        ),
        (
            timestamps(),
            (1i32..9999, 1u32..13, 1u32..29)
                .prop_map(|(y, m, d)| NaiveDate::from_ymd_opt(y, m, d).expect("date")),
            (0u32..86_400, 0u32..1_000_000).prop_map(|(s, us)| {
                NaiveTime::from_num_seconds_from_midnight_opt(s, us * 1000).expect("time")
            }),
            (any::<i64>(), 0u32..=18).prop_map(|(m, s)| Decimal::new(m, s)),
            any::<u128>().prop_map(Uuid::from_u128),
            any::<i32>().prop_map(|i| serde_json::json!({ "n": i, "s": i.to_string() })),
        ),
    )
        .prop_map(|((i, f, t, bl, b, ts), (tz, d, tm, n, u, j))| {
            vec![
                V::Int(i),
                V::Float(f),
                V::Text(t),
                V::Blob(bl),
                V::Bool(b),
                V::Timestamp(ts),
                V::TimestampTz(tz.and_utc()),
                V::Date(d),
                V::Time(tm),
                V::Numeric(n),
                V::Uuid(u),
                V::Json(j),
            ]
        })
}

// ---------------------------------------------------------------------------------------------
// reading back
// ---------------------------------------------------------------------------------------------

/// The value in column `col` of row `id`, decoded through the crate into the type of `like`.
async fn crate_read(conn: &mut Conn, like: &V, id: i64) -> Result<Option<String>, String> {
    let sql = format!("SELECT {} FROM vl WHERE id = $1", like.column());
    let params = [RowValues::Int(id)];
    let q = conn.query(&sql).params(&params);
    macro_rules! read {
        ($t:ty, $f:expr) => {{
            let r: Option<(Option<$t>,)> = q.optional().await.map_err(|e| format!("{e}"))?;
            Ok(r.map(|(v,)| v.map($f).unwrap_or_else(|| "NULL".to_owned())))
        }};
    }
    match like {
        V::Int(_) => read!(i64, |v: i64| v.to_string()),
        V::Float(_) => read!(f64, float_canon),
        V::Text(_) => read!(String, |v: String| format!("{v:?}")),
        V::Blob(_) => read!(Vec<u8>, |v: Vec<u8>| hex(&v)),
        V::Bool(_) => read!(bool, |v: bool| v.to_string()),
        V::Timestamp(_) => read!(NaiveDateTime, |v: NaiveDateTime| ts_canon(&v)),
        V::TimestampTz(_) => read!(DateTime<Utc>, |v: DateTime<Utc>| ts_canon(&v.naive_utc())),
        V::Date(_) => read!(NaiveDate, |v: NaiveDate| v.format("%Y-%m-%d").to_string()),
        V::Time(_) => read!(NaiveTime, |v: NaiveTime| v
            .format("%H:%M:%S%.9f")
            .to_string()),
        V::Numeric(_) => read!(Decimal, |v: Decimal| decimal_canon(&v.to_string())),
        // Wider than a `Decimal`: exact text (or a `Numeric`, where it fits).
        V::WideDecimal(_) => {
            let rs = q.select().await.map_err(|e| format!("{e}"))?;
            Ok(rs.results.first().map(|row| match row.get_by_index(0) {
                Some(RowValues::Numeric(d)) => decimal_canon(&d.to_string()),
                Some(RowValues::Text(t)) => decimal_canon(t),
                Some(RowValues::Null) | None => "NULL".to_owned(),
                Some(other) => format!("{other:?}"),
            }))
        }
        V::Uuid(_) => read!(Uuid, |v: Uuid| v.hyphenated().to_string()),
        V::Json(_) => read!(serde_json::Value, |v: serde_json::Value| json_canon(&v)),
    }
}

/// Parses a stored text form of a timestamp (SQLite and Turso store them as text).
#[cfg(any(feature = "sqlite", feature = "turso"))]
fn parse_ts_text(s: &str) -> Option<NaiveDateTime> {
    for f in [
        "%Y-%m-%d %H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%d %H:%M:%S",
        "%Y-%m-%dT%H:%M:%S",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, f) {
            return Some(t);
        }
    }
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.naive_utc())
        .or_else(|| {
            DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%.f%:z")
                .ok()
                .map(|t| t.naive_utc())
        })
}

/// A value stored by SQLite or Turso (one of the five storage classes), as the logical type of
/// `like` reads it: the stored form the crate documents (integers 0/1 for booleans, text for
/// dates, times, decimals, UUIDs and JSON).
#[cfg(any(feature = "sqlite", feature = "turso"))]
enum Stored {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

#[cfg(any(feature = "sqlite", feature = "turso"))]
fn stored_canon(like: &V, s: Stored) -> String {
    match (like, s) {
        (_, Stored::Null) => "NULL".to_owned(),
        (V::Int(_), Stored::Int(i)) => i.to_string(),
        (V::Float(_), Stored::Real(f)) => float_canon(f),
        (V::Text(_), Stored::Text(t)) => format!("{t:?}"),
        (V::Blob(_), Stored::Blob(b)) => hex(&b),
        (V::Bool(_), Stored::Int(i)) => (i != 0).to_string(),
        (V::Timestamp(_) | V::TimestampTz(_), Stored::Text(t)) => {
            parse_ts_text(&t).map_or_else(|| format!("unparsed {t:?}"), |v| ts_canon(&v))
        }
        (V::Date(_), Stored::Text(t)) => NaiveDate::parse_from_str(&t, "%Y-%m-%d").map_or_else(
            |_| format!("unparsed {t:?}"),
            |d| d.format("%Y-%m-%d").to_string(),
        ),
        (V::Time(_), Stored::Text(t)) => NaiveTime::parse_from_str(&t, "%H:%M:%S%.f").map_or_else(
            |_| format!("unparsed {t:?}"),
            |d| d.format("%H:%M:%S%.9f").to_string(),
        ),
        (V::Numeric(_) | V::WideDecimal(_), Stored::Text(t)) => decimal_canon(&t),
        (V::Uuid(_), Stored::Text(t)) => t.to_ascii_lowercase(),
        (V::Json(_), Stored::Text(t)) => serde_json::from_str::<serde_json::Value>(&t)
            .map_or_else(|_| format!("unparsed {t:?}"), |j| json_canon(&j)),
        // A `JSON` column has numeric affinity: a document that is one number is stored as one.
        (V::Json(_), Stored::Int(i)) => json_canon(&serde_json::json!(i)),
        (V::Json(_), Stored::Real(f)) => json_canon(&serde_json::json!(f)),
        (_, Stored::Int(i)) => format!("INTEGER {i}"),
        (_, Stored::Real(f)) => format!("REAL {f:e}"),
        (_, Stored::Text(t)) => format!("TEXT {t:?}"),
        (_, Stored::Blob(b)) => format!("BLOB {}", hex(&b)),
    }
}

/// The value of row `id` as the engine's own driver reads it.
async fn raw_read(
    db: &TestDb,
    conn: &mut Conn,
    like: &V,
    id: i64,
) -> Result<Option<String>, String> {
    let col = like.column();
    match db.kind {
        #[cfg(feature = "sqlite")]
        Kind::Sqlite => {
            let path = db.path().expect("file").to_owned();
            let sql = format!("SELECT {col} FROM vl WHERE id = ?1");
            let like = like.clone();
            tokio::task::spawn_blocking(move || {
                use sql_middleware::drivers::rusqlite::OptionalExtension;
                use sql_middleware::drivers::rusqlite::types::ValueRef as R;
                let c = sql_middleware::drivers::rusqlite::Connection::open(&path)
                    .map_err(|e| e.to_string())?;
                c.query_row(&sql, [id], |r| {
                    let s = match r.get_ref(0)? {
                        R::Null => Stored::Null,
                        R::Integer(i) => Stored::Int(i),
                        R::Real(f) => Stored::Real(f),
                        R::Text(t) => Stored::Text(String::from_utf8_lossy(t).into_owned()),
                        R::Blob(b) => Stored::Blob(b.to_vec()),
                    };
                    Ok(stored_canon(&like, s))
                })
                .optional()
                .map_err(|e| e.to_string())
            })
            .await
            .expect("raw read task")
        }
        #[cfg(feature = "turso")]
        Kind::Turso => {
            use sql_middleware::drivers::turso::Value as T;
            let raw = conn.turso_connection().await.map_err(|e| e.to_string())?;
            let sql = format!("SELECT {col} FROM vl WHERE id = {id}");
            let mut rows = raw.query(&sql, ()).await.map_err(|e| e.to_string())?;
            let Some(row) = rows.next().await.map_err(|e| e.to_string())? else {
                return Ok(None);
            };
            let s = match row.get_value(0).map_err(|e| e.to_string())? {
                T::Null => Stored::Null,
                T::Integer(i) => Stored::Int(i),
                T::Real(f) => Stored::Real(f),
                T::Text(t) => Stored::Text(t),
                T::Blob(b) => Stored::Blob(b),
            };
            Ok(Some(stored_canon(like, s)))
        }
        #[cfg(feature = "postgres")]
        Kind::Postgres => {
            let client = conn.postgres_client().await.map_err(|e| e.to_string())?;
            // Numeric and JSON as the server's own text; the rest in the driver's types.
            let cast = match like {
                V::Numeric(_) | V::WideDecimal(_) | V::Json(_) => "::text",
                _ => "",
            };
            let sql = format!("SELECT {col}{cast} FROM vl WHERE id = $1");
            let Some(row) = client
                .query_opt(&sql, &[&id])
                .await
                .map_err(|e| e.to_string())?
            else {
                return Ok(None);
            };
            macro_rules! get {
                ($t:ty, $f:expr) => {{
                    let v: Option<$t> = row.try_get(0).map_err(|e| e.to_string())?;
                    Ok(Some(v.map($f).unwrap_or_else(|| "NULL".to_owned())))
                }};
            }
            match like {
                V::Int(_) => get!(i64, |v: i64| v.to_string()),
                V::Float(_) => get!(f64, float_canon),
                V::Text(_) => get!(String, |v: String| format!("{v:?}")),
                V::Blob(_) => get!(Vec<u8>, |v: Vec<u8>| hex(&v)),
                V::Bool(_) => get!(bool, |v: bool| v.to_string()),
                V::Timestamp(_) => get!(NaiveDateTime, |v: NaiveDateTime| ts_canon(&v)),
                V::TimestampTz(_) => {
                    get!(DateTime<Utc>, |v: DateTime<Utc>| ts_canon(&v.naive_utc()))
                }
                V::Date(_) => get!(NaiveDate, |v: NaiveDate| v.format("%Y-%m-%d").to_string()),
                V::Time(_) => get!(NaiveTime, |v: NaiveTime| v
                    .format("%H:%M:%S%.9f")
                    .to_string()),
                V::Numeric(_) | V::WideDecimal(_) => get!(String, |v: String| decimal_canon(&v)),
                V::Uuid(_) => get!(Uuid, |v: Uuid| v.hyphenated().to_string()),
                V::Json(_) => get!(String, |v: String| {
                    serde_json::from_str::<serde_json::Value>(&v)
                        .map_or_else(|_| format!("unparsed {v:?}"), |j| json_canon(&j))
                }),
            }
        }
        #[cfg(feature = "mysql")]
        Kind::Mysql => {
            use mysql_async::Value as M;
            use mysql_async::prelude::Queryable;
            let _ = conn;
            let mut raw = crate::common::mysql::raw_conn(db.url().expect("url")).await;
            let sql = format!("SELECT {col} FROM vl WHERE id = ?");
            let row: Option<mysql_async::Row> = raw
                .exec_first(&sql, (id,))
                .await
                .map_err(|e| e.to_string())?;
            let _ = raw.disconnect().await;
            let Some(mut row) = row else {
                return Ok(None);
            };
            let v: M = row.take(0).unwrap_or(M::NULL);
            let text = |b: &[u8]| String::from_utf8(b.to_vec()).map_err(|_| "not UTF-8".to_owned());
            Ok(Some(match (like, v) {
                (_, M::NULL) => "NULL".to_owned(),
                (V::Int(_), M::Int(i)) => i.to_string(),
                (V::Float(_), M::Double(f)) => float_canon(f),
                (V::Text(_), M::Bytes(b)) => format!("{:?}", text(&b)?),
                (V::Blob(_), M::Bytes(b)) => hex(&b),
                (V::Bool(_), M::Int(i)) => (i != 0).to_string(),
                (V::Timestamp(_) | V::TimestampTz(_), M::Date(y, mo, d, h, mi, s, us)) => {
                    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}.{us:06}000")
                }
                (V::Date(_), M::Date(y, mo, d, ..)) => format!("{y:04}-{mo:02}-{d:02}"),
                (V::Time(_), M::Time(false, 0, h, mi, s, us)) => {
                    format!("{h:02}:{mi:02}:{s:02}.{us:06}000")
                }
                (V::Numeric(_) | V::WideDecimal(_), M::Bytes(b)) => decimal_canon(&text(&b)?),
                (V::Uuid(_), M::Bytes(b)) => text(&b)?,
                (V::Json(_), M::Bytes(b)) => {
                    let t = text(&b)?;
                    serde_json::from_str::<serde_json::Value>(&t)
                        .map_or_else(|_| format!("unparsed {t:?}"), |j| json_canon(&j))
                }
                (_, other) => format!("raw {other:?}"),
            }))
        }
        #[allow(unreachable_patterns)]
        k => panic!("no raw reader for {k:?} in this build"),
    }
}

// ---------------------------------------------------------------------------------------------
// the property
// ---------------------------------------------------------------------------------------------

const TYPES: [Logical; 12] = [
    Logical::Int,
    Logical::Float,
    Logical::Text,
    Logical::Blob,
    Logical::Bool,
    Logical::Timestamp,
    Logical::TimestampTz,
    Logical::Date,
    Logical::Time,
    Logical::Numeric,
    Logical::Uuid,
    Logical::Json,
];

/// `CREATE TABLE vl (id, one column per logical type)`; on MySQL the widest decimal the engine
/// has, so every `Decimal` fits.
async fn create(db: &TestDb, conn: &mut Conn) {
    let names = [
        "c_int", "c_float", "c_text", "c_blob", "c_bool", "c_ts", "c_tz", "c_date", "c_time",
        "c_num", "c_uuid", "c_json",
    ];
    let cols: Vec<String> = names
        .iter()
        .zip(TYPES)
        .map(|(n, l)| {
            let ty = match (db.kind, l) {
                (Kind::Mysql, Logical::Numeric) => "DECIMAL(65,30)",
                (Kind::Mysql, Logical::Text) => "LONGTEXT",
                _ => db.ty(l),
            };
            format!("{n} {ty}")
        })
        .collect();
    batch(
        conn,
        &format!(
            "CREATE TABLE vl (id {} PRIMARY KEY, {})",
            db.ty(Logical::Int),
            cols.join(", ")
        ),
    )
    .await;
}

#[derive(Default)]
struct Tally {
    cases: usize,
    values: usize,
    round_trips: usize,
    refused: usize,
    failures: Vec<String>,
}

async fn check_value(db: &TestDb, conn: &mut Conn, id: i64, v: &V, t: &mut Tally) {
    t.values += 1;
    let sql = format!("INSERT INTO vl (id, {}) VALUES ($1, $2)", v.column());
    let written = conn
        .query(&sql)
        .params(&[RowValues::Int(id), v.bind()])
        .dml()
        .await;
    let want = v.canon();
    let short = |s: &str| -> String { s.chars().take(160).collect() };
    match written {
        Ok(n) => {
            if n != 1 {
                t.failures.push(format!(
                    "{:?} {}: dml returned {n}",
                    v.logical(),
                    short(&want)
                ));
            }
            match crate_read(conn, v, id).await {
                Ok(Some(got)) if got == want => {}
                other => t.failures.push(format!(
                    "{:?}: bound {}, the crate reads back {:?}",
                    v.logical(),
                    short(&want),
                    other.map(|o| o.map(|s| short(&s)))
                )),
            }
            match raw_read(db, conn, v, id).await {
                Ok(Some(got)) if got == want => t.round_trips += 1,
                other => t.failures.push(format!(
                    "{:?}: bound {}, the engine's driver reads back {:?}",
                    v.logical(),
                    short(&want),
                    other.map(|o| o.map(|s| short(&s)))
                )),
            }
        }
        Err(e) => {
            if matches!(e.kind(), ErrorKind::ParameterType | ErrorKind::InvalidInput) {
                t.refused += 1;
            } else {
                t.failures.push(format!(
                    "{:?} {}: refused with kind {:?} (want ParameterType or InvalidInput): {e}",
                    v.logical(),
                    short(&want),
                    e.kind()
                ));
            }
            let n = count_where(conn, id).await;
            if n != 0 {
                t.failures.push(format!(
                    "{:?} {}: refused ({:?}), yet {n} row(s) were written",
                    v.logical(),
                    short(&want),
                    e.kind()
                ));
            }
        }
    }
}

async fn count_where(conn: &mut Conn, id: i64) -> i64 {
    let (n,): (i64,) = conn
        .query("SELECT COUNT(*) FROM vl WHERE id = $1")
        .params(&[RowValues::Int(id)])
        .one()
        .await
        .expect("count");
    n
}

async fn value_limits_property(db: &TestDb) {
    let mut conn = db.conn().await;
    create(db, &mut conn).await;
    let cases = knob_usize("VALUE_LIMIT_CASES", 24);
    let mut runner = TestRunner::new(Config {
        rng_seed: RngSeed::Fixed(seed_for(&format!("value_limits/{}", db.kind.name()))),
        ..Config::default()
    });
    let strategy = row();
    let mut rows = Vec::with_capacity(cases);
    for _ in 0..cases {
        rows.push(strategy.new_tree(&mut runner).expect("generate").current());
    }
    let mut t = Tally::default();
    let mut id = 0i64;
    for v in edges() {
        id += 1;
        check_value(db, &mut conn, id, &v, &mut t).await;
    }
    for values in rows {
        t.cases += 1;
        for v in &values {
            id += 1;
            check_value(db, &mut conn, id, v, &mut t).await;
        }
    }
    println!(
        "value_limits backend={} cases={} values={} round_trips={} refused={}",
        db.kind.name(),
        t.cases,
        t.values,
        t.round_trips,
        t.refused
    );
    t.failures.sort();
    t.failures.dedup();
    assert!(
        t.failures.is_empty(),
        "[{}] {} value(s) changed or refused wrongly:\n  {}",
        db.kind.name(),
        t.failures.len(),
        t.failures.join("\n  ")
    );
}

backend_tests! {
    async fn values_round_trip_exactly_or_are_refused(db) {
        value_limits_property(&db).await;
    }
}
