//! MySQL-only promises: the type matrix (every integer width signed and unsigned, `DECIMAL`,
//! `FLOAT`/`DOUBLE`, the date and time types, `JSON`, `BLOB`/`TEXT` at every size, `ENUM`/`SET`,
//! `BIT`, UUIDs as `CHAR(36)` and `BINARY(16)`) both ways with NULLs and edge values, zero dates
//! refused with a typed error, and the session kept in UTC.
#![cfg(feature = "mysql")]

use std::str::FromStr;

use chrono::{NaiveDate, NaiveTime};
use rust_decimal::Decimal;
use sql_middleware::prelude::*;
use sql_middleware::{ErrorKind, Interval, params};
use uuid::Uuid;

use crate::common::groups;
use crate::common::mysql;

async fn pool(url: &str) -> ConfigAndPool {
    ConfigAndPool::mysql(url)
        .max_size(2)
        .build()
        .await
        .expect("pool")
}

const MATRIX: &str = "CREATE TABLE m (
    id INT PRIMARY KEY,
    ti TINYINT, tiu TINYINT UNSIGNED, si SMALLINT, siu SMALLINT UNSIGNED,
    mi MEDIUMINT, miu MEDIUMINT UNSIGNED, i INT, iu INT UNSIGNED,
    bi BIGINT, biu BIGINT UNSIGNED,
    dc DECIMAL(20,4), f FLOAT, d DOUBLE,
    dt DATE, dtm DATETIME(6), dts DATETIME, ts TIMESTAMP(6) NULL, tm TIME(6), yr YEAR,
    js JSON,
    tb TINYBLOB, bl BLOB, mb MEDIUMBLOB, lb LONGBLOB,
    tt TINYTEXT, tx TEXT, mt MEDIUMTEXT, lt LONGTEXT,
    vc VARCHAR(20), vb VARBINARY(20), bn BINARY(4),
    en ENUM('a', 'b'), st SET('x', 'y'), bt BIT(8), b BOOLEAN,
    uc CHAR(36), ub BINARY(16))";

const COLS: [&str; 37] = [
    "ti", "tiu", "si", "siu", "mi", "miu", "i", "iu", "bi", "biu", "dc", "f", "d", "dt", "dtm",
    "dts", "ts", "tm", "yr", "js", "tb", "bl", "mb", "lb", "tt", "tx", "mt", "lt", "vc", "vb",
    "bn", "en", "st", "bt", "b", "uc", "ub",
];

fn dec(s: &str) -> Decimal {
    Decimal::from_str(s).unwrap()
}

fn at(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32, us: u32) -> chrono::NaiveDateTime {
    NaiveDate::from_ymd_opt(y, mo, d)
        .unwrap()
        .and_hms_micro_opt(h, mi, s, us)
        .unwrap()
}

/// The two edge rows (each type's largest values, then its smallest), as bound and as read back.
fn edge_rows(uuid: Uuid) -> [(Vec<RowValues>, Vec<RowValues>); 2] {
    let big_blob: Vec<u8> = (0..70_000_u32).map(|i| (i % 251) as u8).collect();
    let big_text = "ü".repeat(40_000);
    let max = vec![
        (RowValues::Int(127), RowValues::Int(127)),
        (RowValues::Int(255), RowValues::Int(255)),
        (RowValues::Int(32_767), RowValues::Int(32_767)),
        (RowValues::Int(65_535), RowValues::Int(65_535)),
        (RowValues::Int(8_388_607), RowValues::Int(8_388_607)),
        (RowValues::Int(16_777_215), RowValues::Int(16_777_215)),
        (RowValues::Int(2_147_483_647), RowValues::Int(2_147_483_647)),
        (RowValues::Int(4_294_967_295), RowValues::Int(4_294_967_295)),
        (RowValues::Int(i64::MAX), RowValues::Int(i64::MAX)),
        // Above i64::MAX an unsigned BIGINT reads back as Numeric.
        (
            RowValues::Numeric(Decimal::from(u64::MAX)),
            RowValues::Numeric(Decimal::from(u64::MAX)),
        ),
        (
            RowValues::Numeric(dec("9999999999999999.9999")),
            RowValues::Numeric(dec("9999999999999999.9999")),
        ),
        (RowValues::Float(1.5), RowValues::Float(1.5)),
        (RowValues::Float(f64::MAX), RowValues::Float(f64::MAX)),
        (
            RowValues::Date(NaiveDate::from_ymd_opt(9999, 12, 31).unwrap()),
            RowValues::Date(NaiveDate::from_ymd_opt(9999, 12, 31).unwrap()),
        ),
        (
            RowValues::Timestamp(at(9999, 12, 31, 23, 59, 59, 999_999)),
            RowValues::Timestamp(at(9999, 12, 31, 23, 59, 59, 999_999)),
        ),
        (
            RowValues::Timestamp(at(2024, 2, 29, 12, 0, 1, 0)),
            RowValues::Timestamp(at(2024, 2, 29, 12, 0, 1, 0)),
        ),
        (
            RowValues::Timestamp(at(2038, 1, 19, 3, 14, 7, 999_999)),
            RowValues::Timestamp(at(2038, 1, 19, 3, 14, 7, 999_999)),
        ),
        (
            RowValues::Time(NaiveTime::from_hms_micro_opt(23, 59, 59, 999_999).unwrap()),
            RowValues::Time(NaiveTime::from_hms_micro_opt(23, 59, 59, 999_999).unwrap()),
        ),
        (RowValues::Int(2155), RowValues::Int(2155)),
        (
            RowValues::JSON(serde_json::json!({"k": [1, "two", null]})),
            // MariaDB's JSON is LONGTEXT: the text as bound.
            RowValues::Text(r#"{"k":[1,"two",null]}"#.into()),
        ),
        (
            RowValues::Blob(vec![0xff; 255]),
            RowValues::Blob(vec![0xff; 255]),
        ),
        (
            RowValues::Blob(big_blob[..65_535].to_vec()),
            RowValues::Blob(big_blob[..65_535].to_vec()),
        ),
        (
            RowValues::Blob(big_blob.clone()),
            RowValues::Blob(big_blob.clone()),
        ),
        (RowValues::Blob(big_blob.clone()), RowValues::Blob(big_blob)),
        (
            RowValues::Text("t".repeat(255)),
            RowValues::Text("t".repeat(255)),
        ),
        (
            RowValues::Text("x".repeat(65_535)),
            RowValues::Text("x".repeat(65_535)),
        ),
        (
            RowValues::Text(big_text.clone()),
            RowValues::Text(big_text.clone()),
        ),
        (RowValues::Text(big_text.clone()), RowValues::Text(big_text)),
        (
            RowValues::Text("héllo 🌍".into()),
            RowValues::Text("héllo 🌍".into()),
        ),
        (
            RowValues::Blob(vec![0, 1, 2]),
            RowValues::Blob(vec![0, 1, 2]),
        ),
        // BINARY(n) pads with zero bytes.
        (
            RowValues::Blob(vec![7, 8]),
            RowValues::Blob(vec![7, 8, 0, 0]),
        ),
        (RowValues::Text("b".into()), RowValues::Text("b".into())),
        (RowValues::Text("x,y".into()), RowValues::Text("x,y".into())),
        (RowValues::Int(255), RowValues::Int(255)),
        (RowValues::Bool(true), RowValues::Int(1)),
        (RowValues::Uuid(uuid), RowValues::Text(uuid.to_string())),
        (
            RowValues::Blob(uuid.as_bytes().to_vec()),
            RowValues::Blob(uuid.as_bytes().to_vec()),
        ),
    ];
    let min = vec![
        (RowValues::Int(-128), RowValues::Int(-128)),
        (RowValues::Int(0), RowValues::Int(0)),
        (RowValues::Int(-32_768), RowValues::Int(-32_768)),
        (RowValues::Int(0), RowValues::Int(0)),
        (RowValues::Int(-8_388_608), RowValues::Int(-8_388_608)),
        (RowValues::Int(0), RowValues::Int(0)),
        (
            RowValues::Int(-2_147_483_648),
            RowValues::Int(-2_147_483_648),
        ),
        (RowValues::Int(0), RowValues::Int(0)),
        (RowValues::Int(i64::MIN), RowValues::Int(i64::MIN)),
        (RowValues::Int(0), RowValues::Int(0)),
        (
            RowValues::Numeric(dec("-0.0001")),
            RowValues::Numeric(dec("-0.0001")),
        ),
        (RowValues::Float(-0.25), RowValues::Float(-0.25)),
        (
            RowValues::Float(f64::MIN_POSITIVE),
            RowValues::Float(f64::MIN_POSITIVE),
        ),
        (
            RowValues::Date(NaiveDate::from_ymd_opt(1000, 1, 1).unwrap()),
            RowValues::Date(NaiveDate::from_ymd_opt(1000, 1, 1).unwrap()),
        ),
        (
            RowValues::Timestamp(at(1000, 1, 1, 0, 0, 0, 0)),
            RowValues::Timestamp(at(1000, 1, 1, 0, 0, 0, 0)),
        ),
        (
            RowValues::Timestamp(at(1970, 1, 1, 0, 0, 0, 0)),
            RowValues::Timestamp(at(1970, 1, 1, 0, 0, 0, 0)),
        ),
        (
            RowValues::Timestamp(at(1970, 1, 1, 0, 0, 1, 0)),
            RowValues::Timestamp(at(1970, 1, 1, 0, 0, 1, 0)),
        ),
        // Outside a day TIME is an interval (of no months).
        (
            RowValues::Interval(Interval {
                months: 0,
                days: 0,
                microseconds: -1_000_001,
            }),
            RowValues::Interval(Interval {
                months: 0,
                days: 0,
                microseconds: -1_000_001,
            }),
        ),
        (RowValues::Int(1901), RowValues::Int(1901)),
        (
            RowValues::JSON(serde_json::json!([])),
            RowValues::Text("[]".into()),
        ),
        (RowValues::Blob(vec![]), RowValues::Blob(vec![])),
        (RowValues::Blob(vec![]), RowValues::Blob(vec![])),
        (RowValues::Blob(vec![0]), RowValues::Blob(vec![0])),
        (RowValues::Blob(vec![]), RowValues::Blob(vec![])),
        (
            RowValues::Text(String::new()),
            RowValues::Text(String::new()),
        ),
        (
            RowValues::Text(String::new()),
            RowValues::Text(String::new()),
        ),
        (RowValues::Text("\0".into()), RowValues::Text("\0".into())),
        (
            RowValues::Text(String::new()),
            RowValues::Text(String::new()),
        ),
        (
            RowValues::Text(String::new()),
            RowValues::Text(String::new()),
        ),
        (RowValues::Blob(vec![]), RowValues::Blob(vec![])),
        (RowValues::Blob(vec![0; 4]), RowValues::Blob(vec![0; 4])),
        (RowValues::Text("a".into()), RowValues::Text("a".into())),
        (
            RowValues::Text(String::new()),
            RowValues::Text(String::new()),
        ),
        (RowValues::Int(0), RowValues::Int(0)),
        (RowValues::Bool(false), RowValues::Int(0)),
        (
            RowValues::Uuid(Uuid::nil()),
            RowValues::Text(Uuid::nil().to_string()),
        ),
        (
            RowValues::Blob(Uuid::nil().as_bytes().to_vec()),
            RowValues::Blob(Uuid::nil().as_bytes().to_vec()),
        ),
    ];
    [max, min].map(|row| row.into_iter().unzip())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn type_matrix_round_trips_every_type_and_null() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        assert!(
            mysql::is_mariadb(&url).await,
            "the matrix expects MariaDB (JSON reads back as text there)"
        );
        let db = pool(&url).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch(MATRIX).await.unwrap();
        let uuid = Uuid::parse_str("67e55044-10b1-426f-9247-bb680e5fe0c8").unwrap();
        let placeholders: Vec<String> = (2..=COLS.len() + 1).map(|i| format!("${i}")).collect();
        let insert = format!(
            "INSERT INTO m (id, {}) VALUES ($1, {})",
            COLS.join(", "),
            placeholders.join(", ")
        );
        let rows = edge_rows(uuid);
        for (k, (bound, _)) in rows.iter().enumerate() {
            assert_eq!(bound.len(), COLS.len());
            let mut params = vec![RowValues::Int(k as i64 + 1)];
            params.extend(bound.iter().cloned());
            let n = c
                .query(&insert)
                .params(&params)
                .dml()
                .await
                .unwrap_or_else(|e| panic!("edge row {k}: {e:?}"));
            assert_eq!(n, 1);
        }
        // A row of NULLs in every column.
        let mut nulls = vec![RowValues::Int(3)];
        nulls.extend(COLS.iter().map(|_| RowValues::Null));
        c.query(&insert).params(&nulls).dml().await.unwrap();

        let rs = c
            .query(&format!("SELECT {} FROM m ORDER BY id", COLS.join(", ")))
            .select()
            .await
            .unwrap();
        assert_eq!(rs.len(), 3);
        let mut bad = Vec::new();
        for (k, (_, back)) in rows.iter().enumerate() {
            for (col, want) in COLS.iter().zip(back) {
                let got = rs.results[k].get(col);
                if got != Some(want) {
                    let show = |v: Option<&RowValues>| {
                        let s = format!("{v:?}");
                        s.chars().take(120).collect::<String>()
                    };
                    bad.push(format!(
                        "row {k} {col}: got {}, want {}",
                        show(got),
                        show(Some(want))
                    ));
                }
            }
        }
        for col in COLS {
            if rs.results[2].get(col) != Some(&RowValues::Null) {
                bad.push(format!("NULL row {col}: {:?}", rs.results[2].get(col)));
            }
        }
        assert!(
            bad.is_empty(),
            "{} differences:\n{}",
            bad.len(),
            bad.join("\n")
        );

        // Typed decoding into the natural Rust types, edge values included.
        type Ints = (i8, u8, i16, u16, i32, u32, i32, u32, i64, u64);
        let ints: Ints = c
            .query("SELECT ti, tiu, si, siu, mi, miu, i, iu, bi, biu FROM m WHERE id = 1")
            .one()
            .await
            .unwrap();
        assert_eq!(
            ints,
            (
                127,
                255,
                32_767,
                65_535,
                8_388_607,
                16_777_215,
                2_147_483_647,
                4_294_967_295,
                i64::MAX,
                u64::MAX
            )
        );
        let (f, b, bit, yr, u1, u2, j): (f32, bool, u8, i32, Uuid, Uuid, serde_json::Value) = c
            .query("SELECT f, b, bt, yr, uc, ub, js FROM m WHERE id = 1")
            .one()
            .await
            .unwrap();
        assert_eq!(
            (f, b, bit, yr, u1, u2, j),
            (
                1.5,
                true,
                255,
                2155,
                uuid,
                uuid,
                serde_json::json!({"k": [1, "two", null]})
            )
        );
        let e = c
            .query("SELECT biu FROM m WHERE id = 1")
            .one::<(i64,)>()
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TypeMismatch, "u64::MAX into i64: {e}");
        let nulls: (
            Option<i64>,
            Option<Decimal>,
            Option<NaiveDate>,
            Option<Uuid>,
        ) = c
            .query("SELECT bi, dc, dt, uc FROM m WHERE id = 3")
            .one()
            .await
            .unwrap();
        assert_eq!(nulls, (None, None, None, None));

        // A UUID's text does not fit BINARY(16): binding it there is a typed error.
        let e = c
            .query("UPDATE m SET ub = $1 WHERE id = 3")
            .params(&[RowValues::Uuid(uuid)])
            .dml()
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ParameterType, "{e}");
        // Out-of-range integers are typed errors too, not clamped.
        for (col, v) in [("ti", 128_i64), ("tiu", -1), ("iu", 4_294_967_296)] {
            let e = c
                .query(&format!("UPDATE m SET {col} = $1 WHERE id = 3"))
                .params(&[RowValues::Int(v)])
                .dml()
                .await
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ParameterType, "{col} = {v}: {e}");
        }
    })
    .await;
}

/// A zero date (MariaDB stores one unless `NO_ZERO_DATE` is in `sql_mode`) is no date: reading
/// it is a `TypeMismatch` error, never a made-up value; NULL and real dates around it are fine.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_dates_are_refused_with_a_typed_error() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let db = pool(&url).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch(
            "SET SESSION sql_mode = '';
             CREATE TABLE z (id INT PRIMARY KEY, d DATE, t DATETIME);
             INSERT INTO z VALUES (1, '0000-00-00', '0000-00-00 00:00:00'),
                                  (2, '2024-01-02', '2024-01-02 03:04:05'),
                                  (3, NULL, NULL);",
        )
        .await
        .unwrap();
        for col in ["d", "t"] {
            let sql = format!("SELECT {col} FROM z WHERE id = 1");
            let e = c.query(&sql).select().await.unwrap_err();
            assert_eq!(
                e.kind(),
                ErrorKind::TypeMismatch,
                "select() of a zero {col}: {e}"
            );
            let e = c.query(&sql).one::<(NaiveDate,)>().await.unwrap_err();
            assert_eq!(
                e.kind(),
                ErrorKind::TypeMismatch,
                "one() of a zero {col}: {e}"
            );
            let e = c
                .query(&sql)
                .one::<(Option<NaiveDate>,)>()
                .await
                .unwrap_err();
            assert_eq!(
                e.kind(),
                ErrorKind::TypeMismatch,
                "a zero {col} is not NULL: {e}"
            );
        }
        let rs = c
            .query("SELECT d, t FROM z WHERE id > 1 ORDER BY id")
            .select()
            .await
            .unwrap();
        assert_eq!(
            rs.results[0].get("d"),
            Some(&RowValues::Date(
                NaiveDate::from_ymd_opt(2024, 1, 2).unwrap()
            ))
        );
        assert_eq!(rs.results[1].get("t"), Some(&RowValues::Null));
    })
    .await;
}

/// The session is in UTC: a `TimestampTz` is stored as its UTC time, `NOW()` and
/// `UTC_TIMESTAMP()` agree, and a `TIMESTAMP` column reads back what was written, whatever the
/// server's own zone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_session_is_in_utc() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let db = pool(&url).await;
        let mut c = db.get_connection().await.unwrap();
        let (zone, same): (String, i64) = c
            .query("SELECT @@session.time_zone, TIMESTAMPDIFF(SECOND, NOW(), UTC_TIMESTAMP())")
            .one()
            .await
            .unwrap();
        assert!(
            zone == "+00:00" || zone.eq_ignore_ascii_case("UTC"),
            "session time zone {zone}"
        );
        assert_eq!(same, 0, "NOW() is UTC");
        c.execute_batch(
            "CREATE TABLE tz (id INT PRIMARY KEY, ts TIMESTAMP(6) NULL, dt DATETIME(6))",
        )
        .await
        .unwrap();
        let t = chrono::DateTime::parse_from_rfc3339("2024-06-01T12:30:00.25+02:00")
            .unwrap()
            .with_timezone(&chrono::Utc);
        c.query("INSERT INTO tz VALUES ($1, $2, $3)")
            .params(&params![1_i64, t, t].unwrap())
            .dml()
            .await
            .unwrap();
        let (ts, dt, unix): (
            chrono::DateTime<chrono::Utc>,
            chrono::NaiveDateTime,
            Decimal,
        ) = c
            .query("SELECT ts, dt, UNIX_TIMESTAMP(ts) FROM tz WHERE id = 1")
            .one()
            .await
            .unwrap();
        assert_eq!(ts, t);
        assert_eq!(dt, t.naive_utc());
        assert_eq!(unix, Decimal::new(t.timestamp_micros(), 6), "stored as UTC");
    })
    .await;
}

/// The background work on a connection given back (resetting its session, rolling back) is
/// bounded by the pool's recycle timeout as configured, though the pool arms no recycle timer
/// of deadpool's: a connection whose server stopped answering is given up within that bound
/// and its slot freed. (Found: the bound was read from deadpool's recycle timer, which this
/// pool never sets, so the work waited 5 s whatever the configured timeout.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_cleaning_is_bounded_by_the_configured_recycle_timeout() {
    use crate::common::proxy::{Relay, Target, assert_given_up_within};
    use std::time::Duration;
    let _group = groups::enter("mysql");
    let base = mysql::base_url();
    let o = mysql_async::Opts::from_url(&mysql::driver_url(&base)).expect("server URL");
    let server = tokio::net::lookup_host((o.ip_or_hostname(), o.tcp_port()))
        .await
        .expect("the server's address")
        .next()
        .expect("an address");
    let bound = Duration::from_millis(300);
    for dirty in ["SET @bounded_cleaning = 1", "BEGIN"] {
        let relay = Relay::start(Target::Tcp(server)).await;
        // Without TLS: a `prefer` connect that finds no TLS would connect again.
        let url = format!(
            "mysql://{}@{}/{}?sslmode=disable",
            o.user().unwrap_or("root"),
            relay.addr,
            o.db_name().unwrap_or("mysql")
        );
        assert_given_up_within(ConfigAndPool::mysql(&url), &relay, dirty, bound).await;
    }
}

/// `min_idle` keeps that many of the pool's own sessions open, not as many again for the
/// read-only pool behind `reader()`: that pool opens its sessions when readers are asked for.
/// Before, both pools kept `min_idle` open, so a pool whose readers were never used held twice
/// its `min_idle` sessions on the server (and `created` counted them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn min_idle_warms_the_pool_and_not_its_readers() {
    use std::time::{Duration, Instant};
    let _group = groups::enter("mysql");
    let db = ConfigAndPool::mysql(&mysql::base_url())
        .max_size(4)
        .min_idle(2)
        .build()
        .await
        .expect("pool");
    let until = Instant::now() + Duration::from_secs(10);
    while !(db.status().available >= 2 && db.status().created >= 2) {
        assert!(Instant::now() < until, "min_idle: {:?}", db.status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Several passes of the upkeep (one a second without lifecycle limits).
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let st = db.status();
    assert_eq!(
        st.created, 2,
        "sessions opened with nothing asked of the pool: {st:?}"
    );
    // The readers' pool still serves `reader()`, opening its session then.
    let mut r = db.reader().await.expect("reader");
    let (one,): (i64,) = r.query("SELECT 1").one().await.expect("read");
    assert_eq!(one, 1);
    drop(r);
    assert_eq!(db.status().created, 3, "{:?}", db.status());
}
