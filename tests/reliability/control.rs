//! Reliability 15: inside a `Tx`, transaction control is seen on every path, however it is
//! written, and keywords that are data never are.
//!
//! Statements are generated from a printed seed: transaction keywords inside every quoting form
//! of the backend's dialect (strings, quoted identifiers, comments, and on Postgres `E'…'`
//! strings, dollar quotes and nested comments), and real control in random casing after
//! statements and comments like those. Each is sent inside a fresh transaction that has written
//! a row, through `query(..).dml()`, `query(..).select()`, `prepare`, `pipeline` and
//! `execute_batch`. Real control must be refused with `TransactionState`; data must never be;
//! and after the transaction is rolled back its row is gone and the connection is outside any
//! transaction, whatever the statement did.

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::backends::{Kind, TestDb};
use crate::common::groups;
use crate::common::reliability::{Rng, SeedGuard, knob_usize};

const KEYWORDS: [&str; 6] = ["COMMIT", "BEGIN", "END", "ROLLBACK", "END;", "COMMIT;"];

fn pick<'a>(rng: &mut Rng, xs: &[&'a str]) -> &'a str {
    xs[rng.below(xs.len() as u64) as usize]
}

fn casing(rng: &mut Rng, w: &str) -> String {
    match rng.below(3) {
        0 => w.to_ascii_uppercase(),
        1 => w.to_ascii_lowercase(),
        _ => w
            .chars()
            .enumerate()
            .map(|(i, c)| {
                if i % 2 == 0 {
                    c.to_ascii_uppercase()
                } else {
                    c.to_ascii_lowercase()
                }
            })
            .collect(),
    }
}

/// A transaction keyword inside one of the dialect's quoting forms: data to the engine.
fn protected(rng: &mut Rng, kind: Kind) -> String {
    let w = pick(rng, &KEYWORDS);
    let kw = casing(rng, w);
    let shared = rng.below(4);
    let pg = kind == Kind::Postgres;
    match (shared, rng.below(if pg { 5 } else { 3 })) {
        (0, _) => format!("'{kw}'"),
        (1, _) => format!("'it''s; {kw}'"),
        (2, _) => format!("/* {kw}; */ 1"),
        (_, 0) => format!("-- {kw};\n 1"),
        (_, 1) if pg => format!("E'\\'; {kw}; --'"),
        (_, 2) if pg => format!("$$ {kw}; $$"),
        (_, 3) if pg => format!("$t$ {kw}; $$ x $$ $t$"),
        (_, _) if pg => format!("/* a /* {kw}; */ b */ 1"),
        // SQLite's comments do not nest: this one ends at its first `*/`.
        (_, 1) => format!("/* a /* {kw}; */ 1"),
        (_, _) => format!("'{kw}' || '; {kw}'"),
    }
}

/// A statement whose transaction keywords are all data.
fn data_statement(rng: &mut Rng, kind: Kind) -> String {
    let n = 1 + rng.below(3);
    let parts: Vec<String> = (0..n).map(|_| protected(rng, kind)).collect();
    format!("SELECT {}", parts.join(", "))
}

/// Real control after data statements and comments, in random casing.
fn control_statement(rng: &mut Rng, kind: Kind) -> String {
    let w = pick(rng, &["COMMIT", "END", "ROLLBACK", "BEGIN"]);
    let kw = casing(rng, w);
    let lead = match rng.below(4) {
        0 => String::new(),
        1 => "/* note */ ".to_owned(),
        2 => "-- note\n".to_owned(),
        _ => format!("{}; ", data_statement(rng, kind)),
    };
    format!("{lead}{kw}")
}

async fn t_control_is_seen_on_every_path(db: &TestDb) {
    let k = db.kind.name();
    let (_seed_guard, seed) = SeedGuard::new(&format!("control_{k}"));
    let mut rng = Rng::new(seed);
    let cases = knob_usize("RELIABILITY_CONTROL_CASES", 40);
    let pool = db.builder().max_size(1).build().await.unwrap();
    let mut conn = pool.get_connection().await.unwrap();
    conn.execute_batch("CREATE TABLE ctl (id INTEGER PRIMARY KEY)")
        .await
        .unwrap();
    let (mut refused, mut accepted, mut engine_errors) = (0usize, 0usize, 0usize);
    for case in 0..cases {
        let real = rng.chance(0.5);
        let sql = if real {
            control_statement(&mut rng, db.kind)
        } else {
            data_statement(&mut rng, db.kind)
        };
        for path in ["dml", "select", "prepare", "pipeline", "execute_batch"] {
            let mut tx = conn.begin().await.unwrap();
            tx.query("INSERT INTO ctl (id) VALUES ($1)")
                .params(&[RowValues::Int(case as i64)])
                .dml()
                .await
                .unwrap();
            let r: Result<(), SqlMiddlewareDbError> = match path {
                "dml" => tx.query(&sql).dml().await.map(drop),
                "select" => tx.query(&sql).select().await.map(drop),
                "prepare" => tx.prepare(&sql).await.map(drop),
                "pipeline" => tx.pipeline(&sql, &[&[], &[]]).await.map(drop),
                _ => tx.execute_batch(&sql).await,
            };
            match (&r, real) {
                (Err(e), true) if e.kind() == ErrorKind::TransactionState => refused += 1,
                (_, true) => {
                    panic!("[{k}] seed {seed}: control {sql:?} via {path} was not refused: {r:?}")
                }
                (Err(e), false) if e.kind() == ErrorKind::TransactionState => {
                    panic!(
                        "[{k}] seed {seed}: data {sql:?} via {path} was taken for control: {e:?}"
                    )
                }
                (Err(_), false) => engine_errors += 1,
                (Ok(()), false) => accepted += 1,
            }
            let _ = tx.rollback().await;
            let (n,): (i64,) = conn
                .query("SELECT count(*) FROM ctl")
                .one()
                .await
                .unwrap_or_else(|e| panic!("[{k}] after {sql:?} via {path}: {e:?}"));
            assert_eq!(
                n, 0,
                "[{k}] seed {seed}: {sql:?} via {path} committed the transaction's row"
            );
        }
    }
    // The connection went back outside any transaction: the next borrower can begin.
    drop(conn);
    let mut next = pool.get_connection().await.unwrap();
    next.begin().await.unwrap().rollback().await.unwrap();
    println!(
        "control_on_every_path backend={k} seed={seed} cases={cases} paths=5 refused={refused} data_ok={accepted} data_engine_errors={engine_errors} committed=0"
    );
}

crate::backend_tests! {
    let _group = groups::enter("control");
    async fn control_is_seen_on_every_path(db) {
        t_control_is_seen_on_every_path(&db).await
    }
}
