//! What a MySQL statement leaves in the session, read from its text, and what that costs on
//! return: the session reset, and the cleaning of a connection going back to the pool.
//!
//! MySQL can report session changes itself (`CLIENT_SESSION_TRACK`), but mysql_async does not
//! ask for them, so the wing reads statements the only safe way: a statement is *plain* (it
//! leaves nothing in the session) only when its text proves it — a query or DML statement
//! (`SELECT`, `INSERT`, `UPDATE`, `DELETE`, `REPLACE`, `WITH`, `VALUES`, `TABLE`, `SHOW`,
//! `DESCRIBE`, `EXPLAIN`, or savepoint control) that names no user variable (`@x`) and calls
//! none of the functions that keep session state (`GET_LOCK`, `LAST_INSERT_ID(expr)`,
//! sequences). Anything else (`SET`, temporary tables, `PREPARE`, `USE`, `LOCK TABLES`, `CALL`,
//! handlers, raw access) marks the connection, and it is reset with `COM_RESET_CONNECTION`
//! before the next borrower gets it: user and session variables, temporary tables, named
//! locks, prepared statements and open handlers are gone, and the pool's `after_connect` hook
//! runs again.

use std::time::Duration;

use mysql_async::prelude::Queryable;
use mysql_async::{BinaryProtocol, QueryResult};

use super::config::MyClient;
use super::conn::Obj;
use super::error::map_err;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::server::held;
use crate::sql::Dialect;
use crate::sql::scanner::{Kind, Token, tokens};
use crate::sql::script::statements;

/// First words of statements that may be plain.
#[rustfmt::skip]
const PLAIN_HEADS: [&str; 14] = [
    "SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH", "VALUES", "TABLE", "SHOW",
    "DESCRIBE", "DESC", "EXPLAIN", "SAVEPOINT", "RELEASE",
];

/// Functions whose call leaves state in the session.
#[rustfmt::skip]
const STATEFUL: [&str; 7] = [
    "GET_LOCK",
    "RELEASE_LOCK",
    "RELEASE_ALL_LOCKS",
    "LAST_INSERT_ID",
    "NEXTVAL",
    "SETVAL",
    "LASTVAL",
];

/// Built-in functions that keep no state in the session: a call to any other function (a
/// stored function may set variables or make temporary tables) makes the statement not plain.
#[rustfmt::skip]
const PURE: &[&str] = &[
    // aggregates and windows
    "COUNT", "SUM", "AVG", "MIN", "MAX", "GROUP_CONCAT", "BIT_AND", "BIT_OR", "BIT_XOR", "STD",
    "STDDEV", "STDDEV_POP", "STDDEV_SAMP", "VARIANCE", "VAR_POP", "VAR_SAMP", "JSON_ARRAYAGG",
    "JSON_OBJECTAGG", "ROW_NUMBER", "RANK", "DENSE_RANK", "NTILE", "LAG", "LEAD", "FIRST_VALUE",
    "LAST_VALUE", "NTH_VALUE", "PERCENT_RANK", "CUME_DIST",
    // control flow and comparison
    "IF", "IFNULL", "NULLIF", "COALESCE", "GREATEST", "LEAST", "ISNULL", "INTERVAL", "NVL",
    "NVL2", "CAST", "CONVERT", "BINARY",
    // numbers
    "ABS", "CEIL", "CEILING", "FLOOR", "ROUND", "TRUNCATE", "MOD", "POW", "POWER", "SQRT", "EXP",
    "LN", "LOG", "LOG2", "LOG10", "SIGN", "PI", "SIN", "COS", "TAN", "ASIN", "ACOS", "ATAN",
    "ATAN2", "COT", "DEGREES", "RADIANS", "CRC32", "CONV", "HEX", "UNHEX", "BIN", "OCT", "DIV",
    "BIT_COUNT", "FORMAT",
    // strings
    "CONCAT", "CONCAT_WS", "LENGTH", "CHAR_LENGTH", "CHARACTER_LENGTH", "OCTET_LENGTH",
    "BIT_LENGTH", "LOWER", "UPPER", "LCASE", "UCASE", "SUBSTRING", "SUBSTR", "MID", "LEFT",
    "RIGHT", "TRIM", "LTRIM", "RTRIM", "LPAD", "RPAD", "REPLACE", "REVERSE", "REPEAT", "SPACE",
    "INSTR", "LOCATE", "POSITION", "FIELD", "FIND_IN_SET", "ELT", "MAKE_SET", "EXPORT_SET",
    "STRCMP", "SUBSTRING_INDEX", "INSERT", "ASCII", "ORD", "CHAR", "QUOTE", "SOUNDEX",
    "TO_BASE64", "FROM_BASE64", "MD5", "SHA", "SHA1", "SHA2", "REGEXP_REPLACE", "REGEXP_SUBSTR",
    "REGEXP_INSTR", "REGEXP_LIKE", "COLLATION", "CHARSET", "WEIGHT_STRING",
    // dates and times
    "NOW", "CURDATE", "CURTIME", "CURRENT_DATE", "CURRENT_TIME", "CURRENT_TIMESTAMP",
    "LOCALTIME", "LOCALTIMESTAMP", "SYSDATE", "UTC_DATE", "UTC_TIME", "UTC_TIMESTAMP", "DATE",
    "TIME", "TIMESTAMP", "YEAR", "MONTH", "DAY", "DAYOFMONTH", "DAYOFWEEK", "DAYOFYEAR",
    "WEEKDAY", "WEEK", "WEEKOFYEAR", "YEARWEEK", "QUARTER", "HOUR", "MINUTE", "SECOND",
    "MICROSECOND", "DATE_ADD", "DATE_SUB", "ADDDATE", "SUBDATE", "ADDTIME", "SUBTIME",
    "DATEDIFF", "TIMEDIFF", "TIMESTAMPADD", "TIMESTAMPDIFF", "DATE_FORMAT", "TIME_FORMAT",
    "STR_TO_DATE", "FROM_UNIXTIME", "UNIX_TIMESTAMP", "EXTRACT", "LAST_DAY", "MAKEDATE",
    "MAKETIME", "MONTHNAME", "DAYNAME", "TO_DAYS", "FROM_DAYS", "TO_SECONDS", "SEC_TO_TIME",
    "TIME_TO_SEC", "CONVERT_TZ", "PERIOD_ADD", "PERIOD_DIFF",
    // JSON
    "JSON_EXTRACT", "JSON_UNQUOTE", "JSON_OBJECT", "JSON_ARRAY", "JSON_VALID", "JSON_TYPE",
    "JSON_KEYS", "JSON_LENGTH", "JSON_CONTAINS", "JSON_CONTAINS_PATH", "JSON_SET",
    "JSON_INSERT", "JSON_REPLACE", "JSON_REMOVE", "JSON_MERGE", "JSON_MERGE_PATCH",
    "JSON_MERGE_PRESERVE", "JSON_QUOTE", "JSON_SEARCH", "JSON_VALUE", "JSON_QUERY",
    "JSON_DEPTH", "JSON_COMPACT", "JSON_DETAILED", "JSON_ARRAY_APPEND", "JSON_ARRAY_INSERT",
    "JSON_TABLE", "JSON_EXISTS",
    // misc
    "UUID", "UUID_SHORT", "RAND", "SLEEP", "VERSION", "DATABASE", "SCHEMA", "USER",
    "CURRENT_USER", "SESSION_USER", "SYSTEM_USER", "CONNECTION_ID", "FOUND_ROWS", "ROW_COUNT",
    "BENCHMARK", "INET_ATON", "INET_NTOA", "INET6_ATON", "INET6_NTOA", "IS_FREE_LOCK",
    "IS_USED_LOCK", "COMPRESS", "UNCOMPRESS", "VALUES", "VALUE", "ROW", "EXISTS", "IN",
];

/// Words after which `(` opens a list, a subquery or a definition, never a call.
#[rustfmt::skip]
const NOT_CALLS: &[&str] = &[
    "AND", "AS", "BY", "CASE", "DELETE", "DISTINCT", "ELSE", "EXCEPT", "FOR", "FROM", "GROUP",
    "HAVING", "INSERT", "INTERSECT", "INTO", "IS", "JOIN", "LIKE", "LIMIT", "NOT", "OFFSET", "ON",
    "OR", "OVER", "PARTITION", "RECURSIVE", "RETURNING", "SELECT", "SET", "THEN", "UNION",
    "UPDATE", "USING", "WHEN", "WHERE", "WINDOW", "WITH", "ALL", "ANY", "SOME", "REPLACE",
    "KEY", "DUPLICATE", "IGNORE", "LATERAL", "XOR", "REGEXP", "RLIKE", "DIV", "MOD",
];

/// Words of reads: a statement that starts with one of these changes no row.
#[rustfmt::skip]
const READ_HEADS: [&str; 8] = [
    "SELECT", "VALUES", "TABLE", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "WITH",
];

fn is_any(w: &str, set: &[&str]) -> bool {
    set.iter().any(|k| w.eq_ignore_ascii_case(k))
}

/// Whether one statement leaves nothing in the session (see the module docs).
fn statement_is_plain(stmt: &str, d: Dialect) -> bool {
    let toks: Vec<Token> = tokens(stmt, d)
        .filter(|t| !t.kind.is_blank() && t.kind != Kind::Semi)
        .collect();
    let text = |i: usize| toks.get(i).map(|t| &stmt[t.start..t.end]);
    let Some(first) = toks.first().copied() else {
        return true;
    };
    if first.kind != Kind::Word || !is_any(&stmt[first.start..first.end], &PLAIN_HEADS) {
        // `ROLLBACK TO [SAVEPOINT] x` is plain too.
        return is_rollback_to(stmt, d);
    }
    for (i, t) in toks.iter().enumerate() {
        let w = &stmt[t.start..t.end];
        match t.kind {
            // `@x`, `@@x` (a `SET @@session.x` is no query, but `@x := …` is one).
            Kind::Param if w.starts_with('@') => return false,
            Kind::Punct if w == "@" => return false,
            Kind::Word if is_any(w, &STATEFUL) => return false,
            Kind::Word if w.eq_ignore_ascii_case("NEXT") => return false,
            // `SELECT … INTO @x` / `INTO OUTFILE`: not the `INTO` of `INSERT`/`REPLACE`.
            Kind::Word if w.eq_ignore_ascii_case("INTO") => {
                let after_dml = i
                    .checked_sub(1)
                    .and_then(text)
                    .is_some_and(|p| is_any(p, &["INSERT", "REPLACE", "IGNORE"]));
                if !after_dml {
                    return false;
                }
            }
            Kind::Word | Kind::QuotedIdent
                if text(i + 1) == Some("(") && !is_pure_call(&toks, stmt, i) =>
            {
                return false;
            }
            _ => {}
        }
    }
    true
}

/// Whether the name at `i`, followed by `(`, is not a call, or a call of a [`PURE`] function.
fn is_pure_call(toks: &[Token], stmt: &str, i: usize) -> bool {
    let text = |i: usize| toks.get(i).map(|t| &stmt[t.start..t.end]);
    let t = toks[i];
    let name = &stmt[t.start..t.end];
    let prev = i.checked_sub(1).and_then(text);
    if prev == Some(".") {
        // `db.name(`: a stored function, unless it is the column list of
        // `INSERT INTO db.t (…)`.
        return i
            .checked_sub(3)
            .and_then(text)
            .is_some_and(|p| p.eq_ignore_ascii_case("INTO"));
    }
    if t.kind == Kind::Word && is_any(name, NOT_CALLS) {
        return true;
    }
    match prev {
        // `INSERT INTO t (…)`, `AS alias (…)`, a type `CAST(x AS DECIMAL(10, 2))`,
        // `WITH name (…) AS`.
        Some(")") => return true,
        Some(p) if is_any(p, &["INTO", "AS", "WITH", "RECURSIVE", "TABLE", "JOIN"]) => {
            return true;
        }
        _ => {}
    }
    t.kind == Kind::Word && is_any(name, PURE)
}

fn is_rollback_to(stmt: &str, d: Dialect) -> bool {
    let mut w = tokens(stmt, d)
        .filter(|t| t.kind == Kind::Word)
        .map(|t| &stmt[t.start..t.end]);
    if !w.next().is_some_and(|x| x.eq_ignore_ascii_case("ROLLBACK")) {
        return false;
    }
    match w.next() {
        Some(x) if x.eq_ignore_ascii_case("TO") => true,
        Some(x) if is_any(x, &["WORK", "TRANSACTION"]) => {
            w.next().is_some_and(|x| x.eq_ignore_ascii_case("TO"))
        }
        _ => false,
    }
}

/// Whether every statement of `sql` (in the session's dialect `d`) leaves nothing in the
/// session.
pub(crate) fn is_plain(sql: &str, d: Dialect) -> bool {
    statements(sql, d).all(|s| statement_is_plain(s, d))
}

/// Whether a statement of `sql` runs a routine or a prepared SQL statement (`CALL`, `EXECUTE`):
/// the only statements a transaction can be committed or rolled back through unseen (stored
/// functions and triggers may not end one).
pub(crate) fn runs_routine(sql: &str, d: Dialect) -> bool {
    statements(sql, d).any(|s| {
        tokens(s, d).find(|t| !t.kind.is_blank()).is_some_and(|t| {
            t.kind == Kind::Word && is_any(&s[t.start..t.end], &["CALL", "EXECUTE"])
        })
    })
}

/// The end of the first statement of `sql` (read in `d`) that may change how the session reads
/// text, when a statement that is not blank follows it: a `SET` that names `sql_mode` (its
/// quote flags), the client's character set (`SET NAMES`, `SET CHARACTER SET`,
/// `character_set_client`, a collation) or an `EXECUTE` (the prepared statement may be such a
/// `SET`). MySQL reads a multi-statement text one statement at a time, so what follows is read
/// with what the statement sets, which only running it tells: after `SET NAMES gbk`, the
/// bytes of `'中\'` are a whole string (the backslash is the second byte of a GBK character),
/// and a `COMMIT` the middleware reads inside it runs. The session check after the part puts
/// a character set other than UTF-8 back and fails the call, so the rest never runs.
pub(crate) fn reading_changes_at(sql: &str, d: Dialect) -> Option<usize> {
    // A script with transaction control of its own runs as written, as one text (inside a
    // `Tx` it is refused whole): cut, a later part would run inside a transaction of the
    // middleware's, whose `START TRANSACTION` commits the one the script left open.
    if crate::sql::has_transaction_control(sql, d) {
        return None;
    }
    let mut at = 0;
    let mut cut = None;
    for s in statements(sql, d) {
        at += s.len();
        match cut {
            Some(end) if !crate::sql::is_blank(s, d) => return Some(end),
            Some(_) => {}
            None if may_change_reading(s, d) => cut = Some(at),
            None => {}
        }
    }
    None
}

/// Whether statement `s` may change how the session reads text (see [`reading_changes_at`]);
/// a string or a name that only contains one of the words makes a needless cut.
fn may_change_reading(s: &str, d: Dialect) -> bool {
    // The first word: an executable comment's version number (`/*!40101 SET …`) comes before.
    let Some(head) = tokens(s, d).find(|t| t.kind == Kind::Word) else {
        return false;
    };
    match &s[head.start..head.end] {
        w if w.eq_ignore_ascii_case("EXECUTE") => true,
        w if w.eq_ignore_ascii_case("SET") => {
            // `sql_mode`; `NAMES`, `CHARACTER SET`, `CHARSET`, `character_set_client`; a
            // collation, which sets the connection's character set with it.
            const NAMES: [&[u8]; 5] = [
                b"sql_mode",
                b"names",
                b"charset",
                b"character",
                b"collation",
            ];
            let b = s.as_bytes();
            NAMES
                .iter()
                .any(|n| b.windows(n.len()).any(|w| w.eq_ignore_ascii_case(n)))
        }
        _ => false,
    }
}

/// Whether running `sql` may change data (so a limit passing after it was sent, outside a
/// transaction, leaves its outcome unknown): any statement other than a read, or a read that
/// is not plain (it may call a routine that writes).
pub(crate) fn writes(sql: &str, d: Dialect) -> bool {
    statements(sql, d)
        .filter(|s| !crate::sql::is_blank(s, d))
        .any(|s| {
            if crate::sql::is_dml(s, d) || !statement_is_plain(s, d) {
                return true;
            }
            !tokens(s, d)
                .find(|t| !t.kind.is_blank())
                .is_some_and(|t| t.kind == Kind::Word && is_any(&s[t.start..t.end], &READ_HEADS))
        })
}

/// Resets the session (`COM_RESET_CONNECTION`: user and session variables, temporary tables,
/// named locks, prepared statements and handlers are gone; mysql_async then runs the pool's
/// session settings again), forgets the statements the server dropped, and runs the
/// `after_connect` hook again.
pub(crate) async fn reset(c: &mut MyClient) -> Result<()> {
    let supported = c.conn.reset().await.map_err(map_err)?;
    if !supported {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::Unsupported,
            "this server cannot reset a session (COM_RESET_CONNECTION needs MySQL 5.7.3 or MariaDB 10.2.4); the connection is closed",
        ));
    }
    c.stmts.clear();
    c.pending_close.clear();
    c.generation += 1;
    // The reset keeps the current database: put back the pool's (a `USE` of a borrower's), or
    // refuse the connection when the pool names none and a borrower chose one.
    match c.endpoint.opts.db_name() {
        Some(db) => {
            let db = db.replace('`', "``");
            c.conn
                .query_drop(format!("USE `{db}`"))
                .await
                .map_err(map_err)?;
        }
        None => {
            let current: Option<Option<String>> = c
                .conn
                .query_first("SELECT DATABASE()")
                .await
                .map_err(map_err)?;
            if current.flatten().is_some() {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::ConnectionLost,
                    "a borrower chose a database with USE on a pool that names none, and a reset cannot undo it; the connection is closed",
                ));
            }
        }
    }
    c.dirty = false;
    super::open::set_up(c).await
}

/// A connection going back to the pool, in a task of its own bounded by `bound`: the rows of
/// a stream closed early read off (`unread`), a transaction left `open` rolled back, and a
/// touched session reset; a connection whose cleaning does not finish is marked broken,
/// detached and closed (see `server::held::Cleaning`).
pub(super) fn clean(obj: Obj, open: bool, unread: bool, bound: Duration) {
    held::clean_in_background(obj, bound, mark_broken, move |obj| {
        Box::pin(async move {
            let clean = async {
                if unread {
                    // The rows of a stream closed early: read off (a no-op when none are left).
                    QueryResult::<BinaryProtocol>::new(&mut obj.conn)
                        .drop_result()
                        .await
                        .map_err(map_err)?;
                }
                if open {
                    obj.conn.query_drop("ROLLBACK").await.map_err(map_err)?;
                }
                if obj.dirty {
                    reset(obj).await?;
                }
                Ok::<(), SqlMiddlewareDbError>(())
            };
            // Clean: back to the pool.
            clean.await.is_ok()
        })
    });
}

/// A connection whose cleaning did not finish is marked broken before it is detached.
fn mark_broken(c: &mut MyClient) {
    c.broken = true;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mysql::DIALECT;
    use crate::sql::scanner::QuoteModes;

    #[test]
    fn a_script_is_cut_after_a_statement_that_may_change_the_quote_flags() {
        fn cut(sql: &str) -> Option<&str> {
            reading_changes_at(sql, DIALECT).map(|n| &sql[..n])
        }
        let head = "SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES';";
        assert_eq!(cut(&format!("{head} SELECT 'C:\\'")), Some(head));
        assert_eq!(
            cut(&format!("SELECT 1; {head} SELECT 2")),
            Some(&*format!("SELECT 1; {head}"))
        );
        let dump = "/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='ANSI_QUOTES' */;";
        assert_eq!(cut(&format!("{dump}\nSELECT 1")), Some(dump));
        let exec = "EXECUTE s;";
        assert_eq!(cut(&format!("{exec} SELECT 1")), Some(exec));
        // Nothing after it (comments only), or nothing that may change the flags: no cut.
        assert_eq!(cut(&format!("SELECT 1; {head} -- done")), None);
        assert_eq!(cut("SET @a = 1; SELECT 'sql_mode'"), None);
        // The client's character set: what follows is lexed in it.
        for set in [
            "SET NAMES gbk;",
            "SET CHARACTER SET big5;",
            "SET CHARSET sjis;",
            "SET @@session.character_set_client = gbk;",
            "SET collation_connection = gbk_chinese_ci;",
            "/*!40101 SET NAMES utf8mb4 */;",
        ] {
            assert_eq!(
                cut(&format!("{set} SELECT '中\\'; COMMIT; -- '")),
                Some(set),
                "{set}"
            );
        }
        assert_eq!(cut("SELECT 1; SELECT 2"), None);
        // A script with transaction control of its own runs whole.
        assert_eq!(
            cut(&format!(
                "START TRANSACTION; {head} INSERT INTO t VALUES (1)"
            )),
            None
        );
        // One hidden by the flags from before is no transaction control yet: it is cut.
        let hidden = format!("{head} SELECT 'C:\\'; COMMIT");
        assert_eq!(cut(&hidden), Some(head));
    }

    #[test]
    fn only_statements_the_text_proves_harmless_are_plain() {
        for sql in [
            "SELECT * FROM t WHERE id = ?",
            "INSERT INTO t VALUES (1, 'SET @x = 1')",
            "UPDATE t SET a = a + 1 -- SET @x",
            "WITH a AS (SELECT 1) SELECT * FROM a",
            "SAVEPOINT s1",
            "ROLLBACK TO SAVEPOINT s1",
            "SHOW TABLES",
            "SELECT '@x', `@y`",
            "INSERT INTO t (a, b) VALUES (1, CONCAT('a', $1))",
            "INSERT INTO db.t (a) VALUES (NOW())",
            "SELECT CAST(a AS DECIMAL(10, 2)), COUNT(*) FROM t WHERE b IN (1, 2)",
            "INSERT INTO t VALUES (1) ON DUPLICATE KEY UPDATE a = VALUES(a)",
        ] {
            assert!(is_plain(sql, DIALECT), "{sql}");
        }
        for sql in [
            "SET @x = 1",
            "SET SESSION sql_mode = 'ANSI'",
            "SELECT @x := 1",
            "SELECT 1 INTO @x",
            "SELECT GET_LOCK('a', 0)",
            "SELECT LAST_INSERT_ID(5)",
            "CREATE TEMPORARY TABLE t (a int)",
            "PREPARE p FROM 'SELECT 1'",
            "USE other",
            "CALL p()",
            "LOCK TABLES t WRITE",
            "SELECT NEXT VALUE FOR s",
            "SELECT 1; SET @x = 2",
            "HANDLER t OPEN",
            "SELECT fp_fn()",
            "SELECT db.f(1)",
            "INSERT INTO t VALUES (my_func(1))",
            "SELECT 1 INTO OUTFILE '/tmp/x'",
        ] {
            assert!(!is_plain(sql, DIALECT), "{sql}");
        }
    }

    #[test]
    fn routines_are_calls_and_executes() {
        assert!(runs_routine("CALL p()", DIALECT));
        assert!(runs_routine("SELECT 1; /* x */ execute s", DIALECT));
        assert!(!runs_routine("SELECT 'CALL p()'", DIALECT));
        assert!(!runs_routine("SELECT f()", DIALECT));
    }

    #[test]
    fn reads_do_not_write() {
        assert!(!writes(
            "SELECT 1; SHOW TABLES; /* c */ SELECT * FROM t",
            DIALECT
        ));
        assert!(writes("SELECT 1; INSERT INTO t VALUES (1)", DIALECT));
        assert!(writes("CALL p()", DIALECT));
        assert!(writes("CREATE TABLE t (a int)", DIALECT));
        assert!(writes("SELECT GET_LOCK('a', 0)", DIALECT));
    }

    #[test]
    fn what_follows_a_string_ending_in_a_backslash_is_read_as_the_session_reads_it() {
        let nbe = crate::mysql::dialect::of_session(QuoteModes {
            no_backslash_escapes: true,
            ansi_quotes: false,
        });
        // Under NO_BACKSLASH_ESCAPES the assignment is code, not part of a string.
        let sql = "SELECT 'C:\\', @leak := 42";
        assert!(!is_plain(sql, nbe));
        assert!(is_plain(sql, DIALECT));
        assert!(runs_routine("SELECT 'C:\\'; CALL p()", nbe));
        assert!(writes("SELECT 'C:\\'; DELETE FROM t", nbe));
        let ansi = crate::mysql::dialect::of_session(QuoteModes {
            no_backslash_escapes: false,
            ansi_quotes: true,
        });
        assert!(!is_plain("SELECT \"a\\\", @leak := 1 FROM t", ansi));
    }
}
