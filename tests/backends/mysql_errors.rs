//! MySQL/MariaDB errors carry no data: every error number the server raises with a quoted
//! value (duplicate entries, truncations and conversions, out-of-range expressions, partition
//! values, variable assignments, `SIGNAL` texts, syntax errors near a literal, …) is provoked
//! through the public API with a fresh marker in the bound value or literal. The marker must
//! appear nowhere in the error's `Display` or `Debug`, nor in those of any error along its
//! `source()` chain, while `unredacted_message()` holds it (which proves the error quoted it)
//! and `driver_code()` is the expected number.
//!
//! Numbers the server raises only in rare situations (and MySQL's forms where they differ
//! from MariaDB's) are raised with `SIGNAL … SET MYSQL_ERRNO = n, MESSAGE_TEXT = …` in the exact
//! form the server would write: the middleware sees the same number and text either way. The
//! figure counts them apart (`forged`).
#![cfg(feature = "mysql")]

use sql_middleware::prelude::*;

use crate::common::backends::unique_hex;
use crate::common::groups;
use crate::common::mysql;

/// Every text an error shows to a logger: `Display` and `Debug` of it and of its sources.
fn shown(e: &SqlMiddlewareDbError) -> String {
    let mut out = format!("{e}\n{e:?}");
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        out.push_str(&format!("\n{s}\n{s:?}"));
        src = s.source();
    }
    out
}

/// How a case reaches the server.
enum Via {
    /// `query(sql).params(p).dml()`: a prepared statement.
    Dml(Vec<RowValues>),
    /// `query(sql).params(p).select()`.
    Select(Vec<RowValues>),
    /// `execute_batch(sql)`: the text protocol.
    Batch,
}

/// One error to provoke.
struct Case {
    what: &'static str,
    code: u16,
    /// Raised with `SIGNAL` in the server's own form, not provoked.
    forged: bool,
    /// Statements that must succeed first.
    setup: Vec<String>,
    sql: String,
    via: Via,
    /// The marker the server's text quotes.
    marker: String,
    /// A name the public message must still hold (a key, a column, a table).
    names: Option<&'static str>,
}

/// A `SIGNAL` that raises `code` with `text` (single quotes doubled) as its message.
fn signal(code: u16, state: &str, text: &str) -> String {
    format!(
        "SIGNAL SQLSTATE '{state}' SET MYSQL_ERRNO = {code}, MESSAGE_TEXT = '{}'",
        text.replace('\'', "''")
    )
}

const SCHEMA: &str = "
    CREATE TABLE r (id BIGINT PRIMARY KEY, email VARCHAR(100), n INT, d DATE,
                    dc DECIMAL(5,2), dt DATETIME, s VARCHAR(100), UNIQUE KEY r_email (email));
    CREATE TABLE h (id BIGINT PRIMARY KEY, b BLOB, UNIQUE KEY h_b (b));
    CREATE TABLE part (id BIGINT PRIMARY KEY) PARTITION BY LIST (id) (PARTITION p0 VALUES IN (1, 2));
    CREATE TABLE fkp (id VARCHAR(100) PRIMARY KEY, k VARCHAR(100), KEY (k));
    CREATE TABLE fkc (id INT PRIMARY KEY, k VARCHAR(100), UNIQUE KEY fkc_k (k),
                      FOREIGN KEY (k) REFERENCES fkp (k) ON UPDATE CASCADE);
    CREATE TABLE trg (id BIGINT PRIMARY KEY, s VARCHAR(100));";

const TRIGGER: &str = "CREATE TRIGGER trg_refuse BEFORE INSERT ON trg FOR EACH ROW
    BEGIN
        DECLARE msg VARCHAR(200);
        IF NEW.id < 0 THEN
            SET msg = CONCAT('refused: ', NEW.s);
            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
        END IF;
    END";

/// The cases, each with markers of its own: `m(i)` a text marker, `n(i)` a numeric one.
fn cases() -> Vec<Case> {
    let run = unique_hex();
    let m = |i: u32| format!("Mk{i}q{}", &run[..10]);
    let n = |i: u32| {
        let h = u64::from_str_radix(&run[..8], 16).unwrap_or(0) % 900_000;
        format!("{}", 7_100_000 + u64::from(i) * 1_000_000 + h)
    };
    // The server quotes three bytes of an invalid string: 0xFF and two of the run's.
    let hex = |_: u32| format!("FF{}", run[..4].to_ascii_uppercase());
    let case = |what, code, setup: Vec<String>, sql: String, via, marker: String, names| Case {
        what,
        code,
        forged: false,
        setup,
        sql,
        via,
        marker,
        names,
    };
    let forged = |what, code, state: &str, text: String, marker: String, names| Case {
        what,
        code,
        forged: true,
        setup: vec![],
        sql: signal(code, state, &text),
        via: Via::Batch,
        marker,
        names,
    };
    vec![
        // --- duplicate entries ----------------------------------------------------------------
        case(
            "a duplicate unique value, bound",
            1062,
            vec![format!("INSERT INTO r (id, email) VALUES (1, '{}')", m(1))],
            "INSERT INTO r (id, email) VALUES ($1, $2)".into(),
            Via::Dml(vec![2.into(), m(1).into()]),
            m(1),
            Some("r_email"),
        ),
        case(
            "a duplicate unique value, literal",
            1062,
            vec![format!("INSERT INTO r (id, email) VALUES (3, '{}')", m(2))],
            format!("INSERT INTO r (id, email) VALUES (4, '{}')", m(2)),
            Via::Batch,
            m(2),
            Some("r_email"),
        ),
        case(
            "a duplicate in a long unique BLOB (a hash key)",
            1062,
            vec![format!("INSERT INTO h (id, b) VALUES (1, '{}')", m(3))],
            "INSERT INTO h (id, b) VALUES ($1, $2)".into(),
            Via::Dml(vec![2.into(), m(3).into()]),
            m(3),
            Some("h_b"),
        ),
        case(
            "a duplicate primary key, bound",
            1062,
            vec![format!("INSERT INTO fkp (id, k) VALUES ('{}', 'x')", m(4))],
            "INSERT INTO fkp (id, k) VALUES ($1, $2)".into(),
            Via::Dml(vec![m(4).into(), "y".into()]),
            m(4),
            Some("PRIMARY"),
        ),
        case(
            "an ON UPDATE CASCADE that duplicates a child's unique key",
            1761,
            vec![
                format!(
                    "INSERT INTO fkp (id, k) VALUES ('{}', 'ka'), ('other', 'kb')",
                    m(5)
                ),
                "INSERT INTO fkc (id, k) VALUES (1, 'ka'), (2, 'kb')".into(),
            ],
            "UPDATE fkp SET k = 'kb' WHERE id = $1".into(),
            Via::Dml(vec![m(5).into()]),
            m(5),
            Some("fkc"),
        ),
        // --- truncations and conversions ------------------------------------------------------
        case(
            "text bound to an INT column",
            1366,
            vec![],
            "INSERT INTO r (id, n) VALUES ($1, $2)".into(),
            Via::Dml(vec![10.into(), m(10).into()]),
            m(10),
            Some("`n`"),
        ),
        case(
            "text bound to a DECIMAL column",
            1366,
            vec![],
            "INSERT INTO r (id, dc) VALUES ($1, $2)".into(),
            Via::Dml(vec![11.into(), m(11).into()]),
            m(11),
            Some("`dc`"),
        ),
        case(
            "text bound to a DATE column",
            1292,
            vec![],
            "INSERT INTO r (id, d) VALUES ($1, $2)".into(),
            Via::Dml(vec![12.into(), m(12).into()]),
            m(12),
            Some("`d`"),
        ),
        case(
            "a CAST of text to SIGNED stored",
            1292,
            vec![],
            format!(
                "INSERT INTO r (id, n) VALUES (13, CAST('{}' AS SIGNED))",
                m(13)
            ),
            Via::Batch,
            m(13),
            Some("INTEGER"),
        ),
        case(
            "STR_TO_DATE of a bound text stored",
            1411,
            vec![],
            "INSERT INTO r (id, dt) VALUES ($1, STR_TO_DATE($2, '%Y'))".into(),
            Via::Dml(vec![14.into(), m(14).into()]),
            m(14),
            Some("str_to_date"),
        ),
        case(
            "a DATE literal",
            1525,
            vec![],
            format!("SELECT DATE '{}'", m(15)),
            Via::Select(vec![]),
            m(15),
            Some("DATE"),
        ),
        case(
            "a double literal out of range",
            1367,
            vec![],
            format!("SELECT 9e9{}", n(16)),
            Via::Select(vec![]),
            n(16),
            Some("double"),
        ),
        case(
            "an invalid utf8mb4 string literal",
            1300,
            vec![],
            format!("SELECT _utf8mb4 x'{}'", hex(17)),
            Via::Select(vec![]),
            hex(17),
            Some("utf8mb4"),
        ),
        case(
            "a bound value overflowing BIGINT",
            1690,
            vec![],
            "SELECT $1 + 9223372036854775807".into(),
            Via::Select(vec![RowValues::Int(n(18).parse().unwrap())]),
            n(18),
            Some("BIGINT"),
        ),
        case(
            "a literal overflowing BIGINT",
            1690,
            vec![],
            format!("SELECT {} * 9223372036854775807", n(19)),
            Via::Select(vec![]),
            n(19),
            Some("BIGINT"),
        ),
        case(
            "a dynamic column's text read as INT and stored",
            1918,
            vec![],
            "INSERT INTO r (id, n) VALUES ($1, COLUMN_GET(COLUMN_CREATE('a', $2), 'a' AS INT))"
                .into(),
            Via::Dml(vec![20.into(), m(20).into()]),
            m(20),
            Some("INT"),
        ),
        case(
            "a dynamic column's number overflowing INT and stored",
            1916,
            vec![],
            format!(
                "INSERT INTO r (id, n) VALUES (21, COLUMN_GET(COLUMN_CREATE('a', 9999999999999{}), 'a' AS INT))",
                n(21)
            ),
            Via::Batch,
            n(21),
            Some("INT"),
        ),
        case(
            "a value with no partition",
            1526,
            vec![],
            "INSERT INTO part (id) VALUES ($1)".into(),
            Via::Dml(vec![RowValues::Int(n(22).parse().unwrap())]),
            n(22),
            Some("partition"),
        ),
        // --- variables, DDL and names ---------------------------------------------------------
        case(
            "sql_mode set to a bad value",
            1231,
            vec![],
            format!("SET SESSION sql_mode = '{}'", m(30)),
            Via::Batch,
            m(30),
            Some("sql_mode"),
        ),
        case(
            "time_zone set to a bad value",
            1298,
            vec![],
            format!("SET SESSION time_zone = '{}'", m(31)),
            Via::Batch,
            m(31),
            Some("time zone"),
        ),
        case(
            "lc_messages set to a bad value (a number the table does not list)",
            1649,
            vec![],
            format!("SET SESSION lc_messages = '{}'", m(32)),
            Via::Batch,
            m(32),
            Some("locale"),
        ),
        case(
            "collation_connection set to a bad value (a number the table does not list)",
            1273,
            vec![],
            format!("SET SESSION collation_connection = '{}'", m(33)),
            Via::Batch,
            m(33),
            Some("collation"),
        ),
        case(
            "an ENUM with a duplicated value",
            1291,
            vec![],
            format!("CREATE TABLE en (e ENUM('{0}', '{0}'))", m(34)),
            Via::Batch,
            m(34),
            Some("ENUM"),
        ),
        case(
            "a table option with a bad value",
            1912,
            vec![],
            format!("CREATE TABLE ov (a INT) ENCRYPTED = '{}'", m(35)),
            Via::Batch,
            m(35),
            Some("ENCRYPTED"),
        ),
        case(
            "a user name too long",
            1470,
            vec![],
            format!("CREATE USER '{}{}'@'%'", m(36), "u".repeat(140)),
            Via::Batch,
            m(36),
            Some("user name"),
        ),
        // --- syntax errors --------------------------------------------------------------------
        case(
            "a syntax error near a string literal",
            1064,
            vec![],
            format!("SELECT * FROM r WHERE id = 1 '{}'", m(40)),
            Via::Select(vec![]),
            m(40),
            Some("at line 1"),
        ),
        case(
            "an unterminated string literal",
            1064,
            vec![],
            format!("SELECT id FROM r WHERE email = '{}", m(41)),
            Via::Select(vec![]),
            m(41),
            Some("at line 1"),
        ),
        case(
            "a syntax error in a script, on its third line",
            1064,
            vec![],
            format!(
                "SELECT 1;\nSELECT 2;\nSELECT * FROM r WHERE id = 1 '{}'",
                m(42)
            ),
            Via::Batch,
            m(42),
            Some("at line"),
        ),
        // --- SIGNAL -----------------------------------------------------------------------------
        case(
            "a trigger's SIGNAL quoting the row",
            1644,
            vec![],
            "INSERT INTO trg (id, s) VALUES ($1, $2)".into(),
            Via::Dml(vec![(-1).into(), m(50).into()]),
            m(50),
            Some("SIGNAL"),
        ),
        case(
            "a SIGNAL statement",
            1644,
            vec![],
            format!("SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = '{}'", m(51)),
            Via::Batch,
            m(51),
            Some("SIGNAL"),
        ),
        // --- rare numbers and MySQL's forms, in the server's exact words ------------------------
        forged(
            "ER_DUP_ENTRY_WITH_KEY_NAME",
            1586,
            "23000",
            format!("Duplicate entry '{}' for key 'k'", m(60)),
            m(60),
            Some("'k'"),
        ),
        forged(
            "ER_FOREIGN_DUPLICATE_KEY_WITHOUT_CHILD_INFO",
            1762,
            "23000",
            format!(
                "Foreign key constraint for table 'fkp', record '{}' would lead to a duplicate entry in a child table",
                m(61)
            ),
            m(61),
            Some("fkp"),
        ),
        forged(
            "ER_DUP_ENTRY_AUTOINCREMENT_CASE",
            1569,
            "23000",
            format!(
                "ALTER TABLE causes auto_increment resequencing, resulting in duplicate entry '{}' for key 'PRIMARY'",
                m(62)
            ),
            m(62),
            Some("PRIMARY"),
        ),
        forged(
            "ER_FOREIGN_DUPLICATE_KEY (MySQL)",
            1557,
            "23000",
            format!(
                "Upholding foreign key constraints for table 'fkp', entry '{}', key 2 would lead to a duplicate entry",
                m(63)
            ),
            m(63),
            Some("fkp"),
        ),
        forged(
            "ER_DATA_TRUNCATED",
            1917,
            "22001",
            format!("Truncated value '{}' when converting to DECIMAL", m(64)),
            m(64),
            Some("DECIMAL"),
        ),
        forged(
            "ER_INVALID_DEFAULT_VALUE_FOR_FIELD",
            1978,
            "22007",
            format!("Incorrect default value '{}' for column 'd'", m(65)),
            m(65),
            Some("'d'"),
        ),
        forged(
            "ER_DUP_ENTRY as MySQL 8 writes it",
            1062,
            "23000",
            format!("Duplicate entry '{}' for key 'r.r_email'", m(66)),
            m(66),
            Some("r.r_email"),
        ),
        forged(
            "ER_TRUNCATED_WRONG_VALUE_FOR_FIELD as MySQL writes it",
            1366,
            "HY000",
            format!(
                "Incorrect integer value: '{}' for column 'n' at row 1",
                m(67)
            ),
            m(67),
            Some("'n'"),
        ),
        forged(
            "ER_TRUNCATED_WRONG_VALUE as MySQL writes it for a column",
            1292,
            "22007",
            format!(
                "Incorrect datetime value: '{}' for column 'dt' at row 1",
                m(68)
            ),
            m(68),
            Some("'dt'"),
        ),
        forged(
            "ER_WRONG_VALUE_FOR_VAR with a quote inside the value",
            1231,
            "42000",
            format!(
                "Variable 'sql_mode' can't be set to the value of 'a' for key '{}'",
                m(69)
            ),
            m(69),
            Some("sql_mode"),
        ),
        forged(
            "a number of the table with a text of another form",
            1146,
            "42S02",
            format!("customer {} was refused", m(70)),
            m(70),
            None,
        ),
        forged(
            "ER_DUP_ENTRY from a server speaking German",
            1062,
            "23000",
            format!("Doppelter Eintrag '{}' für Schlüssel 'r_email'", m(71)),
            m(71),
            None,
        ),
        forged(
            "a number no table knows, with a quoted value",
            4444,
            "HY000",
            format!("Something about '{}' went wrong", m(72)),
            m(72),
            Some("went wrong"),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_error_number_shows_the_value_it_quotes() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let db = ConfigAndPool::mysql(&url)
            .max_size(2)
            .build()
            .await
            .expect("pool");
        let mut c = db.get_connection().await.expect("connection");
        c.execute_batch(SCHEMA).await.expect("schema");
        c.execute_batch(TRIGGER).await.expect("trigger");
        let cases = cases();
        let mut wrong = Vec::new();
        let mut leaked = Vec::new();
        let mut codes = std::collections::BTreeSet::new();
        let (mut provoked, mut forged) = (0, 0);
        for case in &cases {
            for s in &case.setup {
                c.execute_batch(s)
                    .await
                    .unwrap_or_else(|e| panic!("{}: setup {s}: {e:?}", case.what));
            }
            let r = match &case.via {
                Via::Dml(p) => c.query(&case.sql).params(p).dml().await.map(|_| ()),
                Via::Select(p) => c.query(&case.sql).params(p).select().await.map(|_| ()),
                Via::Batch => c.execute_batch(&case.sql).await,
            };
            let e = match r {
                Ok(()) => {
                    wrong.push(format!("{} ({}): succeeded", case.what, case.code));
                    continue;
                }
                Err(e) => e,
            };
            let code = case.code.to_string();
            if e.driver_code() != Some(code.as_str()) {
                wrong.push(format!(
                    "{}: expected error {}, got {:?}: {:?}",
                    case.what,
                    case.code,
                    e.driver_code(),
                    e.unredacted_message()
                ));
                continue;
            }
            if !e
                .unredacted_message()
                .is_some_and(|t| t.contains(&case.marker))
            {
                wrong.push(format!(
                    "{} ({}): the server's text does not quote the marker: {:?}",
                    case.what,
                    case.code,
                    e.unredacted_message()
                ));
                continue;
            }
            let seen = shown(&e);
            if seen.contains(&case.marker) {
                leaked.push(format!("{} ({}): {seen}", case.what, case.code));
            }
            if let Some(name) = case.names {
                if !e.to_string().contains(name) {
                    wrong.push(format!(
                        "{} ({}): the message no longer names {name:?}: {e}",
                        case.what, case.code
                    ));
                }
            }
            codes.insert(case.code);
            if case.forged {
                forged += 1;
            } else {
                provoked += 1;
            }
        }
        println!(
            "mysql_error_redaction codes={} cases={} provoked={provoked} forged={forged} leaked={}",
            codes.len(),
            cases.len(),
            leaked.len()
        );
        assert!(
            leaked.is_empty(),
            "{} errors show the value they quote:\n{}",
            leaked.len(),
            leaked.join("\n---\n")
        );
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    })
    .await;
}
