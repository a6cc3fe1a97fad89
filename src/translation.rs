//! SQL-aware placeholder translation between PostgreSQL-style `$N` and
//! SQLite-style `?N` parameters, reading SQL through the crate's one SQL scanner.
//!
//! Users may write every statement with `$1, $2, …` and run it on SQLite or
//! Turso (which expect `?1, ?2, …`), or the other way round. The translator is
//! a single forward pass over the bytes of the statement that understands just
//! enough SQL lexing to leave placeholders-lookalikes alone when they appear
//! inside:
//!
//! * single-quoted string literals (`'it''s $1'`),
//! * PostgreSQL escape strings (`E'it\'s $1'`), where a backslash escapes the
//!   next character,
//! * double-quoted identifiers (`"col$1"`) and backtick identifiers,
//! * `[bracketed]` identifiers, only when the target is
//!   [`PlaceholderStyle::Sqlite`] (in PostgreSQL `arr[$1]` is a subscript),
//! * `--` line comments and (nesting) `/* … */` block comments,
//! * dollar-quoted bodies (`$$ … $$`, `$fn$ … $fn$`),
//! * identifiers: a sigil directly preceded by an identifier character
//!   (`foo$1`) is part of that identifier.
//!
//! Only the sigil byte of a placeholder ever changes, so the output always has
//! exactly the same length as the input and all other bytes (including any
//! UTF-8 text) are copied unchanged. When nothing needs to change the input is
//! returned as [`Cow::Borrowed`] without allocating.
//!
//! ```
//! use sql_middleware::translation::{PlaceholderStyle, translate_placeholders};
//!
//! let sql = "SELECT * FROM t WHERE a = $1 AND b = '$2' -- $3";
//! assert_eq!(
//!     translate_placeholders(sql, PlaceholderStyle::Sqlite),
//!     "SELECT * FROM t WHERE a = ?1 AND b = '$2' -- $3"
//! );
//! ```

use std::borrow::Cow;

pub use crate::engine::PlaceholderStyle;
use crate::sql::scanner::{Kind, Lexer, tokens};

/// Whether a call translates placeholders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TranslationMode {
    /// Translate to the backend's style (default).
    #[default]
    On,
    /// Send the SQL text unchanged.
    Off,
}

/// Rewrites placeholders to `to` style. Returns `Cow::Borrowed` when nothing changes (no allocation).
///
/// * To [`PlaceholderStyle::Sqlite`], every `$N` (one or more ASCII digits)
///   becomes `?N`.
/// * To [`PlaceholderStyle::Postgres`], every `?N` becomes `$N`; a bare `?`
///   (a jsonb operator in PostgreSQL) is left alone.
///
/// Placeholders inside string literals, quoted identifiers, comments and
/// dollar-quoted bodies, or glued to a preceding identifier character
/// (`foo$1`), are not translated. Unterminated literals, comments and
/// dollar-quotes simply run to the end of the input. The output always has the
/// same length as the input; only sigil bytes change.
///
/// ```
/// use std::borrow::Cow;
/// use sql_middleware::translation::{PlaceholderStyle, translate_placeholders};
///
/// assert_eq!(
///     translate_placeholders("UPDATE t SET a = ?1 WHERE b = ?2", PlaceholderStyle::Postgres),
///     "UPDATE t SET a = $1 WHERE b = $2"
/// );
/// // Nothing to do: the input is borrowed, not copied.
/// assert!(matches!(
///     translate_placeholders("SELECT 1", PlaceholderStyle::Sqlite),
///     Cow::Borrowed(_)
/// ));
/// ```
#[must_use]
pub fn translate_placeholders(sql: &str, to: PlaceholderStyle) -> Cow<'_, str> {
    let (_, _, lexer) = rules(to);
    translate_placeholders_in(sql, to, lexer)
}

/// [`translate_placeholders`] into `to`'s style, reading `sql` as a session whose lexical
/// rules are `lexer` reads it (a setting of the session may change how it reads quotes).
pub(crate) fn translate_placeholders_in(
    sql: &str,
    to: PlaceholderStyle,
    lexer: Lexer,
) -> Cow<'_, str> {
    let (from, into, _) = rules(to);
    let bytes = sql.as_bytes();
    // Fast path: without the source sigil there is nothing to translate.
    if !bytes.contains(&from) {
        return Cow::Borrowed(sql);
    }
    // Allocated on the first change only.
    let mut out: Option<String> = None;
    // `sql[..copied]` has already been written to `out`.
    let mut copied = 0;
    for t in tokens(sql, lexer) {
        if t.kind == Kind::Placeholder && bytes[t.start] == from {
            // `t.start` indexes an ASCII sigil, so both slice bounds fall on char boundaries.
            let s = out.get_or_insert_with(|| String::with_capacity(sql.len()));
            s.push_str(&sql[copied..t.start]);
            s.push(into);
            copied = t.start + 1;
        }
    }
    match out {
        None => Cow::Borrowed(sql),
        Some(mut s) => {
            s.push_str(&sql[copied..]);
            Cow::Owned(s)
        }
    }
}

/// The sigil a placeholder has before translation to `to`, the one it gets, and the lexical
/// rules of the engines that use `to`.
fn rules(to: PlaceholderStyle) -> (u8, char, Lexer) {
    let (from, into, dollar_quotes) = to.rules();
    let lexer = if dollar_quotes {
        Lexer::DollarQuotes
    } else {
        Lexer::Plain
    };
    (from, into, lexer)
}

#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;
    use crate::sql::props::{config, script};
    fn spans(sql: &str, l: Lexer) -> Vec<(Kind, usize, usize)> {
        tokens(sql, l).map(|t| (t.kind, t.start, t.end)).collect()
    }

    /// Byte positions where `a` and `b` (of equal length) differ.
    fn changed(a: &str, b: &str) -> Vec<usize> {
        a.bytes()
            .zip(b.bytes())
            .enumerate()
            .filter(|(_, (x, y))| x != y)
            .map(|(i, _)| i)
            .collect()
    }

    proptest! {
        #![proptest_config(config())]

        /// Translation to either style changes exactly the sigils of the placeholders the
        /// target style's lexer finds, and that lexer reads the translated text the same way
        /// (same spans, same kinds). Where the two lexers read the text alike, translating back
        /// gives the original.
        #[test]
        fn translation_changes_only_scanned_placeholders((l, sql) in script()) {
            let styles = PlaceholderStyle::ALL;
            if styles.iter().all(|s| rules(*s).2 != l) {
                return Ok(());
            }
            for style in styles {
                let (sigil, _, lexer) = rules(style);
                let out = translate_placeholders(&sql, style);
                prop_assert_eq!(out.len(), sql.len());
                let sigils: Vec<usize> = tokens(&sql, lexer)
                    .filter(|t| t.kind == Kind::Placeholder && sql.as_bytes()[t.start] == sigil)
                    .map(|t| t.start)
                    .collect();
                prop_assert_eq!(changed(&sql, &out), sigils);
                prop_assert_eq!(spans(&sql, lexer), spans(&out, lexer));
            }
            let [a, b] = styles;
            if spans(&sql, rules(a).2) == spans(&sql, rules(b).2) {
                // The scripts write their placeholders `$N`: to the style that takes `$N`, and back.
                let (to, back) = if rules(a).0 == b'$' { (a, b) } else { (b, a) };
                let there = translate_placeholders(&sql, to);
                prop_assert_eq!(translate_placeholders(&there, back), sql.clone());
            }
        }
    }
}
