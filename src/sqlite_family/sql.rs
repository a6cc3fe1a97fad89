//! The SQLite family's own readings of SQL text, through the one SQL scanner: parameter counts
//! in SQLite's syntax, and one-statement checks. Only the Turso wing needs them (rusqlite counts
//! and checks with the engine itself).

use crate::sql::scanner::{Kind, tokens};
use crate::sql::script::{is_blank, statements};

/// True when `sql` holds more than one statement (Turso would prepare the first and silently
/// ignore the rest).
pub(crate) fn has_multiple_statements(sql: &str) -> bool {
    statements(sql, super::dialect::DIALECT)
        .filter(|s| !is_blank(s, super::dialect::DIALECT))
        .nth(1)
        .is_some()
}

/// The number of parameters SQLite would give `sql` (written in SQLite's own parameter
/// syntax): `?NNN` takes index NNN, a bare `?` the next index, and each distinct `:name`,
/// `@name`, `$name` (and `$NNN`, a name to SQLite) the next index.
pub(crate) fn sqlite_param_count(sql: &str) -> usize {
    let mut max = 0usize;
    let mut names: Vec<&str> = Vec::new();
    for t in tokens(sql, super::dialect::DIALECT) {
        let text = &sql[t.start..t.end];
        match t.kind {
            Kind::Placeholder if text.starts_with('?') => {
                max = max.max(text[1..].parse().unwrap_or(usize::MAX));
            }
            Kind::Param if text == "?" => max += 1,
            Kind::Param | Kind::Placeholder if !names.contains(&text) => {
                names.push(text);
                max += 1;
            }
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_statement_checks() {
        assert!(has_multiple_statements("SELECT 1; SELECT 2"));
        assert!(!has_multiple_statements("SELECT ';'; -- more\n"));
        assert!(!has_multiple_statements(
            "CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END;"
        ));
    }

    #[test]
    fn sqlite_counts() {
        assert_eq!(sqlite_param_count("SELECT ?1, ?3"), 3);
        assert_eq!(sqlite_param_count("SELECT ?, ?"), 2);
        assert_eq!(sqlite_param_count("SELECT :a, :a, @b, $c"), 3);
        assert_eq!(sqlite_param_count("SELECT '?', \"?\", [?] -- ?\n"), 0);
    }
}
