//! What a MySQL statement leaves in the session, read from its text, and what that costs on
//! return.
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

use crate::sql::Dialect;
use crate::sql::scanner::{Kind, tokens};
use crate::sql::script::statements;

const D: Dialect = Dialect::Mysql;

/// First words of statements that may be plain.
const PLAIN_HEADS: [&str; 14] = [
    "SELECT", "INSERT", "UPDATE", "DELETE", "REPLACE", "WITH", "VALUES", "TABLE", "SHOW",
    "DESCRIBE", "DESC", "EXPLAIN", "SAVEPOINT", "RELEASE",
];

/// Functions whose call leaves state in the session.
const STATEFUL: [&str; 7] = [
    "GET_LOCK",
    "RELEASE_LOCK",
    "RELEASE_ALL_LOCKS",
    "LAST_INSERT_ID",
    "NEXTVAL",
    "SETVAL",
    "LASTVAL",
];

/// Words of reads: a statement that starts with one of these changes no row.
const READ_HEADS: [&str; 8] = [
    "SELECT", "VALUES", "TABLE", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "WITH",
];

fn is_any(w: &str, set: &[&str]) -> bool {
    set.iter().any(|k| w.eq_ignore_ascii_case(k))
}

/// Whether one statement leaves nothing in the session (see the module docs).
fn statement_is_plain(stmt: &str) -> bool {
    let mut words = tokens(stmt, D).filter(|t| !t.kind.is_blank()).peekable();
    let Some(first) = words.peek().copied() else {
        return true;
    };
    if first.kind != Kind::Word || !is_any(&stmt[first.start..first.end], &PLAIN_HEADS) {
        // `ROLLBACK TO [SAVEPOINT] x` is plain too.
        return is_rollback_to(stmt);
    }
    for t in words {
        let text = &stmt[t.start..t.end];
        match t.kind {
            // `@x`, `@@x` (a `SET @@session.x` is no query, but `@x := …` is one).
            Kind::Param if text.starts_with('@') => return false,
            Kind::Punct if text == "@" => return false,
            Kind::Word if is_any(text, &STATEFUL) => return false,
            Kind::Word if text.eq_ignore_ascii_case("NEXT") => return false,
            _ => {}
        }
    }
    true
}

fn is_rollback_to(stmt: &str) -> bool {
    let mut w = tokens(stmt, D)
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

/// Whether every statement of `sql` leaves nothing in the session.
pub(crate) fn is_plain(sql: &str) -> bool {
    statements(sql, D).all(statement_is_plain)
}

/// Whether running `sql` may change data (so a limit passing after it was sent, outside a
/// transaction, leaves its outcome unknown): any statement other than a read, or a read that
/// is not plain (it may call a routine that writes).
pub(crate) fn writes(sql: &str) -> bool {
    statements(sql, D)
        .filter(|s| !crate::sql::is_blank(s, D))
        .any(|s| {
            if crate::sql::is_dml(s, D) || !statement_is_plain(s) {
                return true;
            }
            !tokens(s, D)
                .find(|t| !t.kind.is_blank())
                .is_some_and(|t| t.kind == Kind::Word && is_any(&s[t.start..t.end], &READ_HEADS))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

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
        ] {
            assert!(is_plain(sql), "{sql}");
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
        ] {
            assert!(!is_plain(sql), "{sql}");
        }
    }

    #[test]
    fn reads_do_not_write() {
        assert!(!writes("SELECT 1; SHOW TABLES; /* c */ SELECT * FROM t"));
        assert!(writes("SELECT 1; INSERT INTO t VALUES (1)"));
        assert!(writes("CALL p()"));
        assert!(writes("CREATE TABLE t (a int)"));
        assert!(writes("SELECT GET_LOCK('a', 0)"));
    }
}
