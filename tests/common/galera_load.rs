//! The load of the Galera scenarios (`tests/reliability/galera.rs`): middleware workers that
//! write through a multi-host pool and read each acknowledged write back through a pool with
//! causal reads that starts from another node, and raw mysql_async control workers that move
//! to the next node on any failure. Each write is a transaction with a unique id and a
//! conflicting update, retried with the same id until acknowledged; each attempt is bounded
//! at 2 s as a whole, on both sides.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;
use sql_middleware::prelude::*;

/// The bound of one write attempt (checkout or connect, and the transaction), for both
/// clients' workers; an attempt past it is dropped and tried again with the same id.
const ATTEMPT: Duration = Duration::from_secs(2);

/// What the workers of one client saw.
#[derive(Default)]
pub struct Seen {
    /// Acknowledged ids and when, per worker.
    pub acked: Mutex<Vec<Vec<(Instant, i64)>>>,
    pub failed: AtomicU64,
    pub conflicts: AtomicU64,
    pub reads: AtomicU64,
    pub stale: AtomicU64,
    pub read_errors: AtomicU64,
    /// Every failed write: the worker, when it began, how long it took, and why.
    pub failures: Mutex<Vec<(usize, Instant, Duration, String)>>,
}

impl Seen {
    pub fn new(workers: usize) -> Arc<Self> {
        Arc::new(Seen {
            acked: Mutex::new(vec![Vec::new(); workers]),
            ..Default::default()
        })
    }

    pub fn ack(&self, w: usize, id: i64) {
        self.acked.lock().unwrap()[w].push((Instant::now(), id));
    }

    /// The longest any worker waited, from `from`, for an acknowledged write (None: one never
    /// wrote again).
    pub fn wait_from(&self, from: Instant) -> Option<Duration> {
        let acked = self.acked.lock().unwrap();
        acked
            .iter()
            .map(|log| {
                log.iter()
                    .find(|(at, _)| *at >= from)
                    .map(|(at, _)| *at - from)
            })
            .try_fold(Duration::ZERO, |m, d| d.map(|d| m.max(d)))
    }

    /// The longest gap between two acknowledged writes of one worker (or from `from` to its
    /// first) that began in `from..until`: how long writes stalled during the fault.
    pub fn longest_gap(&self, from: Instant, until: Instant) -> Duration {
        let acked = self.acked.lock().unwrap();
        let mut longest = Duration::ZERO;
        for log in acked.iter() {
            let mut last = from;
            for (at, _) in log.iter().filter(|(at, _)| *at >= from) {
                if last < until {
                    longest = longest.max(*at - last);
                }
                last = *at;
            }
        }
        longest
    }

    /// Each worker's longest gap of [`Self::longest_gap`], as `worker: +start..+end ms` from
    /// `from`, one line per worker: where a long gap sat.
    pub fn gaps(&self, from: Instant, until: Instant) -> String {
        let acked = self.acked.lock().unwrap();
        acked
            .iter()
            .enumerate()
            .map(|(w, log)| {
                let (mut last, mut worst) = (from, (from, from));
                for (at, _) in log.iter().filter(|(at, _)| *at >= from) {
                    if last < until && *at - last > worst.1 - worst.0 {
                        worst = (last, *at);
                    }
                    last = *at;
                }
                format!(
                    "  - worker {w}: +{}..+{} ms",
                    (worst.0 - from).as_millis(),
                    (worst.1 - from).as_millis()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The failed writes of worker-time window `from..until` (those that began in it), one per
    /// line, with their start relative to `origin`: why a long gap was long.
    pub fn failures_in(&self, origin: Instant, from: Instant, until: Instant) -> String {
        let failures = self.failures.lock().unwrap();
        failures
            .iter()
            .filter(|(_, at, _, _)| *at >= from && *at < until)
            .map(|(w, at, took, why)| {
                format!(
                    "  - worker {w} at +{} ms, {} ms: {why}",
                    (*at - origin).as_millis(),
                    took.as_millis()
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn fail(&self, w: usize, began: Instant, why: String) {
        self.failures
            .lock()
            .unwrap()
            .push((w, began, began.elapsed(), why));
    }

    /// Which worker acknowledged `id`, and when.
    pub fn acked_at(&self, id: i64) -> Option<(usize, Instant)> {
        let acked = self.acked.lock().unwrap();
        acked
            .iter()
            .enumerate()
            .find_map(|(w, log)| log.iter().find(|(_, i)| *i == id).map(|(at, _)| (w, *at)))
    }

    pub fn ids(&self) -> Vec<i64> {
        self.acked
            .lock()
            .unwrap()
            .iter()
            .flatten()
            .map(|(_, id)| *id)
            .collect()
    }
}

/// A node order starting from node `first`.
pub fn rotated(first: usize) -> [usize; 3] {
    [first % 3, (first + 1) % 3, (first + 2) % 3]
}

/// One middleware write: the ledger row `id` and a conflicting update, in a transaction.
/// The error says which step failed (checkout, begin, insert, update, commit).
pub async fn mw_write(
    pool: &ConfigAndPool,
    id: i64,
) -> Result<(), (&'static str, SqlMiddlewareDbError)> {
    let at = |step| move |e| (step, e);
    let mut c = pool.get_connection().await.map_err(at("checkout"))?;
    let mut tx = c.begin().await.map_err(at("begin"))?;
    tx.query("INSERT INTO ledger (id, client) VALUES ($1, 'mw')")
        .params(&[RowValues::Int(id)])
        .dml()
        .await
        .map_err(at("insert"))?;
    tx.query("UPDATE hot SET n = n + 1 WHERE k = $1")
        .params(&[RowValues::Int(id % 4)])
        .dml()
        .await
        .map_err(at("update"))?;
    tx.commit().await.map_err(at("commit"))
}

/// A causal read of `id` through `pool`: `Some(found)`, or None when the read failed.
pub async fn mw_read(pool: &ConfigAndPool, id: i64) -> Option<bool> {
    let read = async {
        let mut c = pool.get_connection().await?;
        let (n,): (i64,) = c
            .query("SELECT COUNT(*) FROM ledger WHERE id = $1")
            .params(&[RowValues::Int(id)])
            .one()
            .await?;
        Ok::<_, SqlMiddlewareDbError>(n)
    };
    match tokio::time::timeout(Duration::from_secs(3), read).await {
        Ok(Ok(n)) => Some(n == 1),
        _ => None,
    }
}

/// A middleware worker: writes through `pool`, reads each acknowledged write back through
/// `reader`, until `stop`.
pub async fn mw_worker(
    w: usize,
    pool: ConfigAndPool,
    reader: ConfigAndPool,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
) {
    let mut id = 1_000_000 + (w as i64) * 100_000;
    let mut reads = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let began = Instant::now();
        // Each attempt is bounded as a whole, as the control's are: its statements are bounded
        // one by one (the pool's `statement_timeout`), and four of them, each slow but within
        // its limit while the cluster stalls, could take the whole 5 s the scenario allows.
        let r = tokio::time::timeout(ATTEMPT, mw_write(&pool, id)).await;
        let acked = match r {
            Ok(Ok(())) => true,
            // An earlier attempt with this id committed.
            Ok(Err((_, e))) if e.kind() == ErrorKind::UniqueViolation => true,
            Ok(Err((step, e))) => {
                if e.kind() == ErrorKind::Deadlock {
                    seen.conflicts.fetch_add(1, Ordering::Relaxed);
                } else {
                    seen.failed.fetch_add(1, Ordering::Relaxed);
                    seen.fail(w, began, format!("{step}: {:?}: {e}", e.kind()));
                }
                false
            }
            Err(_) => {
                seen.failed.fetch_add(1, Ordering::Relaxed);
                seen.fail(w, began, format!("no answer within {ATTEMPT:?}"));
                false
            }
        };
        if !acked {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        seen.ack(w, id);
        // The read runs beside the writes: a read stalled on a faulted node does not delay
        // the next write (the write gap measures writes only).
        let (reader, seen2) = (reader.clone(), Arc::clone(&seen));
        reads.push(tokio::spawn(async move {
            match mw_read(&reader, id).await {
                Some(true) => seen2.reads.fetch_add(1, Ordering::Relaxed),
                Some(false) => seen2.stale.fetch_add(1, Ordering::Relaxed),
                None => seen2.read_errors.fetch_add(1, Ordering::Relaxed),
            };
        }));
        id += 1;
    }
    for r in reads {
        r.await.expect("a causal read");
    }
}

/// A raw mysql_async connection to `port`, within a second.
pub async fn raw_conn(port: u16, db: &str) -> Option<mysql_async::Conn> {
    let opts = mysql_async::OptsBuilder::default()
        .ip_or_hostname("127.0.0.1")
        .tcp_port(port)
        .user(Some("root"))
        .db_name(Some(db))
        .prefer_socket(false);
    tokio::time::timeout(Duration::from_secs(1), mysql_async::Conn::new(opts))
        .await
        .ok()?
        .ok()
}

/// One raw write (the same transaction as [`mw_write`]); `Ok(true)` when acknowledged.
pub async fn raw_write(c: &mut mysql_async::Conn, id: i64) -> Result<bool, mysql_async::Error> {
    let r = async {
        c.query_drop("START TRANSACTION").await?;
        c.query_drop(format!(
            "INSERT INTO ledger (id, client) VALUES ({id}, 'raw')"
        ))
        .await?;
        c.query_drop(format!("UPDATE hot SET n = n + 1 WHERE k = {}", id % 4))
            .await?;
        c.query_drop("COMMIT").await
    }
    .await;
    match r {
        Ok(()) => Ok(true),
        Err(mysql_async::Error::Server(s)) if s.code == 1062 => Ok(true),
        Err(e) => Err(e),
    }
}

/// A raw control worker: the same writes on its own connection, moving to the next node of
/// `order` on any failure.
pub async fn raw_worker(
    w: usize,
    ports: Vec<u16>,
    db: String,
    seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
) {
    let mut id = 2_000_000 + (w as i64) * 100_000;
    let mut at = 0usize;
    let mut conn: Option<mysql_async::Conn> = None;
    while !stop.load(Ordering::Relaxed) {
        if conn.is_none() {
            conn = raw_conn(ports[at % ports.len()], &db).await;
            if conn.is_none() {
                at += 1;
                seen.failed.fetch_add(1, Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        }
        let c = conn.as_mut().expect("connected");
        match tokio::time::timeout(ATTEMPT, raw_write(c, id)).await {
            Ok(Ok(true)) => {
                seen.ack(w, id);
                id += 1;
            }
            Ok(Err(mysql_async::Error::Server(s))) if s.code == 1213 => {
                seen.conflicts.fetch_add(1, Ordering::Relaxed);
                let _ = c.query_drop("ROLLBACK").await;
            }
            _ => {
                seen.failed.fetch_add(1, Ordering::Relaxed);
                conn = None;
                at += 1;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}
