//! Property tests for `sql_middleware::translation`.
//!
//! SQL statements are built from random fragments whose expected translation
//! is known in advance (placeholders at top level vs. inside literals,
//! comments, quoted identifiers and dollar-quoted bodies), so the translator's
//! output can be compared against an exact model. Translation reads SQL the way
//! the target engine's lexer does, so each direction is checked on the quoting
//! forms its engine has: SQLite's backticks, brackets and flat comments; the
//! escape strings, nesting comments and dollar quotes of PostgreSQL.

use std::borrow::Cow;

use proptest::prelude::*;
use sql_middleware::translation::{PlaceholderStyle, translate_placeholders};

/// One piece of generated SQL with its expected translations.
#[derive(Debug, Clone)]
struct Frag {
    /// Input text.
    sql: String,
    /// Expected output when translating to `PlaceholderStyle::Sqlite`.
    to_sqlite: String,
    /// Expected output when translating to `PlaceholderStyle::Postgres`.
    to_postgres: String,
    /// Whether the fragment contains a top-level `?N` or bare `?` that would
    /// make the `$N -> ?N -> $N` round trip ambiguous.
    has_top_level_question: bool,
}

impl Frag {
    fn same(sql: String) -> Self {
        Self {
            to_sqlite: sql.clone(),
            to_postgres: sql.clone(),
            sql,
            has_top_level_question: false,
        }
    }
}

/// Random text for literal/comment contents: arbitrary unicode mixed with
/// placeholder look-alikes and SQL-special characters.
fn content() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => "\\PC{0,6}",
        2 => Just("$1".to_owned()),
        2 => Just("?1".to_owned()),
        1 => (1u32..100).prop_map(|n| format!(" ${n}")),
        1 => (1u32..100).prop_map(|n| format!(" ?{n}")),
        1 => Just("'".to_owned()),
        1 => Just("\"".to_owned()),
        1 => Just("`".to_owned()),
        1 => Just("\\".to_owned()),
        1 => Just("$$".to_owned()),
        1 => Just("--".to_owned()),
        1 => Just("/*".to_owned()),
        1 => Just("*/".to_owned()),
        1 => Just("[".to_owned()),
        1 => Just("]".to_owned()),
        1 => Just("\n".to_owned()),
        1 => Just("é日🎉".to_owned()),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|v| v.concat())
}

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z_][a-zA-Z0-9_]{0,7}",
        "[a-zé日_][a-z0-9é日_]{0,5}",
        Just("SELECT".to_owned()),
        Just("E".to_owned()),
        Just("e".to_owned()),
        Just("arr".to_owned()),
    ]
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (1u32..10).prop_map(|n| n.to_string()),
        (10u32..100_000).prop_map(|n| n.to_string()),
        Just("0".to_owned()),
        Just("007".to_owned()),
    ]
}

fn dollar_placeholder() -> impl Strategy<Value = Frag> {
    number().prop_map(|n| Frag {
        sql: format!("${n}"),
        to_sqlite: format!("?{n}"),
        to_postgres: format!("${n}"),
        has_top_level_question: false,
    })
}

fn question_placeholder() -> impl Strategy<Value = Frag> {
    number().prop_map(|n| Frag {
        sql: format!("?{n}"),
        to_sqlite: format!("?{n}"),
        to_postgres: format!("${n}"),
        has_top_level_question: true,
    })
}

/// A placeholder glued to an identifier (`foo$1`, `foo?1`): never translated.
fn glued_placeholder() -> impl Strategy<Value = Frag> {
    (word(), prop_oneof![Just('$'), Just('?')], number())
        .prop_map(|(w, sigil, n)| Frag::same(format!("{w}{sigil}{n}")))
}

fn single_quoted() -> impl Strategy<Value = Frag> {
    content().prop_map(|c| Frag::same(format!("'{}'", c.replace('\'', "''"))))
}

fn escape_string() -> impl Strategy<Value = Frag> {
    (prop_oneof![Just('E'), Just('e')], content(), any::<bool>()).prop_map(
        |(prefix, c, doubled)| {
            let quote = if doubled { "''" } else { "\\'" };
            let body = c.replace('\\', "\\\\").replace('\'', quote);
            Frag::same(format!("{prefix}'{body}'"))
        },
    )
}

fn double_quoted() -> impl Strategy<Value = Frag> {
    content().prop_map(|c| Frag::same(format!("\"{}\"", c.replace('"', "\"\""))))
}

fn backticked() -> impl Strategy<Value = Frag> {
    content().prop_map(|c| Frag::same(format!("`{}`", c.replace('`', "``"))))
}

/// `name[...]`: a bracketed identifier for SQLite, a subscript for Postgres
/// (where `?N` inside is translated).
fn bracketed(allow_question: bool) -> impl Strategy<Value = Frag> {
    let inner = if allow_question {
        prop_oneof![
            word().prop_map(Frag::same),
            dollar_placeholder(),
            question_placeholder(),
        ]
        .boxed()
    } else {
        prop_oneof![word().prop_map(Frag::same), dollar_placeholder()].boxed()
    };
    (
        prop_oneof![Just(String::new()), word()],
        prop::collection::vec(inner, 0..4),
    )
        .prop_map(|(name, parts)| {
            let join = |f: fn(&Frag) -> &str| parts.iter().map(f).collect::<Vec<_>>().join(" ");
            let sql_inner = join(|p| &p.sql);
            let pg_inner = join(|p| &p.to_postgres);
            Frag {
                sql: format!("{name}[{sql_inner}]"),
                // Bracketed identifier: untouched for SQLite.
                to_sqlite: format!("{name}[{sql_inner}]"),
                to_postgres: format!("{name}[{pg_inner}]"),
                has_top_level_question: parts.iter().any(|p| p.has_top_level_question),
            }
        })
}

fn line_comment() -> impl Strategy<Value = Frag> {
    content().prop_map(|c| Frag::same(format!("--{}\n", c.replace(['\n', '\r'], " "))))
}

/// Text that can sit inside a block comment without opening or closing one.
fn comment_text() -> impl Strategy<Value = String> {
    content().prop_map(|c| c.replace(['*', '/'], " "))
}

/// A comment without `/*` or `*/` inside: both engines read it alike.
fn flat_comment() -> impl Strategy<Value = Frag> {
    comment_text().prop_map(|c| Frag::same(format!("/*{c}*/")))
}

/// A SQLite comment: it ends at the first `*/`, so `/*` inside opens nothing.
fn sqlite_comment() -> impl Strategy<Value = Frag> {
    (comment_text(), comment_text()).prop_map(|(a, b)| Frag::same(format!("/*{a}/*{b}*/")))
}

/// A PostgreSQL comment, nested comments inside.
fn block_comment() -> impl Strategy<Value = Frag> {
    let leaf = comment_text().prop_map(|c| format!("/*{c}*/"));
    let nested = leaf.prop_recursive(3, 16, 4, |inner| {
        (
            comment_text(),
            prop::collection::vec(inner, 0..3),
            comment_text(),
        )
            .prop_map(|(a, kids, b)| format!("/*{a}{}{b}*/", kids.concat()))
    });
    nested.prop_map(Frag::same)
}

fn dollar_quoted() -> impl Strategy<Value = Frag> {
    let tag = prop_oneof![
        Just(""),
        Just("fn"),
        Just("body"),
        Just("_t1"),
        Just("ü"),
        Just("tag_ü2"),
    ];
    (tag, content()).prop_filter_map("body contains closing delimiter", |(tag, body)| {
        let delim = format!("${tag}$");
        // The body must end exactly where the closing delimiter starts.
        (format!("{body}{delim}").find(&delim) == Some(body.len()))
            .then(|| Frag::same(format!("{delim}{body}{delim}")))
    })
}

fn bare_question() -> impl Strategy<Value = Frag> {
    prop_oneof![Just("?"), Just("?|"), Just("?&")].prop_map(|s| Frag {
        has_top_level_question: true,
        ..Frag::same(s.to_owned())
    })
}

/// Which engine's lexer a generated statement is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lexer {
    /// SQLite's quoting forms (backticks, flat comments).
    Sqlite,
    /// PostgreSQL's (escape strings, nesting comments, dollar quotes).
    Postgres,
    /// Only the forms both read alike, for the round trip.
    Both,
}

/// A random fragment for `lexer`; without `allow_question`, no top-level `?N`
/// or bare `?` is generated (for the round-trip property).
fn fragment(lexer: Lexer, allow_question: bool) -> BoxedStrategy<Frag> {
    let shared = prop_oneof![
        3 => word().prop_map(Frag::same),
        4 => dollar_placeholder(),
        1 => glued_placeholder(),
        2 => single_quoted(),
        1 => double_quoted(),
        1 => backticked(),
        1 => line_comment(),
        1 => flat_comment(),
    ];
    let common = match lexer {
        Lexer::Sqlite => prop_oneof![
            12 => shared,
            1 => bracketed(allow_question),
            1 => sqlite_comment(),
        ]
        .boxed(),
        Lexer::Postgres => prop_oneof![
            12 => shared,
            1 => bracketed(allow_question),
            1 => escape_string(),
            1 => block_comment(),
            1 => dollar_quoted(),
        ]
        .boxed(),
        Lexer::Both => shared.boxed(),
    };
    if allow_question {
        prop_oneof![
            16 => common,
            3 => question_placeholder(),
            1 => bare_question(),
        ]
        .boxed()
    } else {
        common.boxed()
    }
}

/// Separators between fragments; none is an identifier character, so a
/// placeholder after a separator is always a real placeholder.
fn separator() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just(" "),
        Just("\n"),
        Just("("),
        Just(")"),
        Just(","),
        Just("="),
        Just(" + "),
        Just(" :: "),
        Just("\t"),
    ]
}

/// A statement for `lexer` built from fragments, with its expected translations.
fn statement(lexer: Lexer) -> impl Strategy<Value = Frag> {
    statement_with(lexer, true)
}

/// A statement both engines read alike, without top-level `?N` or bare `?`.
fn statement_without_question() -> impl Strategy<Value = Frag> {
    statement_with(Lexer::Both, false)
}

fn statement_with(lexer: Lexer, allow_question: bool) -> impl Strategy<Value = Frag> {
    prop::collection::vec((separator(), fragment(lexer, allow_question)), 0..12).prop_map(|parts| {
        let mut out = Frag::same(String::new());
        for (sep, frag) in parts {
            for (dst, src) in [
                (&mut out.sql, &frag.sql),
                (&mut out.to_sqlite, &frag.to_sqlite),
                (&mut out.to_postgres, &frag.to_postgres),
            ] {
                dst.push_str(sep);
                dst.push_str(src);
            }
            out.has_top_level_question |= frag.has_top_level_question;
        }
        out
    })
}

/// Property 1: same length, and differences only at translated sigils that
/// are followed by an ASCII digit. Also: borrowed iff unchanged.
fn check_only_sigils_change(input: &str, to: PlaceholderStyle) -> Result<(), TestCaseError> {
    let (from, into) = match to {
        PlaceholderStyle::Sqlite => (b'$', b'?'),
        PlaceholderStyle::Postgres => (b'?', b'$'),
        other => unreachable!("no property for {other:?} yet"),
    };
    let out = translate_placeholders(input, to);
    prop_assert_eq!(out.len(), input.len());
    let (a, b) = (input.as_bytes(), out.as_bytes());
    for i in 0..a.len() {
        if a[i] != b[i] {
            prop_assert_eq!(a[i], from, "changed non-sigil at {} in {:?}", i, input);
            prop_assert_eq!(b[i], into);
            prop_assert!(
                a.get(i + 1).is_some_and(u8::is_ascii_digit),
                "sigil at {} not followed by a digit in {:?}",
                i,
                input
            );
        }
    }
    match &out {
        Cow::Borrowed(s) => prop_assert!(std::ptr::eq(*s, input)),
        Cow::Owned(s) => prop_assert_ne!(s.as_str(), input, "allocated without a change"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn only_sigils_change_on_generated_sql(
        stmt in prop_oneof![statement(Lexer::Sqlite), statement(Lexer::Postgres)]
    ) {
        check_only_sigils_change(&stmt.sql, PlaceholderStyle::Sqlite)?;
        check_only_sigils_change(&stmt.sql, PlaceholderStyle::Postgres)?;
    }

    #[test]
    fn only_sigils_change_on_arbitrary_text(s in "[ -~\\n]{0,64}|\\PC{0,64}|[$?0-9'\"`\\[\\]/*\\-\\\\Ee ]{0,64}") {
        check_only_sigils_change(&s, PlaceholderStyle::Sqlite)?;
        check_only_sigils_change(&s, PlaceholderStyle::Postgres)?;
    }

    #[test]
    fn never_panics_and_preserves_length(s in any::<String>()) {
        for to in [PlaceholderStyle::Sqlite, PlaceholderStyle::Postgres] {
            let out = translate_placeholders(&s, to);
            // `Cow<str>` is valid UTF-8 by construction; check it explicitly anyway.
            prop_assert!(std::str::from_utf8(out.as_bytes()).is_ok());
            prop_assert_eq!(out.len(), s.len());
        }
    }

    #[test]
    fn translates_exactly_the_top_level_placeholders(
        lite_stmt in statement(Lexer::Sqlite),
        pg_stmt in statement(Lexer::Postgres),
    ) {
        let lite = translate_placeholders(&lite_stmt.sql, PlaceholderStyle::Sqlite);
        prop_assert_eq!(lite.as_ref(), lite_stmt.to_sqlite.as_str(), "input: {:?}", lite_stmt.sql);
        let pg = translate_placeholders(&pg_stmt.sql, PlaceholderStyle::Postgres);
        prop_assert_eq!(pg.as_ref(), pg_stmt.to_postgres.as_str(), "input: {:?}", pg_stmt.sql);
    }

    #[test]
    fn round_trip_through_sqlite(stmt in statement_without_question()) {
        prop_assert!(!stmt.has_top_level_question);
        let lite = translate_placeholders(&stmt.sql, PlaceholderStyle::Sqlite);
        let back = translate_placeholders(&lite, PlaceholderStyle::Postgres);
        prop_assert_eq!(back.as_ref(), stmt.sql.as_str());
    }

    #[test]
    fn no_sigils_means_borrowed(
        s in prop_oneof![any::<String>(), statement(Lexer::Postgres).prop_map(|f| f.sql)]
    ) {
        let s: String = s.chars().filter(|&c| c != '$' && c != '?').collect();
        for to in [PlaceholderStyle::Sqlite, PlaceholderStyle::Postgres] {
            match translate_placeholders(&s, to) {
                Cow::Borrowed(b) => prop_assert!(std::ptr::eq(b, s.as_str())),
                Cow::Owned(_) => prop_assert!(false, "allocated for {:?}", s),
            }
        }
    }
}
