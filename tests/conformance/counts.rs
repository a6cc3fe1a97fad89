//! Counts mean one thing: `dml()` returns the number of rows the statement inserted, updated
//! or deleted, each row once, on every engine, upserts and `REPLACE` included:
//! - an upsert counts each row it inserted or updated once (an update that sets a row to the
//!   values it already holds counts too, as on Postgres), never twice;
//! - an insert that skips a conflicting row (`ON CONFLICT DO NOTHING`, MySQL's `INSERT IGNORE`)
//!   does not count it;
//! - `REPLACE` (SQLite, Turso, MySQL) counts each row it wrote once, not the row it deleted to
//!   make room;
//! - `UPDATE` counts the rows it matched;
//! - a statement other than DML counts 0, `CREATE TABLE … AS SELECT` included.
//!
//! Each statement runs through `query(..).dml()`, a prepared statement's `dml`, and `dml` inside
//! a `Tx`. Prints `counts backend=X statements=N wrong=W`.

use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, TestDb};
use crate::helpers::*;

#[derive(Debug, Clone, Copy)]
enum Path {
    Query,
    Prepared,
    InTx,
}

async fn dml_via(
    conn: &mut Conn,
    path: Path,
    sql: &str,
    p: &[RowValues],
) -> Result<u64, SqlMiddlewareDbError> {
    match path {
        Path::Query => conn.query(sql).params(p).dml().await,
        Path::Prepared => {
            let mut s = conn.prepare(sql).await?;
            s.dml(p).await
        }
        Path::InTx => {
            let mut tx = conn.begin().await?;
            let n = tx.query(sql).params(p).dml().await?;
            tx.commit().await?;
            Ok(n)
        }
    }
}

fn upsert(kind: Kind, rows: usize) -> String {
    let values: Vec<String> = (0..rows)
        .map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2))
        .collect();
    match kind {
        Kind::Mysql => format!(
            "INSERT INTO cnt (id, v) VALUES {} ON DUPLICATE KEY UPDATE v = VALUES(v)",
            values.join(", ")
        ),
        _ => format!(
            "INSERT INTO cnt (id, v) VALUES {} ON CONFLICT (id) DO UPDATE SET v = excluded.v",
            values.join(", ")
        ),
    }
}

fn insert_skip(kind: Kind, rows: usize) -> String {
    let values: Vec<String> = (0..rows)
        .map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2))
        .collect();
    match kind {
        Kind::Mysql => format!(
            "INSERT IGNORE INTO cnt (id, v) VALUES {}",
            values.join(", ")
        ),
        _ => format!(
            "INSERT INTO cnt (id, v) VALUES {} ON CONFLICT DO NOTHING",
            values.join(", ")
        ),
    }
}

fn replace(rows: usize) -> String {
    let values: Vec<String> = (0..rows)
        .map(|i| format!("(${}, ${})", 2 * i + 1, 2 * i + 2))
        .collect();
    format!("REPLACE INTO cnt (id, v) VALUES {}", values.join(", "))
}

fn pairs(rows: &[(i64, i64)]) -> Vec<RowValues> {
    rows.iter()
        .flat_map(|(a, b)| [RowValues::Int(*a), RowValues::Int(*b)])
        .collect()
}

async fn counts(db: &TestDb) {
    let mut conn = db.conn().await;
    batch(
        &mut conn,
        "CREATE TABLE cnt (id BIGINT PRIMARY KEY, v BIGINT, u BIGINT UNIQUE)",
    )
    .await;
    let mut wrong = Vec::new();
    let mut statements = 0;
    for path in [Path::Query, Path::Prepared, Path::InTx] {
        batch(&mut conn, "DELETE FROM cnt").await;
        batch(
            &mut conn,
            "INSERT INTO cnt (id, v, u) VALUES (1, 10, 1), (2, 20, 2)",
        )
        .await;
        // (what, sql, params, expected count)
        let mut cases: Vec<(&str, String, Vec<RowValues>, u64)> = vec![
            (
                "upsert inserts a new row",
                upsert(db.kind, 1),
                pairs(&[(3, 30)]),
                1,
            ),
            (
                "upsert updates a row",
                upsert(db.kind, 1),
                pairs(&[(1, 11)]),
                1,
            ),
            (
                "upsert sets a row to its own values",
                upsert(db.kind, 1),
                pairs(&[(2, 20)]),
                1,
            ),
            (
                "multi-row upsert: two new, one changed, one unchanged",
                upsert(db.kind, 4),
                pairs(&[(4, 40), (5, 50), (1, 12), (2, 20)]),
                4,
            ),
            (
                "insert skipping a conflicting row",
                insert_skip(db.kind, 1),
                pairs(&[(1, 99)]),
                0,
            ),
            (
                "insert: one new row, one skipped",
                insert_skip(db.kind, 2),
                pairs(&[(6, 60), (2, 99)]),
                1,
            ),
            (
                "UPDATE that sets rows to their own values",
                "UPDATE cnt SET v = v WHERE id IN ($1, $2)".to_owned(),
                vec![RowValues::Int(4), RowValues::Int(5)],
                2,
            ),
            (
                "DELETE",
                "DELETE FROM cnt WHERE id = $1".to_owned(),
                vec![RowValues::Int(6)],
                1,
            ),
        ];
        if db.kind != Kind::Postgres {
            cases.extend([
                ("REPLACE of a new row", replace(1), pairs(&[(7, 70)]), 1),
                (
                    "REPLACE of an existing row",
                    replace(1),
                    pairs(&[(7, 71)]),
                    1,
                ),
                (
                    "REPLACE: one new, one existing",
                    replace(2),
                    pairs(&[(8, 80), (7, 72)]),
                    2,
                ),
            ]);
        }
        for (what, sql, params, want) in cases {
            statements += 1;
            match dml_via(&mut conn, path, &sql, &params).await {
                Ok(n) if n == want => {}
                other => wrong.push(format!("{what} ({path:?}): got {other:?}, expected {want}")),
            }
        }
        // A table made from a query is schema, not DML: 0 on every engine, as for any statement
        // other than DML (MySQL's own count says how many rows it copied).
        statements += 1;
        let copy = format!("cnt_copy_{path:?}").to_lowercase();
        let (rows,): (i64,) = conn
            .query("SELECT COUNT(*) FROM cnt")
            .one()
            .await
            .expect("count");
        match dml_via(
            &mut conn,
            if matches!(path, Path::InTx) && db.kind == Kind::Mysql {
                // MySQL commits a CREATE … SELECT implicitly: the middleware refuses it in a Tx.
                Path::Query
            } else {
                path
            },
            &format!("CREATE TABLE {copy} AS SELECT id, v FROM cnt"),
            &[],
        )
        .await
        {
            Ok(0) => {}
            other => wrong.push(format!(
                "CREATE TABLE … AS SELECT of {rows} rows ({path:?}): got {other:?}, expected 0"
            )),
        }
        // A REPLACE that deletes two conflicting rows (by the key and by a unique column) to
        // write one counts that one row.
        if db.kind != Kind::Postgres {
            statements += 1;
            batch(
                &mut conn,
                "INSERT INTO cnt (id, v, u) VALUES (20, 0, 20), (21, 0, 21)",
            )
            .await;
            match dml_via(
                &mut conn,
                path,
                "REPLACE INTO cnt (id, v, u) VALUES ($1, $2, $3)",
                &[RowValues::Int(20), RowValues::Int(1), RowValues::Int(21)],
            )
            .await
            {
                Ok(1) => {}
                other => wrong.push(format!(
                    "REPLACE over two rows ({path:?}): got {other:?}, expected 1"
                )),
            }
        }
    }
    println!(
        "counts backend={} statements={statements} wrong={}",
        db.kind.name(),
        wrong.len()
    );
    assert!(
        wrong.is_empty(),
        "[{}] {} count(s) mean something else:\n  {}",
        db.kind.name(),
        wrong.len(),
        wrong.join("\n  ")
    );
}

backend_tests! {
    async fn dml_counts_each_written_row_once(db) {
        counts(&db).await;
    }
}
