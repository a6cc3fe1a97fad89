//! The quickstart on Turso: the same calls as on SQLite.
//!
//! `cargo run --example turso --features turso`

use sql_middleware::prelude::*;

#[tokio::main]
async fn main() -> Result<(), SqlMiddlewareDbError> {
    let db = ConfigAndPool::turso_memory().max_size(4).build().await?;
    let mut conn = db.get_connection().await?;

    conn.execute_batch(
        "CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, active BOOLEAN)",
    )
    .await?;
    let mut insert = conn
        .prepare("INSERT INTO users (id, name, active) VALUES ($1, $2, $3)")
        .await?;
    for id in 1..=3_i64 {
        insert
            .dml(&[id.into(), format!("user-{id}").into(), (id % 2 == 0).into()])
            .await?;
    }

    let rows = conn
        .query("SELECT id, name, active FROM users ORDER BY id")
        .select()
        .await?;
    for row in &rows {
        println!(
            "{:?} {:?} {:?}",
            row.get("id"),
            row.get("name"),
            row.get("active")
        );
    }

    let mut tx = conn.begin().await?;
    tx.query("DELETE FROM users").dml().await?;
    drop(tx); // rolled back at once, before the connection can be used again
    let (n,): (i64,) = conn.query("SELECT count(*) FROM users").one().await?;
    println!("{n} users after a dropped delete");
    Ok(())
}
