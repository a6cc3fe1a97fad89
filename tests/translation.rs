//! Placeholder translation by example: each quoting form, each direction, and when the input
//! is borrowed (`tests/translation_props.rs` checks the same against a model on generated SQL).

use std::borrow::Cow;

use PlaceholderStyle::{Postgres, Sqlite};
use sql_middleware::translation::{PlaceholderStyle, TranslationMode, translate_placeholders};

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
    let sql = "INSERT INTO t (a, \"b$1\") VALUES ($1, 'x$2', $3) -- $4\n /* $5 */ RETURNING $10";
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
