//! Prints a pool's live statistics every second while tasks use it.
//!
//! `cargo run --example stats`

use std::time::Duration;

use sql_middleware::prelude::*;

#[tokio::main]
async fn main() -> Result<(), SqlMiddlewareDbError> {
    let db = ConfigAndPool::sqlite_memory().max_size(4).build().await?;
    db.get_connection()
        .await?
        .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)")
        .await?;

    // Eight tasks share the four connections for three seconds.
    let mut tasks = Vec::new();
    for task in 0..8_i64 {
        let db = db.clone();
        tasks.push(tokio::spawn(async move {
            let until = tokio::time::Instant::now() + Duration::from_secs(3);
            let mut i = 0_i64;
            while tokio::time::Instant::now() < until {
                let mut conn = db.get_connection().await?;
                conn.query("INSERT OR REPLACE INTO t VALUES ($1, $2)")
                    .params(&[(task * 1_000_000 + i).into(), "x".into()])
                    .dml()
                    .await?;
                let _: Option<(String,)> = conn
                    .query("SELECT v FROM t WHERE id = $1")
                    .params(&[(task * 1_000_000 + i).into()])
                    .optional()
                    .await?;
                i += 1;
            }
            Ok::<_, SqlMiddlewareDbError>(())
        }));
    }

    for _ in 0..4 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let s = db.stats();
        println!(
            "size {} idle {} in use {} waiters {} | checkouts {} mean wait {:?} max {:?} | cache hits {} misses {} | sqlite inline {} offloaded {} re-run {}",
            s.size,
            s.idle,
            s.in_use,
            s.waiters,
            s.checkout_wait.count,
            s.checkout_wait.mean(),
            s.checkout_wait.max,
            s.statement_cache.hits,
            s.statement_cache.misses,
            s.sqlite.inline,
            s.sqlite.offloaded_by_policy,
            s.sqlite.rerun_after_interrupt,
        );
    }
    for t in tasks {
        t.await.expect("task")?;
    }
    Ok(())
}
