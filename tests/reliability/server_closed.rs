//! A dead connection is never handed out: a pooled connection that the server closed while it
//! sat idle costs the next caller no error. Its first call succeeds, whatever that call is, on
//! every server engine (Postgres and MySQL/MariaDB).
//!
//! Causes: the connection killed by an administrator (`pg_terminate_backend`, `KILL`) and the
//! server's own idle limit (`idle_session_timeout`, `wait_timeout`, set short by the pool's
//! `after_connect` hook). First calls: `query(..).select()`, `.dml()`, `prepare(..)` then
//! `.one(..)`, `begin()` … `commit()`, `execute_batch`, `pipeline`, `stream`, `bulk_insert`.
//! Every idle connection of the pool (two) is closed before the checkout, so a replacement
//! that is itself dead cannot pass either.
//!
//! Prints `server_closed backend=X cases=N first_call_errors=E`.

use std::time::{Duration, Instant};

use futures::TryStreamExt;
use sql_middleware::prelude::*;

use crate::common;

#[derive(Debug, Clone, Copy)]
enum Cause {
    Killed,
    IdleLimit,
}

#[derive(Debug, Clone, Copy)]
enum First {
    Select,
    Dml,
    Prepared,
    Tx,
    Batch,
    Pipeline,
    Stream,
    Bulk,
}

const FIRSTS: [First; 8] = [
    First::Select,
    First::Dml,
    First::Prepared,
    First::Tx,
    First::Batch,
    First::Pipeline,
    First::Stream,
    First::Bulk,
];

async fn first_call(
    conn: &mut MiddlewarePoolConnection,
    first: First,
    id: i64,
) -> Result<(), SqlMiddlewareDbError> {
    let p = [RowValues::Int(id)];
    match first {
        First::Select => conn
            .query("SELECT id FROM sc WHERE id < $1")
            .params(&p)
            .select()
            .await
            .map(drop),
        First::Dml => conn
            .query("INSERT INTO sc (id) VALUES ($1)")
            .params(&p)
            .dml()
            .await
            .map(drop),
        First::Prepared => {
            let mut s = conn
                .prepare("SELECT COUNT(*) FROM sc WHERE id < $1")
                .await?;
            s.one::<(i64,)>(&p).await.map(drop)
        }
        First::Tx => {
            let mut tx = conn.begin().await?;
            tx.query("INSERT INTO sc (id) VALUES ($1)")
                .params(&p)
                .dml()
                .await?;
            tx.commit().await
        }
        First::Batch => {
            conn.execute_batch(&format!("INSERT INTO sc (id) VALUES ({id})"))
                .await
        }
        First::Pipeline => conn
            .pipeline("INSERT INTO sc (id) VALUES ($1)", &[&p])
            .await
            .map(drop),
        First::Stream => {
            let rows: Vec<(i64,)> = conn
                .query("SELECT id FROM sc WHERE id < $1")
                .params(&p)
                .stream::<(i64,)>()
                .try_collect()
                .await?;
            let _ = rows;
            Ok(())
        }
        First::Bulk => conn
            .bulk_insert("sc", &["id"], [p.to_vec()])
            .await
            .map(drop),
    }
}

/// One engine's side of the test: how to name a session and close it from outside.
trait Server {
    /// The builder of the pool under test.
    fn builder(&self, cause: Cause) -> PoolBuilder;
    /// The session id of `conn`, as the server names it.
    async fn session_id(&self, conn: &mut MiddlewarePoolConnection) -> i64;
    /// Closes the sessions from outside (for [`Cause::Killed`]).
    async fn kill(&self, ids: &[i64]);
    /// Whether any of the sessions is still open on the server.
    async fn any_open(&self, ids: &[i64]) -> bool;
}

async fn run(server: &impl Server, backend: &str) {
    let mut failures = Vec::new();
    let mut cases = 0;
    let mut id = 0i64;
    {
        let setup = server
            .builder(Cause::Killed)
            .max_size(1)
            .build()
            .await
            .expect("pool");
        setup
            .get_connection()
            .await
            .expect("checkout")
            .execute_batch("CREATE TABLE sc (id BIGINT PRIMARY KEY)")
            .await
            .expect("table");
    }
    for cause in [Cause::Killed, Cause::IdleLimit] {
        for first in FIRSTS {
            cases += 1;
            id += 1;
            let pool = server
                .builder(cause)
                .max_size(2)
                .build()
                .await
                .expect("pool");
            // Two connections open and idle in the pool.
            let mut a = pool.get_connection().await.expect("checkout a");
            let mut b = pool.get_connection().await.expect("checkout b");
            let ids = [
                server.session_id(&mut a).await,
                server.session_id(&mut b).await,
            ];
            drop(a);
            drop(b);
            // Let both rejoin the pool (a connection whose session changed is cleaned first).
            let idle_by = Instant::now() + Duration::from_secs(5);
            while pool.status().available < 2 && Instant::now() < idle_by {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            if matches!(cause, Cause::Killed) {
                server.kill(&ids).await;
            }
            let gone_by = Instant::now() + Duration::from_secs(15);
            while server.any_open(&ids).await {
                assert!(
                    Instant::now() < gone_by,
                    "[{backend}] {cause:?}: the sessions never closed"
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            let mut conn = pool
                .get_connection()
                .await
                .expect("checkout after the close");
            if let Err(e) = first_call(&mut conn, first, id).await {
                failures.push(format!("{cause:?} / {first:?}: the first call failed: {e}"));
            }
        }
    }
    println!(
        "server_closed backend={backend} cases={cases} first_call_errors={}",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "[{backend}] {} first call(s) failed:\n  {}",
        failures.len(),
        failures.join("\n  ")
    );
}

#[cfg(feature = "postgres")]
struct Pg {
    url: String,
    admin: tokio_postgres::Client,
}

#[cfg(feature = "postgres")]
impl Server for Pg {
    fn builder(&self, cause: Cause) -> PoolBuilder {
        let b = ConfigAndPool::postgres(&self.url);
        match cause {
            Cause::IdleLimit => b.after_connect(|c| {
                Box::pin(async move { c.execute_batch("SET idle_session_timeout = '1s'").await })
            }),
            Cause::Killed => b,
        }
    }

    async fn session_id(&self, conn: &mut MiddlewarePoolConnection) -> i64 {
        let (pid,): (i32,) = conn
            .query("SELECT pg_backend_pid()")
            .one()
            .await
            .expect("pid");
        i64::from(pid)
    }

    async fn kill(&self, ids: &[i64]) {
        for id in ids {
            let pid = i32::try_from(*id).expect("pid");
            self.admin
                .execute("SELECT pg_terminate_backend($1)", &[&pid])
                .await
                .expect("terminate");
        }
    }

    async fn any_open(&self, ids: &[i64]) -> bool {
        let pids: Vec<i32> = ids
            .iter()
            .map(|i| i32::try_from(*i).expect("pid"))
            .collect();
        let n: i64 = self
            .admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)",
                &[&pids],
            )
            .await
            .expect("pg_stat_activity")
            .get(0);
        n > 0
    }
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_first_call_after_the_server_closed_an_idle_connection_succeeds() {
    let _group = common::groups::enter("server_closed");
    common::pg::with_schema(|url| async move {
        let admin = common::pg::raw_client(&common::pg::base_url()).await;
        run(&Pg { url, admin }, "postgres").await;
    })
    .await;
}

#[cfg(feature = "mysql")]
struct My {
    url: String,
}

#[cfg(feature = "mysql")]
impl Server for My {
    fn builder(&self, cause: Cause) -> PoolBuilder {
        let b = ConfigAndPool::mysql(&self.url);
        match cause {
            Cause::IdleLimit => b.after_connect(|c| {
                Box::pin(async move { c.execute_batch("SET SESSION wait_timeout = 1").await })
            }),
            Cause::Killed => b,
        }
    }

    async fn session_id(&self, conn: &mut MiddlewarePoolConnection) -> i64 {
        let (id,): (i64,) = conn
            .query("SELECT CONNECTION_ID()")
            .one()
            .await
            .expect("id");
        id
    }

    async fn kill(&self, ids: &[i64]) {
        use mysql_async::prelude::Queryable;
        let mut admin = common::mysql::raw_conn(&self.url).await;
        for id in ids {
            admin.query_drop(format!("KILL {id}")).await.expect("kill");
        }
        let _ = admin.disconnect().await;
    }

    async fn any_open(&self, ids: &[i64]) -> bool {
        use mysql_async::prelude::Queryable;
        let mut admin = common::mysql::raw_conn(&self.url).await;
        let list = ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let n: Option<i64> = admin
            .query_first(format!(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID IN ({list})"
            ))
            .await
            .expect("processlist");
        let _ = admin.disconnect().await;
        n.unwrap_or(0) > 0
    }
}

#[cfg(feature = "mysql")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_first_call_after_the_server_closed_an_idle_connection_succeeds() {
    let _group = common::groups::enter("server_closed");
    common::mysql::with_database(|url| async move {
        run(&My { url }, "mysql").await;
    })
    .await;
}
