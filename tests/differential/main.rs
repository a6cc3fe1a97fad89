//! Differential check against the raw driver (issue 25, property 7): generated queries run
//! through sql-middleware and through the engine's own driver on the same database, and the
//! results are compared value by value. Any difference is a failure.
//!
//! Each proptest case stores a few generated rows (NULLs included) with the raw driver, then
//! runs, through both sides, with a generated `id` range:
//! - a row query of 1-4 generated select-list items, read with `select()` into a `ResultSet`
//!   (column names, row count and every value compared), and again through `prepare(..)` and
//!   the statement's `select`; an aggregate query of 1-3 items with `select()`;
//! - every row item on its own with `select()` and with `all()` decoding into tuples
//!   `(i64, Option<T>)`, `T` being the Rust type of the item's SQL type; every aggregate item on
//!   its own with `select()` and `one::<(Option<T>,)>()`;
//! - one generated row item with `stream()`, `one()` (an `id` that exists) and `optional()`
//!   (an `id` that may not).
//!
//! The select-list items are the table's columns (every column type the crate maps) and
//! expressions whose type differs from their column's (`i + 0.5`, `CAST(..)`, `sum(..)`,
//! `count(*)`, `t || 'x'`, comparisons, JSON operators, date arithmetic, ...).
//!
//! The raw sides: SQLite is a `rusqlite::Connection` of its own on the same file; Postgres is a
//! `tokio_postgres::Client` of its own on the same schema; Turso is the `turso::Connection` of a
//! checkout of its own, reached through raw access (Turso has one `Database` per file in a
//! process, which the pool holds); MySQL/MariaDB is a `mysql_async::Conn` of its own on the same
//! database (binary protocol, session in UTC as the crate's are), and another loads the rows.
//!
//! The mapping compared under, raw value -> crate value (`RowValues`, or `T` in a tuple):
//! - SQLite and Turso, on columns declared `INTEGER`, `REAL`, `TEXT`, `BLOB` and with no type
//!   (where no declared type asks for widening), and on expressions: the five storage classes
//!   map one to one: `NULL` -> `Null` (`None`), `INTEGER` -> `Int` (`i64`), `REAL` -> `Float`
//!   (`f64`, bit for bit), `TEXT` -> `Text` (`String`), `BLOB` -> `Blob` (`Vec<u8>`).
//! - Postgres, by the column type the server reports: `int2`/`int4`/`int8` -> `Int` (`i64`),
//!   `float4`/`float8` -> `Float` (`f64`, bit for bit, `float4` widened), `text`/`varchar` ->
//!   `Text`, `bool` -> `Bool`, `bytea` -> `Blob`, `timestamp` -> `Timestamp`
//!   (`NaiveDateTime`), `timestamptz` -> `TimestampTz` (`DateTime<Utc>`), `date` -> `Date`,
//!   `uuid` -> `Uuid`, `numeric` (its raw binary form, written out as the server prints it) ->
//!   `Numeric` when a `Decimal` holds its value (compared with its scale: the server's, or as
//!   much of it as fits, trailing zeros past 28 places dropped), else `Text` of those exact
//!   digits (`NaN` and the infinities too), `json`/`jsonb` -> `JSON`
//!   (`serde_json::Value`; a JSON `null` is not SQL `NULL`), `time` -> `Time` (`NaiveTime`),
//!   `bigint[]`/`text[]` -> `Array` of the elements (`Vec<Option<T>>`), SQL `NULL` -> `Null`
//!   (`None`).
//! - MySQL, by the column type and flags of the result's metadata (the table in
//!   `src/mysql/rows.rs`): `Int`/`UInt` -> `Int` (`Numeric` above `i64::MAX`), `DECIMAL` ->
//!   `Numeric` when a `Decimal` holds its value (as for `numeric`), else `Text` of the digits,
//!   `FLOAT` -> `Float` (the `f32` widened exactly), `DOUBLE` -> `Float`, `DATE` -> `Date`,
//!   `DATETIME`/`TIMESTAMP` -> `Timestamp`, `TIME` -> `Time` from 00:00 to 24:00, else
//!   `Interval` (negative or longer), `BIT` -> `Int` (`Numeric` above `i64::MAX`), `JSON`
//!   (MySQL's) -> `JSON`, bytes of the binary character set -> `Blob`, other strings (`ENUM`,
//!   `SET`, MariaDB's `JSON`) -> `Text`; a zero date and text that is not UTF-8 have no value,
//!   and the crate must refuse them.
//! - Typed decoding (`T` in a tuple) is compared with what `FromValue` gives from the raw value
//!   under that mapping: the same value when `T` is the Rust type of its kind, and the
//!   conversions its table lists otherwise (a `Numeric` into `u64`, a `Time` into `Interval`,
//!   a decimal's text into `Decimal` when the value fits, MariaDB's JSON text into
//!   `serde_json::Value`); a value `T` cannot hold must make the call fail.
//! - Text that is not UTF-8 (SQLite `CAST(blob AS TEXT)`) cannot be a `String`: rusqlite's own
//!   `String` read refuses it, and so must the crate.
//! - A query the raw driver refuses (an integer overflow, say) must fail through the crate too;
//!   both failing counts as agreement.
//!
//! The test collects every difference over all cases (one example per select-list item and
//! terminal) and fails listing them. Prints
//! `differential backend=X cases=N queries=Q errors_agreed=E mismatches=M`.
//! `DIFFERENTIAL_CASES` sets the case count (default 48 per engine).
//!
//! The MySQL side lives in `mysql.rs` (with a check of its `BIT` rule against the server's own
//! arithmetic); `corpus.rs` runs the sqllogictest-style MySQL corpus of `tests/corpus/mysql/`
//! through the crate and raw `mysql_async` (`mysql_corpus …` figures).

#[path = "../common/mod.rs"]
mod common;
#[cfg(feature = "mysql")]
mod corpus;
#[cfg(feature = "mysql")]
mod mysql;

use std::cell::RefCell;
use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use futures::TryStreamExt;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use rust_decimal::Decimal;
use sql_middleware::Interval;
use sql_middleware::prelude::*;
use uuid::Uuid;

use common::backends::Kind;
use common::reliability::{knob_usize, seed_for};

/// A value in the form both sides are compared in.
#[derive(Debug, Clone, PartialEq)]
enum Canon {
    Null,
    Int(i64),
    /// The bits of the `f64`.
    Float(u64),
    Text(String),
    Blob(Vec<u8>),
    Bool(bool),
    Timestamp(NaiveDateTime),
    TimestampTz(DateTime<Utc>),
    Date(NaiveDate),
    Uuid(Uuid),
    /// `Decimal` as text, so the scale counts.
    Numeric(String),
    Json(serde_json::Value),
    Time(NaiveTime),
    /// `Interval` as (months, days, microseconds).
    Interval(i32, i32, i64),
    Array(Vec<Canon>),
    /// A crate value outside the mapping (never equal to a raw value).
    Other(String),
}

fn float(f: f64) -> Canon {
    Canon::Float(f.to_bits())
}

impl std::fmt::Display for Canon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Canon::Float(bits) => write!(f, "Float({:?})", f64::from_bits(*bits)),
            other => write!(f, "{other:?}"),
        }
    }
}

/// A crate value in the compared form.
trait ToCanon {
    fn canon(self) -> Canon;
}

impl ToCanon for i64 {
    fn canon(self) -> Canon {
        Canon::Int(self)
    }
}
impl ToCanon for f64 {
    fn canon(self) -> Canon {
        float(self)
    }
}
impl ToCanon for String {
    fn canon(self) -> Canon {
        Canon::Text(self)
    }
}
impl ToCanon for Vec<u8> {
    fn canon(self) -> Canon {
        Canon::Blob(self)
    }
}
impl ToCanon for bool {
    fn canon(self) -> Canon {
        Canon::Bool(self)
    }
}
impl ToCanon for NaiveDateTime {
    fn canon(self) -> Canon {
        Canon::Timestamp(self)
    }
}
impl ToCanon for DateTime<Utc> {
    fn canon(self) -> Canon {
        Canon::TimestampTz(self)
    }
}
impl ToCanon for NaiveDate {
    fn canon(self) -> Canon {
        Canon::Date(self)
    }
}
impl ToCanon for Uuid {
    fn canon(self) -> Canon {
        Canon::Uuid(self)
    }
}
impl ToCanon for Decimal {
    fn canon(self) -> Canon {
        Canon::Numeric(self.to_string())
    }
}
impl ToCanon for serde_json::Value {
    fn canon(self) -> Canon {
        Canon::Json(self)
    }
}
impl ToCanon for NaiveTime {
    fn canon(self) -> Canon {
        Canon::Time(self)
    }
}
impl ToCanon for u64 {
    fn canon(self) -> Canon {
        // As the mapping reads an unsigned value: `Int` when it fits, else `Numeric`.
        match i64::try_from(self) {
            Ok(i) => Canon::Int(i),
            Err(_) => Canon::Numeric(self.to_string()),
        }
    }
}
impl ToCanon for Interval {
    fn canon(self) -> Canon {
        Canon::Interval(self.months, self.days, self.microseconds)
    }
}
impl<T: ToCanon> ToCanon for Vec<Option<T>> {
    fn canon(self) -> Canon {
        Canon::Array(self.into_iter().map(ToCanon::canon).collect())
    }
}
impl ToCanon for RowValues {
    fn canon(self) -> Canon {
        match self {
            RowValues::Null => Canon::Null,
            RowValues::Int(i) => Canon::Int(i),
            RowValues::Float(f) => float(f),
            RowValues::Text(s) => Canon::Text(s),
            RowValues::Bool(b) => Canon::Bool(b),
            RowValues::Timestamp(t) => Canon::Timestamp(t),
            RowValues::TimestampTz(t) => Canon::TimestampTz(t),
            RowValues::Date(d) => Canon::Date(d),
            RowValues::Uuid(u) => Canon::Uuid(u),
            RowValues::Numeric(n) => n.canon(),
            RowValues::Blob(b) => Canon::Blob(b),
            RowValues::JSON(j) => Canon::Json(j),
            RowValues::Time(t) => Canon::Time(t),
            RowValues::Interval(i) => i.canon(),
            RowValues::Array(items) => {
                Canon::Array(items.into_iter().map(ToCanon::canon).collect())
            }
            other => Canon::Other(format!("{other:?}")),
        }
    }
}
impl<T: ToCanon> ToCanon for Option<T> {
    fn canon(self) -> Canon {
        self.map_or(Canon::Null, ToCanon::canon)
    }
}

/// The Rust type a select-list item decodes into in a tuple.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ty {
    Int,
    Float,
    Text,
    Blob,
    Bool,
    Timestamp,
    TimestampTz,
    Date,
    Uuid,
    Numeric,
    Json,
    Time,
    /// `bigint[]`, as `Vec<Option<i64>>`.
    IntArray,
    /// `text[]`, as `Vec<Option<String>>`.
    TextArray,
    /// An unsigned MySQL integer (up to `u64::MAX`), as `u64`.
    U64,
    /// A MySQL `TIME` (a time of day or a signed span), as `Interval`.
    Interval,
    /// Any storage class (SQLite's untyped values): decoded as `RowValues`.
    Any,
}

/// Column names and rows, or the error.
type Answer = Result<(Vec<String>, Vec<Vec<Canon>>), String>;

/// The crate's answer: column names (when the terminal has them) and rows, or the error.
type Ours = Result<(Option<Vec<String>>, Vec<Vec<Canon>>), String>;

/// Select-list items: SQL text, and the Rust type each decodes into.
type Items = &'static [(&'static str, Ty)];

// ---- the schema, the rows and the select-list items per engine -----------------------------

const SQLITE_TABLE: &str =
    "CREATE TABLE d (id INTEGER PRIMARY KEY, i INTEGER, f REAL, t TEXT, y BLOB, v)";

/// A SQLite value of any storage class (for the untyped column).
#[derive(Debug, Clone)]
enum Stored {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

#[derive(Debug, Clone)]
struct LiteRow {
    i: Option<i64>,
    f: Option<f64>,
    t: Option<String>,
    y: Option<Vec<u8>>,
    v: Stored,
}

const LITE_ROW_ITEMS: Items = &[
    ("i", Ty::Int),
    ("f", Ty::Float),
    ("t", Ty::Text),
    ("y", Ty::Blob),
    ("v", Ty::Any),
    ("i + 0.5", Ty::Float),
    ("CAST(i AS TEXT)", Ty::Text),
    ("CAST(t AS INTEGER)", Ty::Int),
    ("CAST(f AS INTEGER)", Ty::Int),
    ("CAST(v AS REAL)", Ty::Float),
    ("i || 'x'", Ty::Text),
    ("t || 'x'", Ty::Text),
    ("i > 3", Ty::Int),
    ("t = 'a'", Ty::Int),
    ("y IS NULL", Ty::Int),
    ("typeof(v)", Ty::Text),
    ("length(y)", Ty::Int),
    ("hex(y)", Ty::Text),
    ("CAST(y AS TEXT)", Ty::Text),
    ("v + 1", Ty::Any),
    ("-f", Ty::Float),
    ("i / 2", Ty::Int),
    ("f / 2", Ty::Float),
    ("coalesce(v, t)", Ty::Any),
    ("NULL", Ty::Any),
    ("x'00ff'", Ty::Blob),
    ("1.5", Ty::Float),
    ("CASE WHEN i > 0 THEN t ELSE y END", Ty::Any),
    ("round(f, 2)", Ty::Float),
    ("upper(t)", Ty::Text),
    ("abs(f)", Ty::Float),
];

const LITE_AGG_ITEMS: Items = &[
    ("count(*)", Ty::Int),
    ("sum(i)", Ty::Any),
    ("total(i)", Ty::Float),
    ("avg(f)", Ty::Float),
    ("max(t)", Ty::Text),
    ("min(v)", Ty::Any),
    ("group_concat(t)", Ty::Text),
    ("count(y)", Ty::Int),
    ("sum(f)", Ty::Float),
    ("max(i) - min(i)", Ty::Any),
];

const PG_TABLE: &str = "CREATE TABLE d (id BIGINT PRIMARY KEY, i BIGINT, i4 INTEGER, \
    s2 SMALLINT, f DOUBLE PRECISION, r4 REAL, t TEXT, vc VARCHAR(20), b BOOLEAN, y BYTEA, \
    ts TIMESTAMP, tz TIMESTAMPTZ, dt DATE, u UUID, n NUMERIC, j JSONB, js JSON, tm TIME, \
    ia BIGINT[], ta TEXT[])";

const PG_INSERT: &str = "INSERT INTO d \
    (id, i, i4, s2, f, r4, t, vc, b, y, ts, tz, dt, u, n, j, js, tm, ia, ta) VALUES \
    ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15::text::numeric, $16, $17, \
    $18, $19, $20)";

#[derive(Debug, Clone)]
struct PgRow {
    i: Option<i64>,
    i4: Option<i32>,
    s2: Option<i16>,
    f: Option<f64>,
    r4: Option<f32>,
    t: Option<String>,
    vc: Option<String>,
    b: Option<bool>,
    y: Option<Vec<u8>>,
    ts: Option<NaiveDateTime>,
    tz: Option<DateTime<Utc>>,
    dt: Option<NaiveDate>,
    u: Option<Uuid>,
    /// The text of a `numeric`: any width, `NaN`, `Infinity`, `-Infinity`.
    n: Option<String>,
    j: Option<serde_json::Value>,
    js: Option<serde_json::Value>,
    tm: Option<NaiveTime>,
    ia: Option<Vec<Option<i64>>>,
    ta: Option<Vec<Option<String>>>,
}

const PG_ROW_ITEMS: Items = &[
    ("i", Ty::Int),
    ("i4", Ty::Int),
    ("s2", Ty::Int),
    ("f", Ty::Float),
    ("r4", Ty::Float),
    ("t", Ty::Text),
    ("vc", Ty::Text),
    ("b", Ty::Bool),
    ("y", Ty::Blob),
    ("ts", Ty::Timestamp),
    ("tz", Ty::TimestampTz),
    ("dt", Ty::Date),
    ("u", Ty::Uuid),
    ("n", Ty::Numeric),
    ("j", Ty::Json),
    ("js", Ty::Json),
    ("i + 0.5", Ty::Numeric),
    ("f + 1", Ty::Float),
    ("i4 * 2", Ty::Int),
    ("s2 + 1", Ty::Int),
    ("i::float8 / 3", Ty::Float),
    ("CAST(i AS TEXT)", Ty::Text),
    ("CAST(n AS float8)", Ty::Float),
    ("i::numeric(30, 3)", Ty::Numeric),
    ("n * 2", Ty::Numeric),
    ("n / 3", Ty::Numeric),
    ("round(n, 40)", Ty::Numeric),
    ("n::text", Ty::Text),
    ("t || 'x'", Ty::Text),
    ("i > 3", Ty::Bool),
    ("t = 'a'", Ty::Bool),
    ("b IS NULL", Ty::Bool),
    ("NOT b", Ty::Bool),
    ("length(t)", Ty::Int),
    ("ts + interval '1 day'", Ty::Timestamp),
    ("dt + 1", Ty::Date),
    ("u::text", Ty::Text),
    ("j -> 'k'", Ty::Json),
    ("j ->> 'k'", Ty::Text),
    ("js::jsonb", Ty::Json),
    ("to_jsonb(i)", Ty::Json),
    ("r4::float8", Ty::Float),
    ("CAST(f AS real)", Ty::Float),
    ("coalesce(i, 0)", Ty::Int),
    ("NULL::bigint", Ty::Int),
    ("octet_length(y)", Ty::Int),
    ("y || '\\x00'::bytea", Ty::Blob),
    ("date_trunc('day', ts)", Ty::Timestamp),
    ("tz AT TIME ZONE 'UTC'", Ty::Timestamp),
    ("dt::timestamp", Ty::Timestamp),
    ("ts::date", Ty::Date),
    ("md5(t)::uuid", Ty::Uuid),
    ("tm", Ty::Time),
    ("ia", Ty::IntArray),
    ("ta", Ty::TextArray),
    ("tm + interval '90 minutes'", Ty::Time),
    ("ts::time", Ty::Time),
    ("ia || 7::bigint", Ty::IntArray),
    ("array_length(ia, 1)", Ty::Int),
    ("ia[1]", Ty::Int),
    ("ta[1]", Ty::Text),
    ("string_to_array(t, '')", Ty::TextArray),
];

const PG_AGG_ITEMS: Items = &[
    ("count(*)", Ty::Int),
    ("sum(i)", Ty::Numeric),
    ("sum(i4)", Ty::Int),
    ("sum(s2)", Ty::Int),
    ("sum(f)", Ty::Float),
    ("sum(r4)", Ty::Float),
    ("avg(i)", Ty::Numeric),
    ("avg(f)", Ty::Float),
    ("max(t)", Ty::Text),
    ("min(ts)", Ty::Timestamp),
    ("max(tz)", Ty::TimestampTz),
    ("bool_and(b)", Ty::Bool),
    ("sum(n)", Ty::Numeric),
    ("max(n)", Ty::Numeric),
    ("avg(n)", Ty::Numeric),
    ("max(dt)", Ty::Date),
    ("count(y)", Ty::Int),
    ("string_agg(t, ',' ORDER BY id)", Ty::Text),
    ("jsonb_agg(j ORDER BY id)", Ty::Json),
    ("min(u::text)", Ty::Text),
    ("max(tm)", Ty::Time),
    ("array_agg(i ORDER BY id)", Ty::IntArray),
    ("array_agg(t ORDER BY id)", Ty::TextArray),
];

fn items(kind: Kind) -> (Items, Items) {
    match kind {
        #[cfg(feature = "mysql")]
        Kind::Mysql => (mysql::MY_ROW_ITEMS, mysql::MY_AGG_ITEMS),
        #[cfg(not(feature = "mysql"))]
        Kind::Mysql => unreachable!("MySQL runs only with the `mysql` feature"),
        Kind::Sqlite | Kind::Turso => (LITE_ROW_ITEMS, LITE_AGG_ITEMS),
        Kind::Postgres => (PG_ROW_ITEMS, PG_AGG_ITEMS),
    }
}

// ---- strategies ----------------------------------------------------------------------------

fn int() -> impl Strategy<Value = i64> {
    prop_oneof![3 => -1000i64..1000, 1 => any::<i64>(), 1 => Just(i64::MAX), 1 => Just(i64::MIN)]
}

fn real() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => -1.0e6f64..1.0e6,
        2 => any::<f64>(),
        1 => Just(0.5),
        1 => Just(-0.0),
        1 => Just(f64::INFINITY),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![3 => "\\PC{0,6}", 1 => Just("a".to_owned()), 1 => Just("12".to_owned())]
}

fn blob() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..8)
}

fn timestamp() -> impl Strategy<Value = NaiveDateTime> {
    (
        1900i32..2100,
        1u32..=12,
        1u32..=28,
        0u32..24,
        0u32..60,
        0u32..60,
        prop_oneof![Just(0u32), 0u32..1_000_000],
    )
        .prop_map(|(y, mo, d, h, mi, s, us)| {
            NaiveDate::from_ymd_opt(y, mo, d)
                .and_then(|date| date.and_hms_micro_opt(h, mi, s, us))
                .expect("a valid timestamp")
        })
}

fn json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::{Value, json};
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-1000i64..1000).prop_map(Value::from),
        (-1000.0f64..1000.0).prop_map(Value::from),
        "\\PC{0,4}".prop_map(Value::String),
    ];
    leaf.prop_recursive(2, 6, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
            inner.prop_map(|v| json!({ "k": v })),
        ]
    })
}

fn stored() -> impl Strategy<Value = Stored> {
    prop_oneof![
        Just(Stored::Null),
        int().prop_map(Stored::Int),
        real().prop_map(Stored::Real),
        text().prop_map(Stored::Text),
        blob().prop_map(Stored::Blob),
    ]
}

fn lite_row() -> impl Strategy<Value = LiteRow> {
    (
        prop::option::of(int()),
        prop::option::of(real()),
        prop::option::of(text()),
        prop::option::of(blob()),
        stored(),
    )
        .prop_map(|(i, f, t, y, v)| LiteRow { i, f, t, y, v })
}

fn pg_row() -> impl Strategy<Value = PgRow> {
    use prop::option::of;
    (
        (
            of(-1_000_000_000i64..1_000_000_000),
            of(any::<i32>()),
            of(any::<i16>()),
            of(real()),
            of(any::<f32>()),
            of(text()),
            of("\\PC{0,6}"),
            of(any::<bool>()),
        ),
        (
            of(blob()),
            of(timestamp()),
            of(timestamp().prop_map(|t| t.and_utc())),
            of(timestamp().prop_map(|t| t.date())),
            of(any::<u128>().prop_map(Uuid::from_u128)),
            of(prop_oneof![
                4 => (-1_000_000_000_000i64..1_000_000_000_000, 0u32..7)
                    .prop_map(|(m, s)| Decimal::new(m, s).to_string()),
                3 => "-?[0-9]{1,40}(\\.[0-9]{1,40})?",
                1 => Just("NaN".to_owned()),
                1 => Just("Infinity".to_owned()),
                1 => Just("-Infinity".to_owned()),
            ]),
            of(json()),
            of(json()),
        ),
        (
            of(timestamp().prop_map(|t| t.time())),
            of(prop::collection::vec(of(int()), 0..4)),
            of(prop::collection::vec(of(text()), 0..4)),
        ),
    )
        .prop_map(
            |((i, i4, s2, f, r4, t, vc, b), (y, ts, tz, dt, u, n, j, js), (tm, ia, ta))| PgRow {
                i,
                i4,
                s2,
                f,
                r4,
                t,
                vc,
                b,
                y,
                ts,
                tz,
                dt,
                u,
                n,
                j,
                js,
                tm,
                ia,
                ta,
            },
        )
}

#[derive(Debug, Clone)]
enum Data {
    Lite(Vec<LiteRow>),
    Pg(Vec<PgRow>),
    #[cfg(feature = "mysql")]
    My(Vec<mysql::MyRowData>),
}

impl Data {
    fn len(&self) -> i64 {
        match self {
            Data::Lite(r) => r.len() as i64,
            Data::Pg(r) => r.len() as i64,
            #[cfg(feature = "mysql")]
            Data::My(r) => r.len() as i64,
        }
    }
}

/// One generated case: the rows, and the queries over them.
#[derive(Debug, Clone)]
struct Case {
    data: Data,
    row_items: Vec<usize>,
    agg_items: Vec<usize>,
    /// `id BETWEEN lo AND hi`.
    lo: i64,
    hi: i64,
    /// The row item read with `stream()`, `one()` and `optional()`.
    typed_row: usize,
    /// `one()` reads this id (taken modulo the row count, plus one); `optional()` reads
    /// `probe`, which may be missing.
    pick: usize,
    probe: i64,
}

fn case(kind: Kind) -> BoxedStrategy<Case> {
    let (rows, aggs) = items(kind);
    let (nr, na) = (rows.len(), aggs.len());
    let data = match kind {
        #[cfg(feature = "mysql")]
        Kind::Mysql => prop::collection::vec(mysql::my_row(), 0..6)
            .prop_map(Data::My)
            .boxed(),
        #[cfg(not(feature = "mysql"))]
        Kind::Mysql => unreachable!("MySQL runs only with the `mysql` feature"),
        Kind::Sqlite | Kind::Turso => prop::collection::vec(lite_row(), 0..6)
            .prop_map(Data::Lite)
            .boxed(),
        Kind::Postgres => prop::collection::vec(pg_row(), 0..6)
            .prop_map(Data::Pg)
            .boxed(),
    };
    (
        data,
        prop::collection::vec(0..nr, 1..5),
        prop::collection::vec(0..na, 1..4),
        0i64..4,
        0i64..8,
        0..nr,
        any::<usize>(),
        0i64..8,
    )
        .prop_map(
            |(data, row_items, agg_items, lo, span, typed_row, pick, probe)| Case {
                data,
                row_items,
                agg_items,
                lo,
                hi: lo + span,
                typed_row,
                pick,
                probe,
            },
        )
        .boxed()
}

// ---- the raw sides -------------------------------------------------------------------------

enum Raw {
    #[cfg(feature = "sqlite")]
    Sqlite(sql_middleware::drivers::rusqlite::Connection),
    #[cfg(feature = "postgres")]
    Postgres(sql_middleware::drivers::tokio_postgres::Client),
    #[cfg(feature = "turso")]
    Turso(MiddlewarePoolConnection),
    /// A session that runs the compared queries (in UTC, as the crate's sessions are), and one
    /// that loads the rows (whose `sql_mode` also admits zero dates).
    #[cfg(feature = "mysql")]
    Mysql {
        conn: mysql_async::Conn,
        loader: mysql_async::Conn,
    },
}

fn e(x: impl std::fmt::Display) -> String {
    x.to_string()
}

/// `$N` as SQLite and Turso number their parameters (`?N`).
fn question_marks(sql: &str) -> String {
    sql.replace('$', "?")
}

#[cfg(feature = "sqlite")]
fn lite_canon(v: sql_middleware::drivers::rusqlite::types::ValueRef<'_>) -> Result<Canon, String> {
    use sql_middleware::drivers::rusqlite::types::ValueRef as V;
    Ok(match v {
        V::Null => Canon::Null,
        V::Integer(i) => Canon::Int(i),
        V::Real(f) => float(f),
        V::Text(t) => Canon::Text(String::from_utf8(t.to_vec()).map_err(e)?),
        V::Blob(b) => Canon::Blob(b.to_vec()),
    })
}

#[cfg(feature = "turso")]
fn turso_value(v: &Stored) -> sql_middleware::drivers::turso::Value {
    use sql_middleware::drivers::turso::Value as V;
    match v {
        Stored::Null => V::Null,
        Stored::Int(i) => V::Integer(*i),
        Stored::Real(f) => V::Real(*f),
        Stored::Text(t) => V::Text(t.clone()),
        Stored::Blob(b) => V::Blob(b.clone()),
    }
}

#[cfg(feature = "turso")]
fn turso_canon(v: sql_middleware::drivers::turso::Value) -> Canon {
    use sql_middleware::drivers::turso::Value as V;
    match v {
        V::Null => Canon::Null,
        V::Integer(i) => Canon::Int(i),
        V::Real(f) => float(f),
        V::Text(t) => Canon::Text(t),
        V::Blob(b) => Canon::Blob(b),
    }
}

/// A decimal's exact text under the mapping: `Numeric` when a `Decimal` holds its value (as
/// much of the scale as fits: trailing zeros past 28 places dropped), else `Text` of the digits.
#[cfg(any(feature = "postgres", feature = "mysql"))]
fn numeric_canon(t: String) -> Canon {
    decimal_of_text(&t).unwrap_or(Canon::Text(t))
}

/// A `numeric` as the server prints it (`numeric_out`), from the raw binary form: the
/// base-10000 digits written out, the point placed by the weight, the fraction cut or padded
/// to the display scale.
#[cfg(feature = "postgres")]
struct PgNumericText(String);

#[cfg(feature = "postgres")]
impl<'a> sql_middleware::drivers::tokio_postgres::types::FromSql<'a> for PgNumericText {
    fn from_sql(
        _: &sql_middleware::drivers::tokio_postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        let word = |i: usize| -> Result<u16, String> {
            raw.get(i..i + 2)
                .map(|b| u16::from_be_bytes([b[0], b[1]]))
                .ok_or_else(|| "numeric: short".to_owned())
        };
        let (n, weight, sign, dscale) = (word(0)?, word(2)? as i16, word(4)?, word(6)?);
        match sign {
            0xC000 => return Ok(PgNumericText("NaN".into())),
            0xD000 => return Ok(PgNumericText("Infinity".into())),
            0xF000 => return Ok(PgNumericText("-Infinity".into())),
            _ => {}
        }
        let mut digits = String::new();
        for k in 0..usize::from(n) {
            digits.push_str(&format!("{:04}", word(8 + 2 * k)?));
        }
        // The decimal point sits after 4 * (weight + 1) digits of `digits`.
        let point = 4 * (i64::from(weight) + 1);
        let (int, frac) = if point <= 0 {
            (
                String::new(),
                format!("{}{digits}", "0".repeat((-point) as usize)),
            )
        } else {
            let point = point as usize;
            if digits.len() < point {
                digits.push_str(&"0".repeat(point - digits.len()));
            }
            let (a, b) = digits.split_at(point);
            (a.to_owned(), b.to_owned())
        };
        let int = int.trim_start_matches('0');
        let mut frac: String = frac.chars().take(usize::from(dscale)).collect();
        while frac.len() < usize::from(dscale) {
            frac.push('0');
        }
        let mut out = String::new();
        if sign == 0x4000 {
            out.push('-');
        }
        out.push_str(if int.is_empty() { "0" } else { int });
        if !frac.is_empty() {
            out.push('.');
            out.push_str(&frac);
        }
        Ok(PgNumericText(out))
    }

    fn accepts(ty: &sql_middleware::drivers::tokio_postgres::types::Type) -> bool {
        *ty == sql_middleware::drivers::tokio_postgres::types::Type::NUMERIC
    }
}

#[cfg(feature = "postgres")]
fn pg_canon(row: &sql_middleware::drivers::tokio_postgres::Row, i: usize) -> Result<Canon, String> {
    use sql_middleware::drivers::tokio_postgres::types::Type;
    fn get<'a, T: sql_middleware::drivers::tokio_postgres::types::FromSql<'a>>(
        row: &'a sql_middleware::drivers::tokio_postgres::Row,
        i: usize,
    ) -> Result<Option<T>, String> {
        row.try_get::<_, Option<T>>(i).map_err(e)
    }
    let ty = row.columns()[i].type_().clone();
    Ok(match ty {
        Type::INT2 => get::<i16>(row, i)?.map(i64::from).canon(),
        Type::INT4 => get::<i32>(row, i)?.map(i64::from).canon(),
        Type::INT8 => get::<i64>(row, i)?.canon(),
        Type::FLOAT4 => get::<f32>(row, i)?.map(f64::from).canon(),
        Type::FLOAT8 => get::<f64>(row, i)?.canon(),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => get::<String>(row, i)?.canon(),
        Type::BOOL => get::<bool>(row, i)?.canon(),
        Type::BYTEA => get::<Vec<u8>>(row, i)?.canon(),
        Type::TIMESTAMP => get::<NaiveDateTime>(row, i)?.canon(),
        Type::TIMESTAMPTZ => get::<DateTime<Utc>>(row, i)?.canon(),
        Type::DATE => get::<NaiveDate>(row, i)?.canon(),
        Type::UUID => get::<Uuid>(row, i)?.canon(),
        Type::NUMERIC => match get::<PgNumericText>(row, i)? {
            None => Canon::Null,
            Some(PgNumericText(t)) => numeric_canon(t),
        },
        Type::JSON | Type::JSONB => get::<serde_json::Value>(row, i)?.canon(),
        Type::TIME => get::<NaiveTime>(row, i)?.canon(),
        Type::INT8_ARRAY => get::<Vec<Option<i64>>>(row, i)?.canon(),
        Type::TEXT_ARRAY => get::<Vec<Option<String>>>(row, i)?.canon(),
        other => return Err(format!("the test maps no column of type {other}")),
    })
}

impl Raw {
    /// Replaces the table's rows with `data`.
    async fn load(&mut self, data: &Data) -> Result<(), String> {
        match (self, data) {
            #[cfg(feature = "sqlite")]
            (Raw::Sqlite(c), Data::Lite(rows)) => {
                use sql_middleware::drivers::rusqlite::types::Value as V;
                let tx = c.transaction().map_err(e)?;
                tx.execute("DELETE FROM d", []).map_err(e)?;
                for (n, r) in rows.iter().enumerate() {
                    let v = match &r.v {
                        Stored::Null => V::Null,
                        Stored::Int(i) => V::Integer(*i),
                        Stored::Real(f) => V::Real(*f),
                        Stored::Text(t) => V::Text(t.clone()),
                        Stored::Blob(b) => V::Blob(b.clone()),
                    };
                    tx.execute(
                        "INSERT INTO d (id, i, f, t, y, v) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        sql_middleware::drivers::rusqlite::params![
                            n as i64 + 1,
                            r.i,
                            r.f,
                            r.t,
                            r.y,
                            v
                        ],
                    )
                    .map_err(e)?;
                }
                tx.commit().map_err(e)
            }
            #[cfg(feature = "turso")]
            (Raw::Turso(conn), Data::Lite(rows)) => {
                use sql_middleware::drivers::turso::Value as V;
                let c = conn.turso_connection().await.map_err(e)?;
                c.execute("DELETE FROM d", ()).await.map_err(e)?;
                for (n, r) in rows.iter().enumerate() {
                    let vals = vec![
                        V::Integer(n as i64 + 1),
                        r.i.map_or(V::Null, V::Integer),
                        r.f.map_or(V::Null, V::Real),
                        r.t.clone().map_or(V::Null, V::Text),
                        r.y.clone().map_or(V::Null, V::Blob),
                        turso_value(&r.v),
                    ];
                    c.execute(
                        "INSERT INTO d (id, i, f, t, y, v) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        vals,
                    )
                    .await
                    .map_err(e)?;
                }
                Ok(())
            }
            #[cfg(feature = "postgres")]
            (Raw::Postgres(c), Data::Pg(rows)) => {
                c.batch_execute("DELETE FROM d").await.map_err(e)?;
                let insert = c.prepare(PG_INSERT).await.map_err(e)?;
                for (n, r) in rows.iter().enumerate() {
                    let id = n as i64 + 1;
                    c.execute(
                        &insert,
                        &[
                            &id, &r.i, &r.i4, &r.s2, &r.f, &r.r4, &r.t, &r.vc, &r.b, &r.y, &r.ts,
                            &r.tz, &r.dt, &r.u, &r.n, &r.j, &r.js, &r.tm, &r.ia, &r.ta,
                        ],
                    )
                    .await
                    .map_err(e)?;
                }
                Ok(())
            }
            #[cfg(feature = "mysql")]
            (Raw::Mysql { loader, .. }, Data::My(rows)) => mysql::load(loader, rows).await,
            #[allow(unreachable_patterns)]
            _ => Err("rows of another engine".into()),
        }
    }

    /// Runs `sql` (placeholders `$N`) with integer parameters `p`.
    async fn query(&mut self, sql: &str, p: &[i64]) -> Answer {
        match self {
            #[cfg(feature = "sqlite")]
            Raw::Sqlite(c) => {
                let sql = question_marks(sql);
                let mut st = c.prepare(&sql).map_err(e)?;
                let names: Vec<String> = st.column_names().iter().map(|s| s.to_string()).collect();
                let n = names.len();
                let mut rows = st
                    .query(sql_middleware::drivers::rusqlite::params_from_iter(
                        p.iter(),
                    ))
                    .map_err(e)?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().map_err(e)? {
                    let mut vals = Vec::with_capacity(n);
                    for i in 0..n {
                        vals.push(lite_canon(row.get_ref(i).map_err(e)?)?);
                    }
                    out.push(vals);
                }
                Ok((names, out))
            }
            #[cfg(feature = "turso")]
            Raw::Turso(conn) => {
                use sql_middleware::drivers::turso::Value as V;
                let c = conn.turso_connection().await.map_err(e)?;
                let params: Vec<V> = p.iter().map(|i| V::Integer(*i)).collect();
                let mut rows = c.query(question_marks(sql), params).await.map_err(e)?;
                let names = rows.column_names();
                let mut out = Vec::new();
                while let Some(row) = rows.next().await.map_err(e)? {
                    let mut vals = Vec::with_capacity(names.len());
                    for i in 0..names.len() {
                        vals.push(turso_canon(row.get_value(i).map_err(e)?));
                    }
                    out.push(vals);
                }
                Ok((names, out))
            }
            #[cfg(feature = "mysql")]
            Raw::Mysql { conn, .. } => mysql::query(conn, sql, p).await,
            #[cfg(feature = "postgres")]
            Raw::Postgres(c) => {
                use sql_middleware::drivers::tokio_postgres::types::ToSql;
                let st = c.prepare(sql).await.map_err(e)?;
                let names = st.columns().iter().map(|c| c.name().to_owned()).collect();
                let params: Vec<&(dyn ToSql + Sync)> =
                    p.iter().map(|i| i as &(dyn ToSql + Sync)).collect();
                let rows = c.query(&st, &params).await.map_err(e)?;
                let mut out = Vec::new();
                for row in &rows {
                    let mut vals = Vec::with_capacity(row.len());
                    for i in 0..row.len() {
                        vals.push(pg_canon(row, i)?);
                    }
                    out.push(vals);
                }
                Ok((names, out))
            }
        }
    }
}

// ---- the crate's side ----------------------------------------------------------------------

fn ints(p: &[i64]) -> Vec<RowValues> {
    p.iter().map(|i| RowValues::Int(*i)).collect()
}

/// `query(..).select()`, or with `prepared` `prepare(..)` and the statement's `select`.
async fn crate_select(
    conn: &mut MiddlewarePoolConnection,
    sql: &str,
    p: &[i64],
    prepared: bool,
) -> Answer {
    let params = ints(p);
    let rs = if prepared {
        let mut st = conn.prepare(sql).await.map_err(|x| format!("{x:?}"))?;
        st.select(&params).await
    } else {
        conn.query(sql).params(&params).select().await
    }
    .map_err(|x| format!("{x:?}"))?;
    let names = rs.column_names().map(str::to_owned).collect();
    let rows = rs
        .results
        .into_iter()
        .map(|r| r.into_values().into_iter().map(ToCanon::canon).collect())
        .collect();
    Ok((names, rows))
}

/// Which tuple terminal runs.
#[derive(Debug, Clone, Copy)]
enum Terminal {
    All,
    One,
    Optional,
    /// `stream::<(i64, Option<T>)>()`, read to the end.
    Stream,
    /// `one::<(Option<T>,)>()` of an aggregate.
    OneAgg,
}

async fn crate_typed<T>(
    conn: &mut MiddlewarePoolConnection,
    sql: &str,
    p: &[i64],
    t: Terminal,
) -> Result<Vec<Vec<Canon>>, String>
where
    T: FromValue + ToCanon + Send + 'static,
{
    let params = ints(p);
    let q = conn.query(sql).params(&params);
    let pair = |(id, v): (i64, Option<T>)| vec![Canon::Int(id), v.canon()];
    let r = match t {
        Terminal::All => q
            .all::<(i64, Option<T>)>()
            .await
            .map(|v| v.into_iter().map(pair).collect()),
        Terminal::One => q.one::<(i64, Option<T>)>().await.map(|r| vec![pair(r)]),
        Terminal::Optional => q
            .optional::<(i64, Option<T>)>()
            .await
            .map(|r| r.into_iter().map(pair).collect()),
        Terminal::Stream => {
            q.stream::<(i64, Option<T>)>()
                .map_ok(pair)
                .try_collect()
                .await
        }
        Terminal::OneAgg => q
            .one::<(Option<T>,)>()
            .await
            .map(|(v,)| vec![vec![v.canon()]]),
    };
    r.map_err(|x| format!("{x:?}"))
}

async fn crate_typed_as(
    conn: &mut MiddlewarePoolConnection,
    ty: Ty,
    sql: &str,
    p: &[i64],
    t: Terminal,
) -> Result<Vec<Vec<Canon>>, String> {
    match ty {
        Ty::Int => crate_typed::<i64>(conn, sql, p, t).await,
        Ty::Float => crate_typed::<f64>(conn, sql, p, t).await,
        Ty::Text => crate_typed::<String>(conn, sql, p, t).await,
        Ty::Blob => crate_typed::<Vec<u8>>(conn, sql, p, t).await,
        Ty::Bool => crate_typed::<bool>(conn, sql, p, t).await,
        Ty::Timestamp => crate_typed::<NaiveDateTime>(conn, sql, p, t).await,
        Ty::TimestampTz => crate_typed::<DateTime<Utc>>(conn, sql, p, t).await,
        Ty::Date => crate_typed::<NaiveDate>(conn, sql, p, t).await,
        Ty::Uuid => crate_typed::<Uuid>(conn, sql, p, t).await,
        Ty::Numeric => crate_typed::<Decimal>(conn, sql, p, t).await,
        Ty::Json => crate_typed::<serde_json::Value>(conn, sql, p, t).await,
        Ty::Time => crate_typed::<NaiveTime>(conn, sql, p, t).await,
        Ty::IntArray => crate_typed::<Vec<Option<i64>>>(conn, sql, p, t).await,
        Ty::TextArray => crate_typed::<Vec<Option<String>>>(conn, sql, p, t).await,
        Ty::U64 => crate_typed::<u64>(conn, sql, p, t).await,
        Ty::Interval => crate_typed::<Interval>(conn, sql, p, t).await,
        Ty::Any => crate_typed::<RowValues>(conn, sql, p, t).await,
    }
}

// ---- what typed decoding gives, from the raw value -------------------------------------------

/// The largest mantissa of a `Decimal`: 2^96 - 1.
const DECIMAL_MAX_MANTISSA: u128 = (1 << 96) - 1;

/// A decimal's exact text, split: sign, integer digits, fraction digits.
fn decimal_parts(s: &str) -> Option<(bool, &str, &str)> {
    let (neg, body) = match s.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, s),
    };
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let digits = int.bytes().chain(frac.bytes());
    (int.len() + frac.len() > 0 && digits.clone().all(|b| b.is_ascii_digit()))
        .then_some((neg, int, frac))
}

/// The `Decimal` of a decimal's exact text, as the mapping reads a `DECIMAL`/`numeric` and
/// `Decimal` decoding reads text: the value when at most 28 places that are not trailing zeros
/// and a 96-bit mantissa hold it, with as much of its scale as then fits; anything more is an
/// error, never rounded.
fn decimal_of_text(s: &str) -> Result<Canon, String> {
    let (neg, int, frac) = decimal_parts(s).ok_or_else(|| format!("{s:?} is no decimal"))?;
    let kept = frac.trim_end_matches('0');
    let too_wide = || format!("{s} has more digits than a Decimal holds");
    if kept.len() > 28 {
        return Err(too_wide());
    }
    let mut m: u128 = 0;
    for b in int.bytes().chain(kept.bytes()) {
        m = m * 10 + u128::from(b - b'0');
        if m > DECIMAL_MAX_MANTISSA {
            return Err(too_wide());
        }
    }
    let mut scale = kept.len();
    while scale < frac.len().min(28) && m * 10 <= DECIMAL_MAX_MANTISSA {
        m *= 10;
        scale += 1;
    }
    let m = i128::try_from(m).expect("96 bits");
    let d = Decimal::from_i128_with_scale(if neg { -m } else { m }, scale as u32);
    Ok(Canon::Numeric(d.to_string()))
}

/// An integral decimal text as an integer of the range `T` has.
fn integral<T: TryFrom<i128> + ToCanon>(s: &str) -> Result<Canon, String> {
    let (neg, int, frac) = decimal_parts(s).ok_or_else(|| format!("{s:?} is no decimal"))?;
    if frac.bytes().any(|b| b != b'0') {
        return Err(format!("{s} has a fractional part"));
    }
    let magnitude: i128 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| format!("{s} is out of range"))?
    };
    let v = if neg { -magnitude } else { magnitude };
    T::try_from(v)
        .map(ToCanon::canon)
        .map_err(|_| format!("{s} is out of range"))
}

/// What decoding the raw value `c` into `ty` gives, under the crate's `FromValue` table (the
/// conversions the compared items can meet; anything else is an error the crate must raise too).
fn expect_typed(ty: Ty, c: Canon) -> Result<Canon, String> {
    use Canon as C;
    Ok(match (ty, c) {
        (_, C::Null) => C::Null,
        (Ty::Any, c) => c,
        (Ty::Int, C::Int(i)) => C::Int(i),
        (Ty::Int, C::Bool(b)) => C::Int(i64::from(b)),
        (Ty::Int, C::Numeric(s)) => integral::<i64>(&s)?,
        (Ty::U64, C::Int(i)) => u64::try_from(i)
            .map(ToCanon::canon)
            .map_err(|_| format!("{i} is no u64"))?,
        (Ty::U64, C::Numeric(s)) => integral::<u64>(&s)?,
        (Ty::Float, C::Float(bits)) => C::Float(bits),
        (Ty::Float, C::Int(i)) => float(i as f64),
        (Ty::Float, C::Numeric(s)) => float(s.parse::<f64>().map_err(|x| x.to_string())?),
        (Ty::Text, C::Text(s) | C::Numeric(s)) => C::Text(s),
        (Ty::Text, C::Json(j)) => C::Text(j.to_string()),
        (Ty::Text, C::Uuid(u)) => C::Text(u.hyphenated().to_string()),
        (Ty::Blob, C::Blob(b)) => C::Blob(b),
        (Ty::Bool, C::Bool(b)) => C::Bool(b),
        (Ty::Bool, C::Int(i @ (0 | 1))) => C::Bool(i == 1),
        (Ty::Timestamp, C::Timestamp(t)) => C::Timestamp(t),
        (Ty::Timestamp, C::Date(d)) => C::Timestamp(d.and_time(NaiveTime::MIN)),
        (Ty::TimestampTz, C::TimestampTz(t)) => C::TimestampTz(t),
        (Ty::TimestampTz, C::Timestamp(t)) => C::TimestampTz(t.and_utc()),
        (Ty::Date, C::Date(d)) => C::Date(d),
        (Ty::Uuid, C::Uuid(u)) => C::Uuid(u),
        (Ty::Numeric, C::Numeric(s)) => C::Numeric(s),
        (Ty::Numeric, C::Int(i)) => C::Numeric(i.to_string()),
        (Ty::Numeric, C::Text(s)) => decimal_of_text(&s)?,
        (Ty::Json, C::Json(j)) => C::Json(j),
        (Ty::Json, C::Text(s)) => C::Json(serde_json::from_str(&s).map_err(|x| x.to_string())?),
        (Ty::Time, C::Time(t)) => C::Time(t),
        (Ty::Interval, C::Interval(m, d, us)) => C::Interval(m, d, us),
        (Ty::Interval, C::Time(t)) => {
            use chrono::Timelike;
            let us = i64::from(t.num_seconds_from_midnight()) * 1_000_000
                + i64::from(t.nanosecond() / 1_000);
            C::Interval(0, 0, us)
        }
        (Ty::IntArray | Ty::TextArray, C::Array(a)) => C::Array(a),
        (ty, c) => return Err(format!("{c} does not decode into {ty:?}")),
    })
}

/// The rows typed decoding gives from the raw answer: the first column an `i64` (when
/// `with_id`), the others `ty`. A value that cannot decode makes the whole call an error.
fn expect_rows(ty: Ty, raw: &Answer, with_id: bool) -> Answer {
    let (names, rows) = raw.as_ref().map_err(Clone::clone)?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let mut cells = Vec::with_capacity(row.len());
        for (i, c) in row.iter().enumerate() {
            let t = if with_id && i == 0 { Ty::Int } else { ty };
            cells.push(expect_typed(t, c.clone())?);
        }
        out.push(cells);
    }
    Ok((names.clone(), out))
}

// ---- comparing -----------------------------------------------------------------------------

/// Differences found, one example per key (select-list item and terminal), with a count.
#[derive(Default)]
struct Report {
    queries: usize,
    errors_agreed: usize,
    mismatches: BTreeMap<String, (usize, String)>,
}

impl Report {
    fn note(&mut self, key: String, example: String) {
        let slot = self.mismatches.entry(key).or_insert((0, example));
        slot.0 += 1;
    }
}

fn show(row: &[Canon]) -> String {
    let cells: Vec<String> = row.iter().map(ToString::to_string).collect();
    format!("[{}]", cells.join(", "))
}

/// Compares one query's answers. `labels[i]` names result column `i`, for the report.
fn compare(
    report: &mut Report,
    terminal: &str,
    sql: &str,
    labels: &[&str],
    ours: Ours,
    raw: Answer,
) {
    report.queries += 1;
    let (names, rows) = match (ours, raw) {
        (Err(_), Err(_)) => {
            report.errors_agreed += 1;
            return;
        }
        (Err(x), Ok(_)) => {
            let key = format!("{terminal}: fails where the raw side succeeds");
            report.note(key, format!("{sql}: {x}"));
            return;
        }
        (Ok(_), Err(x)) => {
            // The raw driver failed, or the mapping says the crate must refuse the value.
            let key = format!("{terminal}: succeeds where the raw side fails");
            report.note(key, format!("{sql}: raw side: {x}"));
            return;
        }
        (Ok(a), Ok(b)) => ((a.0, b.0), (a.1, b.1)),
    };
    if let (Some(ours), theirs) = &names {
        if ours != theirs {
            report.note(
                format!("{terminal}: column names"),
                format!("{sql}: {ours:?} vs raw {theirs:?}"),
            );
        }
    }
    let (ours, theirs) = rows;
    if ours.len() != theirs.len() {
        report.note(
            format!("{terminal}: row count"),
            format!("{sql}: {} vs raw {}", ours.len(), theirs.len()),
        );
        return;
    }
    for (a, b) in ours.iter().zip(&theirs) {
        if a.len() != b.len() {
            report.note(
                format!("{terminal}: column count"),
                format!("{sql}: {} vs raw {}", show(a), show(b)),
            );
            continue;
        }
        for (col, (x, y)) in a.iter().zip(b).enumerate() {
            if x != y {
                let label = labels.get(col).copied().unwrap_or("?");
                report.note(
                    format!("{terminal}: `{label}`"),
                    format!("crate {x} vs raw {y} in {sql}"),
                );
            }
        }
    }
}

async fn check(
    conn: &mut MiddlewarePoolConnection,
    raw: &mut Raw,
    kind: Kind,
    c: &Case,
    report: &mut Report,
) -> Result<(), String> {
    raw.load(&c.data)
        .await
        .map_err(|x| format!("loading rows: {x}"))?;
    let (row_items, agg_items) = items(kind);

    // Rows through `select()`.
    let mut labels = vec!["id"];
    let mut list = Vec::new();
    for (n, &i) in c.row_items.iter().enumerate() {
        labels.push(row_items[i].0);
        list.push(format!("{} AS c{n}", row_items[i].0));
    }
    let sql = format!(
        "SELECT id, {} FROM d WHERE id BETWEEN $1 AND $2 ORDER BY id",
        list.join(", ")
    );
    let p = [c.lo, c.hi];
    let raw_rows = raw.query(&sql, &p).await;
    let ours = crate_select(conn, &sql, &p, false).await;
    compare(
        report,
        "select",
        &sql,
        &labels,
        ours.map(|(n, r)| (Some(n), r)),
        raw_rows.clone(),
    );
    let ours = crate_select(conn, &sql, &p, true).await;
    compare(
        report,
        "prepare.select",
        &sql,
        &labels,
        ours.map(|(n, r)| (Some(n), r)),
        raw_rows,
    );

    // Aggregates through `select()`.
    let mut labels = Vec::new();
    let mut list = Vec::new();
    for (n, &i) in c.agg_items.iter().enumerate() {
        labels.push(agg_items[i].0);
        list.push(format!("{} AS a{n}", agg_items[i].0));
    }
    let sql = format!(
        "SELECT {} FROM d WHERE id BETWEEN $1 AND $2",
        list.join(", ")
    );
    let ours = crate_select(conn, &sql, &p, false)
        .await
        .map(|(n, r)| (Some(n), r));
    compare(
        report,
        "select",
        &sql,
        &labels,
        ours,
        raw.query(&sql, &p).await,
    );

    // Every row item on its own: `select()` and `all()` into `(i64, Option<T>)`.
    for &(item, ty) in row_items {
        let labels = ["id", item];
        let sql = format!("SELECT id, {item} FROM d WHERE id BETWEEN $1 AND $2 ORDER BY id");
        let raw_rows = raw.query(&sql, &p).await;
        let ours = crate_select(conn, &sql, &p, false).await;
        let ours = ours.map(|(n, r)| (Some(n), r));
        compare(report, "select", &sql, &labels, ours, raw_rows.clone());
        let ours = crate_typed_as(conn, ty, &sql, &p, Terminal::All).await;
        compare(
            report,
            "all",
            &sql,
            &labels,
            ours.map(|r| (None, r)),
            expect_rows(ty, &raw_rows, true),
        );
    }

    // The generated row item: `stream()`, `one()` and `optional()`.
    let (item, ty) = row_items[c.typed_row];
    let labels = ["id", item];
    let sql = format!("SELECT id, {item} FROM d WHERE id BETWEEN $1 AND $2 ORDER BY id");
    let raw_rows = raw.query(&sql, &p).await;
    let ours = crate_typed_as(conn, ty, &sql, &p, Terminal::Stream).await;
    compare(
        report,
        "stream",
        &sql,
        &labels,
        ours.map(|r| (None, r)),
        expect_rows(ty, &raw_rows, true),
    );
    let by_id = format!("SELECT id, {item} FROM d WHERE id = $1");
    let n = c.data.len();
    if n > 0 {
        let id = [(c.pick % n as usize) as i64 + 1];
        let ours = crate_typed_as(conn, ty, &by_id, &id, Terminal::One).await;
        let raw_rows = raw.query(&by_id, &id).await;
        compare(
            report,
            "one",
            &by_id,
            &labels,
            ours.map(|r| (None, r)),
            expect_rows(ty, &raw_rows, true),
        );
    }
    let id = [c.probe];
    let ours = crate_typed_as(conn, ty, &by_id, &id, Terminal::Optional).await;
    let raw_rows = raw.query(&by_id, &id).await;
    compare(
        report,
        "optional",
        &by_id,
        &labels,
        ours.map(|r| (None, r)),
        expect_rows(ty, &raw_rows, true),
    );

    // Every aggregate item on its own: `select()` and `one()` into `(Option<T>,)`.
    for &(item, ty) in agg_items {
        let sql = format!("SELECT {item} FROM d WHERE id BETWEEN $1 AND $2");
        let raw_rows = raw.query(&sql, &p).await;
        let ours = crate_select(conn, &sql, &p, false).await;
        let ours = ours.map(|(n, r)| (Some(n), r));
        compare(report, "select", &sql, &[item], ours, raw_rows.clone());
        let ours = crate_typed_as(conn, ty, &sql, &p, Terminal::OneAgg).await;
        let ours = ours.map(|r| (None, r));
        let expected = expect_rows(ty, &raw_rows, false);
        compare(report, "one (aggregate)", &sql, &[item], ours, expected);
    }
    Ok(())
}

fn config(name: &str, cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed_for(name)),
        failure_persistence: None,
        ..Config::default()
    }
}

/// Runs the generated cases on `conn` and `raw`, then asserts that nothing differed.
fn run(kind: Kind, conn: MiddlewarePoolConnection, raw: Raw, handle: &tokio::runtime::Handle) {
    let k = kind.name();
    let cases = knob_usize("DIFFERENTIAL_CASES", 48) as u32;
    let mut runner = TestRunner::new(config(&format!("differential/{k}"), cases));
    let state = RefCell::new((conn, raw, Report::default()));
    let r = runner.run(&case(kind), |c| {
        let mut s = state.borrow_mut();
        let (conn, raw, report) = &mut *s;
        handle
            .block_on(check(conn, raw, kind, &c, report))
            .map_err(proptest::test_runner::TestCaseError::fail)
    });
    let (_, _, report) = state.into_inner();
    let distinct = report.mismatches.len();
    let total: usize = report.mismatches.values().map(|(n, _)| n).sum();
    println!(
        "differential backend={k} cases={cases} queries={} errors_agreed={} mismatches={total}",
        report.queries, report.errors_agreed
    );
    r.unwrap_or_else(|x| panic!("[{k}] the test could not run a case: {x}"));
    let listed: Vec<String> = report
        .mismatches
        .iter()
        .map(|(key, (n, ex))| format!("{key} ({n}x), e.g. {ex}"))
        .collect();
    assert!(
        listed.is_empty(),
        "[{k}] the crate and the raw driver differ in {distinct} ways ({total} values or queries):\n  {}",
        listed.join("\n  ")
    );
}

#[cfg(feature = "sqlite")]
#[test]
fn differential_sqlite() {
    let rt = common::reliability::runtime();
    let dir = common::backends::TempDir::new("differential");
    let path = dir.path().join("d.db");
    let pool = rt
        .block_on(ConfigAndPool::sqlite(&path).max_size(1).build())
        .expect("pool");
    let mut conn = rt.block_on(pool.get_connection()).expect("checkout");
    rt.block_on(conn.execute_batch(SQLITE_TABLE))
        .expect("table");
    let raw = sql_middleware::drivers::rusqlite::Connection::open(&path).expect("rusqlite");
    run(Kind::Sqlite, conn, Raw::Sqlite(raw), rt.handle());
}

#[cfg(feature = "turso")]
#[test]
fn differential_turso() {
    let rt = common::reliability::runtime();
    let db = rt.block_on(common::engines::turso::test_db());
    let mut conn = rt.block_on(db.db.get_connection()).expect("checkout");
    rt.block_on(conn.execute_batch(SQLITE_TABLE))
        .expect("table");
    let raw = rt.block_on(db.db.get_connection()).expect("raw checkout");
    run(Kind::Turso, conn, Raw::Turso(raw), rt.handle());
}

#[cfg(feature = "mysql")]
#[test]
fn differential_mysql() {
    use mysql_async::prelude::Queryable;
    let rt = common::reliability::runtime();
    rt.block_on(common::mysql::with_database(|url| async move {
        let db = common::engines::mysql::test_db(&url).await;
        let mut conn = db.conn().await;
        conn.execute_batch(mysql::MY_TABLE).await.expect("table");
        let mut raw = common::mysql::raw_conn(&url).await;
        // The crate's sessions run in UTC; so does the raw one, or TIMESTAMP would differ.
        raw.query_drop("SET time_zone = '+00:00'")
            .await
            .expect("raw time zone");
        let mut loader = common::mysql::raw_conn(&url).await;
        loader
            .query_drop("SET time_zone = '+00:00', sql_mode = ''")
            .await
            .expect("loader session");
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            run(Kind::Mysql, conn, Raw::Mysql { conn: raw, loader }, &handle);
            drop(db);
        })
        .await
        .expect("differential thread");
    }));
}

#[cfg(feature = "postgres")]
#[test]
fn differential_postgres() {
    let rt = common::reliability::runtime();
    rt.block_on(common::pg::with_schema(|url| async move {
        let db = common::engines::postgres::test_db(&url).await;
        let mut conn = db.conn().await;
        conn.execute_batch(PG_TABLE).await.expect("table");
        let raw = common::pg::raw_client(&url).await;
        let handle = tokio::runtime::Handle::current();
        tokio::task::spawn_blocking(move || {
            run(Kind::Postgres, conn, Raw::Postgres(raw), &handle);
            drop(db);
        })
        .await
        .expect("differential thread");
    }));
}
