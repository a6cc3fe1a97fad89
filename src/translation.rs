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

use crate::sql::scanner::{Dialect, Kind, tokens};

/// Which placeholder syntax the target engine expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
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
    let dialect = match to {
        PlaceholderStyle::Sqlite => Dialect::Sqlite,
        PlaceholderStyle::Postgres => Dialect::Postgres,
    };
    // Allocated on the first change only.
    let mut out: Option<String> = None;
    // `sql[..copied]` has already been written to `out`.
    let mut copied = 0;
    for t in tokens(sql, dialect) {
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

/// A statement as MySQL takes it (see [`to_mysql`]).
#[cfg(feature = "mysql")]
#[derive(Debug)]
pub(crate) struct MysqlText<'a> {
    /// The text, with positional `?` placeholders.
    pub(crate) text: Cow<'a, str>,
    /// The parameter each `?` binds (`None`: in order).
    pub(crate) order: Option<Box<[u16]>>,
    /// How many parameters the statement takes.
    pub(crate) params: usize,
}

/// `$N` placeholders of `sql` (and `?N` ones) rewritten to MySQL's positional `?`, with the
/// parameter each `?` takes: `order[k]` is the 0-based index of the parameter the k-th `?`
/// binds, so `$2 … $1` and a repeated `$1` bind correctly. Also the number of parameters the
/// statement takes: the highest `N`. Without `$N`/`?N` placeholders the text is kept (MySQL's
/// own `?` then bind in order), and the order is `None`; so it is when the rewritten `?`s take
/// the parameters in order. Mixing `$N` with bare `?` is an
/// [`InvalidInput`](crate::ErrorKind::InvalidInput) error.
#[cfg(feature = "mysql")]
pub(crate) fn to_mysql(sql: &str) -> crate::error::Result<MysqlText<'_>> {
    use crate::error::{ErrorKind, SqlMiddlewareDbError};
    let bytes = sql.as_bytes();
    if !bytes.contains(&b'$') && !bytes.contains(&b'?') {
        return Ok(MysqlText {
            text: Cow::Borrowed(sql),
            order: None,
            params: 0,
        });
    }
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut order: Vec<u16> = Vec::new();
    let mut bare = 0usize;
    let mut highest = 0usize;
    for t in tokens(sql, Dialect::Mysql) {
        match t.kind {
            Kind::Placeholder => {
                let n: usize = sql[t.start + 1..t.end].parse().unwrap_or(usize::MAX);
                if n == 0 || n > usize::from(u16::MAX) {
                    return Err(SqlMiddlewareDbError::new(
                        ErrorKind::InvalidInput,
                        format!(
                            "placeholder {} is out of range: placeholders run from $1 to ${}",
                            &sql[t.start..t.end],
                            u16::MAX
                        ),
                    ));
                }
                highest = highest.max(n);
                order.push((n - 1) as u16);
                let s = out.get_or_insert_with(|| String::with_capacity(sql.len()));
                s.push_str(&sql[copied..t.start]);
                s.push('?');
                copied = t.end;
            }
            Kind::Param if bytes[t.start] == b'?' => bare += 1,
            _ => {}
        }
    }
    if !order.is_empty() && bare > 0 {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::InvalidInput,
            "the statement mixes $N placeholders with bare ? ones; use one style",
        ));
    }
    let Some(mut s) = out else {
        return Ok(MysqlText {
            text: Cow::Borrowed(sql),
            order: None,
            params: bare,
        });
    };
    s.push_str(&sql[copied..]);
    let in_order = order.len() == highest && order.iter().enumerate().all(|(k, &i)| usize::from(i) == k);
    let order = (!in_order).then(|| order.into_boxed_slice());
    Ok(MysqlText {
        text: Cow::Owned(s),
        order,
        params: highest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use PlaceholderStyle::{Postgres, Sqlite};

    #[cfg(feature = "mysql")]
    #[test]
    fn mysql_placeholders_are_positional_with_their_order() {
        let t = |sql| {
            let m = to_mysql(sql).unwrap();
            (m.text.into_owned(), m.order, m.params)
        };
        let (sql, order, n) = t("SELECT $2, '$1', `$1`, $1, $2 -- $3");
        assert_eq!(sql, "SELECT ?, '$1', `$1`, ?, ? -- $3");
        assert_eq!(order.as_deref(), Some(&[1u16, 0, 1][..]));
        assert_eq!(n, 2);
        let (sql, order, n) = t("INSERT INTO t VALUES ($1, $2)");
        assert_eq!(sql, "INSERT INTO t VALUES (?, ?)");
        assert!(order.is_none());
        assert_eq!(n, 2);
        // MySQL strings escape with a backslash, and `#` starts a comment.
        let (sql, _, n) = t("SELECT 'it\\'s $1', \"$2\" # $3\n, $1");
        assert_eq!(sql, "SELECT 'it\\'s $1', \"$2\" # $3\n, ?");
        assert_eq!(n, 1);
        let (sql, order, n) = t("SELECT ? + ?");
        assert_eq!((sql.as_str(), order, n), ("SELECT ? + ?", None, 2));
        assert!(to_mysql("SELECT $1, ?").is_err());
        assert!(to_mysql("SELECT $0").is_err());
        // A gap: $1 is never used, and the statement still takes two parameters.
        let (_, order, n) = t("SELECT $2");
        assert_eq!((order.as_deref(), n), (Some(&[1u16][..]), 2));
    }

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
        assert_eq!(to_pg(r"SELECT E'it\'s ?1', ?2"), r"SELECT E'it\'s ?1', $2");
        assert_eq!(to_pg(r"SELECT e'it\'s ?1', ?2"), r"SELECT e'it\'s ?1', $2");
        assert_eq!(to_pg(r"SELECT E'a\\', ?1"), r"SELECT E'a\\', $1");
        assert_eq!(to_pg(r"SELECT E'a''?1', ?1"), r"SELECT E'a''?1', $1");
        // `E` glued to an identifier does not start an escape string.
        assert_eq!(to_pg(r"SELECT typE'a\', ?1"), r"SELECT typE'a\', $1");
        // SQLite has no escape strings: `E` is a word and the backslash is a plain byte.
        assert_eq!(to_sqlite(r"SELECT E'a\', $1"), r"SELECT E'a\', ?1");
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
        // PostgreSQL's comments nest; SQLite's end at the first `*/`.
        assert_eq!(to_pg("/* /* */ ?1 */ ?2"), "/* /* */ ?1 */ $2");
        assert_eq!(to_sqlite("/* /* */ $1 */ $2"), "/* /* */ ?1 */ ?2");
        assert_eq!(to_sqlite("/*/ $1 */ $2"), "/*/ $1 */ ?2");
    }

    #[test]
    fn empty_dollar_quote() {
        assert_eq!(to_pg("SELECT $$ ?1 $$, ?1"), "SELECT $$ ?1 $$, $1");
        assert_eq!(to_pg("$$'$$ = ?1"), "$$'$$ = $1");
        // SQLite has no dollar quotes.
        assert_eq!(to_sqlite("SELECT $$ $1 $$, $1"), "SELECT $$ ?1 $$, ?1");
    }

    #[test]
    fn tagged_dollar_quote() {
        assert_eq!(
            to_pg("AS $fn$ SELECT ?1 $fn$, ?1"),
            "AS $fn$ SELECT ?1 $fn$, $1"
        );
        // Only the same tag closes the body.
        assert_eq!(to_pg("$a$ $b$ ?1 $$ ?1 $a$ ?1"), "$a$ $b$ ?1 $$ ?1 $a$ $1");
        assert_eq!(to_pg("$_t1$ ?1 $_t1$ ?1"), "$_t1$ ?1 $_t1$ $1");
        assert_eq!(to_pg("$ü$ ?1 $ü$ ?1"), "$ü$ ?1 $ü$ $1");
        // In SQLite `$fn` is a named parameter, not a tag.
        assert_eq!(
            to_sqlite("AS $fn$ SELECT $1 $fn$, $1"),
            "AS $fn$ SELECT ?1 $fn$, ?1"
        );
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
        assert_eq!(to_pg(r"?1, E'abc\"), r"$1, E'abc\");
        assert_eq!(to_pg(r"?1, E'abc\'?2"), r"$1, E'abc\'?2");
        assert_eq!(to_sqlite("$1, \"abc $2"), "?1, \"abc $2");
        assert_eq!(to_sqlite("$1, `abc $2"), "?1, `abc $2");
        assert_eq!(to_sqlite("$1, [abc $2"), "?1, [abc $2");
        assert_eq!(to_sqlite("$1 -- $2"), "?1 -- $2");
        assert_eq!(to_sqlite("$1 /* $2"), "?1 /* $2");
        assert_eq!(to_pg("?1 /* /* */ ?2"), "$1 /* /* */ ?2");
        assert_eq!(to_pg("?1 $$ ?2"), "$1 $$ ?2");
        assert_eq!(to_pg("?1 $fn$ ?2 $fn"), "$1 $fn$ ?2 $fn");
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
            "SELECT foo$1, $a, $",
            "SELECT ?1, ?",
        ] {
            assert!(
                matches!(translate_placeholders(sql, Sqlite), Cow::Borrowed(s) if s == sql),
                "{sql:?}"
            );
        }
        for sql in [
            "",
            "SELECT $1",
            "x ? 'k'",
            "SELECT '?1' /* ?2 */",
            "foo?1",
            "$$ ?1 $$",
        ] {
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
        let sql =
            "INSERT INTO t (a, \"b$1\") VALUES ($1, 'x$2', $3) -- $4\n /* $5 */ RETURNING $10";
        let lite = to_sqlite(sql);
        assert_eq!(lite.len(), sql.len());
        assert_eq!(
            lite,
            "INSERT INTO t (a, \"b$1\") VALUES (?1, 'x$2', ?3) -- $4\n /* $5 */ RETURNING ?10"
        );
        assert_eq!(to_pg(&lite), sql);
    }

    #[test]
    fn comment_and_string_markers_inside_each_other() {
        assert_eq!(to_sqlite("'--' $1"), "'--' ?1");
        assert_eq!(to_sqlite("'/*' $1"), "'/*' ?1");
        assert_eq!(to_sqlite("-- 'x\n$1"), "-- 'x\n?1");
        assert_eq!(to_sqlite("/* ' */ $1"), "/* ' */ ?1");
        assert_eq!(to_sqlite("\"'\" $1"), "\"'\" ?1");
        assert_eq!(to_pg("$$ ' $$ ?1"), "$$ ' $$ $1");
        assert_eq!(to_sqlite("'$$' $1"), "'$$' ?1");
    }
}

#[cfg(test)]
mod props {
    use proptest::prelude::*;

    use super::*;
    use crate::sql::props::{config, script};
    use crate::sql::scanner::{Dialect, Kind, tokens};

    fn spans(sql: &str, d: Dialect) -> Vec<(Kind, usize, usize)> {
        tokens(sql, d).map(|t| (t.kind, t.start, t.end)).collect()
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
        /// target engine's scanner finds, and the scanner reads the translated text the same
        /// way (same spans, same kinds). Where the two dialects read the text alike, translating
        /// back gives the original.
        #[test]
        fn translation_changes_only_scanned_placeholders((d, sql) in script()) {
            #[cfg(feature = "mysql")]
            if d == Dialect::Mysql {
                // MySQL's `?` are positional: each `$N` the MySQL scanner finds becomes one `?`,
                // and nothing else changes.
                let found = tokens(&sql, d).filter(|t| t.kind == Kind::Placeholder).count();
                let bare = tokens(&sql, d)
                    .filter(|t| t.kind == Kind::Param && sql.as_bytes()[t.start] == b'?')
                    .count();
                match to_mysql(&sql) {
                    Ok(MysqlText { text: out, order, .. }) => {
                        let marks = tokens(&out, d)
                            .filter(|t| t.kind == Kind::Param && out.as_bytes()[t.start] == b'?')
                            .count();
                        prop_assert_eq!(marks, found + bare);
                        prop_assert!(tokens(&out, d).all(|t| t.kind != Kind::Placeholder));
                        if let Some(o) = order {
                            prop_assert_eq!(o.len(), found);
                        }
                    }
                    Err(_) => prop_assert!(found > 0 && bare > 0),
                }
            }
            if d == Dialect::Mysql {
                return Ok(());
            }
            for (style, d, sigil) in [
                (PlaceholderStyle::Sqlite, Dialect::Sqlite, b'$'),
                (PlaceholderStyle::Postgres, Dialect::Postgres, b'?'),
            ] {
                let out = translate_placeholders(&sql, style);
                prop_assert_eq!(out.len(), sql.len());
                let sigils: Vec<usize> = tokens(&sql, d)
                    .filter(|t| t.kind == Kind::Placeholder && sql.as_bytes()[t.start] == sigil)
                    .map(|t| t.start)
                    .collect();
                prop_assert_eq!(changed(&sql, &out), sigils);
                prop_assert_eq!(spans(&sql, d), spans(&out, d));
            }
            if spans(&sql, Dialect::Sqlite) == spans(&sql, Dialect::Postgres) {
                let there = translate_placeholders(&sql, PlaceholderStyle::Sqlite);
                prop_assert_eq!(translate_placeholders(&there, PlaceholderStyle::Postgres), sql.clone());
            }
        }
    }
}
