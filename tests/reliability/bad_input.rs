//! Reliability 11: a bad-input matrix that complements `tests/conformance/bad_input.rs` (which covers
//! wrong parameter counts on `query`, NUL in SQL and text, NaN, invalid UTF-8 on `select`/`one`,
//! unknown objects, syntax errors, decoding, deferred FKs and nested BEGIN via a script).
//!
//! Added here: more than 65,535 parameters, placeholder numbers past the engine's limit, bad
//! input through prepared statements, pipelines and inside transactions (which must then be
//! aborted), a 100 MB blob, infinities, NUL in JSON, invalid UTF-8 produced from a blob,
//! unterminated literals, a long script failing at its end (atomic), use after the pool was
//! closed, and nested `begin` (through the query API and after a raw `BEGIN`).
//!
//! Every case checks the exact `ErrorKind`, that an engine error keeps its driver code (and a
//! middleware error has none), and then that `SELECT 1` on the same connection succeeds.

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common;
use crate::common::backends::{Kind, Logical, TestDb};
use crate::common::expect::{Code, check, verdict};

type Conn = MiddlewarePoolConnection;

struct Matrix {
    backend: &'static str,
    cases: usize,
    failures: Vec<String>,
}

impl Matrix {
    /// Records a case and runs `SELECT 1` on the same connection.
    async fn case(&mut self, name: &str, v: Result<(), String>, conn: &mut Conn) {
        self.cases += 1;
        let health = match conn.query("SELECT 1").one::<(i64,)>().await {
            Ok((1,)) => Ok(()),
            other => Err(format!(
                "SELECT 1 on the same connection afterwards: {other:?}"
            )),
        };
        let problems: Vec<String> = [v, health].into_iter().filter_map(Result::err).collect();
        if !problems.is_empty() {
            let mut text = problems.join(" / ");
            if text.len() > 600 {
                let mut end = 600;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
            }
            self.failures.push(format!("  {name}: {text}"));
        }
    }
}

/// After a failed statement inside a transaction, later statements fail and commit rolls back.
async fn aborted_then_commit(tx: Tx<'_>) -> Result<(), String> {
    let mut tx = tx;
    verdict(
        tx.query("SELECT 1").select().await,
        ErrorKind::TransactionAborted,
        Code::Middleware,
    )?;
    verdict(tx.commit().await, ErrorKind::TransactionAborted, Code::Any)
}

/// `v` is the failed statement's verdict; then the transaction must behave as aborted.
async fn then_aborted(v: Result<(), String>, tx: Tx<'_>) -> Result<(), String> {
    match v {
        Ok(()) => aborted_then_commit(tx).await,
        Err(e) => Err(e),
    }
}

fn placeholders(n: usize) -> String {
    (1..=n)
        .map(|i| format!("${i}"))
        .collect::<Vec<_>>()
        .join(",")
}

async fn t_matrix(db: &TestDb) {
    let pg = db.kind == Kind::Postgres;
    let int = db.ty(Logical::Int);
    let blob = db.ty(Logical::Blob);
    let float = db.ty(Logical::Float);
    let json = db.ty(Logical::Json);
    let mut conn = db.conn().await;
    conn.execute_batch(&format!(
        "CREATE TABLE bx (id {int} PRIMARY KEY, b {blob}, f {float}, j {json});
         INSERT INTO bx (id) VALUES (1);"
    ))
    .await
    .expect("setup");
    let mut m = Matrix {
        backend: db.kind.name(),
        cases: 0,
        failures: Vec::new(),
    };
    let c = &mut conn;

    // ---- parameter counts ------------------------------------------------------------------
    let many: Vec<RowValues> = (0..70_000).map(|i| RowValues::Int(i % 7)).collect();
    let r = c.query("SELECT $1").params(&many).select().await;
    let v = verdict(r, ErrorKind::ParameterCount, Code::Middleware);
    m.case("70,000 parameters for one placeholder", v, c).await;

    // 70,000 placeholders (Postgres: more than its 65,535 limit; SQLite and Turso accept up
    // to 250,000, so there the values are one short).
    let sql = format!("SELECT 1 WHERE 1 IN ({})", placeholders(70_000));
    let r = c.query(&sql).params(&many[..69_999]).select().await;
    let v = verdict(r, ErrorKind::ParameterCount, Code::Any);
    m.case("70,000 placeholders, 69,999 values", v, c).await;

    let r = c.query("SELECT $250001").params(&[1.into()]).select().await;
    let v = if pg {
        // Postgres numbers parameters freely; it cannot type the unused $1 (42P18, which the
        // crate documents as ParameterType).
        check(r, ErrorKind::ParameterType, Code::Driver).and_then(|e| {
            if e.driver_code() == Some("42P18") {
                Ok(())
            } else {
                Err(format!("expected 42P18: {e:?}"))
            }
        })
    } else {
        // The engine refuses numbers past its limit (SQLITE_MAX_VARIABLE_NUMBER).
        verdict(r, ErrorKind::ParameterCount, Code::Any)
    };
    m.case("placeholder number past the engine's limit", v, c)
        .await;

    let two = format!(
        "SELECT {} + {}",
        db.sql().cast_int("$1"),
        db.sql().cast_int("$2")
    );
    let r = match c.prepare(&two).await {
        Ok(mut p) => p.select(&[1.into()]).await,
        Err(e) => Err(e),
    };
    m.case(
        "prepared statement run with too few parameters",
        verdict(r, ErrorKind::ParameterCount, Code::Any),
        c,
    )
    .await;

    let sets: [&[RowValues]; 3] = [&[1.into()], &[1.into(), 2.into()], &[3.into()]];
    let r = c.pipeline("SELECT $1 AS v", &sets).await;
    m.case(
        "pipeline with one parameter set of the wrong size",
        verdict(r, ErrorKind::ParameterCount, Code::Any),
        c,
    )
    .await;

    {
        let mut tx = c.begin().await.expect("begin");
        let r = tx.query("SELECT $1").params(&[]).select().await;
        let v = then_aborted(verdict(r, ErrorKind::ParameterCount, Code::Any), tx).await;
        m.case("wrong parameter count inside a transaction aborts it", v, c)
            .await;
    }

    // ---- floats ------------------------------------------------------------------------------
    let r = match c.prepare("INSERT INTO bx (id, f) VALUES ($1, $2)").await {
        Ok(mut p) => p.dml(&[10.into(), RowValues::Float(f64::NAN)]).await,
        Err(e) => Err(e),
    };
    let v = if pg {
        // Postgres float8 has NaN: accepted and read back (documented).
        match r {
            Ok(1) => match c
                .query("SELECT f FROM bx WHERE id = 10")
                .one::<(f64,)>()
                .await
            {
                Ok((f,)) if f.is_nan() => Ok(()),
                other => Err(format!("NaN read back as {other:?}")),
            },
            other => Err(format!("NaN insert on Postgres: {other:?}")),
        }
    } else if db.kind == Kind::Mysql {
        // MySQL's DOUBLE has no NaN: the server refuses the bound value (1264, out of range)
        // and stores nothing, a ParameterType from the engine or from the middleware.
        verdict(r, ErrorKind::ParameterType, Code::Any)
    } else {
        verdict(r, ErrorKind::ParameterType, Code::Middleware)
    };
    m.case("NaN through a prepared statement", v, c).await;

    {
        let mut tx = c.begin().await.expect("begin");
        let r = tx
            .query("INSERT INTO bx (id, f) VALUES ($1, $2)")
            .params(&[11.into(), RowValues::Float(f64::NAN)])
            .dml()
            .await;
        let v = if pg {
            match r {
                Ok(1) => tx.rollback().await.map_err(|e| format!("rollback: {e}")),
                other => {
                    drop(tx);
                    Err(format!("NaN in a tx on Postgres: {other:?}"))
                }
            }
        } else {
            let from = if db.kind == Kind::Mysql {
                Code::Any
            } else {
                Code::Middleware
            };
            then_aborted(verdict(r, ErrorKind::ParameterType, from), tx).await
        };
        m.case("NaN inside a transaction", v, c).await;
    }

    for (id, inf) in [(12_i64, f64::INFINITY), (13, f64::NEG_INFINITY)] {
        let r = c
            .query("INSERT INTO bx (id, f) VALUES ($1, $2)")
            .params(&[id.into(), RowValues::Float(inf)])
            .dml()
            .await;
        let v = match r {
            Ok(1) => match c
                .query("SELECT f FROM bx WHERE id = $1")
                .params(&[id.into()])
                .one::<(f64,)>()
                .await
            {
                Ok((f,)) if f == inf => Ok(()),
                other => Err(format!("{inf} read back as {other:?}")),
            },
            Err(e) if e.kind() == ErrorKind::ParameterType => Ok(()),
            other => Err(format!("{inf}: {other:?}")),
        };
        m.case(
            &format!("{inf} round-trips or is refused as ParameterType"),
            v,
            c,
        )
        .await;
    }

    // ---- NUL ---------------------------------------------------------------------------------
    let sets: [&[RowValues]; 1] = [&[1.into()]];
    let r = c.pipeline("SELECT $1\0", &sets).await;
    m.case(
        "NUL byte in pipeline SQL",
        verdict(r, ErrorKind::InvalidInput, Code::Middleware),
        c,
    )
    .await;
    {
        let mut tx = c.begin().await.expect("begin");
        let r = tx.query("SELECT 1\0").select().await;
        let v = then_aborted(verdict(r, ErrorKind::InvalidInput, Code::Middleware), tx).await;
        m.case("NUL byte in SQL inside a transaction aborts it", v, c)
            .await;
    }
    let doc = serde_json::json!({ "k": "a\u{0}b" });
    let r = c
        .query("INSERT INTO bx (id, j) VALUES ($1, $2)")
        .params(&[14.into(), RowValues::JSON(doc.clone())])
        .dml()
        .await;
    let v = if pg {
        // jsonb cannot hold \u0000 (SQLSTATE 22P05).
        check(r, ErrorKind::ParameterType, Code::Driver).and_then(|e| {
            if e.driver_code() == Some("22P05") {
                Ok(())
            } else {
                Err(format!("expected 22P05: {e:?}"))
            }
        })
    } else {
        match r {
            Ok(1) => match c
                .query("SELECT j FROM bx WHERE id = 14")
                .one::<(serde_json::Value,)>()
                .await
            {
                Ok((j,)) if j == doc => Ok(()),
                other => Err(format!("JSON with NUL read back as {other:?}")),
            },
            other => Err(format!("JSON with NUL: {other:?}")),
        }
    };
    m.case("NUL inside a JSON string", v, c).await;

    // ---- invalid UTF-8 -----------------------------------------------------------------------
    let bad_text = match db.kind {
        Kind::Postgres => "SELECT convert_from($1, 'UTF8') AS t",
        Kind::Mysql => "SELECT CONVERT($1 USING utf8mb4) AS t",
        Kind::Sqlite | Kind::Turso => "SELECT CAST($1 AS TEXT) AS t",
    };
    let r = match c.prepare(bad_text).await {
        Ok(mut p) => {
            p.all::<(String,)>(&[RowValues::Blob(vec![0xff, 0xfe])])
                .await
        }
        Err(e) => Err(e),
    };
    let v = match db.kind {
        // MYSQL DIFFERS BY DESIGN: converting bytes that are not valid in the target character
        // set replaces each with `?` and raises warning 1300, not an error.
        Kind::Mysql => match r {
            Ok(rows) if rows.len() == 1 && rows[0].0 == "??" => Ok(()),
            other => Err(format!("MySQL should give `??`: {other:?}")),
        },
        Kind::Sqlite => verdict(r, ErrorKind::TypeMismatch, Code::Any),
        // TURSO DIFFERS BY DESIGN: Turso turns invalid UTF-8 into U+FFFD inside the engine.
        Kind::Turso => match r {
            Ok(rows) if rows.len() == 1 && rows[0].0.contains('\u{fffd}') => Ok(()),
            other => Err(format!("Turso should give U+FFFD: {other:?}")),
        },
        // The blob binds as it is; the function refuses its bytes (22021) while running, which
        // is not a parameter that could not be bound: `Other`, with the SQLSTATE.
        Kind::Postgres => check(r, ErrorKind::Other, Code::Driver).and_then(|e| {
            if e.driver_code() == Some("22021") {
                Ok(())
            } else {
                Err(format!("expected 22021: {e:?}"))
            }
        }),
    };
    m.case("invalid UTF-8 from a blob parameter read as text", v, c)
        .await;

    // ---- a 100 MB blob -----------------------------------------------------------------------
    let big: Vec<u8> = (0..100 * 1024 * 1024_usize)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let r = c
        .query("INSERT INTO bx (id, b) VALUES ($1, $2)")
        .params(&[15.into(), RowValues::Blob(big.clone())])
        .dml()
        .await;
    let v = match r {
        Ok(1) => match c
            .query("SELECT b FROM bx WHERE id = 15")
            .one::<(Vec<u8>,)>()
            .await
        {
            Ok((b,)) if b == big => Ok(()),
            Ok((b,)) => Err(format!(
                "100 MB blob read back as {} bytes, not equal",
                b.len()
            )),
            Err(e) => Err(format!("reading the 100 MB blob: {e}")),
        },
        // Refusing it is acceptable if it says so.
        Err(e) if e.kind() == ErrorKind::InvalidInput => Ok(()),
        other => Err(format!("100 MB blob: {:?}", other.map(drop))),
    };
    drop(big);
    m.case(
        "100 MB blob round-trips (or is refused as InvalidInput)",
        v,
        c,
    )
    .await;

    // ---- unknown objects and syntax, through every door ---------------------------------------
    {
        let mut tx = c.begin().await.expect("begin");
        let r = tx.query("SELECT * FROM no_such_table").select().await;
        let v = then_aborted(verdict(r, ErrorKind::UndefinedObject, Code::Driver), tx).await;
        m.case("unknown table inside a transaction aborts it", v, c)
            .await;
    }
    let r = c.prepare("SELECT no_such_column FROM bx").await.map(drop);
    m.case(
        "unknown column via prepare",
        verdict(r, ErrorKind::UndefinedObject, Code::Driver),
        c,
    )
    .await;
    let sets: [&[RowValues]; 1] = [&[1.into()]];
    let r = c
        .pipeline("SELECT v FROM no_such_table WHERE v = $1", &sets)
        .await;
    m.case(
        "unknown table via pipeline",
        verdict(r, ErrorKind::UndefinedObject, Code::Driver),
        c,
    )
    .await;
    let r = c.execute_batch("UPDATE no_such_table SET x = 1").await;
    m.case(
        "unknown table via execute_batch",
        verdict(r, ErrorKind::UndefinedObject, Code::Driver),
        c,
    )
    .await;
    let r = c.pipeline("SELEC $1", &sets).await;
    m.case(
        "syntax error via pipeline",
        verdict(r, ErrorKind::Syntax, Code::Driver),
        c,
    )
    .await;
    {
        let mut tx = c.begin().await.expect("begin");
        let r = tx
            .execute_batch("INSERT INTO bx (id) VALUES (20); SELEC 1")
            .await;
        let v = then_aborted(verdict(r, ErrorKind::Syntax, Code::Driver), tx).await;
        let v = v.and(
            match c
                .query("SELECT count(*) FROM bx WHERE id = 20")
                .one::<(i64,)>()
                .await
            {
                Ok((0,)) => Ok(()),
                other => Err(format!("row 20 of the aborted tx: {other:?}")),
            },
        );
        m.case("syntax error in a script inside a transaction", v, c)
            .await;
    }
    let r = c.query("SELECT 'unterminated").select().await;
    m.case(
        "unterminated string literal",
        verdict(r, ErrorKind::Syntax, Code::Driver),
        c,
    )
    .await;
    let r = c.query("SELECT \"unterminated").select().await;
    m.case(
        "unterminated quoted identifier",
        verdict(r, ErrorKind::Syntax, Code::Driver),
        c,
    )
    .await;
    let r = c.query("SELECT /* unterminated comment").select().await;
    let v = match &r {
        // An unterminated comment hides the rest: SQLite sees `SELECT` alone.
        Err(_) => verdict(r, ErrorKind::Syntax, Code::Driver),
        Ok(_) => Err(format!("unterminated comment gave {r:?}")),
    };
    m.case("unterminated block comment", v, c).await;
    let mut script = String::new();
    for i in 0..500 {
        script.push_str(&format!("INSERT INTO bx (id) VALUES ({});\n", 1000 + i));
    }
    script.push_str("INSERT INTO bx (id) VALUES (1);");
    let r = c.execute_batch(&script).await;
    let v = match verdict(r, ErrorKind::UniqueViolation, Code::Driver) {
        Ok(()) => match c
            .query("SELECT count(*) FROM bx WHERE id >= 1000")
            .one::<(i64,)>()
            .await
        {
            Ok((0,)) => Ok(()),
            other => Err(format!(
                "rows of the failed script: {other:?} (must be atomic)"
            )),
        },
        Err(e) => Err(e),
    };
    m.case(
        "501-statement script failing at its last statement is atomic",
        v,
        c,
    )
    .await;

    // ---- nested begin --------------------------------------------------------------------------
    {
        let mut tx = c.begin().await.expect("begin");
        let r = tx.query("BEGIN").dml().await;
        let v = verdict(r, ErrorKind::TransactionState, Code::Any);
        drop(tx);
        m.case("nested BEGIN through the query API inside a Tx", v, c)
            .await;
    }
    {
        let raw = c.execute_batch("BEGIN").await;
        let r = c.begin().await.map(drop);
        let v = match raw {
            Ok(()) => verdict(r, ErrorKind::TransactionState, Code::Any),
            Err(e) => Err(format!("raw BEGIN script: {e}")),
        };
        // Leave the raw transaction the way it was opened.
        let _ = c.execute_batch("ROLLBACK").await;
        m.case("begin() after a raw BEGIN script", v, c).await;
    }

    // ---- use after close ------------------------------------------------------------------------
    {
        let pool = db.builder().max_size(2).build().await.expect("pool");
        let mut held = pool.get_connection().await.expect("held");
        pool.close();
        let again = pool.get_connection().await.map(drop);
        let v = verdict(again, ErrorKind::PoolClosed, Code::Middleware);
        // The held connection still works until it is returned...
        m.case(
            "checkout after close; the held connection still works",
            v,
            &mut held,
        )
        .await;
        drop(held);
        // ... and is not kept by the closed pool.
        let st = pool.status();
        let v = if st.size == 0 {
            Ok(())
        } else {
            Err(format!("a closed pool kept {} connection(s)", st.size))
        };
        m.case("a closed pool keeps nothing", v, c).await;
    }

    println!(
        "bad_input_matrix backend={} cases={} ok={}",
        m.backend,
        m.cases,
        m.cases - m.failures.len()
    );
    assert!(
        m.failures.is_empty(),
        "[{}] {} of {} case(s) failed:\n{}",
        m.backend,
        m.failures.len(),
        m.cases,
        m.failures.join("\n")
    );
    assert!(m.cases >= 28, "only {} cases ran", m.cases);
}

backend_tests! {
    let _group = common::groups::enter("bad_input");
    async fn bad_input_matrix(db) { t_matrix(&db).await }
}
