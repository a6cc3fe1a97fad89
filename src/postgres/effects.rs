//! What a PostgreSQL statement may do to the session of its connection, read from its text the
//! only safe way: a statement leaves the session untouched only when it provably does.
//!
//! PostgreSQL does not report most session changes (settings changed by `set_config` inside a
//! function, advisory locks, temporary objects, `LISTEN`), and a function or a `DO` block can
//! make any of them. So the reading is inverted: a statement is *plain* (untouched) only when it
//! is a `SELECT`, `INSERT`, `UPDATE`, `DELETE`, `MERGE`, `WITH`, `VALUES` or `TABLE` statement
//! (not `SELECT … INTO`) whose every function call is a built-in of [`PURE`], functions known
//! neither to change the session nor to write. Transaction control, `SET LOCAL` and `SHOW` end
//! with their transaction or change nothing. Everything else — `DO`, `CALL`, a call of any
//! other function, `SET`, `LISTEN`, `PREPARE`, `DECLARE`, any DDL (temporary objects in every
//! form among them) — changes the session as far as the middleware knows, and the connection
//! is reset when it goes back to the pool. A plain statement also provably writes nothing
//! beyond the rows of its own DML, which is what `writes()` of a prepared statement needs.
//!
//! What text cannot show is code the server runs on its own for a plain statement: triggers,
//! column defaults, check constraints and domain checks, generated columns, index
//! expressions, row-level security policies, rules, views, and user-defined operators and
//! casts, any of which may call a function that changes the session; and a user function
//! that shadows a built-in name for its argument types through the `search_path`.

use super::pure::{NOT_CALLS, PURE};
use crate::sql::Dialect;
use crate::sql::scanner::{Kind, Token, tokens};
use crate::sql::script::statements;

/// How a PostgreSQL script changes the connection's session, from nothing to more than
/// settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Session {
    /// Nothing that outlives the statement (or its transaction).
    Untouched,
    /// Settings: `SET`/`RESET`. Restoring the pool's configuration undoes them.
    Settings,
    /// State a settings reset does not undo: temporary objects, named prepared statements,
    /// cursors, listeners, advisory locks, a changed role.
    State,
}

/// How running `sql` (in the session's dialect `d`) changes the session of the connection it
/// runs on (the strongest change of any of its statements).
pub(crate) fn session_change(sql: &str, d: Dialect) -> Session {
    statements(sql, d)
        .map(|s| statement_session_change(s, d))
        .max()
        .unwrap_or(Session::Untouched)
}

/// Whether running `sql`, whose session change is `session`, may change the session's
/// `standard_conforming_strings`, and so how the server reads the quotes of what comes next:
/// any statement that changes the session (a `SET`, `RESET`, a call of `set_config` or of any
/// function not known to be pure), and `SET LOCAL`, which lasts until its transaction ends.
pub(crate) fn may_change_strings(sql: &str, session: Session, d: Dialect) -> bool {
    session != Session::Untouched
        || statements(sql, d).any(|s| {
            tokens(s, d)
                .find(|t| !t.kind.is_blank())
                .is_some_and(|t| t.kind == Kind::Word && any_of(&s[t.start..t.end], &["SET"]))
        })
}

/// The statements that, with only [`PURE`] calls, leave the session untouched.
const PLAIN: &[&str] = &[
    "SELECT", "INSERT", "UPDATE", "DELETE", "MERGE", "WITH", "VALUES", "TABLE",
];

fn eq(w: &str, k: &str) -> bool {
    w.eq_ignore_ascii_case(k)
}

fn any_of(w: &str, set: &[&str]) -> bool {
    set.iter().any(|k| eq(w, k))
}

/// How one PostgreSQL statement changes the session (see the module's documentation).
pub(crate) fn statement_session_change(stmt: &str, d: Dialect) -> Session {
    let toks: Vec<Token> = tokens(stmt, d)
        .filter(|t| !t.kind.is_blank() && t.kind != Kind::Semi)
        .collect();
    let text = |i: usize| toks.get(i).map(|t| &stmt[t.start..t.end]);
    let word = |i: usize| {
        toks.get(i)
            .filter(|t| t.kind == Kind::Word)
            .map(|t| &stmt[t.start..t.end])
    };
    let Some(first) = text(0) else {
        return Session::Untouched;
    };
    if word(0).is_none() && first != "(" {
        return Session::State;
    }
    if eq(first, "SET") {
        // `SET LOCAL`, `SET TRANSACTION` and `SET CONSTRAINTS` end with the transaction;
        // `SET ROLE` and `SET SESSION AUTHORIZATION` change who runs what comes next.
        let second = word(1).unwrap_or("");
        return if any_of(second, &["LOCAL", "TRANSACTION", "CONSTRAINTS"]) {
            Session::Untouched
        } else if eq(second, "ROLE")
            || (eq(second, "SESSION") && word(2).is_some_and(|w| eq(w, "AUTHORIZATION")))
        {
            Session::State
        } else {
            Session::Settings
        };
    }
    if eq(first, "RESET") {
        return Session::Settings;
    }
    if any_of(
        first,
        &[
            "BEGIN",
            "START",
            "COMMIT",
            "END",
            "ROLLBACK",
            "ABORT",
            "SAVEPOINT",
            "RELEASE",
            "SHOW",
        ],
    ) || (eq(first, "PREPARE") && word(1).is_some_and(|w| eq(w, "TRANSACTION")))
    {
        return Session::Untouched;
    }
    if first != "(" && !any_of(first, PLAIN) {
        return Session::State;
    }
    for (i, t) in toks.iter().enumerate() {
        let w = &stmt[t.start..t.end];
        // `SELECT … INTO t` creates a table (a temporary one with `INTO TEMP`).
        if t.kind == Kind::Word && eq(w, "INTO") {
            let after_dml = i
                .checked_sub(1)
                .and_then(word)
                .is_some_and(|p| any_of(p, &["INSERT", "MERGE"]));
            if !after_dml {
                return Session::State;
            }
        }
        if !matches!(t.kind, Kind::Word | Kind::QuotedIdent) || text(i + 1) != Some("(") {
            continue;
        }
        if !is_pure_call(&toks, stmt, i) {
            return Session::State;
        }
    }
    Session::Untouched
}

/// Whether some statement of `sql` deallocates prepared statements: `DEALLOCATE` or `DISCARD
/// ALL` (which may remove the driver's own).
pub(crate) fn deallocates(sql: &str, d: Dialect) -> bool {
    statements(sql, d).any(|s| {
        let mut w = tokens(s, d)
            .filter(|t| !t.kind.is_blank())
            .map(|t| &s[t.start..t.end]);
        match w.next() {
            Some(f) if eq(f, "DEALLOCATE") => true,
            Some(f) if eq(f, "DISCARD") => w.next().is_some_and(|x| eq(x, "ALL")),
            _ => false,
        }
    })
}

/// Whether the name at `i`, followed by `(`, is not a call, or a call of a [`PURE`] function.
fn is_pure_call(toks: &[Token], stmt: &str, i: usize) -> bool {
    let text = |i: usize| toks.get(i).map(|t| &stmt[t.start..t.end]);
    let is_word = |i: usize, k: &str| {
        toks.get(i)
            .is_some_and(|t| t.kind == Kind::Word && eq(&stmt[t.start..t.end], k))
    };
    let t = toks[i];
    let name = &stmt[t.start..t.end];
    let prev = i.checked_sub(1).and_then(text);
    if prev == Some(".") {
        // `schema.name(`: a built-in only when the schema is `pg_catalog`; else the column
        // list of `INSERT INTO schema.table (…)`.
        let Some(q) = i.checked_sub(2) else {
            return false;
        };
        if is_word(q, "pg_catalog") {
            return t.kind == Kind::Word && any_of(name, PURE);
        }
        return q.checked_sub(1).is_some_and(|p| is_word(p, "INTO"));
    }
    if t.kind == Kind::Word && any_of(name, NOT_CALLS) {
        return true;
    }
    match prev {
        // `INSERT INTO t (…)`, `AS alias (…)`, `… ) alias (…)`, a cast `::varchar(20)`,
        // `WITH name (…) AS`.
        Some(p) if p == ")" || p == ":" => return true,
        Some(p) if any_of(p, &["INTO", "AS", "WITH", "RECURSIVE"]) => return true,
        _ => {}
    }
    t.kind == Kind::Word && any_of(name, PURE)
}

#[cfg(test)]
mod tests {
    use super::*;
    const D: Dialect = super::super::dialect::DIALECT;

    /// With `standard_conforming_strings` off, a string may end past the quote after a
    /// backslash: read with the standard rules, the `SET` after it would be inside a string.
    #[test]
    fn a_session_with_backslash_strings_hides_no_change() {
        let off = super::super::dialect::of_session(true);
        let sql = "SELECT 'a\\'', 'b'; SET x.y = 1; --'";
        assert_eq!(session_change(sql, off), Session::Settings);
        assert_eq!(session_change(sql, D), Session::Untouched);
        assert!(may_change_strings(sql, Session::Settings, off));
        // `SET LOCAL` leaves the session as it was once its transaction ends, but changes how
        // the rest of the transaction is read.
        let local = "SET LOCAL standard_conforming_strings = off";
        assert!(may_change_strings(local, session_change(local, D), D));
        let plain = "SELECT 'SET x = 1', $1";
        assert!(!may_change_strings(plain, session_change(plain, D), D));
    }

    #[test]
    fn scripts_take_their_strongest_change() {
        assert_eq!(session_change("SET search_path = x", D), Session::Settings);
        assert_eq!(
            session_change("SET LOCAL work_mem = '1MB'", D),
            Session::Untouched
        );
        assert_eq!(session_change("set role nobody", D), Session::State);
        assert_eq!(
            session_change("SELECT set_config('a.b', 'c', false)", D),
            Session::State
        );
        assert_eq!(session_change("SELECT 'SET x = 1'", D), Session::Untouched);
        assert_eq!(
            session_change("PREPARE TRANSACTION 'x'", D),
            Session::Untouched
        );
        assert_eq!(session_change("PREPARE q AS SELECT 1", D), Session::State);
        assert_eq!(
            session_change("SELECT 1; SET a.b = 1; CREATE TEMP TABLE x (a int)", D),
            Session::State
        );
    }

    #[test]
    fn plain_statements_leave_the_session_untouched() {
        for s in [
            "SELECT 1",
            "select count(*), max(id), coalesce(min(v), 'x'), lower(v) FROM t GROUP BY v",
            "INSERT INTO t (a, b) VALUES ($1, $2) RETURNING id",
            "INSERT INTO s.t (a) SELECT x FROM generate_series(1, 3) AS g(x)",
            "UPDATE t SET v = upper(v), (a, b) = (1, 2) WHERE id IN (SELECT id FROM u)",
            "DELETE FROM t USING u WHERE t.id = u.id AND EXISTS (SELECT 1)",
            "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT * FROM r",
            "WITH x AS (INSERT INTO t VALUES (1) RETURNING *) SELECT length(v), now() FROM x",
            "VALUES (abs(-1), round(2.5))",
            "TABLE t",
            "SELECT pg_sleep(0.1), pg_sleep_for('1 ms')",
            "(SELECT 1) UNION (SELECT 2)",
            "SELECT CAST($1 AS numeric(10, 2)), $2::varchar(20), x::character varying(3)",
            "SELECT row_number() OVER (PARTITION BY a ORDER BY b) FROM t",
            "SELECT count(*) FILTER (WHERE a > 1) FROM t",
            "INSERT INTO t (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET a = excluded.a",
            "SELECT pg_catalog.lower('X'), 'set_config(1)', \"set_config\" FROM t",
            "SELECT * FROM t LEFT JOIN (SELECT 1) s (a) ON true FOR UPDATE",
            "MERGE INTO t USING s ON t.id = s.id WHEN NOT MATCHED THEN INSERT (id) VALUES (s.id)",
            "BEGIN",
            "COMMIT",
            "SET LOCAL work_mem = '1MB'",
            "SHOW work_mem",
            "PREPARE TRANSACTION 'x'",
            "",
        ] {
            assert_eq!(statement_session_change(s, D), Session::Untouched, "{s}");
        }
    }

    #[test]
    fn everything_else_changes_the_session() {
        for s in [
            "DO $$BEGIN PERFORM set_config('a.b', 'c', false); END$$",
            "CALL p()",
            "SELECT f()",
            "SELECT set_config('search_path', 'x', false)",
            "SELECT pg_advisory_lock(1)",
            "SELECT * FROM t WHERE id = my_fn($1)",
            "SELECT s.f(1)",
            "SELECT \"Lower\"(x) FROM t",
            "INSERT INTO t VALUES (nextval('s'))",
            "SELECT 1 AS a INTO TEMP tt",
            "SELECT * INTO t2 FROM t",
            "CREATE TEMP VIEW v AS SELECT 1",
            "CREATE OR REPLACE TEMP VIEW v AS SELECT 1",
            "CREATE TABLE pg_temp.x (a int)",
            "CREATE TEMPORARY SEQUENCE s",
            "CREATE FUNCTION pg_temp.f() RETURNS int LANGUAGE sql AS 'SELECT 1'",
            "CREATE TABLE t (a int)",
            "LISTEN x",
            "PREPARE q AS SELECT 1",
            "DECLARE c CURSOR WITH HOLD FOR SELECT 1",
            "EXECUTE q",
            "DISCARD ALL",
            "set role nobody",
            "SET SESSION AUTHORIZATION DEFAULT",
            "EXPLAIN ANALYZE SELECT f()",
        ] {
            assert_eq!(statement_session_change(s, D), Session::State, "{s}");
        }
        assert_eq!(
            statement_session_change("SET search_path = x", D),
            Session::Settings
        );
        assert_eq!(statement_session_change("RESET ALL", D), Session::Settings);
    }

    #[test]
    fn deallocating_statements_are_seen() {
        assert!(deallocates("SELECT 1; DEALLOCATE ALL", D));
        assert!(deallocates("deallocate prepare s1", D));
        assert!(deallocates("/* x */ DISCARD ALL", D));
        assert!(!deallocates("DISCARD TEMP", D));
        assert!(!deallocates("SELECT 'DEALLOCATE ALL'", D));
    }
}
