//! The first program to run: an in-process SQLite database, a table, a query, a transaction.
//!
//! `cargo run --example quickstart`

use sql_middleware::prelude::*;

#[derive(Debug)]
struct User {
    id: i64,
    name: String,
}

impl FromRow for User {
    fn from_row<R: SqlRow>(row: &R) -> Result<Self, SqlMiddlewareDbError> {
        Ok(User {
            id: row.get("id")?,
            name: row.get("name")?,
        })
    }
}

#[tokio::main]
async fn main() -> Result<(), SqlMiddlewareDbError> {
    let dir = std::env::temp_dir().join(format!("sqlmw-quickstart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let db = ConfigAndPool::sqlite(dir.join("app.db"))
        .max_size(4)
        .build()
        .await?;
    let mut conn = db.get_connection().await?;

    conn.execute_batch("CREATE TABLE users (id BIGINT PRIMARY KEY, name TEXT NOT NULL)")
        .await?;
    let inserted = conn
        .query("INSERT INTO users (id, name) VALUES ($1, $2)")
        .params(&[RowValues::Int(1), "alice".into()])
        .dml()
        .await?;
    println!("inserted {inserted} row");

    // Prepare once, run many times.
    let mut insert = conn
        .prepare("INSERT INTO users (id, name) VALUES ($1, $2)")
        .await?;
    for (id, name) in [(2, "bob"), (3, "carol")] {
        insert.dml(&[RowValues::Int(id), name.into()]).await?;
    }

    let rows = conn
        .query("SELECT id, name FROM users ORDER BY id")
        .select()
        .await?;
    for row in &rows {
        println!("{:?} {:?}", row.get("id"), row.get("name"));
    }

    let user: Option<User> = conn
        .query("SELECT id, name FROM users WHERE id = $1")
        .params(&[2.into()])
        .optional()
        .await?;
    if let Some(u) = &user {
        println!("found user {} named {}", u.id, u.name);
    }

    // A transaction: committed only by commit(); dropped means rolled back.
    let mut tx = conn.begin().await?;
    tx.query("UPDATE users SET name = $1 WHERE id = $2")
        .params(&["dave".into(), 3.into()])
        .dml()
        .await?;
    tx.commit().await?;

    let renamed: (String,) = conn
        .query("SELECT name FROM users WHERE id = $1")
        .params(&[3.into()])
        .one()
        .await?;
    println!("user 3 is now {}", renamed.0);

    drop(conn);
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}
