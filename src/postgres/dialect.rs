//! PostgreSQL's SQL, as the neutral readers follow it.

use crate::sql::dialect::{Dialect, is, is_any};
use crate::sql::scanner::Lexer;

/// Dollar quotes and nesting comments; identifiers in double quotes, unquoted ones folded to
/// lower case; database, tablespace, subscription and system changes and concurrent index
/// builds only outside a transaction.
pub(crate) const DIALECT: Dialect = Dialect {
    lexer: Lexer::DollarQuotes,
    ident_quote: '"',
    folds_to_lower: true,
    outside_tx_only,
};

/// The SQL of a session whose `standard_conforming_strings` is off (`backslash_strings`): a
/// backslash escapes the next byte in a plain `'…'` string too, as the server reads it then.
/// [`DIALECT`] otherwise.
#[inline]
pub(crate) const fn of_session(backslash_strings: bool) -> Dialect {
    if backslash_strings {
        Dialect {
            lexer: Lexer::DollarQuotesBackslashStrings,
            ..DIALECT
        }
    } else {
        DIALECT
    }
}

/// The server refuses `CREATE`/`DROP DATABASE`, `CREATE`/`DROP TABLESPACE`, `ALTER SYSTEM`,
/// `… CONCURRENTLY` index builds and drops, and `CREATE`/`DROP SUBSCRIPTION` inside a
/// transaction.
fn outside_tx_only(h: &[&str]) -> Option<String> {
    let first = h.first()?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::effects::outside_tx_only;

    /// What the hall lets through a `Tx` without scanning it never needs to run outside one
    /// here.
    #[test]
    fn plain_dml_at_a_glance_needs_no_refusal() {
        for backslash_strings in [false, true] {
            crate::sql::props::glance_passes_no_refused(of_session(backslash_strings));
        }
    }

    #[test]
    fn statements_that_need_no_transaction() {
        for s in [
            "VACUUM ANALYZE t",
            "CREATE DATABASE x",
            "drop database x",
            "ALTER SYSTEM SET work_mem = '1MB'",
            "CREATE UNIQUE INDEX CONCURRENTLY i ON t (a)",
            "DROP INDEX CONCURRENTLY i",
            "REINDEX (VERBOSE) TABLE CONCURRENTLY t",
        ] {
            assert!(outside_tx_only(s, DIALECT).is_some(), "{s}");
        }
        for s in [
            "CREATE INDEX i ON t (a)",
            "ALTER TABLE t ADD c int",
            "SELECT 1",
        ] {
            assert!(outside_tx_only(s, DIALECT).is_none(), "{s}");
        }
    }
}
