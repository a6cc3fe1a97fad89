//! SQL-aware placeholder translation between PostgreSQL-style `$N` and
//! SQLite-style `?N` parameters.
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

/// Which placeholder syntax the target engine expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlaceholderStyle {
    /// `$1, $2, …` (PostgreSQL).
    Postgres,
    /// `?1, ?2, …` (SQLite, Turso).
    Sqlite,
}

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
    let (from, into) = match to {
        PlaceholderStyle::Sqlite => (b'$', '?'),
        PlaceholderStyle::Postgres => (b'?', '$'),
    };
    let bytes = sql.as_bytes();
    // Fast path: without the source sigil there is nothing to translate.
    if !bytes.contains(&from) {
        return Cow::Borrowed(sql);
    }
    let skip_brackets = to == PlaceholderStyle::Sqlite;
    let len = bytes.len();

    // Allocated on the first change only.
    let mut out: Option<String> = None;
    // `sql[..copied]` has already been written to `out`.
    let mut copied = 0;
    let mut i = 0;
    while i < len {
        let b = bytes[i];
        i = match b {
            b'\'' => skip_string(bytes, i + 1, false),
            b'E' | b'e' if bytes.get(i + 1) == Some(&b'\'') && !preceded_by_ident(bytes, i) => {
                skip_string(bytes, i + 2, true)
            }
            b'"' | b'`' => skip_quoted(bytes, i + 1, b),
            b'[' if skip_brackets => skip_past(bytes, i + 1, b']'),
            b'-' if bytes.get(i + 1) == Some(&b'-') => skip_past(bytes, i + 2, b'\n'),
            b'/' if bytes.get(i + 1) == Some(&b'*') => skip_block_comment(bytes, i + 2),
            b'$' | b'?' => {
                if preceded_by_ident(bytes, i) {
                    // Part of an identifier such as `foo$1` or `a$b`.
                    i + 1
                } else {
                    let end = digits_end(bytes, i + 1);
                    if end > i + 1 {
                        if b == from {
                            // `i` indexes an ASCII sigil, so both slice bounds
                            // fall on char boundaries.
                            let s = out.get_or_insert_with(|| String::with_capacity(len));
                            s.push_str(&sql[copied..i]);
                            s.push(into);
                            copied = i + 1;
                        }
                        end
                    } else if b == b'$' {
                        dollar_quote_end(bytes, i).unwrap_or(i + 1)
                    } else {
                        i + 1
                    }
                }
            }
            _ => i + 1,
        };
    }

    match out {
        None => Cow::Borrowed(sql),
        Some(mut s) => {
            s.push_str(&sql[copied..]);
            Cow::Owned(s)
        }
    }
}

/// The number of parameters SQLite would give `sql` (written in SQLite's own placeholder
/// syntax): `?NNN` takes index NNN, a bare `?` the next index, and each distinct `:name`,
/// `@name` or `$name` the next index. Literals, quoted identifiers and comments are skipped.
#[cfg_attr(not(feature = "turso"), allow(dead_code))]
pub(crate) fn sqlite_param_count(sql: &str) -> usize {
    let bytes = sql.as_bytes();
    let len = bytes.len();
    let mut max = 0usize;
    let mut names: Vec<&[u8]> = Vec::new();
    let mut i = 0;
    while i < len {
        let b = bytes[i];
        i = match b {
            b'\'' => skip_string(bytes, i + 1, false),
            b'"' | b'`' => skip_quoted(bytes, i + 1, b),
            b'[' => skip_past(bytes, i + 1, b']'),
            b'-' if bytes.get(i + 1) == Some(&b'-') => skip_past(bytes, i + 2, b'\n'),
            b'/' if bytes.get(i + 1) == Some(&b'*') => skip_block_comment(bytes, i + 2),
            b'?' => {
                let end = digits_end(bytes, i + 1);
                if end > i + 1 {
                    let n: usize = sql[i + 1..end].parse().unwrap_or(usize::MAX);
                    max = max.max(n);
                } else {
                    max += 1;
                }
                end
            }
            b':' | b'@' | b'$' if !preceded_by_ident(bytes, i) => {
                let mut end = i + 1;
                while end < len
                    && (bytes[end].is_ascii_alphanumeric()
                        || bytes[end] == b'_'
                        || bytes[end] >= 0x80)
                {
                    end += 1;
                }
                if end > i + 1 {
                    let name = &bytes[i + 1..end];
                    if !names.contains(&name) {
                        names.push(name);
                        max += 1;
                    }
                }
                end
            }
            _ => i + 1,
        };
    }
    max
}

/// Identifier characters: a sigil right after one of these belongs to the
/// identifier (PostgreSQL allows `$` inside identifiers).
#[inline]
const fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// Whether the byte before `i` is an identifier character.
#[inline]
fn preceded_by_ident(bytes: &[u8], i: usize) -> bool {
    i > 0 && is_ident_byte(bytes[i - 1])
}

/// First index at or after `start` that is not an ASCII digit.
#[inline]
fn digits_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// Index just past the first `close` at or after `start` (or the end of input).
#[inline]
fn skip_past(bytes: &[u8], start: usize, close: u8) -> usize {
    match bytes.get(start..) {
        Some(rest) => rest
            .iter()
            .position(|&c| c == close)
            .map_or(bytes.len(), |p| start + p + 1),
        None => bytes.len(),
    }
}

/// Skips the body of a single-quoted literal starting at `start` (just after
/// the opening quote). `''` is an escaped quote; with `backslash_escapes`
/// (PostgreSQL `E'...'`), a backslash escapes the next byte. Returns the index
/// just past the closing quote, or the end of input.
fn skip_string(bytes: &[u8], start: usize, backslash_escapes: bool) -> usize {
    let len = bytes.len();
    let mut i = start;
    while i < len {
        match bytes[i] {
            b'\'' => {
                if bytes.get(i + 1) == Some(&b'\'') {
                    i += 2;
                } else {
                    return i + 1;
                }
            }
            b'\\' if backslash_escapes => i += 2,
            _ => i += 1,
        }
    }
    len
}

/// Skips a quoted identifier body (`"..."` or `` `...` ``) where a doubled
/// quote is an escape. Returns the index just past the closing quote, or the
/// end of input.
fn skip_quoted(bytes: &[u8], start: usize, quote: u8) -> usize {
    let len = bytes.len();
    let mut i = start;
    loop {
        i = skip_past(bytes, i, quote);
        if i < len && bytes[i] == quote {
            // Doubled quote: escaped, keep going.
            i += 1;
        } else {
            return i;
        }
    }
}

/// Skips a (nesting) block comment body starting just after the opening `/*`.
/// Returns the index just past the matching `*/`, or the end of input.
fn skip_block_comment(bytes: &[u8], start: usize) -> usize {
    let len = bytes.len();
    let mut depth = 1usize;
    let mut i = start;
    while i < len {
        match (bytes[i], bytes.get(i + 1)) {
            (b'/', Some(b'*')) => {
                depth += 1;
                i += 2;
            }
            (b'*', Some(b'/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    len
}

/// If a dollar-quote opening delimiter (`$$` or `$tag$`, where the tag is an
/// identifier not starting with a digit) starts at `start`, returns the index
/// just past the matching closing delimiter (or the end of input when it is
/// unterminated). Returns `None` when `start` does not open a dollar quote.
fn dollar_quote_end(bytes: &[u8], start: usize) -> Option<usize> {
    let len = bytes.len();
    let mut i = start + 1;
    if i < len && bytes[i] != b'$' {
        // Tag must start with a letter, underscore or non-ASCII byte.
        let first = bytes[i];
        if !(first.is_ascii_alphabetic() || first == b'_' || first >= 0x80) {
            return None;
        }
        while i < len && bytes[i] != b'$' {
            let c = bytes[i];
            if !(c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80) {
                return None;
            }
            i += 1;
        }
    }
    if i >= len {
        return None;
    }
    // `bytes[start..=i]` is the delimiter, e.g. `$fn$`.
    let delim = &bytes[start..=i];
    let body = i + 1;
    let mut j = body;
    while let Some(p) = bytes[j..].iter().position(|&c| c == b'$') {
        let at = j + p;
        if bytes[at..].starts_with(delim) {
            return Some(at + delim.len());
        }
        j = at + 1;
    }
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use PlaceholderStyle::{Postgres, Sqlite};

    fn to_sqlite(sql: &str) -> String {
        translate_placeholders(sql, Sqlite).into_owned()
    }

    fn to_pg(sql: &str) -> String {
        translate_placeholders(sql, Postgres).into_owned()
    }

    #[test]
    fn defaults_and_traits() {
        assert_eq!(TranslationMode::default(), TranslationMode::On);
        assert_ne!(TranslationMode::On, TranslationMode::Off);
        assert_ne!(Postgres, Sqlite);
    }

    #[test]
    fn basic_to_sqlite() {
        assert_eq!(
            to_sqlite("SELECT * FROM t WHERE a = $1 AND b = $2"),
            "SELECT * FROM t WHERE a = ?1 AND b = ?2"
        );
    }

    #[test]
    fn basic_to_postgres() {
        assert_eq!(
            to_pg("SELECT * FROM t WHERE a = ?1 AND b = ?2"),
            "SELECT * FROM t WHERE a = $1 AND b = $2"
        );
    }

    #[test]
    fn multi_digit_copied_unchanged() {
        assert_eq!(
            to_sqlite("VALUES ($12, $007, $123456)"),
            "VALUES (?12, ?007, ?123456)"
        );
        assert_eq!(
            to_pg("VALUES (?12, ?007, ?123456)"),
            "VALUES ($12, $007, $123456)"
        );
    }

    #[test]
    fn after_punctuation() {
        assert_eq!(to_sqlite("f($1,$2)"), "f(?1,?2)");
        assert_eq!(to_sqlite("a=$1"), "a=?1");
        assert_eq!(to_sqlite("$1"), "?1");
        assert_eq!(to_sqlite("a+$1-$2*$3/$4"), "a+?1-?2*?3/?4");
        assert_eq!(to_sqlite("$1::int"), "?1::int");
        assert_eq!(to_pg("f(?1,?2)"), "f($1,$2)");
        assert_eq!(to_pg("a=?1"), "a=$1");
        assert_eq!(to_pg("?1"), "$1");
    }

    #[test]
    fn bare_sigils_untouched() {
        // Bare `?` is a jsonb operator in Postgres.
        assert_eq!(to_pg("data ? 'key' AND x = ?1"), "data ? 'key' AND x = $1");
        assert_eq!(
            to_pg("data ?| array['a'] AND data ?& ?2"),
            "data ?| array['a'] AND data ?& $2"
        );
        assert_eq!(to_sqlite("SELECT $ + $a"), "SELECT $ + $a");
        assert_eq!(to_pg("?"), "?");
        assert_eq!(to_sqlite("$"), "$");
    }

    #[test]
    fn other_style_is_left_alone() {
        assert_eq!(to_sqlite("a = ?1 AND b = $2"), "a = ?1 AND b = ?2");
        assert_eq!(to_pg("a = $1 AND b = ?2"), "a = $1 AND b = $2");
    }

    #[test]
    fn single_quoted_string() {
        assert_eq!(to_sqlite("SELECT '$1', $1"), "SELECT '$1', ?1");
        assert_eq!(to_pg("SELECT '?1', ?1"), "SELECT '?1', $1");
        assert_eq!(to_sqlite("SELECT 'it''s $1', $2"), "SELECT 'it''s $1', ?2");
        assert_eq!(to_pg("SELECT 'it''s ?1', ?2"), "SELECT 'it''s ?1', $2");
        // Plain strings do not treat backslash as an escape.
        assert_eq!(to_sqlite(r"SELECT 'a\', $1"), r"SELECT 'a\', ?1");
    }

    #[test]
    fn escape_string() {
        assert_eq!(
            to_sqlite(r"SELECT E'it\'s $1', $2"),
            r"SELECT E'it\'s $1', ?2"
        );
        assert_eq!(
            to_sqlite(r"SELECT e'it\'s $1', $2"),
            r"SELECT e'it\'s $1', ?2"
        );
        assert_eq!(to_pg(r"SELECT E'it\'s ?1', ?2"), r"SELECT E'it\'s ?1', $2");
        assert_eq!(to_sqlite(r"SELECT E'a\\', $1"), r"SELECT E'a\\', ?1");
        assert_eq!(to_sqlite(r"SELECT E'a''$1', $1"), r"SELECT E'a''$1', ?1");
        // `E` glued to an identifier does not start an escape string.
        assert_eq!(to_sqlite(r"SELECT typE'a\', $1"), r"SELECT typE'a\', ?1");
    }

    #[test]
    fn double_quoted_identifier() {
        assert_eq!(to_sqlite(r#"SELECT "col$1", $1"#), r#"SELECT "col$1", ?1"#);
        assert_eq!(
            to_sqlite(r#"SELECT "a"" $1", $1"#),
            r#"SELECT "a"" $1", ?1"#
        );
        assert_eq!(to_pg(r#"SELECT "?1", ?1"#), r#"SELECT "?1", $1"#);
    }

    #[test]
    fn backtick_identifier() {
        assert_eq!(to_sqlite("SELECT `$1`, $1"), "SELECT `$1`, ?1");
        assert_eq!(to_sqlite("SELECT `a`` $1`, $1"), "SELECT `a`` $1`, ?1");
        assert_eq!(to_pg("SELECT `?1`, ?1"), "SELECT `?1`, $1");
    }

    #[test]
    fn brackets_only_skipped_for_sqlite() {
        assert_eq!(to_sqlite("SELECT [$1], $1"), "SELECT [$1], ?1");
        assert_eq!(to_pg("SELECT arr[?1], ?2"), "SELECT arr[$1], $2");
        assert_eq!(to_pg("SELECT arr[?1:?2]"), "SELECT arr[$1:$2]");
    }

    #[test]
    fn arr_subscript_postgres_source() {
        // In a Postgres-style statement `arr[$1]` is a subscript; to SQLite it
        // is a bracketed identifier and is left alone.
        assert_eq!(
            to_sqlite("SELECT arr[$1] FROM t WHERE id = $2"),
            "SELECT arr[$1] FROM t WHERE id = ?2"
        );
        assert_eq!(to_pg("SELECT arr[$1]"), "SELECT arr[$1]");
    }

    #[test]
    fn line_comment() {
        assert_eq!(
            to_sqlite("SELECT $1 -- uses $2\n, $3"),
            "SELECT ?1 -- uses $2\n, ?3"
        );
        assert_eq!(
            to_pg("SELECT ?1 -- uses ?2\n, ?3"),
            "SELECT $1 -- uses ?2\n, $3"
        );
        assert_eq!(to_sqlite("SELECT 1 - $1"), "SELECT 1 - ?1");
    }

    #[test]
    fn block_comment() {
        assert_eq!(to_sqlite("SELECT /* $1 */ $2"), "SELECT /* $1 */ ?2");
        assert_eq!(to_pg("SELECT /* ?1 */ ?2"), "SELECT /* ?1 */ $2");
        assert_eq!(to_sqlite("SELECT 4/$1"), "SELECT 4/?1");
    }

    #[test]
    fn nested_block_comment() {
        assert_eq!(to_sqlite("/* /* */ $1 */ $2"), "/* /* */ $1 */ ?2");
        assert_eq!(to_pg("/* /* */ ?1 */ ?2"), "/* /* */ ?1 */ $2");
        assert_eq!(to_sqlite("/*/ $1 */ $2"), "/*/ $1 */ ?2");
    }

    #[test]
    fn empty_dollar_quote() {
        assert_eq!(to_sqlite("SELECT $$ $1 $$, $1"), "SELECT $$ $1 $$, ?1");
        assert_eq!(to_pg("SELECT $$ ?1 $$, ?1"), "SELECT $$ ?1 $$, $1");
        assert_eq!(to_sqlite("$$'$$ = $1"), "$$'$$ = ?1");
    }

    #[test]
    fn tagged_dollar_quote() {
        assert_eq!(
            to_sqlite("AS $fn$ SELECT $1 $fn$, $1"),
            "AS $fn$ SELECT $1 $fn$, ?1"
        );
        assert_eq!(
            to_pg("AS $fn$ SELECT ?1 $fn$, ?1"),
            "AS $fn$ SELECT ?1 $fn$, $1"
        );
        // Only the same tag closes the body.
        assert_eq!(
            to_sqlite("$a$ $b$ $1 $$ $1 $a$ $1"),
            "$a$ $b$ $1 $$ $1 $a$ ?1"
        );
        assert_eq!(to_sqlite("$_t1$ $1 $_t1$ $1"), "$_t1$ $1 $_t1$ ?1");
        assert_eq!(to_sqlite("$ü$ $1 $ü$ $1"), "$ü$ $1 $ü$ ?1");
    }

    #[test]
    fn digit_tag_is_not_dollar_quote() {
        // `$1$` is a placeholder followed by `$`, not a dollar-quote opener.
        assert_eq!(to_sqlite("$1$ $2"), "?1$ ?2");
    }

    #[test]
    fn identifier_glued_sigil() {
        assert_eq!(to_sqlite("SELECT foo$1, $1"), "SELECT foo$1, ?1");
        assert_eq!(
            to_sqlite("SELECT _$1, é$1, 9$1, x$$1"),
            "SELECT _$1, é$1, 9$1, x$$1"
        );
        assert_eq!(to_pg("SELECT foo?1, ?1"), "SELECT foo?1, $1");
        assert_eq!(to_pg("SELECT $?1, é?1"), "SELECT $?1, é?1");
    }

    #[test]
    fn non_ascii_around_placeholders() {
        assert_eq!(
            to_sqlite("SELECT 'héllo', $1 ,日本=$2 — ✓"),
            "SELECT 'héllo', ?1 ,日本=?2 — ✓"
        );
        assert_eq!(
            to_pg("名前 = ?1 AND 'ü?1' = ?2 🎉"),
            "名前 = $1 AND 'ü?1' = $2 🎉"
        );
        // Non-ASCII directly before the sigil is an identifier character.
        assert_eq!(to_sqlite("日本$1 (日本 $1)"), "日本$1 (日本 ?1)");
    }

    #[test]
    fn unterminated_constructs() {
        assert_eq!(to_sqlite("$1, 'abc $2"), "?1, 'abc $2");
        assert_eq!(to_sqlite(r"$1, E'abc\"), r"?1, E'abc\");
        assert_eq!(to_sqlite(r"$1, E'abc\'$2"), r"?1, E'abc\'$2");
        assert_eq!(to_sqlite("$1, \"abc $2"), "?1, \"abc $2");
        assert_eq!(to_sqlite("$1, `abc $2"), "?1, `abc $2");
        assert_eq!(to_sqlite("$1, [abc $2"), "?1, [abc $2");
        assert_eq!(to_sqlite("$1 -- $2"), "?1 -- $2");
        assert_eq!(to_sqlite("$1 /* /* */ $2"), "?1 /* /* */ $2");
        assert_eq!(to_sqlite("$1 $$ $2"), "?1 $$ $2");
        assert_eq!(to_sqlite("$1 $fn$ $2 $fn"), "?1 $fn$ $2 $fn");
        assert_eq!(to_pg("?1 $tag"), "$1 $tag");
        assert_eq!(to_sqlite("$1 'é"), "?1 'é");
        assert_eq!(to_sqlite("-"), "-");
        assert_eq!(to_sqlite("/"), "/");
        assert_eq!(to_sqlite("E"), "E");
        assert_eq!(to_sqlite("$1 $"), "?1 $");
    }

    #[test]
    fn borrowed_when_unchanged() {
        for sql in [
            "",
            "SELECT 1",
            "SELECT '$1' -- $2",
            "SELECT foo$1, $$ $1 $$, $a, $",
            "SELECT ?1, ?",
        ] {
            assert!(
                matches!(translate_placeholders(sql, Sqlite), Cow::Borrowed(s) if s == sql),
                "{sql:?}"
            );
        }
        for sql in ["", "SELECT $1", "x ? 'k'", "SELECT '?1' /* ?2 */", "foo?1"] {
            assert!(
                matches!(translate_placeholders(sql, Postgres), Cow::Borrowed(s) if s == sql),
                "{sql:?}"
            );
        }
    }

    #[test]
    fn owned_when_changed() {
        assert!(matches!(
            translate_placeholders("$1", Sqlite),
            Cow::Owned(_)
        ));
        assert!(matches!(
            translate_placeholders("?1", Postgres),
            Cow::Owned(_)
        ));
    }

    #[test]
    fn length_preserved_and_round_trip() {
        let sql = "INSERT INTO t (a, \"b$1\") VALUES ($1, 'x$2', $3) -- $4\n /* $5 */ RETURNING $$ $6 $$, $10";
        let lite = to_sqlite(sql);
        assert_eq!(lite.len(), sql.len());
        assert_eq!(
            lite,
            "INSERT INTO t (a, \"b$1\") VALUES (?1, 'x$2', ?3) -- $4\n /* $5 */ RETURNING $$ $6 $$, ?10"
        );
        assert_eq!(to_pg(&lite), sql);
    }

    #[test]
    fn sqlite_param_counts() {
        assert_eq!(super::sqlite_param_count("SELECT ?1, ?2"), 2);
        assert_eq!(super::sqlite_param_count("SELECT ?2"), 2);
        assert_eq!(super::sqlite_param_count("SELECT ?, ?"), 2);
        assert_eq!(super::sqlite_param_count("SELECT ?1, ?1"), 1);
        assert_eq!(super::sqlite_param_count("SELECT '?1', :a, :a, @b"), 2);
        assert_eq!(super::sqlite_param_count("SELECT 1 -- ?3"), 0);
    }

    #[test]
    fn comment_and_string_markers_inside_each_other() {
        assert_eq!(to_sqlite("'--' $1"), "'--' ?1");
        assert_eq!(to_sqlite("'/*' $1"), "'/*' ?1");
        assert_eq!(to_sqlite("-- 'x\n$1"), "-- 'x\n?1");
        assert_eq!(to_sqlite("/* ' */ $1"), "/* ' */ ?1");
        assert_eq!(to_sqlite("\"'\" $1"), "\"'\" ?1");
        assert_eq!(to_sqlite("$$ ' $$ $1"), "$$ ' $$ ?1");
        assert_eq!(to_sqlite("'$$' $1"), "'$$' ?1");
    }
}
