//! Reading scripts through the scanner: where statements end, and what kind each one is.
//!
//! A statement ends at a top-level `;`: not one inside a literal, identifier, comment or
//! dollar-quoted body, and not one inside the `BEGIN … END` body of a `CREATE TRIGGER` or of a
//! `CREATE FUNCTION`/`PROCEDURE … BEGIN ATOMIC … END` (with `CASE … END` inside counted), as
//! SQLite's `sqlite3_complete` and PostgreSQL's parser read them.
//!
//! Every function reads the text in the dialect of the engine that will run it, so a `;` or a
//! keyword is where the engine sees one: SQLite's block comments do not nest and it has no
//! dollar quotes; PostgreSQL's `[` opens a subscript, not an identifier.

use super::scanner::{Kind, Lexer, Token, Tokens, tokens};

/// The statements of `sql`, each with its terminating `;` when it has one; concatenated they
/// give `sql` back.
pub(crate) fn statements(sql: &str, d: impl Into<Lexer>) -> Statements<'_> {
    Statements {
        sql,
        toks: tokens(sql, d),
        start: 0,
    }
}

/// An iterator over the statements of a script; see [`statements`].
#[derive(Debug, Clone)]
pub(crate) struct Statements<'a> {
    sql: &'a str,
    toks: Tokens<'a>,
    start: usize,
}

impl<'a> Iterator for Statements<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.start >= self.sql.len() {
            return None;
        }
        let mut body = Body::default();
        for t in self.toks.by_ref() {
            match t.kind {
                Kind::Word => body.word(&self.sql[t.start..t.end]),
                Kind::Semi if body.depth == 0 => {
                    let s = &self.sql[self.start..t.end];
                    self.start = t.end;
                    return Some(s);
                }
                _ => {}
            }
        }
        let s = &self.sql[self.start..];
        self.start = self.sql.len();
        Some(s)
    }
}

/// What a statement's words say about its block structure so far.
#[derive(Debug, Default)]
struct Body {
    /// Significant words seen, up to the fourth (enough for `CREATE OR REPLACE FUNCTION`,
    /// `CREATE TEMP TRIGGER`).
    seen: usize,
    creates: bool,
    /// A `CREATE TRIGGER`, `FUNCTION` or `PROCEDURE`: its `BEGIN … END` body holds `;`.
    routine: bool,
    /// Open `BEGIN` blocks of the routine's body.
    depth: usize,
    /// Open `CASE` expressions inside it (their `END` closes them, not the body).
    cases: usize,
}

impl Body {
    fn word(&mut self, w: &str) {
        if self.seen < 4 {
            if self.seen == 0 {
                self.creates = w.eq_ignore_ascii_case("CREATE");
            } else if self.creates
                && ["TRIGGER", "FUNCTION", "PROCEDURE"]
                    .iter()
                    .any(|k| k.eq_ignore_ascii_case(w))
            {
                self.routine = true;
            }
            self.seen += 1;
        }
        if !self.routine {
            return;
        }
        if w.eq_ignore_ascii_case("BEGIN") {
            self.depth += 1;
        } else if w.eq_ignore_ascii_case("CASE") && self.depth > 0 {
            self.cases += 1;
        } else if w.eq_ignore_ascii_case("END") {
            if self.cases > 0 {
                self.cases -= 1;
            } else {
                self.depth = self.depth.saturating_sub(1);
            }
        }
    }
}

/// The first `n` words of a statement (keywords, in the order written), skipping white space
/// and comments; fewer when the statement has fewer before anything else.
fn leading_words(stmt: &str, n: usize, d: impl Into<Lexer>) -> impl Iterator<Item = &str> {
    tokens(stmt, d)
        .filter(|t| !t.kind.is_blank())
        .take(n)
        .take_while(|t| t.kind == Kind::Word)
        .map(move |t: Token| &stmt[t.start..t.end])
}

fn is_any(w: &str, set: &[&str]) -> bool {
    set.iter().any(|k| k.eq_ignore_ascii_case(w))
}

/// True when `sql` is, at a glance of its bytes, one `SELECT`, `INSERT`, `UPDATE` or `DELETE`:
/// it holds no `;` byte, so it is one statement whatever its literals and comments hold, and its
/// first word, after ASCII white space, is one of those keywords followed by white space. Such a
/// statement neither starts nor ends a transaction nor has to run outside one on any engine
/// ([`ends_or_starts_transaction`], [`super::first_outside_tx_only`]), so the hall skips those
/// scans for it inside a `Tx`: they cost some 9,000 instructions per statement of ordinary
/// length. `false` says nothing: the scans then decide.
#[inline]
pub(crate) fn plain_dml_at_a_glance(sql: &str) -> bool {
    let b = sql.as_bytes();
    let Some(start) = b.iter().position(|c| !c.is_ascii_whitespace()) else {
        return false;
    };
    // Each of the four keywords has six letters.
    let (Some(word), Some(after)) = (b.get(start..start + 6), b.get(start + 6)) else {
        return false;
    };
    // The first letter picks the one keyword to compare with. Every keyword byte is a lowercase
    // letter, and only that letter and its capital give it when the case bit (0x20) is set.
    let keyword: &[u8; 6] = match word[0] | 0x20 {
        b's' => b"select",
        b'i' => b"insert",
        b'u' => b"update",
        b'd' => b"delete",
        _ => return false,
    };
    after.is_ascii_whitespace()
        && word.iter().zip(keyword).all(|(c, k)| c | 0x20 == *k)
        && !has_semicolon(&b[start + 6..])
}

/// True when `b` holds a `;` byte. Sixteen bytes at a time, with no early exit inside a block,
/// which the optimiser compiles to one vector compare per block; the bytes after the last whole
/// block are read as part of the last sixteen. `<[u8]>::contains` goes through a general
/// `memchr` that costs several times as much on text of a statement's length (about 150
/// instructions on 80 bytes).
#[inline]
fn has_semicolon(b: &[u8]) -> bool {
    let block = |s: &[u8]| s.iter().fold(false, |seen, &c| seen | (c == b';'));
    let Some(last) = b.rchunks_exact(16).next() else {
        return b.contains(&b';');
    };
    b.chunks_exact(16).any(block) || block(last)
}

/// True when `sql` holds no statement at all: only white space, comments and `;`.
#[inline]
pub(crate) fn is_blank(sql: &str, d: impl Into<Lexer>) -> bool {
    // A letter cannot start a comment, a literal or a `;`: such text holds a statement. This
    // answers the usual case (every per-call query passes here) without starting the scanner,
    // or even reading the dialect.
    let first = sql.bytes().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| b.is_ascii_alphabetic()) {
        return false;
    }
    only_blank_tokens(sql, d.into())
}

/// The rest of [`is_blank`]: every token is blank or a `;`.
fn only_blank_tokens(sql: &str, d: Lexer) -> bool {
    tokens(sql, d).all(|t| t.kind.is_blank() || t.kind == Kind::Semi)
}

/// True when some statement of `sql` starts with a transaction-control keyword (`BEGIN`,
/// `START`, `COMMIT`, `END`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`, `ABORT`, or PostgreSQL's
/// `PREPARE TRANSACTION`): the script manages its own transaction. Keywords inside literals,
/// identifiers, comments, dollar-quoted bodies and routine bodies do not count.
pub(crate) fn has_transaction_control(sql: &str, d: impl Into<Lexer>) -> bool {
    let d: Lexer = d.into();
    statements(sql, d).any(|s| {
        let mut w = leading_words(s, 2, d);
        match w.next() {
            Some(first) if is_any(first, &["PREPARE"]) => w
                .next()
                .is_some_and(|x| x.eq_ignore_ascii_case("TRANSACTION")),
            Some(first) => is_any(
                first,
                &[
                    "BEGIN",
                    "START",
                    "COMMIT",
                    "END",
                    "ROLLBACK",
                    "SAVEPOINT",
                    "RELEASE",
                    "ABORT",
                ],
            ),
            None => false,
        }
    })
}

/// True when a statement of `sql` starts or ends a transaction (`BEGIN`, `START`, `COMMIT`,
/// `END`, `ABORT`, `ROLLBACK` other than `ROLLBACK [TRANSACTION|WORK] TO`, `PREPARE
/// TRANSACTION`). Savepoints are not counted: they are fine inside a transaction.
pub(crate) fn ends_or_starts_transaction(sql: &str, d: impl Into<Lexer>) -> bool {
    let d: Lexer = d.into();
    statements(sql, d).any(|s| {
        let mut w = leading_words(s, 4, d);
        let Some(first) = w.next() else {
            return false;
        };
        if first.eq_ignore_ascii_case("PREPARE") {
            return w
                .next()
                .is_some_and(|x| x.eq_ignore_ascii_case("TRANSACTION"));
        }
        if !is_any(
            first,
            &["BEGIN", "START", "COMMIT", "END", "ABORT", "ROLLBACK"],
        ) {
            return false;
        }
        if !first.eq_ignore_ascii_case("ROLLBACK") {
            return true;
        }
        // `ROLLBACK TO [SAVEPOINT] x` and `ROLLBACK TRANSACTION|WORK TO …` stay inside.
        let rest: Vec<&str> = w.collect();
        let to_at = match rest.first() {
            Some(x) if is_any(x, &["TRANSACTION", "WORK"]) => 1,
            _ => 0,
        };
        !rest
            .get(to_at)
            .is_some_and(|x| x.eq_ignore_ascii_case("TO"))
    })
}

/// True when some statement of `sql` changes the schema (`CREATE`, `DROP`, `ALTER`).
#[cfg(any(feature = "_schema_from_text", test))]
pub(crate) fn changes_schema(sql: &str, d: impl Into<Lexer>) -> bool {
    let d: Lexer = d.into();
    statements(sql, d).any(|s| {
        leading_words(s, 1, d)
            .next()
            .is_some_and(|w| is_any(w, &["CREATE", "DROP", "ALTER"]))
    })
}

/// True when the (first) statement changes rows: `INSERT`, `UPDATE`, `DELETE`, `MERGE`,
/// SQLite's `REPLACE`, also after a `WITH`, so its command count is a number of changed rows
/// rather than of returned rows. Words inside literals and comments do not count.
pub(crate) fn is_dml(sql: &str, d: impl Into<Lexer>) -> bool {
    let d: Lexer = d.into();
    const DML: [&str; 4] = ["INSERT", "UPDATE", "DELETE", "MERGE"];
    let Some(stmt) = statements(sql, d).find(|s| !is_blank(s, d)) else {
        return false;
    };
    let mut words = tokens(stmt, d)
        .filter(|t| t.kind == Kind::Word)
        .map(|t| &stmt[t.start..t.end]);
    match words.next() {
        Some(w) if is_any(w, &DML) || w.eq_ignore_ascii_case("REPLACE") => true,
        Some(w) if w.eq_ignore_ascii_case("WITH") => words.any(|w| is_any(w, &DML)),
        _ => false,
    }
}

/// SQLite's C API silently ignores everything after a NUL byte, so SQL text with one is
/// refused on every backend before it reaches the engine: anywhere, a NUL inside a literal
/// truncates the statement just the same.
pub(crate) fn reject_nul(sql: &str) -> crate::error::Result<()> {
    if sql.as_bytes().contains(&0) {
        Err(crate::error::SqlMiddlewareDbError::nul_in_sql())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Lexer::{DollarQuotes as Pg, Plain as Lite};

    #[test]
    fn plain_dml_is_seen_at_a_glance() {
        for sql in [
            "SELECT 1",
            " \n\tselect * from t",
            "UPDATE t SET a = 1 WHERE id = $1",
            "insert into t values (?1)",
            "DELETE\nFROM t",
        ] {
            assert!(plain_dml_at_a_glance(sql), "{sql:?}");
        }
        // Not at a glance: the scans decide.
        for sql in [
            "SELECT 1; COMMIT",
            "SELECT ';'",
            "SELECT(1)",
            "SELECTED x",
            "/* c */ SELECT 1",
            "WITH x AS (SELECT 1) SELECT * FROM x",
            "COMMIT",
            "BEGIN",
            "VACUUM",
            "select",
            "",
        ] {
            assert!(!plain_dml_at_a_glance(sql), "{sql:?}");
        }
    }

    #[test]
    fn semicolon_found_at_every_place_of_a_block() {
        for len in 0..=50 {
            let plain = vec![b'x'; len];
            assert!(!has_semicolon(&plain), "{len}");
            for at in 0..len {
                let mut b = plain.clone();
                b[at] = b';';
                assert!(has_semicolon(&b), "{len} {at}");
            }
        }
    }

    #[test]
    fn keywords_are_matched_in_any_case_and_nothing_else() {
        for sql in [
            "sElEcT 1",
            "INSERT\tINTO t VALUES (1)",
            "uPDATE t SET a = 1",
        ] {
            assert!(plain_dml_at_a_glance(sql), "{sql:?}");
        }
        // Bytes that differ from a keyword's letter in bit 0x40 rather than the case bit, and
        // non-ASCII text.
        for sql in [
            "SELEC\u{14} 1",
            "\u{13}ELECT 1",
            "SELECTé",
            "ÉPDATE t",
            "DELET\u{5} x",
        ] {
            assert!(!plain_dml_at_a_glance(sql), "{sql:?}");
        }
    }

    #[test]
    fn blank_and_multiple() {
        for d in [Lite, Pg] {
            assert!(is_blank("  ; -- x\n /* y */ ;", d));
            assert!(!is_blank(" SELECT 1", d));
        }
        assert_eq!(statements("DO $$ BEGIN PERFORM 1; END $$;", Pg).count(), 1);
    }

    #[test]
    fn transaction_boundaries() {
        for d in [Lite, Pg] {
            let t = |sql| ends_or_starts_transaction(sql, d);
            assert!(t("BEGIN"));
            assert!(t("INSERT INTO x VALUES (1); COMMIT"));
            assert!(t("rollback"));
            assert!(t("/* c */ CoMmIt -- x"));
            assert!(t("PREPARE TRANSACTION 'x'"));
            assert!(!t("ROLLBACK TO sp1"));
            assert!(!t("rollback transaction to savepoint sp1"));
            assert!(!t("SAVEPOINT a; RELEASE a"));
            assert!(!t("SELECT 'BEGIN'"));
            assert!(!t(
                "CREATE TRIGGER tr AFTER INSERT ON t BEGIN UPDATE t SET a = 1; END"
            ));
            assert!(!t("PREPARE q AS SELECT 1"));
        }
        let t = |sql| ends_or_starts_transaction(sql, Pg);
        assert!(!t("DO $$ BEGIN PERFORM 1; END $$"));
        assert!(!t("DO $body$ BEGIN COMMIT; END $body$"));
        assert!(!t(
            "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END"
        ));
    }

    /// Where the engines' lexers differ, each dialect reads as its engine does, so control the
    /// engine would run is never hidden from the bookkeeping.
    #[test]
    fn each_dialect_reads_as_its_engine() {
        // SQLite's comments do not nest: COMMIT runs there; PostgreSQL's do: it is a comment.
        let nested = "/* a /* b */ COMMIT; /* c */";
        assert!(ends_or_starts_transaction(nested, Lite));
        assert!(!ends_or_starts_transaction(
            "/* a /* b */ COMMIT; /* c */ */",
            Pg
        ));
        // PostgreSQL's `[` is a subscript: the quote inside it is a string, and COMMIT runs.
        let subscript = "SELECT ARRAY[']']; COMMIT; SELECT ']'";
        assert!(ends_or_starts_transaction(subscript, Pg));
        // SQLite has no dollar quotes or E-strings.
        assert!(ends_or_starts_transaction("SELECT $$; COMMIT; $$", Lite));
        assert!(!ends_or_starts_transaction("SELECT $$; COMMIT; $$", Pg));
        assert!(ends_or_starts_transaction(
            "SELECT E'\\'; COMMIT; --'",
            Lite
        ));
        assert!(!ends_or_starts_transaction("SELECT E'\\'; COMMIT; --'", Pg));
    }

    #[test]
    fn routine_bodies_are_one_statement() {
        for d in [Lite, Pg] {
            let sql = "CREATE TRIGGER tr AFTER INSERT ON t BEGIN \
                       UPDATE t SET a = CASE WHEN new.a > 0 THEN 1 ELSE 0 END; \
                       DELETE FROM u; END; SELECT 1";
            let parts: Vec<&str> = statements(sql, d).collect();
            assert_eq!(parts.len(), 2, "{parts:?}");
            assert!(parts[0].ends_with("END;"));
            assert_eq!(parts.concat(), sql);
            let sql = "CREATE TEMP TRIGGER tr BEFORE DELETE ON t BEGIN SELECT 1; END;COMMIT";
            assert_eq!(statements(sql, d).count(), 2);
            assert!(has_transaction_control(sql, d));
        }
    }

    #[test]
    fn dml_detection() {
        for d in [Lite, Pg] {
            assert!(is_dml("INSERT INTO t VALUES (1)", d));
            assert!(is_dml("  update t set a = 1", d));
            assert!(is_dml("-- note\nWITH x AS (SELECT 1) DELETE FROM t", d));
            assert!(is_dml("REPLACE INTO t VALUES (1)", d));
            assert!(!is_dml("SELECT * FROM inserts", d));
            assert!(!is_dml("WITH x AS (SELECT 'DELETE') SELECT * FROM x", d));
            assert!(!is_dml("SELECT replace(a, 'b', 'c') FROM t", d));
        }
    }

    #[test]
    fn finds_statement_leading_keywords_only() {
        for d in [Lite, Pg] {
            let h = |sql| has_transaction_control(sql, d);
            assert!(h("BEGIN; INSERT INTO t VALUES (1); COMMIT;"));
            assert!(h("insert into t values (1);\n  commit"));
            assert!(h("-- c\nsavepoint a"));
            assert!(!h("CREATE TABLE t (began TEXT, commit_id INT)"));
            assert!(!h("INSERT INTO t VALUES ('BEGIN'); SELECT 'x;commit'"));
            assert!(!h("/* BEGIN */ SELECT 1"));
            assert!(!h("SELECT CASE WHEN 1 THEN 2 END"));
        }
        assert!(!has_transaction_control(
            "SELECT \"commit\" FROM [begin]; SELECT `end`",
            Lite
        ));
        assert!(!has_transaction_control("SELECT E'\\';COMMIT;'", Pg));
    }

    #[test]
    fn schema_changes() {
        for d in [Lite, Pg] {
            assert!(changes_schema(
                "INSERT INTO t VALUES (1); create index i on t (a)",
                d
            ));
            assert!(!changes_schema("SELECT 'DROP TABLE t'", d));
        }
        assert!(!changes_schema("DO $$ BEGIN EXECUTE 'x'; END $$", Pg));
    }
}
