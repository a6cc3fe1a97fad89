//! What a statement needs beyond its rows, read through the scanner: whether it must run
//! outside any transaction (each engine's rule is in its [`Dialect`]). What a statement does to
//! the session is each wing's business.

use super::dialect::Dialect;
use super::scanner::tokens;
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

/// When the statement cannot do its work inside a transaction on `d`'s engine, the name to
/// give in an error: `VACUUM` on every engine, then the engine's own rule
/// ([`Dialect::outside_tx_only`]).
pub(crate) fn outside_tx_only(stmt: &str, d: Dialect) -> Option<String> {
    let h = head(stmt, d, 6);
    let first = h.first()?;
    if first.eq_ignore_ascii_case("VACUUM") {
        return Some("VACUUM".to_owned());
    }
    (d.outside_tx_only)(&h)
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

/// Whether `sql` is one plain write, `INSERT`, `UPDATE`, `DELETE` or `REPLACE`, which may run
/// inside a savepoint of a transaction it did not open (the group commit's rounds). Anything
/// else (several statements, `WITH …`, DDL, `PRAGMA`, transaction control) is not.
#[cfg(feature = "_embedded")]
pub(crate) fn plain_write(sql: &str, d: Dialect) -> bool {
    let mut parts = statements(sql, d).filter(|s| !head(s, d, 1).is_empty());
    let (Some(only), None) = (parts.next(), parts.next()) else {
        return false;
    };
    head(only, d, 1).first().is_some_and(|w| {
        ["INSERT", "UPDATE", "DELETE", "REPLACE"]
            .iter()
            .any(|k| k.eq_ignore_ascii_case(w))
    })
}
