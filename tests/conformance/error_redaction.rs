//! Errors carry no data, on every engine, for the messages that quote the SQL or the
//! application's own text rather than a constraint's row: a syntax error at a literal (every
//! engine quotes the token or the rest of the statement), an unterminated literal, and a
//! trigger that refuses a row with the row's value in its message (`RAISE(ABORT, … || NEW.x)`,
//! `RAISE EXCEPTION '…%', NEW.x`, `SIGNAL … MESSAGE_TEXT = msg`), plus each engine's own
//! forms (a Postgres `ASSERT`, a `RAISE` under a standard SQLSTATE, a dollar-quoted string; a
//! SQLite JSON path). The marker in each must appear nowhere in the error's `Display` or
//! `Debug`, nor along its `source()` chain, while `unredacted_message()` quotes it. (Constraint
//! details and failed casts of bound values are covered by the reliability suite's `leaks`;
//! every MySQL error number that quotes a value by `backends::mysql_errors`.)

use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, TestDb, unique_hex};
use crate::helpers::*;

/// Every text an error shows to a logger: `Display` and `Debug` of it and of its sources.
fn shown(e: &SqlMiddlewareDbError) -> String {
    let mut out = format!("{e}\n{e:?}");
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        out.push_str(&format!("\n{s}\n{s:?}"));
        src = s.source();
    }
    out
}

/// The table and the refusing trigger: a row with a negative id is refused with its `s` in
/// the message; below -100, under the SQLSTATE of a unique violation where the engine lets the
/// trigger choose one (Postgres).
fn schema(kind: Kind) -> Vec<&'static str> {
    match kind {
        Kind::Sqlite | Kind::Turso => vec![
            "CREATE TABLE er (id INTEGER PRIMARY KEY, s TEXT)",
            "CREATE TRIGGER er_refuse BEFORE INSERT ON er WHEN NEW.id < 0
             BEGIN SELECT RAISE(ABORT, 'refused: ' || NEW.s); END",
        ],
        Kind::Postgres => vec![
            "CREATE TABLE er (id BIGINT PRIMARY KEY, s TEXT)",
            "CREATE FUNCTION er_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.id < -100 THEN
                     RAISE EXCEPTION 'taken: %', NEW.s USING ERRCODE = 'unique_violation';
                 END IF;
                 IF NEW.id < 0 THEN RAISE EXCEPTION 'refused: %', NEW.s; END IF;
                 RETURN NEW;
             END $$",
            "CREATE TRIGGER er_refuse BEFORE INSERT ON er
                 FOR EACH ROW EXECUTE FUNCTION er_refuse()",
            "CREATE FUNCTION er_check(t text) RETURNS int LANGUAGE plpgsql AS $$
             BEGIN ASSERT t IS NULL, 'unexpected: ' || t; RETURN 1; END $$",
        ],
        Kind::Mysql => vec![
            "CREATE TABLE er (id BIGINT PRIMARY KEY, s VARCHAR(200))",
            "CREATE TRIGGER er_refuse BEFORE INSERT ON er FOR EACH ROW
             BEGIN
                 DECLARE msg VARCHAR(200);
                 IF NEW.id < 0 THEN
                     SET msg = CONCAT('refused: ', NEW.s);
                     SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = msg;
                 END IF;
             END",
        ],
    }
}

/// One failing call: what it is, its marker, and its result.
type Outcome = (&'static str, String, Result<(), SqlMiddlewareDbError>);

async fn outcomes(db: &TestDb, c: &mut Conn) -> Vec<Outcome> {
    let run = unique_hex();
    let m = |i: u32| format!("Mk{i}q{}", &run[..10]);
    let number = format!(
        "{}",
        7_300_000_000_u64 + u64::from_str_radix(&run[..6], 16).unwrap_or(1)
    );
    let mut out: Vec<Outcome> = Vec::new();
    let sql = format!("SELECT * FROM er WHERE id = 1 '{}'", m(1));
    out.push((
        "a syntax error at a string literal",
        m(1),
        c.query(&sql).select().await.map(|_| ()),
    ));
    let sql = format!("SELECT * FROM er WHERE id = 1 {number}");
    out.push((
        "a syntax error at a number",
        number.clone(),
        c.query(&sql).select().await.map(|_| ()),
    ));
    let sql = format!("SELECT id FROM er WHERE s = '{}", m(2));
    out.push((
        "an unterminated string literal",
        m(2),
        c.query(&sql).select().await.map(|_| ()),
    ));
    let sql = format!(
        "UPDATE er SET s = s WHERE id = 0;\nSELECT * FROM er WHERE id = 1 '{}'",
        m(3)
    );
    out.push((
        "a syntax error at a literal in a script",
        m(3),
        c.execute_batch(&sql).await,
    ));
    out.push((
        "a trigger refusing a row with its value in the message",
        m(4),
        c.query("INSERT INTO er (id, s) VALUES ($1, $2)")
            .params(&[(-1).into(), m(4).into()])
            .dml()
            .await
            .map(|_| ()),
    ));
    match db.kind {
        Kind::Postgres => {
            out.push((
                "a RAISE under a unique violation's SQLSTATE",
                m(10),
                c.query("INSERT INTO er (id, s) VALUES ($1, $2)")
                    .params(&[(-200).into(), m(10).into()])
                    .dml()
                    .await
                    .map(|_| ()),
            ));
            out.push((
                "a failed ASSERT quoting its argument",
                m(11),
                c.query("SELECT er_check($1)")
                    .params(&[m(11).into()])
                    .select()
                    .await
                    .map(|_| ()),
            ));
            let sql = format!("SELECT $${}", m(12));
            out.push((
                "an unterminated dollar-quoted string",
                m(12),
                c.query(&sql).select().await.map(|_| ()),
            ));
            let sql = format!("SELECT E'{}", m(13));
            out.push((
                "an unterminated escape string",
                m(13),
                c.query(&sql).select().await.map(|_| ()),
            ));
        }
        Kind::Sqlite | Kind::Turso => {
            out.push((
                "a bad JSON path bound",
                m(20),
                c.query("SELECT json_extract('{}', $1)")
                    .params(&[m(20).into()])
                    .select()
                    .await
                    .map(|_| ()),
            ));
        }
        Kind::Mysql => {}
    }
    out
}

async fn t_errors_never_quote_literals_or_trigger_text(db: &TestDb) {
    let k = db.kind.name();
    let mut c = db.conn().await;
    for s in schema(db.kind) {
        batch(&mut c, s).await;
    }
    let outcomes = outcomes(db, &mut c).await;
    let (mut leaked, mut wrong) = (Vec::new(), Vec::new());
    for (what, marker, r) in &outcomes {
        let e = match r {
            Ok(()) => {
                wrong.push(format!("{what}: succeeded"));
                continue;
            }
            Err(e) => e,
        };
        if !e.unredacted_message().is_some_and(|t| t.contains(marker)) {
            wrong.push(format!(
                "{what}: the engine's text does not quote the marker: {:?}",
                e.unredacted_message()
            ));
            continue;
        }
        let seen = shown(e);
        if seen.contains(marker) {
            leaked.push(format!("{what} ({:?}): {seen}", e.kind()));
        }
    }
    println!(
        "error_redaction backend={k} cases={} leaked={}",
        outcomes.len(),
        leaked.len()
    );
    assert!(
        leaked.is_empty(),
        "[{k}] {} errors show data:\n{}",
        leaked.len(),
        leaked.join("\n---\n")
    );
    assert!(wrong.is_empty(), "[{k}] {}", wrong.join("\n"));
}

backend_tests! {
    async fn errors_never_quote_literals_or_trigger_text(db) {
        t_errors_never_quote_literals_or_trigger_text(&db).await
    }
}
