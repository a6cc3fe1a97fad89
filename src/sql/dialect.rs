//! What the neutral SQL readers need to know about an engine's SQL: its lexical rules, how it
//! quotes and folds identifiers, and which statements it refuses (or ignores) inside a
//! transaction. Each wing defines its engine's [`Dialect`] in its own `dialect.rs`; the readers
//! here only follow it.

use super::scanner::Lexer;

/// An engine's SQL, as the neutral readers (scripts, identifiers, transaction rules) follow it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Dialect {
    /// The lexical rules of the engine's lexer.
    pub(crate) lexer: Lexer,
    /// The character that quotes an identifier (a doubled one stands for itself).
    pub(crate) ident_quote: char,
    /// Whether the engine folds unquoted identifiers to lower case (so a plain name given as data
    /// is lower-cased before it is quoted, to keep its meaning).
    pub(crate) folds_to_lower: bool,
    /// Given the first significant words of a statement (up to six), the name to give in an error
    /// when the engine cannot do the statement's work inside a transaction (`VACUUM` is known
    /// to every dialect and never reaches this rule).
    pub(crate) outside_tx_only: fn(&[&str]) -> Option<String>,
}

impl From<Dialect> for Lexer {
    fn from(d: Dialect) -> Lexer {
        d.lexer
    }
}

/// Whether `w` is the keyword `k` (ASCII case ignored).
pub(crate) fn is(w: Option<&&str>, k: &str) -> bool {
    w.is_some_and(|w| w.eq_ignore_ascii_case(k))
}

/// Whether `w` is one of the keywords `set` (ASCII case ignored).
pub(crate) fn is_any(w: Option<&&str>, set: &[&str]) -> bool {
    set.iter().any(|k| is(w, k))
}
