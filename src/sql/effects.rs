//! What a statement does beyond its rows, read through the scanner: whether it must run outside
//! any transaction, and whether it changes the connection's session for later users.
//!
//! Both readings are conservative where it is cheap to be: a statement that might change the
//! session is treated as one that does, since the price is one reset when the connection goes
//! back to the pool. On PostgreSQL a statement leaves the session untouched only when its text
//! proves it (see `pg_effects`).

use super::scanner::{Dialect, tokens};
use super::script::statements;

/// How a script changes the connection's session, from nothing to more than settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Session {
    /// Nothing that outlives the statement (or its transaction).
    Untouched,
    /// Settings: SQLite `PRAGMA name = value`, PostgreSQL `SET`/`RESET`. Restoring the pool's
    /// configuration undoes them.
    Settings,
    /// State a settings reset does not undo: attached databases, temporary tables, named
    /// prepared statements, cursors, listeners, advisory locks, a changed role.
    State,
}

/// The first significant tokens of a statement: words and punctuation, without white space or
/// comments.
fn head(stmt: &str, d: Dialect, n: usize) -> Vec<&str> {
    tokens(stmt, d)
        .filter(|t| !t.kind.is_blank())
        .take(n)
        .map(|t| &stmt[t.start..t.end])
        .collect()
}

fn is(w: Option<&&str>, k: &str) -> bool {
    w.is_some_and(|w| w.eq_ignore_ascii_case(k))
}

fn is_any(w: Option<&&str>, set: &[&str]) -> bool {
    set.iter().any(|k| is(w, k))
}

/// SQLite pragmas whose assignment SQLite refuses or ignores inside a transaction.
const SQLITE_PRAGMAS_OUTSIDE_TX: [&str; 4] =
    ["foreign_keys", "journal_mode", "synchronous", "temp_store"];

/// `PRAGMA [schema.]name`: the pragma's name and whether the statement assigns it (`= value` or
/// `(value)`).
fn sqlite_pragma<'a>(h: &[&'a str]) -> Option<(&'a str, bool)> {
    if !is(h.first(), "PRAGMA") {
        return None;
    }
    let (name, rest) = if h.get(2) == Some(&".") {
        (*h.get(3)?, h.get(4))
    } else {
        (*h.get(1)?, h.get(2))
    };
    Some((name, matches!(rest, Some(&"=") | Some(&"("))))
}

/// When the statement cannot do its work inside a transaction on `d`'s engine, the name to
/// give in an error: SQLite ignores `PRAGMA foreign_keys` there and refuses `VACUUM`, `ATTACH`,
/// `DETACH`, `PRAGMA journal_mode` and `PRAGMA synchronous`; PostgreSQL refuses `VACUUM`,
/// `CREATE`/`DROP DATABASE`, `CREATE`/`DROP TABLESPACE`, `ALTER SYSTEM`, `… CONCURRENTLY`
/// index builds and drops, and `CREATE`/`DROP SUBSCRIPTION`.
pub(crate) fn outside_tx_only(stmt: &str, d: Dialect) -> Option<String> {
    let h = head(stmt, d, 6);
    let first = h.first()?;
    if first.eq_ignore_ascii_case("VACUUM") {
        return Some("VACUUM".to_owned());
    }
    match d {
        Dialect::Sqlite => {
            if is_any(h.first(), &["ATTACH", "DETACH"]) {
                return Some(first.to_ascii_uppercase());
            }
            let (name, assigns) = sqlite_pragma(&h)?;
            (assigns
                && SQLITE_PRAGMAS_OUTSIDE_TX
                    .iter()
                    .any(|p| p.eq_ignore_ascii_case(name)))
            .then(|| format!("PRAGMA {}", name.to_ascii_lowercase()))
        }
        Dialect::Postgres => {
            let second = h.get(1);
            let pair = |a: &str, b: &[&str]| is(h.first(), a) && is_any(second, b);
            if pair("CREATE", &["DATABASE", "TABLESPACE", "SUBSCRIPTION"])
                || pair("DROP", &["DATABASE", "TABLESPACE", "SUBSCRIPTION"])
                || pair("ALTER", &["SYSTEM"])
            {
                return Some(format!(
                    "{} {}",
                    first.to_ascii_uppercase(),
                    second?.to_ascii_uppercase()
                ));
            }
            let index_op = pair("CREATE", &["INDEX", "UNIQUE"])
                || pair("DROP", &["INDEX"])
                || is(h.first(), "REINDEX");
            (index_op && h.iter().any(|w| w.eq_ignore_ascii_case("CONCURRENTLY")))
                .then(|| format!("{} … CONCURRENTLY", first.to_ascii_uppercase()))
        }
    }
}

/// The first statement of `sql` that must run outside a transaction, with its name.
pub(crate) fn first_outside_tx_only(sql: &str, d: Dialect) -> Option<String> {
    statements(sql, d).find_map(|s| outside_tx_only(s, d))
}

/// How running `sql` changes the session of the connection it runs on (the strongest change of
/// any of its statements).
pub(crate) fn session_change(sql: &str, d: Dialect) -> Session {
    statements(sql, d)
        .map(|s| statement_session_change(s, d))
        .max()
        .unwrap_or(Session::Untouched)
}

fn statement_session_change(stmt: &str, d: Dialect) -> Session {
    let h = head(stmt, d, 5);
    if h.is_empty() {
        return Session::Untouched;
    }
    let temp = is(h.first(), "CREATE")
        && (is_any(h.get(1), &["TEMP", "TEMPORARY"]) || is_any(h.get(2), &["TEMP", "TEMPORARY"]));
    match d {
        Dialect::Sqlite => {
            if temp || is_any(h.first(), &["ATTACH", "DETACH"]) {
                Session::State
            } else if sqlite_pragma(&h).is_some_and(|(_, assigns)| assigns) {
                Session::Settings
            } else {
                Session::Untouched
            }
        }
        // What text can prove: see `pg_effects`.
        Dialect::Postgres => super::pg_effects::statement_session_change(stmt),
    }
}

/// A script cut where statements that must run outside a transaction stand: runs of ordinary
/// statements, and each such statement on its own.
pub(crate) fn segments(sql: &str, d: Dialect) -> Vec<(&str, bool)> {
    let mut out: Vec<(&str, bool)> = Vec::new();
    let mut start = 0;
    let mut at = 0;
    for s in statements(sql, d) {
        let end = at + s.len();
        if outside_tx_only(s, d).is_some() {
            if start < at {
                out.push((&sql[start..at], false));
            }
            out.push((&sql[at..end], true));
            start = end;
        }
        at = end;
    }
    if start < sql.len() {
        out.push((&sql[start..], false));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use Dialect::{Postgres as Pg, Sqlite as Lite};

    #[test]
    fn statements_that_need_no_transaction() {
        for s in [
            "VACUUM",
            "pragma foreign_keys = off",
            "PRAGMA main.journal_mode=DELETE",
            "/* x */ PRAGMA synchronous(0)",
            "ATTACH 'x.db' AS x",
            "detach x",
        ] {
            assert!(outside_tx_only(s, Lite).is_some(), "{s}");
        }
        for s in [
            "PRAGMA foreign_keys",
            "PRAGMA cache_size = 10",
            "SELECT 'VACUUM'",
            "CREATE INDEX i ON t (a)",
        ] {
            assert!(outside_tx_only(s, Lite).is_none(), "{s}");
        }
        for s in [
            "VACUUM ANALYZE t",
            "CREATE DATABASE x",
            "drop database x",
            "ALTER SYSTEM SET work_mem = '1MB'",
            "CREATE UNIQUE INDEX CONCURRENTLY i ON t (a)",
            "DROP INDEX CONCURRENTLY i",
            "REINDEX (VERBOSE) TABLE CONCURRENTLY t",
        ] {
            assert!(outside_tx_only(s, Pg).is_some(), "{s}");
        }
        for s in [
            "CREATE INDEX i ON t (a)",
            "ALTER TABLE t ADD c int",
            "SELECT 1",
        ] {
            assert!(outside_tx_only(s, Pg).is_none(), "{s}");
        }
        assert_eq!(
            outside_tx_only("pragma Foreign_Keys=0", Lite).as_deref(),
            Some("PRAGMA foreign_keys")
        );
    }

    #[test]
    fn session_changes() {
        assert_eq!(
            session_change("PRAGMA foreign_keys=OFF", Lite),
            Session::Settings
        );
        assert_eq!(
            session_change("PRAGMA foreign_keys", Lite),
            Session::Untouched
        );
        assert_eq!(
            session_change("SELECT 1; CREATE TEMP TABLE x (a)", Lite),
            Session::State
        );
        assert_eq!(session_change("SET search_path = x", Pg), Session::Settings);
        assert_eq!(
            session_change("SET LOCAL work_mem = '1MB'", Pg),
            Session::Untouched
        );
        assert_eq!(session_change("set role nobody", Pg), Session::State);
        assert_eq!(
            session_change("SELECT set_config('a.b', 'c', false)", Pg),
            Session::State
        );
        assert_eq!(session_change("SELECT 'SET x = 1'", Pg), Session::Untouched);
        assert_eq!(
            session_change("PREPARE TRANSACTION 'x'", Pg),
            Session::Untouched
        );
        assert_eq!(session_change("PREPARE q AS SELECT 1", Pg), Session::State);
    }

    #[test]
    fn segments_cover_the_script() {
        let sql = "CREATE TABLE t (a); PRAGMA foreign_keys=OFF; INSERT INTO t VALUES (1); VACUUM";
        let seg = segments(sql, Lite);
        assert_eq!(seg.iter().map(|(s, _)| *s).collect::<String>(), sql);
        let kinds: Vec<bool> = seg.iter().map(|(_, o)| *o).collect();
        assert_eq!(kinds, [false, true, false, true]);
        assert_eq!(segments("SELECT 1; SELECT 2", Lite).len(), 1);
    }
}
