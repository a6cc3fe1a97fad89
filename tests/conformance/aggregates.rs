//! Aggregates decode with the same code on every engine: `sum`, `avg`, `count`, `min`/`max`
//! and `total` over each column type, read into `i64` (integral results), `f64` (`avg`,
//! `total`) and `Decimal` (exact numeric results), whatever type each engine gives the result
//! (Postgres: `sum(bigint)` and `avg` of integers are `numeric`, `sum(int2/int4)` is `bigint`;
//! SQLite and Turso: an integer or a real; MySQL: `sum` and `avg` of integers and decimals are
//! `DECIMAL`, of floats `DOUBLE`).

use rust_decimal::Decimal;
use sql_middleware::prelude::*;
use sql_middleware::{ErrorKind, SqlRow};

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb, expect_kind};
use crate::helpers::*;

/// The aggregated columns and their type per engine. SQLite and Turso take the declared names
/// for their affinity: `SMALLINT`/`INTEGER`/`BIGINT` are integers, `REAL`/`DOUBLE PRECISION`
/// reals, and `NUMERIC` has numeric affinity, so its values are stored (and compared, summed)
/// as numbers. (A `DECIMAL_TEXT` column keeps exact text instead: `sum` still reads it as
/// numbers, but `min`/`max` compare it as text, so it is not aggregated here.) MySQL's
/// `NUMERIC` without a precision is `DECIMAL(10,0)` and its `REAL` a double, so its column
/// types (the last) name a scale and the single-precision `FLOAT`.
const COLUMNS: [(&str, &str, &str, &str); 9] = [
    ("i16", "SMALLINT", "SMALLINT", "SMALLINT"),
    ("i32", "INTEGER", "INTEGER", "INT"),
    ("i64", "BIGINT", "BIGINT", "BIGINT"),
    ("f32", "REAL", "REAL", "FLOAT"),
    ("f64", "DOUBLE PRECISION", "DOUBLE PRECISION", "DOUBLE"),
    ("num", "NUMERIC", "NUMERIC", "DECIMAL(20,4)"),
    ("numi", "NUMERIC", "NUMERIC", "DECIMAL(20,0)"),
    ("b", "BOOLEAN", "BOOLEAN", "BOOLEAN"),
    ("t", "TEXT", "TEXT", "TEXT"),
];

async fn create(db: &TestDb, conn: &mut Conn, table: &str) {
    let cols: Vec<String> = COLUMNS
        .iter()
        .map(|(name, pg, lite, my)| match db.kind {
            Kind::Postgres => format!("{name} {pg}"),
            Kind::Sqlite | Kind::Turso => format!("{name} {lite}"),
            Kind::Mysql => format!("{name} {my}"),
        })
        .collect();
    batch(
        conn,
        &format!(
            "CREATE TABLE {table} (id BIGINT PRIMARY KEY, {})",
            cols.join(", ")
        ),
    )
    .await;
}

fn dec(s: &str) -> Decimal {
    s.parse().unwrap()
}

/// `total(x)`: SQLite's and Turso's float sum, 0.0 over no rows. Postgres and MySQL have no
/// `total`; the same result is `coalesce(sum(x), 0)` as a double.
fn total(db: &TestDb, col: &str) -> String {
    match db.kind {
        Kind::Postgres => format!("CAST(COALESCE(SUM({col}), 0) AS DOUBLE PRECISION)"),
        Kind::Mysql => format!("CAST(COALESCE(SUM({col}), 0) AS DOUBLE)"),
        Kind::Sqlite | Kind::Turso => format!("TOTAL({col})"),
    }
}

/// Every aggregate of the table, as one row. `None` where the engine returns NULL (no rows).
#[derive(Debug, PartialEq)]
struct Aggs {
    count_all: i64,
    sum_i16: Option<i64>,
    sum_i32: Option<i64>,
    sum_i64: Option<i64>,
    sum_f32: Option<f64>,
    sum_f64: Option<f64>,
    sum_num: Option<Decimal>,
    sum_numi: Option<i64>,
    sum_b: Option<i64>,
    avg_i16: Option<f64>,
    avg_i32: Option<f64>,
    avg_i64: Option<f64>,
    avg_f32: Option<f64>,
    avg_f64: Option<f64>,
    avg_num: Option<f64>,
    count_i16: i64,
    count_i64: i64,
    count_num: i64,
    count_b: i64,
    count_t: i64,
    min_i16: Option<i64>,
    max_i16: Option<i64>,
    min_i32: Option<i64>,
    max_i32: Option<i64>,
    min_i64: Option<i64>,
    max_i64: Option<i64>,
    min_f32: Option<f64>,
    max_f32: Option<f64>,
    min_f64: Option<f64>,
    max_f64: Option<f64>,
    min_num: Option<Decimal>,
    max_num: Option<Decimal>,
    min_numi: Option<i64>,
    max_numi: Option<i64>,
    min_t: Option<String>,
    max_t: Option<String>,
    total_i64: f64,
    total_f64: f64,
    total_num: f64,
}

impl FromRow for Aggs {
    fn from_row<R: SqlRow>(r: &R) -> Result<Self, SqlMiddlewareDbError> {
        Ok(Aggs {
            count_all: r.get("count_all")?,
            sum_i16: r.get("sum_i16")?,
            sum_i32: r.get("sum_i32")?,
            sum_i64: r.get("sum_i64")?,
            sum_f32: r.get("sum_f32")?,
            sum_f64: r.get("sum_f64")?,
            sum_num: r.get("sum_num")?,
            sum_numi: r.get("sum_numi")?,
            sum_b: r.get("sum_b")?,
            avg_i16: r.get("avg_i16")?,
            avg_i32: r.get("avg_i32")?,
            avg_i64: r.get("avg_i64")?,
            avg_f32: r.get("avg_f32")?,
            avg_f64: r.get("avg_f64")?,
            avg_num: r.get("avg_num")?,
            count_i16: r.get("count_i16")?,
            count_i64: r.get("count_i64")?,
            count_num: r.get("count_num")?,
            count_b: r.get("count_b")?,
            count_t: r.get("count_t")?,
            min_i16: r.get("min_i16")?,
            max_i16: r.get("max_i16")?,
            min_i32: r.get("min_i32")?,
            max_i32: r.get("max_i32")?,
            min_i64: r.get("min_i64")?,
            max_i64: r.get("max_i64")?,
            min_f32: r.get("min_f32")?,
            max_f32: r.get("max_f32")?,
            min_f64: r.get("min_f64")?,
            max_f64: r.get("max_f64")?,
            min_num: r.get("min_num")?,
            max_num: r.get("max_num")?,
            min_numi: r.get("min_numi")?,
            max_numi: r.get("max_numi")?,
            min_t: r.get("min_t")?,
            max_t: r.get("max_t")?,
            total_i64: r.get("total_i64")?,
            total_f64: r.get("total_f64")?,
            total_num: r.get("total_num")?,
        })
    }
}

fn aggs_sql(db: &TestDb, table: &str) -> String {
    let mut cols = vec!["COUNT(*) AS count_all".to_owned()];
    for c in ["i16", "i32", "i64", "f32", "f64", "num", "numi"] {
        cols.push(format!("SUM({c}) AS sum_{c}"));
    }
    // Booleans are summed as 0/1 (Postgres has no sum of booleans).
    cols.push("SUM(CASE WHEN b THEN 1 ELSE 0 END) AS sum_b".to_owned());
    for c in ["i16", "i32", "i64", "f32", "f64", "num"] {
        cols.push(format!("AVG({c}) AS avg_{c}"));
    }
    for c in ["i16", "i64", "num", "b", "t"] {
        cols.push(format!("COUNT({c}) AS count_{c}"));
    }
    // Postgres has no min/max of booleans (it has bool_and/bool_or), so `b` is left out.
    for c in ["i16", "i32", "i64", "f32", "f64", "num", "numi", "t"] {
        cols.push(format!("MIN({c}) AS min_{c}, MAX({c}) AS max_{c}"));
    }
    for c in ["i64", "f64", "num"] {
        cols.push(format!("{} AS total_{c}", total(db, c)));
    }
    format!("SELECT {} FROM {table}", cols.join(", "))
}

/// Runs the aggregates both ways a user reads a row, typed straight from the driver and from a
/// materialised result set, and checks that both read the same.
async fn aggregates(db: &TestDb, conn: &mut Conn, table: &str) -> Aggs {
    let k = db.kind.name();
    let sql = aggs_sql(db, table);
    let typed: Aggs = conn
        .query(&sql)
        .one()
        .await
        .unwrap_or_else(|e| panic!("[{k}] aggregates over {table}, typed: {e}"));
    let rs = select(conn, &sql, &[]).await;
    let materialised = Aggs::from_row(&rs.results[0])
        .unwrap_or_else(|e| panic!("[{k}] aggregates over {table}, materialised: {e}"));
    assert_eq!(typed, materialised, "[{k}] the two ways of reading agree");
    typed
}

async fn t_aggregates_decode_alike(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create(db, &mut conn, "agg").await;
    let insert = "INSERT INTO agg (id, i16, i32, i64, f32, f64, num, numi, b, t) \
                  VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
    let rows: [[RowValues; 10]; 4] = [
        [
            1.into(),
            (-7).into(),
            100_000.into(),
            9_000_000_000_i64.into(),
            1.5.into(),
            (-2.25).into(),
            dec("10.25").into(),
            dec("5").into(),
            true.into(),
            "pear".into(),
        ],
        [
            2.into(),
            300.into(),
            2_000_000_002.into(),
            (-4_000_000_000_i64).into(),
            (-0.5).into(),
            1e10.into(),
            dec("-3.5").into(),
            dec("-12").into(),
            false.into(),
            "apple".into(),
        ],
        [
            3.into(),
            RowValues::Null,
            RowValues::Null,
            RowValues::Null,
            RowValues::Null,
            RowValues::Null,
            RowValues::Null,
            RowValues::Null,
            RowValues::Null,
            RowValues::Null,
        ],
        [
            4.into(),
            i16::MAX.into(),
            i32::MAX.into(),
            1.into(),
            2.0.into(),
            0.125.into(),
            dec("100.5").into(),
            dec("1000000").into(),
            true.into(),
            "zebra".into(),
        ],
    ];
    for row in &rows {
        dml(&mut conn, insert, row).await;
    }

    let got = aggregates(db, &mut conn, "agg").await;
    let want = Aggs {
        count_all: 4,
        // Beyond i16 and i32: the engines widen the sum (Postgres to bigint).
        sum_i16: Some(-7 + 300 + 32_767),
        sum_i32: Some(100_000 + 2_000_000_002 + 2_147_483_647),
        // Postgres: numeric.
        sum_i64: Some(5_000_000_001),
        sum_f32: Some(3.0),
        sum_f64: Some(9_999_999_997.875),
        // Postgres: numeric; SQLite and Turso: a real, read without binary noise.
        sum_num: Some(dec("107.25")),
        // Postgres: numeric, integral, so it reads as an integer.
        sum_numi: Some(999_993),
        sum_b: Some(2),
        // Postgres: numeric for the integer columns; every average here is exact in a double.
        avg_i16: Some(11_020.0),
        avg_i32: Some(1_382_527_883.0),
        avg_i64: Some(1_666_666_667.0),
        avg_f32: Some(1.0),
        avg_f64: Some(3_333_333_332.625),
        avg_num: Some(35.75),
        count_i16: 3,
        count_i64: 3,
        count_num: 3,
        count_b: 3,
        count_t: 3,
        min_i16: Some(-7),
        max_i16: Some(32_767),
        min_i32: Some(100_000),
        max_i32: Some(2_147_483_647),
        min_i64: Some(-4_000_000_000),
        max_i64: Some(9_000_000_000),
        min_f32: Some(-0.5),
        max_f32: Some(2.0),
        min_f64: Some(-2.25),
        max_f64: Some(1e10),
        min_num: Some(dec("-3.5")),
        max_num: Some(dec("100.5")),
        min_numi: Some(-12),
        max_numi: Some(1_000_000),
        min_t: Some("apple".into()),
        max_t: Some("zebra".into()),
        total_i64: 5_000_000_001.0,
        total_f64: 9_999_999_997.875,
        total_num: 107.25,
    };
    assert_eq!(got, want, "[{k}] aggregates over a filled table");

    // Over no rows: NULL for sum, avg, min and max (decoded as None), 0 for count and total.
    create(db, &mut conn, "agg_empty").await;
    let got = aggregates(db, &mut conn, "agg_empty").await;
    let want = Aggs {
        count_all: 0,
        sum_i16: None,
        sum_i32: None,
        sum_i64: None,
        sum_f32: None,
        sum_f64: None,
        sum_num: None,
        sum_numi: None,
        sum_b: None,
        avg_i16: None,
        avg_i32: None,
        avg_i64: None,
        avg_f32: None,
        avg_f64: None,
        avg_num: None,
        count_i16: 0,
        count_i64: 0,
        count_num: 0,
        count_b: 0,
        count_t: 0,
        min_i16: None,
        max_i16: None,
        min_i32: None,
        max_i32: None,
        min_i64: None,
        max_i64: None,
        min_f32: None,
        max_f32: None,
        min_f64: None,
        max_f64: None,
        min_num: None,
        max_num: None,
        min_numi: None,
        max_numi: None,
        min_t: None,
        max_t: None,
        total_i64: 0.0,
        total_f64: 0.0,
        total_num: 0.0,
    };
    assert_eq!(got, want, "[{k}] aggregates over an empty table");
    // A NULL into a plain (non-Option) type is a typed error, on every engine.
    let e = conn
        .query("SELECT SUM(i64) FROM agg_empty")
        .one::<(i64,)>()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::TypeMismatch, "[{k}] {e}");
}

/// A sum that does not fit an `i64`: a typed error when decoded into `i64`, exact as `Decimal`
/// and rounded as `f64`, where the engine can compute it at all.
async fn t_aggregate_beyond_i64(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create(db, &mut conn, "big").await;
    for id in 1..=2 {
        dml(
            &mut conn,
            "INSERT INTO big (id, i64) VALUES ($1, $2)",
            &[RowValues::Int(id), RowValues::Int(i64::MAX)],
        )
        .await;
    }
    let twice_max = 2 * i128::from(i64::MAX);
    let total_sql = format!("SELECT {} FROM big", total(db, "i64"));
    let (t,): (f64,) = conn.query(&total_sql).one().await.unwrap();
    assert_eq!(t, twice_max as f64, "[{k}] total beyond i64");
    let r = conn.query("SELECT SUM(i64) FROM big").one::<(i64,)>().await;
    match db.kind {
        // Postgres sums bigints as numeric, MySQL as DECIMAL: the sum exists, and says it
        // does not fit.
        Kind::Postgres | Kind::Mysql => {
            let e = expect_kind(&format!("[{k}] sum beyond i64"), r, ErrorKind::TypeMismatch);
            assert!(e.message().contains("out of range"), "[{k}] {e}");
            let (d,): (Decimal,) = conn.query("SELECT SUM(i64) FROM big").one().await.unwrap();
            assert_eq!(d, Decimal::from_i128_with_scale(twice_max, 0), "[{k}]");
            let (f,): (f64,) = conn.query("SELECT SUM(i64) FROM big").one().await.unwrap();
            assert_eq!(f, twice_max as f64, "[{k}]");
        }
        // SQLite and Turso sum integers as 64-bit integers and fail the statement on overflow
        // (`total` is their float sum).
        Kind::Sqlite | Kind::Turso => {
            let e = r.expect_err("sum beyond i64");
            assert!(
                e.message().to_ascii_lowercase().contains("overflow"),
                "[{k}] {e:?}"
            );
        }
    }
}

/// Exact decimals (Postgres `NUMERIC`, MySQL `DECIMAL(38,10)`, SQLite and Turso `DECIMAL_TEXT`:
/// text kept as written). `sum` and `avg` read the text as numbers on every engine; `min`/`max`
/// on SQLite and Turso compare the text, as they do for any TEXT-affinity column. MySQL's `avg`
/// of a decimal is itself a decimal, with 4 more places than the column
/// (`div_precision_increment`), so it is that decimal rounded to 14 places.
async fn t_aggregate_of_exact_decimals(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "dx", &[("d", Logical::Numeric)]).await;
    for (id, d) in [(1, "9.5"), (2, "10.25"), (3, "-0.125")] {
        dml(
            &mut conn,
            "INSERT INTO dx (id, d) VALUES ($1, $2)",
            &[RowValues::Int(id), dec(d).into()],
        )
        .await;
    }
    let (sum, avg, min, max): (Decimal, f64, Decimal, Decimal) = conn
        .query("SELECT SUM(d), AVG(d), MIN(d), MAX(d) FROM dx")
        .one()
        .await
        .unwrap_or_else(|e| panic!("[{k}] {e}"));
    let want_avg = match db.kind {
        Kind::Mysql => "6.54166666666667".parse::<f64>().unwrap(),
        Kind::Sqlite | Kind::Postgres | Kind::Turso => 19.625 / 3.0,
    };
    assert_eq!(
        (sum, avg, min),
        (dec("19.625"), want_avg, dec("-0.125")),
        "[{k}]"
    );
    let want_max = match db.kind {
        Kind::Postgres | Kind::Mysql => dec("10.25"),
        // '9.5' > '10.25' as text.
        Kind::Sqlite | Kind::Turso => dec("9.5"),
    };
    assert_eq!(max, want_max, "[{k}] max of exact decimals");
}

backend_tests! {
    async fn aggregates_decode_alike(db) { t_aggregates_decode_alike(&db).await }
    async fn aggregate_beyond_i64(db) { t_aggregate_beyond_i64(&db).await }
    async fn aggregate_of_exact_decimals(db) { t_aggregate_of_exact_decimals(&db).await }
}
