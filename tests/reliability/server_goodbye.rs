//! The two orders in which a Postgres connection's driver can meet a server that ended an idle
//! session (`pg_terminate_backend`) and the first call of the next checkout, each forced:
//!
//! - **Goodbye first.** The driver reads the server's `FATAL` while no request is under way and
//!   ends; the call's request was queued and never sent. A first call that writes runs again on
//!   another connection, and stores its row once.
//! - **Request first.** The driver sends the request before it reads the `FATAL`, which then
//!   answers the request. A read runs again on another connection; a write fails with
//!   `ConnectionLost` and stores nothing (nothing proves that the server did not run it; see
//!   `postgres/liveness.rs`).
//!
//! The pool's connections are opened on a runtime of their own, whose thread waits between the
//! steps, so their driver tasks run only when the test lets them.
//!
//! Prints `server_goodbye order=X first=Y outcome=Z rows=N`.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use sql_middleware::prelude::*;

use crate::common;

/// What the thread of the held runtime is asked to do.
enum Step {
    /// Opens a pool of one connection, checks it out once (its backend's pid is sent back with
    /// the pool) and gives it back.
    Open(String, mpsc::Sender<(ConfigAndPool, i32)>),
    /// Lets the runtime run its tasks for a while (the drivers read what their sockets hold).
    Run(Duration, mpsc::Sender<()>),
}

/// A current-thread runtime on a thread of its own that runs only inside a [`Step`].
struct Held {
    steps: mpsc::Sender<Step>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Held {
    fn start() -> Held {
        let (steps, rx) = mpsc::channel::<Step>();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("held runtime");
            for step in rx {
                match step {
                    Step::Open(url, reply) => {
                        let opened = rt.block_on(async {
                            let pool = ConfigAndPool::postgres(&url)
                                .max_size(1)
                                .build()
                                .await
                                .expect("pool");
                            let mut c = pool.get_connection().await.expect("checkout");
                            let (pid,): (i32,) =
                                c.query("SELECT pg_backend_pid()").one().await.expect("pid");
                            drop(c);
                            let by = Instant::now() + Duration::from_secs(5);
                            while pool.status().available < 1 && Instant::now() < by {
                                tokio::time::sleep(Duration::from_millis(5)).await;
                            }
                            (pool, pid)
                        });
                        let _ = reply.send(opened);
                    }
                    Step::Run(d, done) => {
                        rt.block_on(async move { tokio::time::sleep(d).await });
                        let _ = done.send(());
                    }
                }
            }
        });
        Held {
            steps,
            thread: Some(thread),
        }
    }

    fn open(&self, url: &str) -> (ConfigAndPool, i32) {
        let (tx, rx) = mpsc::channel();
        self.steps
            .send(Step::Open(url.to_owned(), tx))
            .expect("held runtime");
        rx.recv().expect("opened")
    }

    /// Lets the held runtime run for `d`, blocking this thread meanwhile.
    fn run(&self, d: Duration) {
        let (tx, rx) = mpsc::channel();
        self.steps.send(Step::Run(d, tx)).expect("held runtime");
        tokio::task::block_in_place(|| rx.recv().expect("ran"));
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        let (closed, _) = mpsc::channel();
        self.steps = closed;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Order {
    GoodbyeFirst,
    RequestFirst,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum First {
    /// An `INSERT` script: itself a write, with nothing prepared before it.
    Write,
    Read,
}

async fn first_call(
    mut conn: MiddlewarePoolConnection,
    first: First,
    id: i64,
) -> Result<(), SqlMiddlewareDbError> {
    match first {
        First::Write => {
            conn.execute_batch(&format!("INSERT INTO gb (id) VALUES ({id})"))
                .await
        }
        First::Read => conn
            .query("SELECT count(*) FROM gb")
            .one::<(i64,)>()
            .await
            .map(drop),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_first_call_after_the_servers_goodbye_in_either_order() {
    let _group = common::groups::enter("server_closed");
    common::pg::with_schema(|url| async move {
        let admin = common::pg::raw_client(&common::pg::base_url()).await;
        let setup = ConfigAndPool::postgres(&url).build().await.expect("pool");
        setup
            .get_connection()
            .await
            .expect("checkout")
            .execute_batch("CREATE TABLE gb (id BIGINT PRIMARY KEY)")
            .await
            .expect("table");
        let held = Held::start();
        let mut failures = Vec::new();
        let mut id = 0;
        for order in [Order::GoodbyeFirst, Order::RequestFirst] {
            for first in [First::Write, First::Read] {
                id += 1;
                let (pool, pid) = held.open(&url);
                admin
                    .execute("SELECT pg_terminate_backend($1)", &[&pid])
                    .await
                    .expect("terminate");
                let by = Instant::now() + Duration::from_secs(15);
                loop {
                    let n: i64 = admin
                        .query_one(
                            "SELECT count(*) FROM pg_stat_activity WHERE pid = $1",
                            &[&pid],
                        )
                        .await
                        .expect("pg_stat_activity")
                        .get(0);
                    if n == 0 {
                        break;
                    }
                    assert!(Instant::now() < by, "the session never closed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                // The driver has not run since the server said goodbye: the pool's check at
                // checkout cannot see it.
                let conn = pool.get_connection().await.expect("checkout");
                let r = match order {
                    Order::GoodbyeFirst => {
                        held.run(Duration::from_millis(200));
                        first_call(conn, first, id).await
                    }
                    Order::RequestFirst => {
                        let call = tokio::spawn(first_call(conn, first, id));
                        // The request is queued for the driver before it runs.
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        held.run(Duration::from_millis(200));
                        call.await.expect("the call's task")
                    }
                };
                let (rows,): (i64,) = setup
                    .get_connection()
                    .await
                    .expect("checkout")
                    .query("SELECT count(*) FROM gb WHERE id = $1")
                    .params(&[RowValues::Int(id)])
                    .one()
                    .await
                    .expect("count");
                let outcome = match &r {
                    Ok(()) => "ok".to_owned(),
                    Err(e) => format!("{:?}", e.kind()),
                };
                println!(
                    "server_goodbye order={order:?} first={first:?} outcome={outcome} rows={rows}"
                );
                let stored = u8::from(first == First::Write);
                let expected = match (order, first) {
                    (Order::RequestFirst, First::Write) => {
                        matches!(&r, Err(e) if e.kind() == ErrorKind::ConnectionLost) && rows == 0
                    }
                    _ => r.is_ok() && rows == i64::from(stored),
                };
                if !expected {
                    failures.push(format!("{order:?} / {first:?}: {outcome}, rows={rows}"));
                }
                drop(pool);
                held.run(Duration::from_millis(20));
            }
        }
        assert!(
            failures.is_empty(),
            "unexpected outcomes:\n  {}",
            failures.join("\n  ")
        );
    })
    .await;
}
