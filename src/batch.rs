//! Recognising scripts that manage their own transaction.

/// True when some statement of `sql` starts with a transaction-control keyword
/// (`BEGIN`, `START`, `COMMIT`, `END`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`, `ABORT`).
///
/// Literals, quoted identifiers and comments are skipped. A `CREATE TRIGGER … BEGIN … END`
/// body also counts (its `END` starts a statement after a `;`), which only means such a script
/// is not wrapped in a transaction of ours.
pub(crate) fn has_transaction_control(sql: &str) -> bool {
    let b = sql.as_bytes();
    let mut i = 0;
    let mut at_start = true;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' | b'"' | b'`' => {
                i += 1;
                while i < b.len() && b[i] != c {
                    i += 1;
                }
                i += 1;
                at_start = false;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    i += 1;
                }
                i += 2;
            }
            b';' => {
                at_start = true;
                i += 1;
            }
            c if c.is_ascii_whitespace() => i += 1,
            c if c.is_ascii_alphabetic() => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                if at_start {
                    let word = &sql[start..i];
                    const WORDS: [&str; 8] = [
                        "BEGIN",
                        "START",
                        "COMMIT",
                        "END",
                        "ROLLBACK",
                        "SAVEPOINT",
                        "RELEASE",
                        "ABORT",
                    ];
                    if WORDS.iter().any(|w| w.eq_ignore_ascii_case(word)) {
                        return true;
                    }
                }
                at_start = false;
            }
            _ => {
                at_start = false;
                i += 1;
            }
        }
    }
    false
}

/// True when the statement changes rows (`INSERT`, `UPDATE`, `DELETE`, `MERGE`, also inside a
/// `WITH`), so its command count is a number of changed rows rather than of returned rows.
#[cfg_attr(not(feature = "postgres"), allow(dead_code))]
pub(crate) fn is_dml(sql: &str) -> bool {
    const DML: [&str; 4] = ["INSERT", "UPDATE", "DELETE", "MERGE"];
    let words = sql
        .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty());
    let mut first = true;
    let mut with = false;
    for w in words {
        if first {
            if DML.iter().any(|d| d.eq_ignore_ascii_case(w)) {
                return true;
            }
            with = w.eq_ignore_ascii_case("WITH");
            first = false;
            if !with {
                return false;
            }
        } else if with && DML.iter().any(|d| d.eq_ignore_ascii_case(w)) {
            return true;
        }
    }
    false
}

/// SQLite's C API silently ignores everything after a NUL byte, so SQL text with one is refused
/// on every backend before it reaches the engine.
pub(crate) fn reject_nul(sql: &str) -> crate::error::Result<()> {
    if sql.as_bytes().contains(&0) {
        Err(crate::error::SqlMiddlewareDbError::nul_in_sql())
    } else {
        Ok(())
    }
}

/// Skips whitespace and comments from `i`; returns the index of the next significant byte.
fn skip_blank(b: &[u8], mut i: usize) -> usize {
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if b.get(i) == Some(&b'-') && b.get(i + 1) == Some(&b'-') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b.get(i) == Some(&b'/') && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i = (i + 2).min(b.len());
        } else {
            return i;
        }
    }
}

/// True when `sql` holds no statement at all: only whitespace, comments and `;`.
/// Stops at the first significant byte, so it costs nothing on real statements.
pub(crate) fn is_blank(sql: &str) -> bool {
    let b = sql.as_bytes();
    let mut i = 0;
    loop {
        i = skip_blank(b, i);
        match b.get(i) {
            None => return true,
            Some(b';') => i += 1,
            Some(_) => return false,
        }
    }
}

/// True when `sql` holds more than one statement (a significant byte after a top-level `;`).
#[cfg_attr(not(feature = "turso"), allow(dead_code))]
pub(crate) fn has_multiple_statements(sql: &str) -> bool {
    next_statement(sql).is_some_and(|rest| !is_blank(rest))
}

/// True when a statement of the script starts or ends a transaction (`BEGIN`, `START`,
/// `COMMIT`, `END`, `ROLLBACK` other than `ROLLBACK TO`, `ABORT`). Savepoints are not counted:
/// they are fine inside a transaction.
pub(crate) fn ends_or_starts_transaction(sql: &str) -> bool {
    let mut rest = sql;
    loop {
        let b = rest.as_bytes();
        let start = skip_blank(b, 0);
        let word_end = start
            + b[start..]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic())
                .count();
        let word = &rest[start..word_end];
        const WORDS: [&str; 6] = ["BEGIN", "START", "COMMIT", "END", "ABORT", "ROLLBACK"];
        if WORDS.iter().any(|w| w.eq_ignore_ascii_case(word)) {
            let is_rollback_to = word.eq_ignore_ascii_case("ROLLBACK") && {
                let tail = &rest[word_end..];
                let mut words = tail
                    .split(|c: char| !c.is_ascii_alphabetic())
                    .filter(|w| !w.is_empty());
                match words.next() {
                    Some(w) if w.eq_ignore_ascii_case("TO") => true,
                    Some(w)
                        if w.eq_ignore_ascii_case("TRANSACTION")
                            || w.eq_ignore_ascii_case("WORK") =>
                    {
                        words.next().is_some_and(|w| w.eq_ignore_ascii_case("TO"))
                    }
                    _ => false,
                }
            };
            if !is_rollback_to {
                return true;
            }
        }
        // Move to the next top-level statement.
        match next_statement(rest) {
            Some(next) => rest = next,
            None => return false,
        }
    }
}

/// True when some statement of the script changes the schema (`CREATE`, `DROP`, `ALTER`).
#[cfg_attr(not(feature = "turso"), allow(dead_code))]
pub(crate) fn changes_schema(sql: &str) -> bool {
    let mut rest = sql;
    loop {
        let b = rest.as_bytes();
        let start = skip_blank(b, 0);
        let end = start
            + b[start..]
                .iter()
                .take_while(|c| c.is_ascii_alphabetic())
                .count();
        let word = &rest[start..end];
        if ["CREATE", "DROP", "ALTER"]
            .iter()
            .any(|w| w.eq_ignore_ascii_case(word))
        {
            return true;
        }
        match next_statement(rest) {
            Some(next) => rest = next,
            None => return false,
        }
    }
}

/// The text after the next top-level `;`, if any.
fn next_statement(sql: &str) -> Option<&str> {
    let b = sql.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            q @ (b'\'' | b'"' | b'`') => {
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => i = skip_blank(b, i),
            b'/' if b.get(i + 1) == Some(&b'*') => i = skip_blank(b, i),
            b';' => return Some(&sql[i + 1..]),
            _ => i += 1,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::has_transaction_control as h;

    #[test]
    fn blank_and_multiple() {
        assert!(super::is_blank("  ; -- x\n /* y */ ;"));
        assert!(!super::is_blank(" SELECT 1"));
        assert!(super::has_multiple_statements("SELECT 1; SELECT 2"));
        assert!(!super::has_multiple_statements("SELECT ';'; -- more\n"));
        assert!(!super::has_multiple_statements("SELECT 1;"));
    }

    #[test]
    fn transaction_boundaries() {
        use super::ends_or_starts_transaction as t;
        assert!(t("BEGIN"));
        assert!(t("INSERT INTO x VALUES (1); COMMIT"));
        assert!(t("rollback"));
        assert!(!t("ROLLBACK TO sp1"));
        assert!(!t("rollback transaction to savepoint sp1"));
        assert!(!t("SAVEPOINT a; RELEASE a"));
        assert!(!t("SELECT 'BEGIN'"));
    }

    #[test]
    fn dml_detection() {
        assert!(super::is_dml("INSERT INTO t VALUES (1)"));
        assert!(super::is_dml("  update t set a = 1"));
        assert!(super::is_dml("WITH x AS (SELECT 1) DELETE FROM t"));
        assert!(!super::is_dml("SELECT * FROM inserts"));
    }

    #[test]
    fn finds_statement_leading_keywords_only() {
        assert!(h("BEGIN; INSERT INTO t VALUES (1); COMMIT;"));
        assert!(h("insert into t values (1);\n  commit"));
        assert!(h("-- c\nsavepoint a"));
        assert!(!h("CREATE TABLE t (began TEXT, commit_id INT)"));
        assert!(!h("INSERT INTO t VALUES ('BEGIN'); SELECT 'x;commit'"));
        assert!(!h("/* BEGIN */ SELECT 1"));
        assert!(!h("SELECT CASE WHEN 1 THEN 2 END"));
    }
}
