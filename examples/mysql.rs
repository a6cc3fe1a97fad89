//! The quickstart on MySQL or MariaDB: the same calls and the same `$N` placeholders (the
//! middleware binds them to MySQL's positional `?`, reordered and repeated as written), a
//! rolled-back transaction, and the values MySQL has no type for.
//!
//! `SQL_MIDDLEWARE_MYSQL_URL=mysql://user:password@host/db cargo run --example mysql --features mysql`
//! (defaults to `mysql://root@127.0.0.1:3306/test`).

use sql_middleware::prelude::*;

#[tokio::main]
async fn main() -> Result<(), SqlMiddlewareDbError> {
    let url = std::env::var("SQL_MIDDLEWARE_MYSQL_URL")
        .unwrap_or_else(|_| "mysql://root@127.0.0.1:3306/test".to_owned());
    let db = ConfigAndPool::mysql(&url).max_size(4).build().await?;
    let mut conn = db.get_connection().await?;

    // A temporary table lives as long as this session; the session is reset before the
    // connection's next borrower.
    conn.execute_batch(
        "CREATE TEMPORARY TABLE users (id BIGINT PRIMARY KEY, name VARCHAR(64) NOT NULL, score DOUBLE, active BOOLEAN)",
    )
    .await?;
    let mut insert = conn
        .prepare("INSERT INTO users (id, name, score, active) VALUES ($1, $2, $3, $4)")
        .await?;
    for id in 1..=3_i64 {
        insert
            .dml(&[
                id.into(),
                format!("user-{id}").into(),
                RowValues::Float(id as f64 * 1.5),
                (id % 2 == 1).into(),
            ])
            .await?;
    }

    // `$2` before `$1`, and `$1` twice: each `?` gets the parameter it stands for.
    let rows: Vec<(String, f64, bool)> = conn
        .query("SELECT name, score, active FROM users WHERE score > $2 AND id <> $1 OR id = $1 ORDER BY id")
        .params(&[1.into(), RowValues::Float(2.0)])
        .all()
        .await?;
    for (name, score, active) in &rows {
        println!("{name}: {score} (active: {active})");
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
