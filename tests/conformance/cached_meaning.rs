//! A borrower's session change never changes the meaning of its own cached statements: after
//! the change, the same SQL run through any path reads what the engine would read for a
//! statement prepared now (what the raw driver does), never what a statement prepared before
//! the change resolved to.
//!
//! Per engine, the changes that alter how a statement's names or text resolve:
//! - every engine: a temporary table that shadows a table of the same name;
//! - Postgres: `SET search_path` to another schema holding a table of the same name;
//! - MySQL: `USE` of another database holding a table of the same name (through a query, a
//!   script and raw access), and `SET sql_mode = 'ANSI_QUOTES'` (a double-quoted word becomes a
//!   column name instead of a string).
//!
//! Each path runs the statement once before the change (so it is cached), then again after it:
//! `query(..).select()`, `.one()`, `.all()`, `.stream()`, `prepare(..)` then `.one(..)`,
//! `pipeline`, and `query` inside a `Tx`. Prints `cached_meaning backend=X changes=C runs=R
//! stale=S`.

use futures::TryStreamExt;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb};
use crate::helpers::*;

#[derive(Debug, Clone, Copy)]
enum Path {
    Select,
    One,
    All,
    Stream,
    Prepared,
    Pipeline,
    InTx,
}

const PATHS: [Path; 7] = [
    Path::Select,
    Path::One,
    Path::All,
    Path::Stream,
    Path::Prepared,
    Path::Pipeline,
    Path::InTx,
];

/// Runs `sql` (one row, one text column) through `path`; the text it read.
async fn run(conn: &mut Conn, path: Path, sql: &str) -> Result<String, SqlMiddlewareDbError> {
    let text = |rs: &ResultSet| -> String {
        match rs.results.first().and_then(|r| r.get_by_index(0)) {
            Some(RowValues::Text(t)) => t.clone(),
            other => format!("{other:?}"),
        }
    };
    match path {
        Path::Select => conn.query(sql).select().await.map(|r| text(&r)),
        Path::One => conn.query(sql).one::<(String,)>().await.map(|(s,)| s),
        Path::All => conn
            .query(sql)
            .all::<(String,)>()
            .await
            .map(|v| v.into_iter().map(|(s,)| s).collect::<Vec<_>>().join(",")),
        Path::Stream => {
            let rows: Vec<(String,)> = conn.query(sql).stream::<(String,)>().try_collect().await?;
            Ok(rows.into_iter().map(|(s,)| s).collect::<Vec<_>>().join(","))
        }
        Path::Prepared => {
            let mut s = conn.prepare(sql).await?;
            s.one::<(String,)>(&[]).await.map(|(v,)| v)
        }
        Path::Pipeline => conn.pipeline(sql, &[&[]]).await.map(|sets| text(&sets[0])),
        Path::InTx => {
            let mut tx = conn.begin().await?;
            let r = tx.query(sql).one::<(String,)>().await.map(|(s,)| s);
            tx.rollback().await?;
            r
        }
    }
}

/// A session change and what the statement reads after it.
struct Change {
    name: &'static str,
    /// The statement whose meaning changes.
    sql: &'static str,
    /// What it reads before the change.
    before: &'static str,
    /// How the change is made.
    how: How,
    /// What it reads after the change.
    after: &'static str,
}

enum How {
    Script(String),
    Query(String),
    #[cfg(feature = "mysql")]
    MysqlRawUse(String),
}

async fn apply(conn: &mut Conn, how: &How) -> Result<(), SqlMiddlewareDbError> {
    match how {
        How::Script(s) => conn.execute_batch(s).await,
        How::Query(s) => conn.query(s).dml().await.map(drop),
        #[cfg(feature = "mysql")]
        How::MysqlRawUse(db) => {
            use mysql_async::prelude::Queryable;
            let raw = conn.mysql_connection().await?;
            raw.query_drop(format!("USE `{db}`")).await.map_err(|e| {
                SqlMiddlewareDbError::new(sql_middleware::ErrorKind::Other, e.to_string())
            })
        }
    }
}

async fn changes(db: &TestDb, conn: &mut Conn) -> (Vec<Change>, Vec<String>) {
    let text = db.ty(Logical::Text);
    let mut cleanup = Vec::new();
    batch(conn, &format!("CREATE TABLE cm (v {text})")).await;
    batch(conn, "INSERT INTO cm (v) VALUES ('main')").await;
    let temp = format!("CREATE {} TABLE cm (v {text})", db.sql().temp);
    let mut v = vec![Change {
        name: "a temporary table shadows the table",
        sql: "SELECT v FROM cm",
        before: "main",
        how: How::Script(format!("{temp}; INSERT INTO cm (v) VALUES ('temp')")),
        after: "temp",
    }];
    match db.kind {
        Kind::Postgres => {
            let schema = format!("cm_other_{}", crate::common::backends::unique_hex());
            batch(
                conn,
                &format!(
                    "CREATE SCHEMA {schema}; CREATE TABLE {schema}.cm (v TEXT); INSERT INTO {schema}.cm (v) VALUES ('other')"
                ),
            )
            .await;
            cleanup.push(format!("DROP SCHEMA {schema} CASCADE"));
            v.push(Change {
                name: "SET search_path to another schema",
                sql: "SELECT v FROM cm",
                before: "main",
                how: How::Query(format!("SET search_path TO {schema}")),
                after: "other",
            });
        }
        #[cfg(feature = "mysql")]
        Kind::Mysql => {
            use mysql_async::prelude::Queryable;
            let other = format!("sqlmw_cm_{}", crate::common::backends::unique_hex());
            let mut raw = crate::common::mysql::raw_conn(db.url().expect("url")).await;
            raw.query_drop(format!(
                "CREATE DATABASE `{other}`; CREATE TABLE `{other}`.cm (v TEXT); INSERT INTO `{other}`.cm (v) VALUES ('other')"
            ))
            .await
            .expect("other database");
            let _ = raw.disconnect().await;
            cleanup.push(format!("DROP DATABASE `{other}`"));
            v.push(Change {
                name: "USE another database (query)",
                sql: "SELECT v FROM cm",
                before: "main",
                how: How::Query(format!("USE `{other}`")),
                after: "other",
            });
            v.push(Change {
                name: "USE another database (script)",
                sql: "SELECT v FROM cm",
                before: "main",
                how: How::Script(format!("USE `{other}`")),
                after: "other",
            });
            v.push(Change {
                name: "USE another database (raw access)",
                sql: "SELECT v FROM cm",
                before: "main",
                how: How::MysqlRawUse(other.clone()),
                after: "other",
            });
            v.push(Change {
                name: "SET sql_mode = 'ANSI_QUOTES'",
                sql: "SELECT \"v\" FROM cm",
                before: "v",
                how: How::Query("SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')".into()),
                after: "main",
            });
        }
        _ => {}
    }
    (v, cleanup)
}

async fn cached_meaning(db: &TestDb) {
    if !crate::after_connect::own_session(db.kind) {
        // Behind a transaction-mode pooler the server sessions are shared by the pooler's
        // clients (docs/Postgres.md, "Scaling out"): a session change, and the reset on return,
        // reach whichever server connection the pooler picks, so no borrower has a session
        // whose meaning could be checked. The direct runs of this test check it.
        println!(
            "cached_meaning backend={} not checked: no session of its own behind a transaction-mode pooler",
            db.kind.name()
        );
        return;
    }
    let mut setup = db.conn().await;
    let (changes, cleanup) = changes(db, &mut setup).await;
    drop(setup);
    let mut stale = Vec::new();
    let mut runs = 0;
    for change in &changes {
        for path in PATHS {
            // A pool of one: each case starts from a clean session.
            let pool = db.builder().max_size(1).build().await.expect("pool");
            let mut conn = pool.get_connection().await.expect("checkout");
            let what = format!("{} / {path:?}", change.name);
            match run(&mut conn, path, change.sql).await {
                Ok(got) if got == change.before => {}
                other => panic!(
                    "[{}] {what}: before the change read {other:?}, expected {:?}",
                    db.kind.name(),
                    change.before
                ),
            }
            apply(&mut conn, &change.how)
                .await
                .unwrap_or_else(|e| panic!("[{}] {what}: the change failed: {e}", db.kind.name()));
            runs += 1;
            match run(&mut conn, path, change.sql).await {
                Ok(got) if got == change.after => {}
                other => stale.push(format!(
                    "{what}: read {other:?}, the engine reads {:?}",
                    change.after
                )),
            }
            drop(conn);
            pool.close();
        }
    }
    let mut conn = db.conn().await;
    for sql in cleanup {
        batch(&mut conn, &sql).await;
    }
    println!(
        "cached_meaning backend={} changes={} runs={runs} stale={}",
        db.kind.name(),
        changes.len(),
        stale.len()
    );
    assert!(
        stale.is_empty(),
        "[{}] {} cached statement(s) kept their old meaning:\n  {}",
        db.kind.name(),
        stale.len(),
        stale.join("\n  ")
    );
}

backend_tests! {
    async fn a_session_change_never_leaves_a_cached_statement_stale(db) {
        cached_meaning(&db).await;
    }
}
