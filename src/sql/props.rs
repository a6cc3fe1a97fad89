//! Property tests: every reader of SQL text agrees with the scanner on generated SQL, built from
//! fragments in every quoting form of the dialects.

use proptest::prelude::*;

use super::scanner::{Kind, Lexer, tokens};
use super::script::{
    changes_schema, ends_or_starts_transaction, has_transaction_control, is_blank,
    plain_dml_at_a_glance, statements,
};

/// Fragments in which `;`, transaction keywords and placeholder look-alikes are protected, in
/// the quoting forms `d` reads.
fn protected(d: Lexer) -> impl Strategy<Value = String> {
    let inner = prop_oneof![
        Just("COMMIT".to_owned()),
        Just("BEGIN".to_owned()),
        Just("END;".to_owned()),
        Just(";".to_owned()),
        Just("$1".to_owned()),
        Just("?2".to_owned()),
        Just("ROLLBACK".to_owned()),
        Just("*/".to_owned()),
        "[a-z ]{0,4}",
    ];
    (0..10u8, inner).prop_map(move |(form, x)| {
        let no_close = x.replace("*/", "* /");
        match (d, form) {
            (_, 0) => format!("'{}'", x.replace('\'', "''")),
            (_, 1) => format!("'it''s {x}'"),
            (_, 2) => format!("\"{x}\"\"q\""),
            (_, 3) => format!("-- {x}\n"),
            (_, 4) => format!("/* {no_close} */"),
            (Lexer::Plain, 5) => format!("`{x}`"),
            (Lexer::Plain, 6) => format!("[{}]", x.replace(']', "")),
            // Plain comments do not nest: the first `*/` ends this one.
            (Lexer::Plain, _) => format!("/* {no_close} /* {no_close} */"),
            (Lexer::DollarQuotes | Lexer::DollarQuotesBackslashStrings, 5) => {
                format!("E'\\'{x}\\\\'")
            }
            (Lexer::DollarQuotes | Lexer::DollarQuotesBackslashStrings, 6) => {
                format!("/* {no_close} /* {no_close} */ {no_close} */")
            }
            (Lexer::DollarQuotes | Lexer::DollarQuotesBackslashStrings, 7) => format!("$$ {x} $$"),
            // With `standard_conforming_strings` off a backslash escapes in a plain string too:
            // this one does not end at the quote after one.
            // (Spaced: glued to a string before it, its quote would double that one's.)
            (Lexer::DollarQuotesBackslashStrings, 8) => format!(" 'it\\'s {x}\\\\' "),
            // With it on, a backslash is a plain byte: this string ends at the quote after one.
            (Lexer::DollarQuotes, 8) => format!(" 'C:\\ {x}\\' "),
            (Lexer::DollarQuotes | Lexer::DollarQuotesBackslashStrings, _) => {
                format!("$body$ {x} $$ {x} $body$")
            }
            (Lexer::Backslashes(_), 5) => format!("`{x}`"),
            // Under `NO_BACKSLASH_ESCAPES` a backslash is a plain byte: this string ends at the
            // quote right after one.
            (Lexer::Backslashes(q), 6) if q.no_backslash_escapes => format!("'C:\\ {x}\\'"),
            (Lexer::Backslashes(_), 6) => format!("'it\\'s {x}\\\\'"),
            (Lexer::Backslashes(_), 7) => format!("# {x}\n"),
            // Under `ANSI_QUOTES` this is an identifier, which ends at the quote after a backslash.
            (Lexer::Backslashes(q), 8) if q.ansi_quotes => format!("\"{x}\\\""),
            // Nor do these.
            (Lexer::Backslashes(_), _) => format!("/* {no_close} /* {no_close} */"),
        }
    })
}

/// A statement with protected fragments and real placeholders, never transaction control.
fn plain_statement(d: Lexer) -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => protected(d),
        2 => (1..40u32).prop_map(|n| format!(" ${n} ")),
        1 => Just(" x$1 ".to_owned()),
        1 => Just(" a[1] ".to_owned()),
        1 => Just(" + ".to_owned()),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|v| format!("SELECT 1 {}", v.concat()))
}

/// A routine whose body holds `;`, `BEGIN`, `COMMIT` and `END` that are not statements.
fn routine(d: Lexer) -> BoxedStrategy<String> {
    let trigger = "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET a = CASE WHEN 1 THEN 2 END; DELETE FROM u; END";
    match d {
        Lexer::Plain | Lexer::Backslashes(_) => Just(trigger.to_owned()).boxed(),
        Lexer::DollarQuotes | Lexer::DollarQuotesBackslashStrings => prop_oneof![
            Just(trigger.to_owned()),
            Just("DO $$ BEGIN PERFORM 1; COMMIT; END $$".to_owned()),
            Just(
                "CREATE FUNCTION f() RETURNS int AS $f$ BEGIN RETURN 1; END; $f$ LANGUAGE plpgsql"
                    .to_owned()
            ),
            Just(
                "CREATE PROCEDURE p() LANGUAGE sql BEGIN ATOMIC INSERT INTO t VALUES (1); END"
                    .to_owned()
            ),
        ]
        .boxed(),
    }
}

/// A script in `d` of plain statements and routines, with blank statements and comments
/// between.
pub(crate) fn script_in(d: Lexer) -> impl Strategy<Value = String> {
    let stmt = prop_oneof![
        4 => plain_statement(d),
        1 => routine(d),
        1 => Just(" -- c\n".to_owned()),
    ];
    prop::collection::vec(stmt, 1..6).prop_map(|v| v.join(";\n"))
}

/// The backslash engines' lexer under each combination of the quote modes.
pub(crate) fn backslash_lexer() -> impl Strategy<Value = Lexer> {
    (any::<bool>(), any::<bool>()).prop_map(|(no_backslash_escapes, ansi_quotes)| {
        Lexer::Backslashes(super::scanner::QuoteModes {
            no_backslash_escapes,
            ansi_quotes,
        })
    })
}

/// A lexer, and a script in its SQL.
pub(crate) fn script() -> impl Strategy<Value = (Lexer, String)> {
    prop_oneof![
        Just(Lexer::Plain),
        Just(Lexer::DollarQuotes),
        Just(Lexer::DollarQuotesBackslashStrings),
        backslash_lexer()
    ]
    .prop_flat_map(|d| (Just(d), script_in(d)))
}

/// Words and marks that the transaction checks look for, or that start a literal or a comment
/// the rest of a statement would fall into; none is a `;`.
fn risky_word() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        Just("COMMIT"),
        Just("BEGIN"),
        Just("END"),
        Just("ROLLBACK"),
        Just("VACUUM"),
        Just("CONCURRENTLY"),
        Just("INDEX"),
        Just("DATABASE"),
        Just("TABLE"),
        Just("PRAGMA foreign_keys = 0"),
        Just("ATTACH"),
        Just("x"),
        Just("("),
        Just("'"),
        Just("--"),
        Just("/*"),
        Just("*/"),
        Just("$$"),
        Just("\n"),
    ]
}

/// A statement whose first word is DML, transaction control, DDL or a near miss, followed by
/// [`risky_word`]s: what [`plain_dml_at_a_glance`] must judge.
fn glance_case() -> impl Strategy<Value = String> {
    (
        prop_oneof![
            Just("SELECT"),
            Just("insert"),
            Just("Update"),
            Just("delete"),
            Just("COMMIT"),
            Just("begin"),
            Just("VACUUM"),
            Just("CREATE"),
            Just("ATTACH"),
            Just("selects"),
            Just("WITH"),
        ],
        prop_oneof![Just(" "), Just("\n"), Just("\t "), Just("\r\n")],
        prop::collection::vec(risky_word(), 0..8),
    )
        .prop_map(|(first, space, rest)| format!("{space}{first}{space}{}", rest.join(" ")))
}

/// Whether the first word of `sql` is one of the four DML keywords.
fn first_word_is_dml(sql: &str) -> bool {
    let first = sql.split_ascii_whitespace().next().unwrap_or("");
    ["SELECT", "INSERT", "UPDATE", "DELETE"]
        .iter()
        .any(|k| k.eq_ignore_ascii_case(first))
}

/// For an engine's dialect tests: over generated statements, what passes at a glance is never
/// one that `d`'s rule says must run outside a transaction.
pub(crate) fn glance_passes_no_refused(d: super::Dialect) {
    let mut runner = proptest::test_runner::TestRunner::new(config());
    let checked = runner.run(&glance_case(), |sql| {
        if plain_dml_at_a_glance(&sql) {
            prop_assert!(super::first_outside_tx_only(&sql, d).is_none(), "{:?}", sql);
            prop_assert!(!ends_or_starts_transaction(&sql, d), "{:?}", sql);
        }
        Ok(())
    });
    if let Err(e) = checked {
        panic!("{e}");
    }
}

pub(crate) fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 512,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    /// Statements cover the script exactly, and each ends at a `;` the scanner saw at top level.
    #[test]
    fn statements_concatenate_back((d, sql) in script()) {
        let parts: Vec<&str> = statements(&sql, d).collect();
        prop_assert_eq!(parts.concat(), sql.clone());
        for p in &parts[..parts.len().saturating_sub(1)] {
            prop_assert!(p.ends_with(';'), "{:?}", p);
        }
    }

    /// Keywords only inside literals, identifiers, comments, dollar bodies and routine bodies
    /// are never transaction control; a real `COMMIT` after them always is.
    #[test]
    fn protected_keywords_are_not_transaction_control((d, sql) in script(), casing in 0..3u8) {
        prop_assert!(!has_transaction_control(&sql, d), "{}", sql);
        prop_assert!(!ends_or_starts_transaction(&sql, d), "{}", sql);
        let commit = match casing { 0 => "COMMIT", 1 => "commit", _ => "/* x */ CoMmIt -- y" };
        let with_commit = format!("{sql};\n{commit}");
        prop_assert!(has_transaction_control(&with_commit, d), "{}", with_commit);
        prop_assert!(ends_or_starts_transaction(&with_commit, d), "{}", with_commit);
        let prefixed = format!("SELECT 'CREATE' ; {}", sql);
        prop_assert_eq!(changes_schema(&prefixed, d), changes_schema(&sql, d));
    }

    /// What the hall lets through a `Tx` at a glance starts or ends no transaction, in any
    /// lexer; and every `SELECT`, `INSERT`, `UPDATE` or `DELETE` without a `;` is seen so.
    /// (Each engine's own rule for statements that must run outside a transaction is checked
    /// against the same statements in its dialect's tests, with [`glance_passes_no_refused`].)
    #[test]
    fn plain_at_a_glance_starts_or_ends_no_transaction((d, _) in script(), sql in glance_case()) {
        let dml = first_word_is_dml(&sql);
        prop_assert_eq!(plain_dml_at_a_glance(&sql), dml, "{:?}", sql);
        if dml {
            prop_assert!(!ends_or_starts_transaction(&sql, d), "{:?}", sql);
        }
    }

    /// `is_blank` agrees with the splitter: blank exactly when no statement runs anything.
    #[test]
    fn blank_agrees_with_the_splitter(
        pieces in prop::collection::vec(
            prop_oneof![
                Just(" ".to_owned()), Just(";".to_owned()), Just("-- c\n".to_owned()),
                Just("/* c; */".to_owned()), Just("SELECT 1".to_owned()),
            ],
            0..8,
        ),
        pg in any::<bool>(),
    ) {
        let d = if pg { Lexer::DollarQuotes } else { Lexer::Plain };
        let sql = pieces.concat();
        let any_stmt = statements(&sql, d).any(|s| {
            tokens(s, d).any(|t| !t.kind.is_blank() && t.kind != Kind::Semi)
        });
        prop_assert_eq!(is_blank(&sql, d), !any_stmt, "{:?}", sql);
    }

    /// Tokens cover any input exactly, whatever the bytes.
    #[test]
    fn tokens_cover_any_text(sql in "\\PC{0,40}", pg in any::<bool>()) {
        let d = if pg { Lexer::DollarQuotes } else { Lexer::Plain };
        let mut at = 0;
        for t in tokens(&sql, d) {
            prop_assert_eq!(t.start, at);
            prop_assert!(t.end > t.start);
            at = t.end;
        }
        prop_assert_eq!(at, sql.len());
    }
}
