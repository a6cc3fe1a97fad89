//! Reliability 20: writers that never wait on each other (SQLite and Turso). The mixed
//! workload at saturation: 64 tasks on one WAL database file, each picking per operation a
//! read (90%: a point lookup through `pool.reader()`) or a write (10%: an autocommit update or
//! insert through `pool.dml`), for a fixed time per round. Rounds alternate between the
//! single-writer mode (`PoolBuilder::single_writer(4)`: one writer, whose rounds commit the
//! writes that queued together, four read-only readers) and the default pool (of the default
//! size, every connection reading and writing, writers waiting for each other in the busy
//! handler), on the same database, so both see the same machine.
//!
//! - In the single-writer mode no operation fails: no `Busy`, no error at all (asserted).
//! - Both pools do work (asserted); the line gives each pool's operations per second, their
//!   ratio (`speedup`, the mode over the default pool: a benchmark figure, not asserted) and the
//!   default pool's errors (`default_busy`, `default_errors`: printed, not asserted).
//!
//! Knobs: `SINGLE_WRITER_ROUNDS` (rounds per pool, default 3), `SINGLE_WRITER_ROUND_MS`
//! (default 1500), `SINGLE_WRITER_SYNCHRONOUS` (a `PRAGMA synchronous` level both pools set on
//! each connection, e.g. `NORMAL`; default: the engine's own, where each commit waits for an
//! fsync, which then bounds both pools alike).

use std::sync::Arc;
use std::time::{Duration, Instant};

use sql_middleware::prelude::*;
use sql_middleware::{ErrorKind, PoolBuilder};

use crate::common::backends::{Kind, TempDir};
use crate::common::groups;
use crate::common::reliability::{Rng, SeedGuard, knob_usize};

const TASKS: usize = 64;
const READ_SHARE: f64 = 0.9;
const ROWS: i64 = 1_000;
const READERS: usize = 4;

/// What one round of one pool did.
#[derive(Debug, Default, Clone, Copy)]
struct Tally {
    reads: u64,
    writes: u64,
    busy: u64,
    errors: u64,
    elapsed: Duration,
}

impl Tally {
    fn add(&mut self, o: Tally) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.busy += o.busy;
        self.errors += o.errors;
        self.elapsed += o.elapsed;
    }

    fn ops_per_s(&self) -> f64 {
        (self.reads + self.writes) as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// One write: an update of a random row or an insert into the log, in autocommit.
async fn write(pool: &ConfigAndPool, id: i64, n: i64) -> Result<(), SqlMiddlewareDbError> {
    if n % 2 == 0 {
        pool.dml(
            "UPDATE kv SET v = v + 1 WHERE id = $1",
            &[RowValues::Int(id)],
        )
        .await?;
    } else {
        pool.dml(
            "INSERT INTO log (k, n) VALUES ($1, $2)",
            &[RowValues::Int(id), RowValues::Int(n)],
        )
        .await?;
    }
    Ok(())
}

/// One read: a point lookup on a reader.
async fn read(pool: &ConfigAndPool, id: i64) -> Result<(), SqlMiddlewareDbError> {
    let mut c = pool.reader().await?;
    let (_v,): (i64,) = c
        .query("SELECT v FROM kv WHERE id = $1")
        .params(&[RowValues::Int(id)])
        .one()
        .await?;
    Ok(())
}

/// One round of the mixed workload on `pool` for `time`.
async fn round(pool: &ConfigAndPool, time: Duration, rng: &mut Rng) -> Tally {
    let pool = Arc::new(pool.clone());
    let start = Instant::now();
    let end = start + time;
    let tasks: Vec<_> = (0..TASKS)
        .map(|t| {
            let (pool, mut rng) = (Arc::clone(&pool), rng.fork());
            tokio::spawn(async move {
                let mut tally = Tally::default();
                let mut n = 0i64;
                while Instant::now() < end {
                    let id = 1 + rng.below(ROWS as u64) as i64;
                    let is_read = rng.chance(READ_SHARE);
                    let r = if is_read {
                        read(&pool, id).await
                    } else {
                        n += 1;
                        write(&pool, id, (t as i64) << 32 | n).await
                    };
                    match r {
                        Ok(()) if is_read => tally.reads += 1,
                        Ok(()) => tally.writes += 1,
                        Err(e) => {
                            tally.errors += 1;
                            if e.kind() == ErrorKind::Busy {
                                tally.busy += 1;
                            }
                        }
                    }
                }
                tally
            })
        })
        .collect();
    let mut total = Tally::default();
    for t in tasks {
        total.add(t.await.unwrap());
    }
    total.elapsed = start.elapsed();
    total
}

/// The mixed workload on `kind`, alternating rounds of the two pools; prints and checks.
async fn mixed(kind: Kind, builder: impl Fn() -> PoolBuilder, test: &str) {
    let (_seed_guard, seed) = SeedGuard::new(test);
    let mut rng = Rng::new(seed);
    let rounds = knob_usize("SINGLE_WRITER_ROUNDS", 3);
    let time = Duration::from_millis(knob_usize("SINGLE_WRITER_ROUND_MS", 1500) as u64);
    let sync = std::env::var("SINGLE_WRITER_SYNCHRONOUS").ok();
    let b = || match sync.clone() {
        Some(level) => builder().after_connect(move |conn| {
            let sql = format!("PRAGMA synchronous={level}");
            Box::pin(async move { conn.execute_batch(&sql).await })
        }),
        None => builder(),
    };
    let mode = b().single_writer(READERS).build().await.unwrap();
    let default = b().build().await.unwrap();
    {
        let mut c = mode.get_connection().await.unwrap();
        c.execute_batch(
            "CREATE TABLE kv (id INTEGER PRIMARY KEY, v INTEGER NOT NULL);
             CREATE TABLE log (k INTEGER NOT NULL, n INTEGER NOT NULL)",
        )
        .await
        .unwrap();
        let rows: Vec<String> = (1..=ROWS).map(|i| format!("({i}, 0)")).collect();
        c.execute_batch(&format!(
            "INSERT INTO kv (id, v) VALUES {}",
            rows.join(", ")
        ))
        .await
        .unwrap();
    }
    let (mut m, mut d) = (Tally::default(), Tally::default());
    for _ in 0..rounds {
        m.add(round(&mode, time, &mut rng).await);
        d.add(round(&default, time, &mut rng).await);
    }
    let k = kind.name();
    println!(
        "single_writer backend={k} tasks={TASKS} read_share={READ_SHARE:.2} synchronous={} rounds={rounds} \
         round_ms={} readers={READERS} default_max_size={} mode_ops_per_s={:.0} \
         default_ops_per_s={:.0} speedup={:.2} mode_reads={} mode_writes={} mode_busy={} \
         mode_errors={} default_reads={} default_writes={} default_busy={} default_errors={}",
        sync.as_deref().unwrap_or("default"),
        time.as_millis(),
        default.status().max_size,
        m.ops_per_s(),
        d.ops_per_s(),
        m.ops_per_s() / d.ops_per_s().max(1e-9),
        m.reads,
        m.writes,
        m.busy,
        m.errors,
        d.reads,
        d.writes,
        d.busy,
        d.errors,
    );
    assert_eq!(m.busy, 0, "[{k}] Busy in the single-writer mode: {m:?}");
    assert_eq!(m.errors, 0, "[{k}] errors in the single-writer mode: {m:?}");
    assert!(
        m.writes > 0 && m.reads > 0,
        "[{k}] the mode did work: {m:?}"
    );
    assert!(
        d.writes + d.reads > 0,
        "[{k}] the default pool did work: {d:?}"
    );
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_workload_sqlite() {
    let _group = groups::enter("single_writer");
    let dir = TempDir::new("single_writer");
    let path = dir.path().join("mixed.db");
    mixed(
        Kind::Sqlite,
        || ConfigAndPool::sqlite(&path),
        "mixed_workload_sqlite",
    )
    .await;
}

#[cfg(feature = "turso")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_workload_turso() {
    let _group = groups::enter("single_writer");
    let dir = TempDir::new("single_writer");
    let path = dir.path().join("mixed.db");
    mixed(
        Kind::Turso,
        || ConfigAndPool::turso(&path),
        "mixed_workload_turso",
    )
    .await;
}
