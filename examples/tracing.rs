//! Prints the `tracing` spans of a small workload: checkouts, statements with their
//! OpenTelemetry fields, a transaction with a savepoint, a failed statement, and a slow-statement
//! warning.
//!
//! `cargo run --example tracing --features tracing`

use std::time::Duration;

use sql_middleware::prelude::*;
use tracing_subscriber::fmt::format::FmtSpan;

#[tokio::main]
async fn main() -> Result<(), SqlMiddlewareDbError> {
    // Each span is printed when it closes, with its fields and how long it was busy.
    tracing_subscriber::fmt()
        .with_span_events(FmtSpan::CLOSE)
        .with_max_level(tracing::Level::INFO)
        .with_target(true)
        .init();

    let db = ConfigAndPool::sqlite_memory()
        .max_size(2)
        .slow_statement_threshold(Duration::from_millis(20))
        .build()
        .await?;
    let mut conn = db.get_connection().await?;
    conn.execute_batch("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        .await?;

    let mut tx = conn.begin().await?;
    tx.query("INSERT INTO users (id, name) VALUES ($1, $2)")
        .params(&[1.into(), "alice".into()])
        .dml()
        .await?;
    let mut sp = tx.savepoint().await?;
    if sp
        .query("INSERT INTO users (id, name) VALUES ($1, $2)")
        .params(&[1.into(), "duplicate".into()])
        .dml()
        .await
        .is_err()
    {
        // The failed statement's span has error.type; the savepoint's outcome is rollback.
        sp.rollback().await?;
    } else {
        sp.commit().await?;
    }
    tx.commit().await?;

    let mut stmt = conn.prepare("SELECT name FROM users WHERE id = $1").await?;
    let names: Vec<(String,)> = stmt.all(&[1.into()]).await?;
    println!("names: {names:?}");

    // A statement that takes longer than the threshold logs a WARN event.
    let (n,): (i64,) = conn
        .query(
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000) \
             SELECT count(*) FROM c",
        )
        .one()
        .await?;
    println!("counted {n}");
    Ok(())
}
