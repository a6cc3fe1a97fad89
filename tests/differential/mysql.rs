//! The MySQL/MariaDB side of the differential check: the table (every column type the mapping
//! covers), the generated rows, the select-list items, and the raw `mysql_async` side (loading
//! rows, running the compared queries, and reading its values under the mapping that
//! `src/mysql/rows.rs` documents).

use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use mysql_async::prelude::Queryable;
use proptest::prelude::*;
use rust_decimal::Decimal;

use super::{Answer, Canon, Items, ToCanon, Ty, e, float, int, json, numeric_canon};

/// Every column type the MySQL mapping covers (the database's default collation is
/// `utf8mb4_bin`; `vg` compares case-insensitively).
pub(crate) const MY_TABLE: &str = "CREATE TABLE d (id BIGINT PRIMARY KEY, \
    ti TINYINT, tu TINYINT UNSIGNED, si SMALLINT, su SMALLINT UNSIGNED, \
    mi MEDIUMINT, mu MEDIUMINT UNSIGNED, ii INT, iu INT UNSIGNED, bi BIGINT, \
    bu BIGINT UNSIGNED, dw DECIMAL(65,30), dm DECIMAL(38,10), d2 DECIMAL(12,2), fl FLOAT, \
    db DOUBLE, dt DATE, dtm DATETIME(6), tsm TIMESTAMP(6) NULL DEFAULT NULL, tm TIME(6), \
    yr YEAR, ch CHAR(4), vc VARCHAR(20), vg VARCHAR(20) COLLATE utf8mb4_general_ci, tx TEXT, \
    bn BINARY(4), vb VARBINARY(20), bl BLOB, en ENUM('a', 'b', 'ü', '😀'), \
    st SET('x', 'y', '😀'), bt BIT(64), b5 BIT(5), js JSON)";

const MY_INSERT: &str = "INSERT INTO d (id, ti, tu, si, su, mi, mu, ii, iu, bi, bu, dw, dm, \
    d2, fl, db, dt, dtm, tsm, tm, yr, ch, vc, vg, tx, bn, vb, bl, en, st, bt, b5, js) VALUES \
    (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, \
    ?, ?, ?)";

/// A MySQL date or datetime as stored: a real one, or a zero/invalid one written as text
/// (the loader's session allows them).
#[derive(Debug, Clone)]
pub(crate) enum MyDate {
    Valid(NaiveDateTime),
    Zero(&'static str),
}

#[derive(Debug, Clone)]
pub(crate) struct MyRowData {
    /// `ti`, `si`, `mi`, `ii`, `bi`.
    ints: [Option<i64>; 5],
    /// `tu`, `su`, `mu`, `iu`, `bu`.
    unsigned: [Option<u64>; 5],
    dw: Option<String>,
    dm: Option<String>,
    d2: Option<String>,
    fl: Option<f32>,
    db: Option<f64>,
    dt: Option<MyDate>,
    dtm: Option<MyDate>,
    tsm: Option<NaiveDateTime>,
    /// (negative, hours, minutes, seconds, microseconds)
    tm: Option<(bool, u32, u8, u8, u32)>,
    yr: Option<u16>,
    texts: [Option<String>; 4],
    blobs: [Option<Vec<u8>>; 3],
    en: Option<&'static str>,
    st: Option<String>,
    bt: Option<u64>,
    b5: Option<u8>,
    js: Option<serde_json::Value>,
}

pub(crate) const MY_ROW_ITEMS: Items = &[
    ("ti", Ty::Int),
    ("tu", Ty::Int),
    ("si", Ty::Int),
    ("su", Ty::Int),
    ("mi", Ty::Int),
    ("mu", Ty::Int),
    ("ii", Ty::Int),
    ("iu", Ty::Int),
    ("bi", Ty::Int),
    ("bu", Ty::U64),
    ("dw", Ty::Numeric),
    ("dm", Ty::Numeric),
    ("d2", Ty::Numeric),
    ("fl", Ty::Float),
    ("db", Ty::Float),
    ("dt", Ty::Date),
    ("dtm", Ty::Timestamp),
    ("tsm", Ty::Timestamp),
    ("tm", Ty::Interval),
    ("yr", Ty::Int),
    ("ch", Ty::Text),
    ("vc", Ty::Text),
    ("vg", Ty::Text),
    ("tx", Ty::Text),
    ("bn", Ty::Blob),
    ("vb", Ty::Blob),
    ("bl", Ty::Blob),
    ("en", Ty::Text),
    ("st", Ty::Text),
    ("bt", Ty::U64),
    ("b5", Ty::Int),
    ("js", Ty::Json),
    // Expressions whose type differs from their column's.
    ("ti + 1", Ty::Int),
    ("tu - 1", Ty::U64),
    ("bi + 0.5", Ty::Numeric),
    ("bu + 0", Ty::U64),
    ("CAST(bu AS SIGNED)", Ty::Int),
    ("bi DIV 3", Ty::Int),
    ("bi / 3", Ty::Numeric),
    ("ii % 7", Ty::Int),
    ("dm * 2", Ty::Numeric),
    ("dw + 1", Ty::Numeric),
    ("dm / 3", Ty::Numeric),
    ("-d2", Ty::Numeric),
    ("ROUND(dw, 2)", Ty::Numeric),
    ("CAST(dw AS CHAR)", Ty::Text),
    ("CAST(dm AS DOUBLE)", Ty::Float),
    ("CAST(bi AS DECIMAL(65, 30))", Ty::Numeric),
    ("fl * 2", Ty::Float),
    ("fl + 0", Ty::Float),
    ("CAST(fl AS DOUBLE)", Ty::Float),
    ("CAST(db AS FLOAT)", Ty::Float),
    ("db / 3", Ty::Float),
    ("-db", Ty::Float),
    ("dt + INTERVAL 1 DAY", Ty::Date),
    ("DATE(dtm)", Ty::Date),
    ("dtm + INTERVAL 1 SECOND", Ty::Timestamp),
    ("CAST(dt AS DATETIME)", Ty::Timestamp),
    ("YEAR(dt)", Ty::Int),
    ("TIME(dtm)", Ty::Time),
    ("CAST(tm AS TIME(6))", Ty::Time),
    ("SEC_TO_TIME(si * 60)", Ty::Interval),
    ("TIMEDIFF(dtm, '2000-01-01 00:00:00')", Ty::Interval),
    ("CAST(tm AS CHAR)", Ty::Text),
    ("HOUR(tm)", Ty::Int),
    ("yr + 0", Ty::Int),
    ("CONCAT(vc, 'x')", Ty::Text),
    ("CONCAT(ii, '')", Ty::Text),
    ("UPPER(tx)", Ty::Text),
    ("LENGTH(vc)", Ty::Int),
    ("CHAR_LENGTH(vc)", Ty::Int),
    ("vc = 'a'", Ty::Int),
    ("vg = 'A'", Ty::Int),
    ("vc COLLATE utf8mb4_general_ci = 'A'", Ty::Int),
    ("HEX(vb)", Ty::Text),
    ("CAST(vc AS BINARY)", Ty::Blob),
    ("CAST(bl AS CHAR)", Ty::Text),
    ("UNHEX(HEX(bl))", Ty::Blob),
    ("en + 0", Ty::Int),
    ("st + 0", Ty::Int),
    ("FIND_IN_SET('x', st)", Ty::Int),
    ("bt + 0", Ty::U64),
    ("b5 | 0", Ty::U64),
    ("BIN(b5)", Ty::Text),
    ("IFNULL(b5, b5)", Ty::Int),
    ("COALESCE(bt)", Ty::U64),
    ("IF(ti > 0, bt, b5)", Ty::U64),
    ("bt >> 60", Ty::U64),
    ("JSON_EXTRACT(js, '$.k')", Ty::Json),
    ("JSON_UNQUOTE(JSON_EXTRACT(js, '$.k'))", Ty::Text),
    ("JSON_TYPE(js)", Ty::Text),
    ("JSON_LENGTH(js)", Ty::Int),
    ("JSON_OBJECT('i', ii)", Ty::Json),
    ("NULL", Ty::Any),
    ("x'00ff'", Ty::Blob),
    ("_utf8mb4'😀'", Ty::Text),
    ("1.5", Ty::Numeric),
    ("1e0", Ty::Float),
    ("18446744073709551615", Ty::U64),
    ("99999999999999999999999999999999", Ty::Numeric),
    ("COALESCE(ii, bu)", Ty::Any),
    ("IF(ti > 0, vc, vb)", Ty::Any),
    ("IF(ti > 0, ti, fl)", Ty::Any),
    ("CASE WHEN ti > 0 THEN dt ELSE dtm END", Ty::Any),
    ("GREATEST(ti, si)", Ty::Int),
    ("ii IS NULL", Ty::Int),
];

pub(crate) const MY_AGG_ITEMS: Items = &[
    ("COUNT(*)", Ty::Int),
    ("SUM(bi)", Ty::Numeric),
    ("SUM(bu)", Ty::Numeric),
    ("SUM(ti)", Ty::Numeric),
    ("AVG(ii)", Ty::Numeric),
    ("SUM(dw)", Ty::Numeric),
    ("MAX(dm)", Ty::Numeric),
    ("AVG(d2)", Ty::Numeric),
    ("SUM(fl)", Ty::Float),
    ("AVG(db)", Ty::Float),
    ("STD(db)", Ty::Float),
    ("MIN(dt)", Ty::Date),
    ("MAX(dtm)", Ty::Timestamp),
    ("MAX(tsm)", Ty::Timestamp),
    ("MIN(tm)", Ty::Interval),
    ("MAX(yr)", Ty::Int),
    ("MAX(vc)", Ty::Text),
    ("GROUP_CONCAT(vc ORDER BY id)", Ty::Text),
    ("GROUP_CONCAT(vb ORDER BY id)", Ty::Blob),
    ("MIN(bl)", Ty::Blob),
    ("MAX(en)", Ty::Text),
    ("MAX(st)", Ty::Text),
    ("COUNT(DISTINCT en)", Ty::Int),
    ("BIT_OR(bt)", Ty::U64),
    ("BIT_AND(b5)", Ty::U64),
    ("BIT_XOR(bu)", Ty::U64),
    ("MIN(b5)", Ty::Int),
    ("MAX(bt)", Ty::U64),
    ("JSON_ARRAYAGG(ii)", Ty::Json),
];

/// Decimal text with up to `int` integer and `frac` fraction digits, and the type's limits.
fn decimal_text(int: usize, frac: usize) -> BoxedStrategy<String> {
    let nines = |n: usize| "9".repeat(n);
    let max = if frac == 0 {
        nines(int)
    } else {
        format!("{}.{}", nines(int), nines(frac))
    };
    let digits = if frac == 0 {
        format!("-?[0-9]{{1,{int}}}")
    } else {
        format!("-?[0-9]{{1,{int}}}(\\.[0-9]{{1,{frac}}})?")
    };
    prop_oneof![
        4 => proptest::string::string_regex(&digits).expect("regex"),
        1 => (-100_000i64..100_000, 0u32..3).prop_map(|(m, s)| Decimal::new(m, s).to_string()),
        1 => Just(max.clone()),
        1 => Just(format!("-{max}")),
        1 => Just("0".to_owned()),
    ]
    .boxed()
}

fn my_date() -> impl Strategy<Value = MyDate> {
    prop_oneof![
        8 => (1000i32..=9999, 1u32..=12, 1u32..=28, 0u32..24, 0u32..60, 0u32..60, 0u32..1_000_000)
            .prop_map(|(y, mo, d, h, mi, s, us)| MyDate::Valid(
                NaiveDate::from_ymd_opt(y, mo, d)
                    .and_then(|x| x.and_hms_micro_opt(h, mi, s, us))
                    .expect("a valid datetime")
            )),
        1 => Just(MyDate::Zero("0000-00-00 00:00:00")),
        1 => Just(MyDate::Zero("2024-02-00 10:00:00")),
    ]
}

pub(crate) fn my_row() -> impl Strategy<Value = MyRowData> {
    use prop::option::of;
    let ints = (
        of(prop_oneof![
            3 => any::<i8>().prop_map(i64::from),
            1 => Just(-128i64),
            1 => Just(127i64),
            2 => -5i64..5,
        ]),
        of(any::<i16>().prop_map(i64::from)),
        of(prop_oneof![
            3 => -8_388_608i64..=8_388_607,
            1 => Just(-8_388_608),
            1 => Just(8_388_607),
        ]),
        of(prop_oneof![3 => any::<i32>().prop_map(i64::from), 1 => Just(i64::from(i32::MIN))]),
        of(int()),
    )
        .prop_map(|(a, b, c, d, e)| [a, b, c, d, e]);
    let unsigned = (
        of(any::<u8>().prop_map(u64::from)),
        of(any::<u16>().prop_map(u64::from)),
        of(prop_oneof![3 => 0u64..=16_777_215, 1 => Just(16_777_215)]),
        of(any::<u32>().prop_map(u64::from)),
        of(prop_oneof![2 => any::<u64>(), 1 => Just(u64::MAX), 1 => 0u64..3]),
    )
        .prop_map(|(a, b, c, d, e)| [a, b, c, d, e]);
    let numbers = (
        of(decimal_text(35, 30)),
        of(decimal_text(28, 10)),
        of(decimal_text(10, 2)),
        of(prop_oneof![
            3 => any::<f32>().prop_filter("finite", |f| f.is_finite()),
            1 => Just(0.1f32),
            1 => Just(f32::MAX),
            1 => Just(f32::from_bits(1)),
        ]),
        of(prop_oneof![
            3 => any::<f64>().prop_filter("finite", |f| f.is_finite()),
            1 => -1.0e6f64..1.0e6,
            1 => Just(f64::MAX),
            1 => Just(-0.0f64),
        ]),
    );
    let times = (
        of(my_date().prop_map(|d| match d {
            MyDate::Valid(t) => MyDate::Valid(t.date().and_time(NaiveTime::MIN)),
            zero => zero,
        })),
        of(my_date()),
        of((
            1971i32..2038,
            1u32..=12,
            1u32..=28,
            0u32..24,
            0u32..60,
            0u32..60,
            0u32..1_000_000,
        )
            .prop_map(|(y, mo, d, h, mi, s, us)| {
                NaiveDate::from_ymd_opt(y, mo, d)
                    .and_then(|x| x.and_hms_micro_opt(h, mi, s, us))
                    .expect("a valid timestamp")
            })),
        of((
            any::<bool>(),
            prop_oneof![3 => 0u32..24, 1 => 24u32..=838],
            0u8..60,
            0u8..60,
            prop_oneof![Just(0u32), 0u32..1_000_000],
        )),
        of(prop_oneof![Just(0u16), 1901u16..=2155]),
    );
    let strings = (
        [
            of("\\PC{0,4}"),
            of("\\PC{0,8}"),
            of("\\PC{0,8}"),
            of("\\PC{0,12}"),
        ],
        [
            of(prop::collection::vec(any::<u8>(), 0..=4)),
            of(prop::collection::vec(any::<u8>(), 0..8)),
            of(prop::collection::vec(any::<u8>(), 0..16)),
        ],
        of(prop::sample::select(vec!["a", "b", "ü", "😀"])),
        of(prop::sample::subsequence(vec!["x", "y", "😀"], 0..=3).prop_map(|v| v.join(","))),
        of(any::<u64>()),
        of(0u8..32),
        of(json()),
    );
    (ints, unsigned, numbers, times, strings).prop_map(
        |(
            ints,
            unsigned,
            (dw, dm, d2, fl, db),
            (dt, dtm, tsm, tm, yr),
            (texts, blobs, en, st, bt, b5, js),
        )| MyRowData {
            ints,
            unsigned,
            dw,
            dm,
            d2,
            fl,
            db,
            dt,
            dtm,
            tsm,
            tm,
            yr,
            texts,
            blobs,
            en,
            st,
            bt,
            b5,
            js,
        },
    )
}

/// `$N` as MySQL writes parameters (`?`, in order; the compared queries use them in order).
pub(crate) fn mysql_marks(sql: &str) -> String {
    mysql_marks_ordered(sql).0
}

/// `$N` as MySQL writes parameters: the text with a `?` for each, and which parameter (from 1)
/// each `?` takes. Quoted strings and identifiers are copied as they are.
pub(crate) fn mysql_marks_ordered(sql: &str) -> (String, Vec<usize>) {
    let mut out = String::with_capacity(sql.len());
    let mut order = Vec::new();
    let mut chars = sql.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match quote {
            Some(q) => {
                out.push(c);
                if c == '\\' {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                } else if c == q {
                    quote = None;
                }
            }
            None if matches!(c, '\'' | '"' | '`') => {
                quote = Some(c);
                out.push(c);
            }
            None if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) => {
                let mut n = 0usize;
                while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                    n = n * 10 + d as usize;
                    chars.next();
                }
                order.push(n);
                out.push('?');
            }
            None => out.push(c),
        }
    }
    (out, order)
}

/// A MySQL value under the mapping `src/mysql/rows.rs` documents, read by its column's type in
/// the result's metadata; `Err` where the crate must refuse it (a zero date, text that is not
/// UTF-8).
pub(crate) fn my_canon(v: &mysql_async::Value, col: &mysql_async::Column) -> Result<Canon, String> {
    use mysql_async::Value as V;
    use mysql_async::consts::{ColumnFlags, ColumnType as T};
    let unsigned = |u: u64| u.canon();
    let name = col.name_str();
    Ok(match v {
        V::NULL => Canon::Null,
        V::Int(i) => Canon::Int(*i),
        V::UInt(u) => unsigned(*u),
        V::Float(f) => float(f64::from(*f)),
        V::Double(f) => float(*f),
        V::Date(y, mo, d, h, mi, s, us) => {
            let day = NaiveDate::from_ymd_opt(i32::from(*y), u32::from(*mo), u32::from(*d))
                .ok_or_else(|| format!("`{name}`: a zero date has no Rust value"))?;
            match col.column_type() {
                T::MYSQL_TYPE_DATE | T::MYSQL_TYPE_NEWDATE => Canon::Date(day),
                _ => Canon::Timestamp(
                    day.and_hms_micro_opt(u32::from(*h), u32::from(*mi), u32::from(*s), *us)
                        .ok_or_else(|| format!("`{name}`: no time of day"))?,
                ),
            }
        }
        V::Time(neg, days, h, m, s, us) => {
            let hours = days * 24 + u32::from(*h);
            match NaiveTime::from_hms_micro_opt(hours, u32::from(*m), u32::from(*s), *us) {
                Some(t) if !*neg => Canon::Time(t),
                _ => {
                    let secs = (i64::from(hours) * 60 + i64::from(*m)) * 60 + i64::from(*s);
                    let us = secs * 1_000_000 + i64::from(*us);
                    Canon::Interval(0, 0, if *neg { -us } else { us })
                }
            }
        }
        V::Bytes(b) => {
            let text =
                || String::from_utf8(b.clone()).map_err(|_| format!("`{name}`: text not UTF-8"));
            match col.column_type() {
                T::MYSQL_TYPE_NEWDECIMAL | T::MYSQL_TYPE_DECIMAL => numeric_canon(text()?),
                T::MYSQL_TYPE_JSON => {
                    let t = text()?;
                    match serde_json::from_str(&t) {
                        Ok(j) => Canon::Json(j),
                        Err(_) => Canon::Text(t),
                    }
                }
                // Bits, most significant byte first; or, for the expressions the server flags
                // BINARY (`MAX(b)`, `IFNULL(b, b)`, ...), the value's decimal text (unless it is
                // one byte of a `BIT(n <= 5)` that no digit can be).
                T::MYSQL_TYPE_BIT => {
                    let n = col.column_length();
                    let small = n <= 5 && b.len() == 1 && u32::from(b[0]) < 1 << n;
                    if col.flags().contains(ColumnFlags::BINARY_FLAG) && !small {
                        let t = text()?;
                        unsigned(t.parse().map_err(|_| format!("`{name}`: BIT text {t:?}"))?)
                    } else if b.len() > 8 {
                        return Err(format!("`{name}`: a BIT wider than 64 bits"));
                    } else {
                        let mut be = [0u8; 8];
                        be[8 - b.len()..].copy_from_slice(b);
                        unsigned(u64::from_be_bytes(be))
                    }
                }
                _ if col.character_set() == 63
                    && !col
                        .flags()
                        .intersects(ColumnFlags::ENUM_FLAG | ColumnFlags::SET_FLAG) =>
                {
                    Canon::Blob(b.clone())
                }
                _ => Canon::Text(text()?),
            }
        }
    })
}

/// Replaces the table's rows with `rows`, through the loader session.
pub(crate) async fn load(loader: &mut mysql_async::Conn, rows: &[MyRowData]) -> Result<(), String> {
    use mysql_async::Value as V;
    fn opt<T>(v: &Option<T>, f: impl FnOnce(&T) -> V) -> V {
        v.as_ref().map_or(V::NULL, f)
    }
    fn text(s: &str) -> V {
        V::Bytes(s.as_bytes().to_vec())
    }
    fn date(d: &MyDate) -> V {
        match d {
            MyDate::Valid(t) => text(&t.format("%Y-%m-%d %H:%M:%S%.6f").to_string()),
            MyDate::Zero(z) => text(z),
        }
    }
    loader.query_drop("DELETE FROM d").await.map_err(e)?;
    for (n, r) in rows.iter().enumerate() {
        let mut vals = vec![V::Int(n as i64 + 1)];
        vals.extend(
            r.ints[..4]
                .iter()
                .map(|i| opt(i, |i| V::Int(*i)))
                .zip(r.unsigned[..4].iter().map(|u| opt(u, |u| V::UInt(*u))))
                .flat_map(|(a, b)| [a, b]),
        );
        vals.push(opt(&r.ints[4], |i| V::Int(*i)));
        vals.push(opt(&r.unsigned[4], |u| V::UInt(*u)));
        vals.push(opt(&r.dw, |s| text(s)));
        vals.push(opt(&r.dm, |s| text(s)));
        vals.push(opt(&r.d2, |s| text(s)));
        vals.push(opt(&r.fl, |f| V::Float(*f)));
        vals.push(opt(&r.db, |f| V::Double(*f)));
        vals.push(opt(&r.dt, date));
        vals.push(opt(&r.dtm, date));
        vals.push(opt(&r.tsm, |t| date(&MyDate::Valid(*t))));
        vals.push(opt(&r.tm, |&(neg, hours, m, s, us)| {
            V::Time(neg, hours / 24, (hours % 24) as u8, m, s, us)
        }));
        vals.push(opt(&r.yr, |y| V::UInt(u64::from(*y))));
        vals.extend(r.texts.iter().map(|t| opt(t, |t| text(t))));
        vals.extend(r.blobs.iter().map(|b| opt(b, |b| V::Bytes(b.clone()))));
        vals.push(opt(&r.en, |t| text(t)));
        vals.push(opt(&r.st, |t| text(t)));
        vals.push(opt(&r.bt, |u| V::UInt(*u)));
        vals.push(opt(&r.b5, |u| V::UInt(u64::from(*u))));
        vals.push(opt(&r.js, |j| text(&j.to_string())));
        loader.exec_drop(MY_INSERT, vals).await.map_err(e)?;
    }
    Ok(())
}

/// Runs `sql` (placeholders `$N`) with integer parameters `p` in the binary protocol, and reads
/// the values under the mapping.
pub(crate) async fn query(conn: &mut mysql_async::Conn, sql: &str, p: &[i64]) -> Answer {
    let params: Vec<mysql_async::Value> = p.iter().map(|i| mysql_async::Value::Int(*i)).collect();
    let mut result = conn.exec_iter(mysql_marks(sql), params).await.map_err(e)?;
    let cols = result.columns().ok_or("no result set")?;
    let names = cols.iter().map(|c| c.name_str().into_owned()).collect();
    let rows: Vec<mysql_async::Row> = result.collect().await.map_err(e)?;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let mut vals = Vec::with_capacity(cols.len());
        for (i, col) in cols.iter().enumerate() {
            let v = row.as_ref(i).ok_or("a value taken")?;
            vals.push(my_canon(v, col)?);
        }
        out.push(vals);
    }
    Ok((names, out))
}

/// The mapping's `BIT` rule against the server's own arithmetic: every `BIT` value, from a
/// table's column (sent as bits) or from an expression the server sends as decimal text
/// (flagged `BINARY`), reads through the crate as the number that `… + 0` gives.
#[test]
fn bit_values_read_as_the_numbers_the_server_computes() {
    let rt = crate::common::reliability::runtime();
    rt.block_on(crate::common::mysql::with_database(|url| async move {
        let db = crate::common::engines::mysql::test_db(&url).await;
        let mut conn = db.conn().await;
        conn.execute_batch(
            "CREATE TABLE b (id INT PRIMARY KEY, w BIT(1), f BIT(5), x BIT(8), v BIT(64));
             INSERT INTO b VALUES (1, 0, 0, 0, 0), (2, 1, 31, 49, 18446744073709551615),
               (3, 1, 3, 51, 9223372036854775808), (4, NULL, 17, 255, 12345)",
        )
        .await
        .expect("table");
        let mut checked = 0;
        for e in [
            "w",
            "f",
            "x",
            "v",
            "IFNULL(w, w)",
            "IFNULL(x, x)",
            "COALESCE(v)",
            "IF(id > 2, f, f)",
            "GREATEST(x, x)",
            "LEAST(v, v)",
            "CASE WHEN id > 1 THEN x ELSE x END",
            "(SELECT MAX(x) FROM b)",
            "(SELECT v FROM b b2 WHERE b2.id = b.id)",
        ] {
            let sql = format!("SELECT {e}, {e} + 0 FROM b ORDER BY id");
            let rs = conn.query(&sql).select().await.expect(&sql);
            for row in &rs.results {
                assert_eq!(row.get_by_index(0), row.get_by_index(1), "{sql}");
                checked += 1;
            }
        }
        for col in ["w", "f", "x", "v"] {
            for agg in ["MIN", "MAX"] {
                let sql = format!("SELECT {agg}({col}), {agg}({col}) + 0 FROM b");
                let rs = conn.query(&sql).select().await.expect(&sql);
                let row = &rs.results[0];
                assert_eq!(row.get_by_index(0), row.get_by_index(1), "{sql}");
                checked += 1;
            }
        }
        println!("mysql_bit_values checked={checked}");
    }));
}
