//! Property tests: every reader of SQL text agrees with the scanner on generated SQL, built from
//! fragments in every quoting form of the three dialects.

use proptest::prelude::*;

use super::scanner::{Dialect, Kind, tokens};
use super::script::{
    changes_schema, ends_or_starts_transaction, has_transaction_control, is_blank, statements,
};

/// Fragments in which `;`, transaction keywords and placeholder look-alikes are protected.
fn protected() -> impl Strategy<Value = String> {
    let inner = prop_oneof![
        Just("COMMIT".to_owned()),
        Just("BEGIN".to_owned()),
        Just("END;".to_owned()),
        Just(";".to_owned()),
        Just("$1".to_owned()),
        Just("?2".to_owned()),
        Just("ROLLBACK".to_owned()),
        "[a-z ]{0,4}",
    ];
    (0..9u8, inner).prop_map(|(form, x)| match form {
        0 => format!("'{}'", x.replace('\'', "''")),
        1 => format!("'it''s {x}'"),
        2 => format!("E'\\'{x}\\\\'"),
        3 => format!("\"{x}\"\"q\""),
        4 => format!("`{x}`"),
        5 => format!("/* {x} /* {x} */ {x} */"),
        6 => format!("-- {x}\n"),
        7 => format!("$$ {x} $$"),
        _ => format!("$body$ {x} $$ {x} $body$"),
    })
}

/// A statement with protected fragments and real placeholders, never transaction control.
fn plain_statement() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        3 => protected(),
        2 => (1..40u32).prop_map(|n| format!(" ${n} ")),
        1 => Just(" x$1 ".to_owned()),
        1 => Just(" a[1] ".to_owned()),
        1 => Just(" + ".to_owned()),
    ];
    prop::collection::vec(piece, 0..6).prop_map(|v| format!("SELECT 1 {}", v.concat()))
}

/// A routine whose body holds `;`, `BEGIN`, `COMMIT` and `END` that are not statements.
fn routine() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET a = CASE WHEN 1 THEN 2 END; DELETE FROM u; END".to_owned()),
        Just("DO $$ BEGIN PERFORM 1; COMMIT; END $$".to_owned()),
        Just("CREATE FUNCTION f() RETURNS int AS $f$ BEGIN RETURN 1; END; $f$ LANGUAGE plpgsql".to_owned()),
        Just("CREATE PROCEDURE p() LANGUAGE sql BEGIN ATOMIC INSERT INTO t VALUES (1); END".to_owned()),
    ]
}

/// A script of plain statements and routines, with blank statements and comments between.
pub(crate) fn script() -> impl Strategy<Value = String> {
    let stmt = prop_oneof![4 => plain_statement(), 1 => routine(), 1 => Just(" -- c\n".to_owned())];
    prop::collection::vec(stmt, 1..6).prop_map(|v| v.join(";\n"))
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
    fn statements_concatenate_back(sql in script()) {
        let parts: Vec<&str> = statements(&sql).collect();
        prop_assert_eq!(parts.concat(), sql.clone());
        for p in &parts[..parts.len().saturating_sub(1)] {
            prop_assert!(p.ends_with(';'), "{:?}", p);
        }
    }

    /// Keywords only inside literals, identifiers, comments, dollar bodies and routine bodies
    /// are never transaction control; a real `COMMIT` after them always is.
    #[test]
    fn protected_keywords_are_not_transaction_control(sql in script(), casing in 0..3u8) {
        prop_assert!(!has_transaction_control(&sql), "{}", sql);
        prop_assert!(!ends_or_starts_transaction(&sql), "{}", sql);
        let commit = match casing { 0 => "COMMIT", 1 => "commit", _ => "/* x */ CoMmIt -- y" };
        let with_commit = format!("{sql};\n{commit}");
        prop_assert!(has_transaction_control(&with_commit), "{}", with_commit);
        prop_assert!(ends_or_starts_transaction(&with_commit), "{}", with_commit);
        let prefixed = format!("SELECT 'CREATE' ; {}", sql);
        prop_assert_eq!(changes_schema(&prefixed), changes_schema(&sql));
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
        )
    ) {
        let sql = pieces.concat();
        let any_stmt = statements(&sql).any(|s| {
            tokens(s, Dialect::Sqlite).any(|t| !t.kind.is_blank() && t.kind != Kind::Semi)
        });
        prop_assert_eq!(is_blank(&sql), !any_stmt, "{:?}", sql);
    }

    /// Tokens cover any input exactly, whatever the bytes.
    #[test]
    fn tokens_cover_any_text(sql in "\\PC{0,40}", pg in any::<bool>()) {
        let d = if pg { Dialect::Postgres } else { Dialect::Sqlite };
        let mut at = 0;
        for t in tokens(&sql, d) {
            prop_assert_eq!(t.start, at);
            prop_assert!(t.end > t.start);
            at = t.end;
        }
        prop_assert_eq!(at, sql.len());
    }
}
