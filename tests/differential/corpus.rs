//! A sqllogictest-style corpus run on MySQL/MariaDB through the crate and through raw
//! `mysql_async`, record by record, with every result compared value by value.
//!
//! The corpus is the files under `tests/corpus/mysql/` (hand-written: DDL, DML, joins,
//! aggregates, NULL handling, every column type, scripts, transactions) and the records
//! [`generated`] here (every column type at its limits, just past them, and through the
//! expressions of its family). Each file runs in two fresh databases on the same server, one
//! for each side, so that every statement really runs on both: the crate's pool works in the
//! first, a raw `mysql_async` connection in the second, set up as the crate documents its
//! sessions (UTF-8, UTC, strict, autocommit, and `UPDATE` counting the rows it matched), and
//! read under the crate's documented rules: a write the server accepts only with a warning that
//! it changed a value is a failure, and an upsert or a `REPLACE` counts each row it wrote once.
//! Since both sides run on the same
//! server, no expected output is stored: whatever MySQL or MariaDB answers, the crate must
//! answer the same.
//!
//! The format, one record per paragraph (lines starting with `#` are comments):
//!
//! ```text
//! statement ok|error|any      the SQL: `query(..).dml()` against `exec_drop`, row counts compared
//! query [ok|error|any]        the SQL: `select()` and `prepare(..)` + `select` against
//!                             `exec_iter`, column names and every value compared
//! batch ok|error|any [atomic] the SQL: `execute_batch` against one multi-statement text; with
//!                             `atomic` the raw side runs it inside a transaction, as the crate
//!                             runs a script of plain statements (all or nothing)
//! begin / commit / rollback   `begin()`, `commit()`, `rollback()` against `START TRANSACTION`,
//!                             `COMMIT`, `ROLLBACK`
//! ```
//!
//! A record may end with a line `params: 1, -2.5, 'text', x'00ff', NULL`, bound to its `$1`,
//! `$2`, … through the crate and to `?`s through the raw side. `ok` and `error` say what the
//! raw side must do (a corpus that no longer tests what it says fails too); both sides failing
//! counts as agreement. Values are compared under the mapping of `src/mysql/rows.rs` (see
//! `super::mysql::my_canon`). Inside a transaction a failed call aborts it, as the crate
//! documents for every backend: later records must fail with `TransactionAborted` (the raw side
//! skips them), and the transaction ends rolled back.
//!
//! A record may also carry a line `known: <why>`: a difference the crate is known to cause,
//! printed with the figures instead of failing the run; once that record agrees, the run fails
//! until the marker is removed.
//!
//! Prints `mysql_corpus files=F records=R queries=Q statements=S batches=B errors_agreed=E
//! known_differences=K mismatches=M`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use mysql_async::Value;
use mysql_async::prelude::Queryable;
use sql_middleware::prelude::*;
use sql_middleware::{ErrorKind, QueryBuilder};

use super::mysql::{my_canon, mysql_marks_ordered};
use super::{Answer, Canon, ToCanon, show};

/// What a record expects of the raw side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Ok,
    Error,
    Any,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Kind {
    Statement,
    Query,
    Batch { atomic: bool },
    Begin,
    Commit,
    Rollback,
}

/// A parameter as both sides bind it.
#[derive(Debug, Clone)]
enum Param {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
    Blob(Vec<u8>),
}

impl Param {
    fn crate_value(&self) -> RowValues {
        match self {
            Param::Null => RowValues::Null,
            Param::Int(i) => RowValues::Int(*i),
            Param::Float(f) => RowValues::Float(*f),
            Param::Text(s) => RowValues::Text(s.clone()),
            Param::Blob(b) => RowValues::Blob(b.clone()),
        }
    }

    fn raw_value(&self) -> Value {
        match self {
            Param::Null => Value::NULL,
            Param::Int(i) => Value::Int(*i),
            Param::Float(f) => Value::Double(*f),
            Param::Text(s) => Value::Bytes(s.as_bytes().to_vec()),
            Param::Blob(b) => Value::Bytes(b.clone()),
        }
    }
}

/// One record of the corpus.
#[derive(Debug, Clone)]
pub(crate) struct Record {
    /// `file:line` of its header.
    at: String,
    kind: Kind,
    expect: Expect,
    sql: String,
    params: Vec<Param>,
    /// A difference the crate is known to cause, and why: reported, not failed, and failed
    /// once it is gone (so the marker goes with it).
    known: Option<String>,
}

fn expectation(word: Option<&str>, at: &str) -> Expect {
    match word {
        None | Some("ok") => Expect::Ok,
        Some("error") => Expect::Error,
        Some("any") => Expect::Any,
        Some(other) => panic!("{at}: unknown expectation {other:?}"),
    }
}

/// Splits `text` at commas outside single-quoted strings.
fn split_params(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '\'' => {
                quoted = !quoted;
                cur.push(c);
            }
            ',' if !quoted => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

fn parse_param(p: &str, at: &str) -> Param {
    let p = p.trim();
    if p.eq_ignore_ascii_case("null") {
        Param::Null
    } else if let Some(hex) = p.strip_prefix("x'").and_then(|h| h.strip_suffix('\'')) {
        let bytes = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|_| panic!("{at}: bad hex parameter {p}"));
        Param::Blob(bytes)
    } else if let Some(s) = p.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        Param::Text(s.replace("''", "'"))
    } else if let Ok(i) = p.parse::<i64>() {
        Param::Int(i)
    } else if let Ok(f) = p.parse::<f64>() {
        Param::Float(f)
    } else {
        panic!("{at}: unreadable parameter {p:?}")
    }
}

/// Parses a corpus file (see the module documentation).
pub(crate) fn parse(name: &str, text: &str) -> Vec<Record> {
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((n, line)) = lines.next() {
        let line = line.trim_end();
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let at = format!("{name}:{}", n + 1);
        let mut words = line.split_whitespace();
        let head = words.next().unwrap_or_default();
        let rest: Vec<&str> = words.collect();
        let (kind, expect) = match head {
            "statement" => (Kind::Statement, expectation(rest.first().copied(), &at)),
            "query" => (Kind::Query, expectation(rest.first().copied(), &at)),
            "batch" => (
                Kind::Batch {
                    atomic: rest.contains(&"atomic"),
                },
                expectation(rest.first().copied().filter(|w| *w != "atomic"), &at),
            ),
            "begin" => (Kind::Begin, Expect::Ok),
            "commit" => (Kind::Commit, Expect::Ok),
            "rollback" => (Kind::Rollback, Expect::Ok),
            other => panic!("{at}: unknown record {other:?}"),
        };
        let mut sql = Vec::new();
        let mut params = Vec::new();
        let mut known = None;
        while let Some((_, body)) = lines.peek() {
            if body.trim().is_empty() {
                break;
            }
            let (_, body) = lines.next().expect("peeked");
            if let Some(p) = body.trim_start().strip_prefix("params:") {
                params = split_params(p)
                    .iter()
                    .map(|p| parse_param(p, &at))
                    .collect();
            } else if let Some(why) = body.trim_start().strip_prefix("known:") {
                known = Some(why.trim().to_owned());
            } else if !body.trim_start().starts_with('#') {
                sql.push(body);
            }
        }
        let has_sql = matches!(kind, Kind::Statement | Kind::Query | Kind::Batch { .. });
        assert_eq!(
            has_sql,
            !sql.is_empty(),
            "{at}: SQL where none belongs, or none"
        );
        out.push(Record {
            at,
            kind,
            expect,
            sql: sql.join("\n"),
            params,
            known,
        });
    }
    out
}

// ---- generated records -----------------------------------------------------------------------

/// The families of column types, for the expressions each gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Int,
    Decimal,
    Float,
    Temporal,
    Text,
    Binary,
    Json,
}

/// Every column type with its edge values as SQL literals: the limits, zero, NULL, and values
/// just past the limits (which the server refuses in strict mode, on both sides).
const TYPES: &[(&str, Family, &[&str])] = &[
    (
        "TINYINT",
        Family::Int,
        &["-128", "127", "0", "-1", "NULL", "128", "-129"],
    ),
    (
        "TINYINT UNSIGNED",
        Family::Int,
        &["0", "255", "1", "NULL", "256", "-1"],
    ),
    (
        "SMALLINT",
        Family::Int,
        &["-32768", "32767", "0", "NULL", "32768"],
    ),
    (
        "SMALLINT UNSIGNED",
        Family::Int,
        &["0", "65535", "NULL", "65536"],
    ),
    (
        "MEDIUMINT",
        Family::Int,
        &["-8388608", "8388607", "0", "NULL", "8388608"],
    ),
    (
        "MEDIUMINT UNSIGNED",
        Family::Int,
        &["0", "16777215", "NULL", "16777216"],
    ),
    (
        "INT",
        Family::Int,
        &["-2147483648", "2147483647", "0", "NULL", "2147483648"],
    ),
    (
        "INT UNSIGNED",
        Family::Int,
        &["0", "4294967295", "NULL", "4294967296"],
    ),
    (
        "BIGINT",
        Family::Int,
        &[
            "-9223372036854775808",
            "9223372036854775807",
            "0",
            "-1",
            "NULL",
            "9223372036854775808",
        ],
    ),
    (
        "BIGINT UNSIGNED",
        Family::Int,
        &[
            "0",
            "9223372036854775807",
            "9223372036854775808",
            "18446744073709551615",
            "NULL",
            "18446744073709551616",
            "-1",
        ],
    ),
    (
        "YEAR",
        Family::Int,
        &["1901", "2155", "0", "2024", "NULL", "1900", "2156"],
    ),
    ("BOOLEAN", Family::Int, &["TRUE", "FALSE", "NULL", "2"]),
    ("BIT(1)", Family::Int, &["b'0'", "b'1'", "NULL", "b'10'"]),
    (
        "BIT(8)",
        Family::Int,
        &["0", "255", "b'10101010'", "NULL", "256"],
    ),
    (
        "BIT(64)",
        Family::Int,
        &[
            "0",
            "18446744073709551615",
            "9223372036854775808",
            "x'8000000000000001'",
            "NULL",
        ],
    ),
    (
        "DECIMAL(65,30)",
        Family::Decimal,
        &[
            "99999999999999999999999999999999999.999999999999999999999999999999",
            "-99999999999999999999999999999999999.999999999999999999999999999999",
            "0.000000000000000000000000000001",
            "1.5",
            "0",
            "NULL",
            "100000000000000000000000000000000000",
        ],
    ),
    (
        "DECIMAL(65,0)",
        Family::Decimal,
        &[
            "99999999999999999999999999999999999999999999999999999999999999999",
            "-99999999999999999999999999999999999999999999999999999999999999999",
            "79228162514264337593543950335",
            "79228162514264337593543950336",
            "NULL",
        ],
    ),
    (
        "DECIMAL(38,10)",
        Family::Decimal,
        &[
            "9999999999999999999999999999.9999999999",
            "123456789012345678.0123456789",
            "-0.0000000001",
            "0.1",
            "NULL",
            "99999999999999999999999999999",
        ],
    ),
    (
        "DECIMAL(10,2)",
        Family::Decimal,
        &[
            "99999999.99",
            "-99999999.99",
            "0.01",
            "12.345",
            "NULL",
            "100000000",
        ],
    ),
    (
        "DECIMAL(1,1)",
        Family::Decimal,
        &["0.9", "-0.9", "0", "NULL", "1"],
    ),
    (
        "FLOAT",
        Family::Float,
        &[
            "3.4028234e38",
            "-3.4028234e38",
            "1.17549435e-38",
            "1.4e-45",
            "0.1",
            "16777217",
            "-0",
            "NULL",
            "3.5e38",
        ],
    ),
    (
        "DOUBLE",
        Family::Float,
        &[
            "1.7976931348623157e308",
            "-1.7976931348623157e308",
            "2.2250738585072014e-308",
            "4.9e-324",
            "0.1",
            "9007199254740993",
            "-0e0",
            "NULL",
            "1.8e308",
        ],
    ),
    (
        "DATE",
        Family::Temporal,
        &[
            "'1000-01-01'",
            "'9999-12-31'",
            "'2024-02-29'",
            "NULL",
            "'2023-02-29'",
            "'10000-01-01'",
        ],
    ),
    (
        "DATETIME",
        Family::Temporal,
        &[
            "'1000-01-01 00:00:00'",
            "'9999-12-31 23:59:59'",
            "'2024-02-29 12:34:56'",
            "NULL",
            "'2024-13-01 00:00:00'",
        ],
    ),
    (
        "DATETIME(6)",
        Family::Temporal,
        &[
            "'1000-01-01 00:00:00.000000'",
            "'9999-12-31 23:59:59.999999'",
            "'2024-02-29 12:34:56.000001'",
            "NULL",
        ],
    ),
    (
        "TIMESTAMP(6) NULL",
        Family::Temporal,
        &[
            "'1970-01-01 00:00:01.000000'",
            "'2038-01-19 03:14:07.999999'",
            "'2000-06-15 12:00:00.5'",
            "NULL",
            "'1969-12-31 23:59:59'",
            "'2038-01-19 03:14:08'",
        ],
    ),
    (
        "TIME",
        Family::Temporal,
        &[
            "'-838:59:59'",
            "'838:59:59'",
            "'00:00:00'",
            "'23:59:59'",
            "'24:00:00'",
            "'-00:00:01'",
            "NULL",
            "'839:00:00'",
        ],
    ),
    (
        "TIME(6)",
        Family::Temporal,
        &[
            "'-838:59:59.000000'",
            "'838:59:59.000000'",
            "'12:00:00.000001'",
            "'-00:00:00.000001'",
            "'100:00:00.5'",
            "NULL",
        ],
    ),
    (
        "CHAR(4)",
        Family::Text,
        &[
            "''",
            "'abcd'",
            "'a  '",
            "'😀😀😀😀'",
            "'ü'",
            "NULL",
            "'abcde'",
        ],
    ),
    (
        "VARCHAR(8)",
        Family::Text,
        &[
            "''",
            "' '",
            "'😀🌍ü\u{10FFFF}'",
            "'tab\there'",
            "'a''b'",
            "'Ünïcödé'",
            "NULL",
            "'123456789'",
        ],
    ),
    (
        "VARCHAR(8) COLLATE utf8mb4_general_ci",
        Family::Text,
        &["'abc'", "'ABC'", "'😀'", "'ß'", "NULL"],
    ),
    (
        "VARCHAR(8) CHARACTER SET latin1",
        Family::Text,
        &["'abc'", "'ÿé'", "''", "NULL"],
    ),
    (
        "TINYTEXT",
        Family::Text,
        &[
            "''",
            "REPEAT('x', 255)",
            "REPEAT('😀', 63)",
            "NULL",
            "REPEAT('x', 256)",
        ],
    ),
    (
        "TEXT",
        Family::Text,
        &["''", "REPEAT('ü', 32767)", "'line\\nbreak'", "NULL"],
    ),
    ("MEDIUMTEXT", Family::Text, &["REPEAT('😀', 70000)", "NULL"]),
    (
        "LONGTEXT",
        Family::Text,
        &["REPEAT('ab', 100000)", "''", "NULL"],
    ),
    (
        "ENUM('a', 'b', '😀')",
        Family::Text,
        &["'a'", "'😀'", "2", "NULL", "'c'", "''"],
    ),
    (
        "SET('x', 'y', '😀')",
        Family::Text,
        &["''", "'x,y'", "'😀,x'", "7", "NULL", "'z'"],
    ),
    (
        "BINARY(4)",
        Family::Binary,
        &[
            "x''",
            "x'00'",
            "x'ffffffff'",
            "'ab'",
            "NULL",
            "x'0102030405'",
        ],
    ),
    (
        "VARBINARY(8)",
        Family::Binary,
        &[
            "x''",
            "x'00ff00ff'",
            "'😀'",
            "NULL",
            "x'000102030405060708'",
        ],
    ),
    (
        "CHAR(4) CHARACTER SET binary",
        Family::Binary,
        &["'ab'", "x'00'", "NULL"],
    ),
    (
        "TINYBLOB",
        Family::Binary,
        &["x''", "REPEAT(x'ff', 255)", "NULL", "REPEAT(x'ff', 256)"],
    ),
    (
        "BLOB",
        Family::Binary,
        &["x'00'", "REPEAT(x'00ff', 32767)", "NULL"],
    ),
    (
        "LONGBLOB",
        Family::Binary,
        &["REPEAT(x'c0', 200000)", "NULL"],
    ),
    (
        "JSON",
        Family::Json,
        &[
            "'{}'",
            "'[]'",
            "'null'",
            "'{\"a\": [1, 2.5, \"😀\", null, true]}'",
            "'18446744073709551615'",
            "'-1.5e300'",
            "'\"text\"'",
            "NULL",
            "'{bad'",
        ],
    ),
];

/// The select-list expressions run over a generated column `v` of `family`.
fn expressions(family: Family) -> &'static [&'static str] {
    const ALL: [&str; 6] = [
        "v",
        "v IS NULL",
        "COALESCE(v, NULL)",
        "CAST(v AS CHAR)",
        "CONCAT(v, '')",
        "HEX(v)",
    ];
    match family {
        Family::Int => &[
            "v",
            "v IS NULL",
            "CAST(v AS CHAR)",
            "HEX(v)",
            "v + 0",
            "v - 1",
            "v * 2",
            "-v",
            "v / 3",
            "v DIV 2",
            "v % 3",
            "v + 0.5",
            "v + 0e0",
            "CAST(v AS SIGNED)",
            "CAST(v AS UNSIGNED)",
            "CAST(v AS DECIMAL(65, 30))",
            "v = 0",
            "ABS(v)",
            "v << 1",
            "v | 0",
            "~v",
            "BIN(v)",
        ],
        Family::Decimal => &[
            "v",
            "v IS NULL",
            "CAST(v AS CHAR)",
            "v + 0",
            "v * 2",
            "-v",
            "v / 3",
            "v + 0e0",
            "ROUND(v, 2)",
            "TRUNCATE(v, 0)",
            "CAST(v AS SIGNED)",
            "CAST(v AS DOUBLE)",
            "CAST(v AS DECIMAL(65, 30))",
            "v = 0",
            "ABS(v)",
            "FLOOR(v)",
            "CEILING(v)",
        ],
        Family::Float => &[
            "v",
            "v IS NULL",
            "CAST(v AS CHAR)",
            "v + 0",
            "v * 2",
            "-v",
            "v / 3",
            "v = 0",
            "ABS(v)",
            "CAST(v AS DOUBLE)",
            "CAST(v AS FLOAT)",
            "CAST(v AS DECIMAL(65, 30))",
            "ROUND(v, 3)",
            "SQRT(ABS(v))",
            "v + 0.5",
        ],
        Family::Temporal => &[
            "v",
            "v IS NULL",
            "CAST(v AS CHAR)",
            "v + 0",
            "CAST(v AS DATETIME(6))",
            "CAST(v AS DATE)",
            "CAST(v AS TIME(6))",
            "v + INTERVAL 1 SECOND",
            "YEAR(v)",
            "UNIX_TIMESTAMP(v)",
            "TIME_TO_SEC(v)",
            "DATE_FORMAT(v, '%Y|%j|%f')",
        ],
        Family::Text => &[
            "v",
            "v IS NULL",
            "CONCAT(v, '!')",
            "LENGTH(v)",
            "CHAR_LENGTH(v)",
            "HEX(v)",
            "UPPER(v)",
            "REVERSE(v)",
            "CAST(v AS BINARY)",
            "v = 'a'",
            "v + 0",
            "LEFT(v, 2)",
            "CAST(v AS CHAR CHARACTER SET latin1)",
            "CONVERT(v USING utf8mb4)",
        ],
        Family::Binary => &[
            "v",
            "v IS NULL",
            "LENGTH(v)",
            "HEX(v)",
            "CAST(v AS CHAR)",
            "CONCAT(v, x'00')",
            "UNHEX(HEX(v))",
            "REVERSE(v)",
            "v = x'00'",
            "MD5(v)",
        ],
        Family::Json => &ALL,
    }
}

/// The aggregates run over a generated column `v` of `family`.
fn aggregates(family: Family) -> &'static [&'static str] {
    match family {
        Family::Int | Family::Decimal | Family::Float => &[
            "COUNT(v)",
            "MIN(v)",
            "MAX(v)",
            "SUM(v)",
            "AVG(v)",
            "BIT_OR(v)",
            "STD(v)",
            "GROUP_CONCAT(v ORDER BY id)",
        ],
        Family::Temporal => &[
            "COUNT(v)",
            "MIN(v)",
            "MAX(v)",
            "GROUP_CONCAT(v ORDER BY id)",
        ],
        Family::Text | Family::Binary | Family::Json => &[
            "COUNT(v)",
            "MIN(v)",
            "MAX(v)",
            "GROUP_CONCAT(v ORDER BY id)",
            "COUNT(DISTINCT v)",
        ],
    }
}

fn record(kind: Kind, expect: Expect, sql: String, params: Vec<Param>, at: String) -> Record {
    Record {
        at,
        kind,
        expect,
        sql,
        params,
        known: None,
    }
}

/// The generated corpus: a table per column type, its edge values inserted one by one
/// (`statement any`: the ones past the limits fail on both sides), read back through every
/// expression and aggregate of its family, looked up by a bound parameter, and updated.
pub(crate) fn generated() -> Vec<Record> {
    let mut out = Vec::new();
    for (n, &(ty, family, literals)) in TYPES.iter().enumerate() {
        let table = format!("g{n}");
        let at = |what: &str| format!("generated:{ty}:{what}");
        out.push(record(
            Kind::Statement,
            Expect::Ok,
            format!("CREATE TABLE {table} (id INT AUTO_INCREMENT PRIMARY KEY, v {ty})"),
            vec![],
            at("create"),
        ));
        for lit in literals {
            out.push(record(
                Kind::Statement,
                Expect::Any,
                format!("INSERT INTO {table} (v) VALUES ({lit})"),
                vec![],
                at(lit),
            ));
        }
        for expr in expressions(family) {
            out.push(record(
                Kind::Query,
                Expect::Any,
                format!("SELECT id, {expr} FROM {table} ORDER BY id"),
                vec![],
                at(expr),
            ));
        }
        for agg in aggregates(family) {
            out.push(record(
                Kind::Query,
                Expect::Any,
                format!("SELECT {agg} FROM {table}"),
                vec![],
                at(agg),
            ));
        }
        out.push(record(
            Kind::Query,
            Expect::Ok,
            format!("SELECT id, v FROM {table} WHERE id BETWEEN $1 AND $2 ORDER BY id DESC"),
            vec![Param::Int(2), Param::Int(4)],
            at("by id"),
        ));
        out.push(record(
            Kind::Query,
            Expect::Any,
            format!("SELECT COUNT(*) FROM {table} WHERE v = $1 OR v = $2 OR v IS NULL"),
            vec![Param::Text("0".into()), Param::Int(1)],
            at("by value"),
        ));
        out.push(record(
            Kind::Statement,
            Expect::Any,
            format!("UPDATE {table} SET v = v WHERE id <= $1"),
            vec![Param::Int(3)],
            at("update"),
        ));
        out.push(record(
            Kind::Statement,
            Expect::Ok,
            format!("DELETE FROM {table} WHERE v IS NULL"),
            vec![],
            at("delete"),
        ));
        out.push(record(
            Kind::Query,
            Expect::Ok,
            format!("SELECT * FROM {table} ORDER BY id"),
            vec![],
            at("after"),
        ));
    }
    out
}

// ---- running -----------------------------------------------------------------------------------

/// A connection or a transaction of the crate.
trait Exec {
    fn query_builder<'a, 'q>(&'a mut self, sql: &'q str) -> QueryBuilder<'a, 'q>;
    async fn prepared_select(&mut self, sql: &str, p: &[RowValues]) -> Result<ResultSet, String>;
    async fn batch(&mut self, sql: &str) -> Result<(), SqlMiddlewareDbError>;
}

impl Exec for MiddlewarePoolConnection {
    fn query_builder<'a, 'q>(&'a mut self, sql: &'q str) -> QueryBuilder<'a, 'q> {
        self.query(sql)
    }

    async fn prepared_select(&mut self, sql: &str, p: &[RowValues]) -> Result<ResultSet, String> {
        let mut st = self.prepare(sql).await.map_err(|x| format!("{x:?}"))?;
        st.select(p).await.map_err(|x| format!("{x:?}"))
    }

    async fn batch(&mut self, sql: &str) -> Result<(), SqlMiddlewareDbError> {
        self.execute_batch(sql).await
    }
}

impl Exec for Tx<'_> {
    fn query_builder<'a, 'q>(&'a mut self, sql: &'q str) -> QueryBuilder<'a, 'q> {
        self.query(sql)
    }

    async fn prepared_select(&mut self, sql: &str, p: &[RowValues]) -> Result<ResultSet, String> {
        let mut st = self.prepare(sql).await.map_err(|x| format!("{x:?}"))?;
        st.select(p).await.map_err(|x| format!("{x:?}"))
    }

    async fn batch(&mut self, sql: &str) -> Result<(), SqlMiddlewareDbError> {
        self.execute_batch(sql).await
    }
}

/// What the run found.
#[derive(Default)]
pub(crate) struct Tally {
    files: usize,
    records: usize,
    queries: usize,
    statements: usize,
    batches: usize,
    errors_agreed: usize,
    /// Every difference, by record.
    mismatches: BTreeMap<String, String>,
    /// The differences of records marked `known:`, by record.
    known: BTreeMap<String, String>,
}

fn key(r: &Record) -> String {
    format!("{} ({})", r.at, r.sql.lines().next().unwrap_or_default())
}

impl Tally {
    fn differ(&mut self, r: &Record, what: String) {
        let map = if r.known.is_some() {
            &mut self.known
        } else {
            &mut self.mismatches
        };
        map.entry(key(r)).or_insert(what);
    }

    /// After `r` ran: a record marked `known:` whose difference is gone fails, so that its
    /// marker goes.
    fn settle(&mut self, r: &Record) {
        if let Some(why) = &r.known {
            if !self.known.contains_key(&key(r)) {
                self.mismatches.insert(
                    key(r),
                    format!(
                        "marked known ({why}), but the crate and raw agree now: remove the marker"
                    ),
                );
            }
        }
    }

    /// Checks the raw outcome against the record's expectation.
    fn expected<T, E: std::fmt::Display>(&mut self, r: &Record, raw: &Result<T, E>) {
        match (r.expect, raw) {
            (Expect::Ok, Err(x)) => self.differ(r, format!("the corpus expects ok; raw: {x}")),
            (Expect::Error, Ok(_)) => {
                self.differ(r, "the corpus expects an error; raw succeeded".into())
            }
            _ => {}
        }
    }
}

fn rows_of(rs: ResultSet) -> (Vec<String>, Vec<Vec<Canon>>) {
    let names = rs.column_names().map(str::to_owned).collect();
    let rows = rs
        .results
        .into_iter()
        .map(|r| r.into_values().into_iter().map(ToCanon::canon).collect())
        .collect();
    (names, rows)
}

/// Runs `sql` through the raw connection (binary protocol) and reads the rows under the
/// mapping.
async fn raw_select(conn: &mut mysql_async::Conn, sql: &str, p: &[Param]) -> Answer {
    let (sql, params) = raw_statement(sql, p)?;
    let mut result = conn
        .exec_iter(sql, params)
        .await
        .map_err(|x| x.to_string())?;
    let cols = result.columns().ok_or("no result set")?;
    let names = cols.iter().map(|c| c.name_str().into_owned()).collect();
    let rows: Vec<mysql_async::Row> = result.collect().await.map_err(|x| x.to_string())?;
    let mut out = Vec::with_capacity(rows.len());
    for row in &rows {
        let mut vals = Vec::with_capacity(cols.len());
        for (i, col) in cols.iter().enumerate() {
            vals.push(my_canon(row.as_ref(i).ok_or("a value taken")?, col)?);
        }
        out.push(vals);
    }
    Ok((names, out))
}

/// `sql` with `?` placeholders, and the raw values in the order its `?`s take them.
fn raw_statement(sql: &str, p: &[Param]) -> Result<(String, Vec<Value>), String> {
    let (text, order) = mysql_marks_ordered(sql);
    let values = order
        .iter()
        .map(|&n| {
            n.checked_sub(1)
                .and_then(|i| p.get(i))
                .map(Param::raw_value)
                .ok_or_else(|| format!("${n} has no parameter"))
        })
        .collect::<Result<_, _>>()?;
    Ok((text, values))
}

fn compare_rows(
    tally: &mut Tally,
    r: &Record,
    terminal: &str,
    ours: Result<(Vec<String>, Vec<Vec<Canon>>), String>,
    raw: &Answer,
) {
    match (ours, raw) {
        (Err(_), Err(_)) => tally.errors_agreed += 1,
        (Err(x), Ok(_)) => tally.differ(r, format!("{terminal}: fails where raw succeeds: {x}")),
        (Ok(_), Err(x)) => tally.differ(r, format!("{terminal}: succeeds where raw fails: {x}")),
        (Ok((names, rows)), Ok((raw_names, raw_rows))) => {
            if &names != raw_names {
                tally.differ(
                    r,
                    format!("{terminal}: columns {names:?} vs raw {raw_names:?}"),
                );
            } else if rows.len() != raw_rows.len() {
                tally.differ(
                    r,
                    format!("{terminal}: {} rows vs raw {}", rows.len(), raw_rows.len()),
                );
            } else if let Some((a, b)) = rows.iter().zip(raw_rows).find(|(a, b)| a != b) {
                tally.differ(
                    r,
                    format!("{terminal}: crate {} vs raw {}", show(a), show(b)),
                );
            }
        }
    }
}

/// The warnings and notes that say the server stored a value other than the one given: the crate
/// documents a write the server accepted only so as an error (see `src/mysql/warnings.rs`).
const CHANGED: [u16; 14] = [
    1048, 1246, 1262, 1263, 1264, 1265, 1292, 1300, 1364, 1366, 1367, 1406, 1411, 1918,
];

/// The code of a warning of the raw side's last statement that says a value was changed.
async fn changed_value(raw: &mut mysql_async::Conn) -> Option<u16> {
    if raw.get_warnings() == 0 {
        return None;
    }
    let rows: Vec<(String, u16, String)> = raw.query("SHOW WARNINGS").await.ok()?;
    rows.into_iter()
        .map(|(_, code, _)| code)
        .find(|c| CHANGED.contains(c))
}

/// The raw side's row count with the meaning the crate documents for every engine (see
/// `src/mysql/counts.rs`): a statement other than DML counts 0 (MySQL's own count of a
/// `CREATE TABLE … AS SELECT` is the rows it copied); an upsert (`ON DUPLICATE KEY UPDATE`) and a
/// `REPLACE` count each row they wrote once, as the server's `Records: N` says (one row, when the
/// info has none).
fn documented_count(sql: &str, affected: u64, info: &str) -> u64 {
    let upper = sql.trim_start().to_ascii_uppercase();
    let dml = ["INSERT", "UPDATE", "DELETE", "REPLACE", "WITH"]
        .iter()
        .any(|w| upper.starts_with(w));
    if !dml {
        return 0;
    }
    let rule = upper.starts_with("REPLACE") || upper.contains("ON DUPLICATE KEY UPDATE");
    if !rule {
        return affected;
    }
    info.split("Records:")
        .nth(1)
        .and_then(|rest| {
            let d: String = rest
                .trim_start()
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            d.parse().ok()
        })
        .unwrap_or(affected.min(1))
}

/// Runs one statement, query or batch through both sides. Returns whether the crate's call
/// failed (which aborts a transaction).
async fn step<E: Exec>(
    ex: &mut E,
    raw: &mut mysql_async::Conn,
    r: &Record,
    in_tx: bool,
    tally: &mut Tally,
) -> bool {
    let params: Vec<RowValues> = r.params.iter().map(Param::crate_value).collect();
    match r.kind {
        Kind::Statement => {
            tally.statements += 1;
            let ours = ex.query_builder(&r.sql).params(&params).dml().await;
            let theirs = match raw_statement(&r.sql, &r.params) {
                Ok((sql, values)) => match raw.exec_drop(&sql, values).await {
                    Ok(()) => match changed_value(raw).await {
                        Some(code) => Err(format!("the server changed a value (warning {code})")),
                        None => Ok(documented_count(&sql, raw.affected_rows(), &raw.info())),
                    },
                    Err(x) => Err(x.to_string()),
                },
                Err(x) => Err(x),
            };
            tally.expected(r, &theirs);
            match (&ours, &theirs) {
                (Err(_), Err(_)) => tally.errors_agreed += 1,
                (Ok(a), Ok(b)) if a == b => {}
                (a, b) => tally.differ(r, format!("crate {a:?} vs raw {b:?}")),
            }
            ours.is_err()
        }
        Kind::Query => {
            tally.queries += 1;
            let theirs = raw_select(raw, &r.sql, &r.params).await;
            tally.expected(r, &theirs);
            let ours = ex.query_builder(&r.sql).params(&params).select().await;
            let failed = ours.is_err();
            let ours = ours.map(rows_of).map_err(|x| format!("{x:?}"));
            compare_rows(tally, r, "select", ours, &theirs);
            if !(in_tx && failed) {
                let ours = ex.prepared_select(&r.sql, &params).await.map(rows_of);
                compare_rows(tally, r, "prepare.select", ours, &theirs);
            }
            failed
        }
        Kind::Batch { atomic } => {
            tally.batches += 1;
            let ours = ex.batch(&r.sql).await;
            let theirs = if atomic && !in_tx {
                match raw.query_drop("START TRANSACTION").await {
                    Ok(()) => match raw.query_drop(&r.sql).await {
                        Ok(()) => raw.query_drop("COMMIT").await,
                        Err(x) => Err(x),
                    },
                    Err(x) => Err(x),
                }
            } else {
                raw.query_drop(&r.sql).await
            };
            if theirs.is_err() && !in_tx {
                // A failed script leaves no transaction open (as the crate documents).
                let _ = raw.query_drop("ROLLBACK").await;
            }
            tally.expected(r, &theirs);
            match (&ours, &theirs) {
                (Err(_), Err(_)) => tally.errors_agreed += 1,
                (Ok(()), Ok(())) => {}
                (a, b) => tally.differ(r, format!("crate {a:?} vs raw {b:?}")),
            }
            ours.is_err()
        }
        Kind::Begin | Kind::Commit | Kind::Rollback => unreachable!("handled by the caller"),
    }
}

/// Runs the records of one file.
async fn run_file(
    conn: &mut MiddlewarePoolConnection,
    raw: &mut mysql_async::Conn,
    records: &[Record],
    tally: &mut Tally,
) {
    let mut i = 0;
    while i < records.len() {
        let r = &records[i];
        tally.records += 1;
        match r.kind {
            Kind::Begin => {
                let theirs = raw.query_drop("START TRANSACTION").await;
                tally.expected(r, &theirs);
                let mut tx = match conn.begin().await {
                    Ok(tx) => tx,
                    Err(x) => {
                        tally.differ(r, format!("begin failed: {x:?}"));
                        return;
                    }
                };
                let mut aborted = false;
                i += 1;
                let end = loop {
                    let Some(r) = records.get(i) else {
                        panic!(
                            "{}: a transaction without commit or rollback",
                            records[i - 1].at
                        );
                    };
                    tally.records += 1;
                    match r.kind {
                        Kind::Commit | Kind::Rollback => break r,
                        Kind::Begin => panic!("{}: begin inside a transaction", r.at),
                        _ if aborted => {
                            // The crate refuses every call of an aborted transaction.
                            let params: Vec<RowValues> =
                                r.params.iter().map(Param::crate_value).collect();
                            let ours = match r.kind {
                                Kind::Batch { .. } => tx.execute_batch(&r.sql).await.map(|_| 0),
                                _ => tx.query(&r.sql).params(&params).dml().await,
                            };
                            match ours {
                                Err(x) if x.kind() == ErrorKind::TransactionAborted => {
                                    tally.errors_agreed += 1
                                }
                                other => tally
                                    .differ(r, format!("inside an aborted transaction: {other:?}")),
                            }
                        }
                        _ => aborted |= step(&mut tx, raw, r, true, tally).await,
                    }
                    tally.settle(r);
                    i += 1;
                };
                let ours = match (&end.kind, aborted) {
                    (Kind::Commit, false) => tx.commit().await,
                    _ => tx.rollback().await,
                };
                let theirs = match (&end.kind, aborted) {
                    (Kind::Commit, false) => raw.query_drop("COMMIT").await,
                    _ => raw.query_drop("ROLLBACK").await,
                };
                match (ours, theirs) {
                    (Ok(()), Ok(())) => {}
                    (a, b) => tally.differ(end, format!("end: crate {a:?} vs raw {b:?}")),
                }
            }
            Kind::Commit | Kind::Rollback => panic!("{}: no transaction to end", r.at),
            _ => {
                step(conn, raw, r, false, tally).await;
                tally.settle(r);
            }
        }
        i += 1;
    }
}

/// The corpus files, in name order.
fn corpus_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/mysql");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|x| panic!("{}: {x}", dir.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "test"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no corpus files in {}", dir.display());
    files
}

/// Runs `records` in two fresh databases on the server: one for the crate, one for the raw
/// connection.
async fn run_fresh(records: Vec<Record>, tally: &mut Tally) {
    let theirs = crate::common::mysql::MyDatabase::create().await;
    let raw_url = theirs.url.clone();
    let mut raw_tally = Tally::default();
    let (records, file_tally) = (&records, &mut raw_tally);
    crate::common::mysql::with_database(move |url| async move {
        let db = crate::common::engines::mysql::test_db(&url).await;
        let mut conn = db.conn().await;
        let opts = mysql_async::Opts::from_url(&crate::common::mysql::driver_url(&raw_url))
            .expect("raw url");
        // The session the crate documents for its own: UTC, and UPDATE counting matched rows.
        let opts = mysql_async::OptsBuilder::from_opts(opts)
            .client_found_rows(true)
            .setup(vec![
                "SET NAMES utf8mb4, time_zone = '+00:00', autocommit = 1, \
                 sql_mode = CONCAT_WS(',', NULLIF(@@session.sql_mode, ''), 'STRICT_ALL_TABLES')",
            ]);
        let mut raw = mysql_async::Conn::new(opts).await.expect("raw connection");
        run_file(&mut conn, &mut raw, records, file_tally).await;
        drop(conn);
        let _ = raw.disconnect().await;
    })
    .await;
    theirs.drop_database().await;
    tally.files += 1;
    tally.records += raw_tally.records;
    tally.queries += raw_tally.queries;
    tally.statements += raw_tally.statements;
    tally.batches += raw_tally.batches;
    tally.errors_agreed += raw_tally.errors_agreed;
    tally.mismatches.extend(raw_tally.mismatches);
    tally.known.extend(raw_tally.known);
}

#[test]
fn mysql_corpus() {
    let rt = crate::common::reliability::runtime();
    let mut tally = Tally::default();
    for path in corpus_files() {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let text = std::fs::read_to_string(&path).expect("corpus file");
        rt.block_on(run_fresh(parse(&name, &text), &mut tally));
    }
    rt.block_on(run_fresh(generated(), &mut tally));
    println!(
        "mysql_corpus files={} records={} queries={} statements={} batches={} errors_agreed={} known_differences={} mismatches={}",
        tally.files,
        tally.records,
        tally.queries,
        tally.statements,
        tally.batches,
        tally.errors_agreed,
        tally.known.len(),
        tally.mismatches.len()
    );
    for (k, v) in &tally.known {
        println!("  known difference: {k}: {v}");
    }
    let listed: Vec<String> = tally
        .mismatches
        .iter()
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    assert!(
        listed.is_empty(),
        "the crate and raw mysql_async differ on {} corpus records:\n  {}",
        listed.len(),
        listed.join("\n  ")
    );
}

#[test]
fn corpus_format_is_read_as_documented() {
    let recs = parse(
        "t",
        "# c\nstatement ok\nCREATE TABLE t (a INT)\n\nquery any\nSELECT $1,\n  $2\nparams: 1, 'a,''b', x'00ff', NULL, -2.5\n\nbatch error atomic\nINSERT INTO t VALUES (1);\nBAD;\n\nbegin\n\nrollback\n",
    );
    assert_eq!(recs.len(), 5);
    assert_eq!(
        (recs[0].kind.clone(), recs[0].expect),
        (Kind::Statement, Expect::Ok)
    );
    assert_eq!(recs[1].sql, "SELECT $1,\n  $2");
    assert_eq!(recs[1].expect, Expect::Any);
    assert!(matches!(
        recs[1].params.as_slice(),
        [Param::Int(1), Param::Text(t), Param::Blob(b), Param::Null, Param::Float(f)]
            if t == "a,'b" && b == &[0, 255] && *f == -2.5
    ));
    assert_eq!(recs[2].kind, Kind::Batch { atomic: true });
    assert_eq!(recs[2].expect, Expect::Error);
    assert_eq!(recs[3].kind, Kind::Begin);
    assert_eq!(recs[4].kind, Kind::Rollback);
    assert_eq!(recs[1].at, "t:5");
}
