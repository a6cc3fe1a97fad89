//! The SQL of the SQLite family (SQLite and Turso), as the neutral readers follow it.

use crate::sql::dialect::{Dialect, is, is_any};
use crate::sql::scanner::Lexer;
use crate::translation::PlaceholderStyle;

/// The placeholders the family's engines take: `?1, ?2, …`.
pub(crate) const PLACEHOLDERS: PlaceholderStyle = PlaceholderStyle::Sqlite;

/// SQLite's lexer; identifiers in double quotes, matched without regard to ASCII case (so a
/// plain name is quoted as given); `ATTACH`, `DETACH` and some pragmas only outside a
/// transaction.
pub(crate) const DIALECT: Dialect = Dialect {
    lexer: Lexer::Plain,
    ident_quote: '"',
    folds_to_lower: false,
    outside_tx_only,
};

/// Pragmas whose assignment the engine refuses or ignores inside a transaction.
const PRAGMAS_OUTSIDE_TX: [&str; 4] = ["foreign_keys", "journal_mode", "synchronous", "temp_store"];

/// `PRAGMA [schema.]name`: the pragma's name and whether the statement assigns it (`= value` or
/// `(value)`).
fn pragma<'a>(h: &[&'a str]) -> Option<(&'a str, bool)> {
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

/// The engine ignores `PRAGMA foreign_keys` inside a transaction and refuses `ATTACH`, `DETACH`,
/// `PRAGMA journal_mode`, `PRAGMA synchronous` and `PRAGMA temp_store` there.
fn outside_tx_only(h: &[&str]) -> Option<String> {
    if is_any(h.first(), &["ATTACH", "DETACH"]) {
        return h.first().map(|w| w.to_ascii_uppercase());
    }
    let (name, assigns) = pragma(h)?;
    (assigns
        && PRAGMAS_OUTSIDE_TX
            .iter()
            .any(|p| p.eq_ignore_ascii_case(name)))
    .then(|| format!("PRAGMA {}", name.to_ascii_lowercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::sql::effects::{outside_tx_only, plain_write, segments};

    /// What the hall lets through a `Tx` without scanning it never needs to run outside one
    /// here.
    #[test]
    fn plain_dml_at_a_glance_needs_no_refusal() {
        crate::sql::props::glance_passes_no_refused(DIALECT);
    }

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
            assert!(outside_tx_only(s, DIALECT).is_some(), "{s}");
        }
        for s in [
            "PRAGMA foreign_keys",
            "PRAGMA cache_size = 10",
            "SELECT 'VACUUM'",
            "CREATE INDEX i ON t (a)",
        ] {
            assert!(outside_tx_only(s, DIALECT).is_none(), "{s}");
        }
        assert_eq!(
            outside_tx_only("pragma Foreign_Keys=0", DIALECT).as_deref(),
            Some("PRAGMA foreign_keys")
        );
    }

    #[test]
    fn plain_writes_are_one_dml_statement() {
        for s in [
            "INSERT INTO t VALUES (1)",
            "  insert into t values (1);  ",
            "/* c */ UPDATE t SET a = 1",
            "-- c\nDELETE FROM t",
            "REPLACE INTO t VALUES (1)",
            "INSERT INTO t VALUES ('a;b') RETURNING a",
            "UPDATE t SET a = ';'; -- trailing comment",
        ] {
            assert!(plain_write(s, DIALECT), "{s}");
        }
        for s in [
            "",
            ";",
            "SELECT 1",
            "WITH x AS (SELECT 1) INSERT INTO t SELECT * FROM x",
            "INSERT INTO t VALUES (1); INSERT INTO t VALUES (2)",
            "INSERT INTO t VALUES (1);;",
            "BEGIN",
            "COMMIT",
            "SAVEPOINT s",
            "CREATE TABLE t (a)",
            "PRAGMA foreign_keys = off",
            "VACUUM",
            "'INSERT'",
            "CREATE TRIGGER g AFTER INSERT ON t BEGIN INSERT INTO u VALUES (1); END",
        ] {
            assert!(!plain_write(s, DIALECT), "{s}");
        }
    }

    #[test]
    fn segments_cover_the_script() {
        let sql = "CREATE TABLE t (a); PRAGMA foreign_keys=OFF; INSERT INTO t VALUES (1); VACUUM";
        let seg = segments(sql, DIALECT);
        assert_eq!(seg.iter().map(|(s, _)| *s).collect::<String>(), sql);
        let kinds: Vec<bool> = seg.iter().map(|(_, o)| *o).collect();
        assert_eq!(kinds, [false, true, false, true]);
        assert_eq!(segments("SELECT 1; SELECT 2", DIALECT).len(), 1);
    }
}
