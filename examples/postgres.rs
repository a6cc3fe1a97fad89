//! The quickstart on PostgreSQL: the same calls, `$N` placeholders, a pipelined batch.
//!
//! `SQL_MIDDLEWARE_PG_URL=postgres://user@host/db cargo run --example postgres`
//! (defaults to `postgres://postgres@localhost/postgres`).

use sql_middleware::prelude::*;

#[tokio::main]
async fn main() -> Result<(), SqlMiddlewareDbError> {
    let url = std::env::var("SQL_MIDDLEWARE_PG_URL")
        .unwrap_or_else(|_| "postgres://postgres@localhost/postgres".to_owned());
    let db = ConfigAndPool::postgres(&url)
        .max_size(4)
        .application_name("sql-middleware-example")
        .build()
        .await?;
    let mut conn = db.get_connection().await?;

    // A temporary table lives as long as this connection and touches nothing else.
    conn.execute_batch(
        "CREATE TEMP TABLE users (id BIGINT PRIMARY KEY, name TEXT NOT NULL, score DOUBLE PRECISION)",
    )
    .await?;
    let mut insert = conn
        .prepare("INSERT INTO users (id, name, score) VALUES ($1, $2, $3)")
        .await?;
    for id in 1..=3_i64 {
        // An Int bound to a double precision column converts losslessly.
        insert
            .dml(&[
                id.into(),
                format!("user-{id}").into(),
                RowValues::Int(id * 10),
            ])
            .await?;
    }

    // Three lookups, pipelined on one connection: one round trip instead of three.
    let ids = [
        [RowValues::Int(1)],
        [RowValues::Int(2)],
        [RowValues::Int(3)],
    ];
    let sets: Vec<&[RowValues]> = ids.iter().map(|p| &p[..]).collect();
    let results = conn
        .pipeline("SELECT name, score FROM users WHERE id = $1", &sets)
        .await?;
    for rs in &results {
        let row = &rs.results[0];
        println!("{:?} scored {:?}", row.get("name"), row.get("score"));
    }

    let mut tx = conn.begin().await?;
    tx.query("DELETE FROM users WHERE id = $1")
        .params(&[1.into()])
        .dml()
        .await?;
    drop(tx); // not committed: rolled back
    let (count,): (i64,) = conn.query("SELECT count(*) FROM users").one().await?;
    println!("{count} users (the dropped delete was rolled back)");
    Ok(())
}
