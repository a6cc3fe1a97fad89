//! What a statement needs beyond its rows, read through the scanner: whether it must run
//! outside any transaction. What it does to the session is learnt from the engine by the
//! SQLite and Turso wings; on PostgreSQL, which does not report it, from the text the only
//! safe way (see `pg_effects`).

use super::scanner::{Dialect, tokens};
use super::script::statements;

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
        Dialect::Mysql => mysql_implicit_commit(&h),
    }
}

/// MySQL and MariaDB commit the open transaction before (and after) these statements, so inside
/// a `Tx` they would end it half-way: schema changes (`CREATE`, `ALTER`, `DROP`, `RENAME`,
/// `TRUNCATE`; not `CREATE`/`DROP TEMPORARY TABLE`), `LOCK`/`UNLOCK TABLES`, account changes
/// (`GRANT`, `REVOKE`, `… USER`, `SET PASSWORD`), table maintenance (`ANALYZE`, `OPTIMIZE`,
/// `REPAIR`, `CHECK`, `CACHE INDEX`, `LOAD INDEX`), `FLUSH`, `RESET`, plugins and replication
/// control.
fn mysql_implicit_commit(h: &[&str]) -> Option<String> {
    let second = h.get(1);
    let named = |n: usize| {
        let words: Vec<String> = h.iter().take(n).map(|w| w.to_ascii_uppercase()).collect();
        Some(format!("{} (MySQL commits it implicitly)", words.join(" ")))
    };
    if is_any(h.first(), &["CREATE", "DROP"]) {
        // `CREATE [OR REPLACE] TEMPORARY TABLE` and `DROP TEMPORARY TABLE` stay inside.
        let temp = h.iter().skip(1).take(3).any(|w| w.eq_ignore_ascii_case("TEMPORARY"));
        return (!temp).then(|| named(2)).flatten();
    }
    if is_any(h.first(), &["ALTER", "RENAME", "TRUNCATE", "GRANT", "REVOKE", "FLUSH", "RESET"])
        || is_any(h.first(), &["ANALYZE", "OPTIMIZE", "REPAIR", "INSTALL", "UNINSTALL"])
    {
        return named(2);
    }
    let pair = |a: &str, b: &[&str]| is(h.first(), a) && is_any(second, b);
    if pair("LOCK", &["TABLES", "TABLE", "INSTANCE"])
        || pair("UNLOCK", &["TABLES", "TABLE", "INSTANCE"])
        || pair("CHECK", &["TABLE"])
        || pair("CACHE", &["INDEX"])
        || pair("LOAD", &["INDEX"])
        || pair("SET", &["PASSWORD"])
        || pair("START", &["SLAVE", "REPLICA"])
        || pair("STOP", &["SLAVE", "REPLICA"])
        || pair("CHANGE", &["MASTER", "REPLICATION"])
    {
        return named(2);
    }
    None
}

/// The first statement of `sql` that must run outside a transaction, with its name.
pub(crate) fn first_outside_tx_only(sql: &str, d: Dialect) -> Option<String> {
    statements(sql, d).find_map(|s| outside_tx_only(s, d))
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
    fn segments_cover_the_script() {
        let sql = "CREATE TABLE t (a); PRAGMA foreign_keys=OFF; INSERT INTO t VALUES (1); VACUUM";
        let seg = segments(sql, Lite);
        assert_eq!(seg.iter().map(|(s, _)| *s).collect::<String>(), sql);
        let kinds: Vec<bool> = seg.iter().map(|(_, o)| *o).collect();
        assert_eq!(kinds, [false, true, false, true]);
        assert_eq!(segments("SELECT 1; SELECT 2", Lite).len(), 1);
    }
}
