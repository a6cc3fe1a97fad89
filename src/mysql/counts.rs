//! Row counts with the meaning they have on every engine: the rows a statement inserted,
//! updated or deleted, each once.
//!
//! MySQL's own count ("affected rows") means something else for two statements:
//! - `INSERT … ON DUPLICATE KEY UPDATE` counts an updated row twice (and, with
//!   `CLIENT_FOUND_ROWS`, which the pool asks for, a row set to its own values once);
//! - `REPLACE` counts the rows it deleted to make room as well as the row it wrote.
//!
//! For those the count comes from the server's info line (`Records: 3  Duplicates: 1  …`),
//! which a statement of several rows carries: every record is one row written. A statement of
//! one row carries none; it wrote that row once.

use crate::sql::scanner::{Kind, tokens};

/// How a statement's affected-row count is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CountRule {
    /// The server's count means what it means on every engine.
    AsReported,
    /// An upsert (`ON DUPLICATE KEY UPDATE`) or a `REPLACE`: one per row written.
    Records,
}

impl CountRule {
    /// The rule for a statement's text (placeholders already `?`), read in the session's
    /// dialect `d`.
    pub(crate) fn of(sql: &str, d: crate::sql::Dialect) -> Self {
        let mut words = tokens(sql, d)
            .filter(|t| t.kind == Kind::Word)
            .map(|t| &sql[t.start..t.end]);
        let Some(first) = words.next() else {
            return Self::AsReported;
        };
        if first.eq_ignore_ascii_case("REPLACE") {
            return Self::Records;
        }
        if !first.eq_ignore_ascii_case("INSERT") {
            return Self::AsReported;
        }
        // `… ON DUPLICATE KEY UPDATE`, as words in a row.
        let mut window: [&str; 3] = ["", "", ""];
        for w in words {
            window = [window[1], window[2], w];
            if window[0].eq_ignore_ascii_case("DUPLICATE")
                && window[1].eq_ignore_ascii_case("KEY")
                && window[2].eq_ignore_ascii_case("UPDATE")
            {
                return Self::Records;
            }
        }
        Self::AsReported
    }

    /// The count: `affected` as the server reported it, `info` its info line.
    pub(crate) fn count(self, affected: u64, info: &str) -> u64 {
        match self {
            Self::AsReported => affected,
            Self::Records => records(info).unwrap_or(affected.min(1)),
        }
    }
}

/// The `Records: N` of an info line.
fn records(info: &str) -> Option<u64> {
    let rest = info.split("Records:").nth(1)?;
    let digits: String = rest
        .trim_start()
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upserts_and_replaces_count_records() {
        assert_eq!(
            CountRule::of("REPLACE INTO t VALUES (?)", crate::mysql::DIALECT),
            CountRule::Records
        );
        assert_eq!(
            CountRule::of(
                "insert into t (a) values (?) on duplicate key update a = values(a)",
                crate::mysql::DIALECT
            ),
            CountRule::Records
        );
        assert_eq!(
            CountRule::of(
                "INSERT INTO t VALUES ('ON DUPLICATE KEY UPDATE')",
                crate::mysql::DIALECT
            ),
            CountRule::AsReported
        );
        assert_eq!(
            CountRule::of("UPDATE t SET a = 1", crate::mysql::DIALECT),
            CountRule::AsReported
        );
        assert_eq!(
            CountRule::of("/* REPLACE */ DELETE FROM t", crate::mysql::DIALECT),
            CountRule::AsReported
        );
    }

    #[test]
    fn counts_read_the_info_line() {
        let r = CountRule::Records;
        assert_eq!(r.count(5, "Records: 4  Duplicates: 2  Warnings: 0"), 4);
        assert_eq!(r.count(2, ""), 1);
        assert_eq!(r.count(3, ""), 1);
        assert_eq!(r.count(0, ""), 0);
        assert_eq!(CountRule::AsReported.count(7, "Rows matched: 7"), 7);
    }
}
