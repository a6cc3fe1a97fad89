//! A dead connection is never handed out: a pooled connection that the server closed while it
//! sat idle costs the next caller no error. Its first call succeeds, whatever that call is, on
//! every server engine (Postgres and MySQL/MariaDB).
//!
//! Causes: the connection killed by an administrator (`pg_terminate_backend`, `KILL`), the
//! server's own idle limit (`idle_session_timeout`, `wait_timeout`, set short by the pool's
//! `after_connect` hook), and a close the client has not read yet when the checkout happens (a
//! relay in front of the server hangs up at the client's next bytes, which never reach the
//! server: the driver's own check at checkout cannot see it, whoever wins the race the first two
//! causes leave to chance). With that last cause a first call that is itself a write (a
//! script, here) on Postgres fails with `ConnectionLost` and stores nothing: no round trip is
//! spent checking the connection first, and without the server's goodbye nothing proves that
//! the write did not reach it (see `postgres/liveness.rs`). MySQL pings before such a write.
//! First calls: `query(..).select()`, `.dml()`, `prepare(..)` then
//! `.one(..)`, `begin()` … `commit()`, `execute_batch`, `pipeline`, `stream`, `bulk_insert`.
//! Every idle connection of the pool (two) is closed before the checkout, so a replacement
//! that is itself dead cannot pass either.
//!
//! Prints `server_closed backend=X cases=N first_call_errors=E`.

use std::time::{Duration, Instant};

use futures::TryStreamExt;
use sql_middleware::prelude::*;

use crate::common;
use crate::common::proxy::{Relay, Target};

#[derive(Debug, Clone, Copy)]
enum Cause {
    Killed,
    IdleLimit,
    /// Closed behind the client's back (see the module's docs): the pool reaches the server
    /// through a relay.
    Unnoticed,
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
    /// The builder of the pool under test, reaching the server through `relay` when given.
    fn builder(&self, cause: Cause, relay: Option<std::net::SocketAddr>) -> PoolBuilder;
    /// Where a relay forwards to.
    async fn target(&self) -> Target;
    /// The session id of `conn`, as the server names it.
    async fn session_id(&self, conn: &mut MiddlewarePoolConnection) -> i64;
    /// Closes the sessions from outside (for [`Cause::Killed`]).
    async fn kill(&self, ids: &[i64]);
    /// Whether any of the sessions is still open on the server.
    async fn any_open(&self, ids: &[i64]) -> bool;
    /// Whether a first call that is itself a write runs only when the driver proves the close
    /// came first (Postgres), rather than after a ping (MySQL).
    fn writes_need_proof(&self) -> bool;
}

async fn run(server: &impl Server, backend: &str) {
    let mut failures = Vec::new();
    let mut cases = 0;
    let mut id = 0i64;
    {
        let setup = server
            .builder(Cause::Killed, None)
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
    for cause in [Cause::Killed, Cause::IdleLimit, Cause::Unnoticed] {
        for first in FIRSTS {
            cases += 1;
            id += 1;
            let relay = match cause {
                Cause::Unnoticed => Some(Relay::start(server.target().await).await),
                Cause::Killed | Cause::IdleLimit => None,
            };
            let pool = server
                .builder(cause, relay.as_ref().map(|r| r.addr))
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
            match (cause, &relay) {
                (Cause::Killed, _) => server.kill(&ids).await,
                // The sessions stay open on the server until the client writes.
                (Cause::Unnoticed, Some(relay)) => relay.hang_up_existing(),
                _ => {}
            }
            let gone_by = Instant::now() + Duration::from_secs(15);
            while !matches!(cause, Cause::Unnoticed) && server.any_open(&ids).await {
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
            let r = first_call(&mut conn, first, id).await;
            drop(conn);
            let unproven = matches!((cause, first), (Cause::Unnoticed, First::Batch))
                && server.writes_need_proof();
            match r {
                Err(e) if unproven && e.kind() == ErrorKind::ConnectionLost => {
                    let mut c = pool.get_connection().await.expect("checkout");
                    let (n,): (i64,) = c
                        .query("SELECT COUNT(*) FROM sc WHERE id = $1")
                        .params(&[RowValues::Int(id)])
                        .one()
                        .await
                        .expect("count");
                    if n != 0 {
                        failures.push(format!(
                            "{cause:?} / {first:?}: failed, yet its row was stored"
                        ));
                    }
                }
                Err(e) => {
                    failures.push(format!("{cause:?} / {first:?}: the first call failed: {e}"));
                }
                Ok(()) if unproven => {
                    failures.push(format!(
                        "{cause:?} / {first:?}: succeeded, though the relay dropped it"
                    ));
                }
                Ok(()) => {}
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
    fn builder(&self, cause: Cause, relay: Option<std::net::SocketAddr>) -> PoolBuilder {
        let b = match relay {
            Some(addr) => ConfigAndPool::postgres_config(common::proxy::config_at(
                &self.url.parse().expect("the test URL"),
                addr.port(),
            )),
            None => ConfigAndPool::postgres(&self.url),
        };
        match cause {
            Cause::IdleLimit => b.after_connect(|c| {
                Box::pin(async move { c.execute_batch("SET idle_session_timeout = '1s'").await })
            }),
            Cause::Killed | Cause::Unnoticed => b,
        }
    }

    async fn target(&self) -> Target {
        common::proxy::target_of(&self.url.parse().expect("the test URL"))
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

    fn writes_need_proof(&self) -> bool {
        true
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
    fn builder(&self, cause: Cause, relay: Option<std::net::SocketAddr>) -> PoolBuilder {
        let b = match relay {
            Some(addr) => {
                let o = mysql_async::Opts::from_url(&common::mysql::driver_url(&self.url))
                    .expect("the test URL");
                let pass = o.pass().map(|p| format!(":{p}")).unwrap_or_default();
                // Without TLS: the relay passes bytes, and a `prefer` connect that finds no TLS
                // would connect again.
                ConfigAndPool::mysql(&format!(
                    "mysql://{}{pass}@{addr}/{}?sslmode=disable",
                    o.user().unwrap_or("root"),
                    o.db_name().unwrap_or("mysql")
                ))
            }
            None => ConfigAndPool::mysql(&self.url),
        };
        match cause {
            Cause::IdleLimit => b.after_connect(|c| {
                Box::pin(async move { c.execute_batch("SET SESSION wait_timeout = 1").await })
            }),
            Cause::Killed | Cause::Unnoticed => b,
        }
    }

    async fn target(&self) -> Target {
        let o = mysql_async::Opts::from_url(&common::mysql::driver_url(&self.url))
            .expect("the test URL");
        let addr = tokio::net::lookup_host((o.ip_or_hostname(), o.tcp_port()))
            .await
            .expect("the server's address")
            .next()
            .expect("an address");
        Target::Tcp(addr)
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

    fn writes_need_proof(&self) -> bool {
        false
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
