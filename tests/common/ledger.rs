//! The ledger load of the failover scenarios (`tests/reliability/failover.rs`): workers that each do an acknowledged `INSERT`
//! and then read it back on a checkout of their own, through the middleware's pool or through
//! a raw tokio-postgres control client; and a prober that writes to each node directly, to
//! see when a server accepts writes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use sql_middleware::prelude::*;

/// What one iteration of a worker saw, and when.
#[derive(Debug, Clone, Copy)]
pub enum Event {
    /// An `INSERT` acknowledged with this id.
    Wrote(i64),
    /// A write failed.
    WriteFailed,
    /// A read-back on its own checkout: whether it found the row, and whether the server that
    /// served it was read-only (`transaction_read_only` or in recovery).
    Read { found: bool, read_only: bool },
    /// A read failed.
    ReadFailed,
}

/// Every worker's events, in order.
pub type Log = Vec<Vec<(Instant, Event)>>;

/// The SQL of a read-back: the row, and what the server says of itself.
const READ_BACK: &str = "SELECT (SELECT count(*) FROM ledger WHERE id = $1), \
     pg_is_in_recovery() OR current_setting('transaction_read_only') = 'on'";

/// Runs `workers` middleware workers on `pool` until `stop`.
pub async fn middleware(pool: ConfigAndPool, workers: usize, stop: Arc<AtomicBool>) -> Log {
    let mut tasks = Vec::new();
    for w in 0..workers {
        let pool = pool.clone();
        let stop = Arc::clone(&stop);
        tasks.push(tokio::spawn(async move {
            let mut log = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let wrote: Result<i64, SqlMiddlewareDbError> = async {
                    let mut c = pool.get_connection().await?;
                    let (id,): (i64,) = c
                        .query("INSERT INTO ledger (client, w) VALUES ('mw', $1) RETURNING id")
                        .params(&[RowValues::Int(w as i64)])
                        .one()
                        .await?;
                    Ok(id)
                }
                .await;
                let Ok(id) = wrote else {
                    log.push((Instant::now(), Event::WriteFailed));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                log.push((Instant::now(), Event::Wrote(id)));
                let read: Result<(i64, bool), SqlMiddlewareDbError> = async {
                    let mut c = pool.get_connection().await?;
                    c.query(READ_BACK).params(&[RowValues::Int(id)]).one().await
                }
                .await;
                log.push((
                    Instant::now(),
                    match read {
                        Ok((n, read_only)) => Event::Read {
                            found: n > 0,
                            read_only,
                        },
                        Err(_) => Event::ReadFailed,
                    },
                ));
            }
            log
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("worker"));
    }
    out
}

/// The control: raw tokio-postgres, as a careful hand-written client does it. Each host is
/// tried in the URL's order within `bound` for connect, startup and `SHOW
/// transaction_read_only`; every statement is bounded by `bound`; any error (25006 included)
/// drops the connection, and the next iteration connects again.
pub async fn control(
    hosts: Vec<(String, u16)>,
    workers: usize,
    bound: Duration,
    stop: Arc<AtomicBool>,
) -> Log {
    let mut tasks = Vec::new();
    for w in 0..workers {
        let hosts = hosts.clone();
        let stop = Arc::clone(&stop);
        tasks.push(tokio::spawn(async move {
            let mut log = Vec::new();
            let mut client: Option<tokio_postgres::Client> = None;
            while !stop.load(Ordering::Relaxed) {
                if client.is_none() {
                    client = connect_writable(&hosts, bound).await;
                }
                let Some(c) = &client else {
                    log.push((Instant::now(), Event::WriteFailed));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                let wrote = tokio::time::timeout(
                    bound,
                    c.query_one(
                        "INSERT INTO ledger (client, w) VALUES ('raw', $1) RETURNING id",
                        &[&(w as i32)],
                    ),
                )
                .await;
                let id: i64 = match wrote {
                    Ok(Ok(row)) => row.get(0),
                    _ => {
                        client = None;
                        log.push((Instant::now(), Event::WriteFailed));
                        continue;
                    }
                };
                log.push((Instant::now(), Event::Wrote(id)));
                let read = tokio::time::timeout(bound, c.query_one(READ_BACK, &[&id])).await;
                log.push((
                    Instant::now(),
                    match read {
                        Ok(Ok(row)) => Event::Read {
                            found: row.get::<_, i64>(0) > 0,
                            read_only: row.get::<_, bool>(1),
                        },
                        _ => {
                            client = None;
                            Event::ReadFailed
                        }
                    },
                ));
            }
            log
        }));
    }
    let mut out = Vec::new();
    for t in tasks {
        out.push(t.await.expect("control worker"));
    }
    out
}

/// A raw connection to the first host that answers within `bound` and is writable.
async fn connect_writable(
    hosts: &[(String, u16)],
    bound: Duration,
) -> Option<tokio_postgres::Client> {
    for (h, p) in hosts {
        let attempt = async {
            let mut cfg = tokio_postgres::Config::new();
            cfg.host(h).port(*p).user("postgres").dbname("postgres");
            let (client, conn) = cfg.connect(tokio_postgres::NoTls).await.ok()?;
            tokio::spawn(async move {
                let _ = conn.await;
            });
            let row = client
                .query_one("SHOW transaction_read_only", &[])
                .await
                .ok()?;
            (row.get::<_, String>(0) == "off").then_some(client)
        };
        if let Ok(Some(c)) = tokio::time::timeout(bound, attempt).await {
            return Some(c);
        }
    }
    None
}

/// Per node, when a probe write succeeded or failed.
pub type Probes = Arc<std::sync::Mutex<Vec<Vec<(Instant, bool)>>>>;

/// Writes to each node every 50 ms on a fresh connection (each attempt bounded by 300 ms),
/// until `stop`, noting each outcome in `seen`.
pub async fn probe(ports: Vec<u16>, seen: Probes, stop: Arc<AtomicBool>) {
    let mut tasks = Vec::new();
    for (i, port) in ports.into_iter().enumerate() {
        let stop = Arc::clone(&stop);
        let seen = Arc::clone(&seen);
        tasks.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                let attempt = async {
                    let mut cfg = tokio_postgres::Config::new();
                    cfg.host("127.0.0.1")
                        .port(port)
                        .user("postgres")
                        .dbname("postgres");
                    let (client, conn) = cfg.connect(tokio_postgres::NoTls).await.ok()?;
                    let drive = tokio::spawn(async move {
                        let _ = conn.await;
                    });
                    let ok = client
                        .batch_execute("INSERT INTO probe DEFAULT VALUES")
                        .await
                        .is_ok();
                    drive.abort();
                    Some(ok)
                };
                let ok = matches!(
                    tokio::time::timeout(Duration::from_millis(300), attempt).await,
                    Ok(Some(true))
                );
                seen.lock().unwrap()[i].push((Instant::now(), ok));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("prober");
    }
}

/// When the node that accepts writes at the end began to: the first success of its last
/// unbroken run of successes (its index, and the time), if a node's last probe succeeded.
pub fn writable_since(probes: &[Vec<(Instant, bool)>]) -> Option<(usize, Instant)> {
    probes
        .iter()
        .enumerate()
        .filter(|(_, p)| p.last().is_some_and(|(_, ok)| *ok))
        .filter_map(|(i, p)| {
            let run = p.iter().rposition(|(_, ok)| !ok).map_or(0, |k| k + 1);
            p.get(run).map(|(at, _)| (i, *at))
        })
        .max_by_key(|(_, at)| *at)
}

/// A client's figures for one scenario.
#[derive(Debug)]
pub struct Figures {
    /// The longest a worker waited, from when the new primary accepted writes, for its first
    /// acknowledged write at or after that time (`None`: some worker never wrote again).
    pub gap: Option<Duration>,
    /// Acknowledged writes not on the final primary.
    pub lost: usize,
    /// Read-backs after the failover settled (2 s after the new primary accepted writes)
    /// served by a read-only server or missing a row just acknowledged.
    pub stale: usize,
    pub writes: usize,
    pub write_errors: usize,
}

impl Figures {
    pub fn of(log: &Log, writable: Instant, found: &std::collections::BTreeSet<i64>) -> Figures {
        let settled = writable + Duration::from_secs(2);
        let mut gap = Some(Duration::ZERO);
        let (mut lost, mut stale, mut writes, mut write_errors) = (0, 0, 0, 0);
        for worker in log {
            let first = worker.iter().find_map(|(at, e)| {
                (matches!(e, Event::Wrote(_)) && *at >= writable).then(|| *at - writable)
            });
            gap = match (gap, first) {
                (Some(g), Some(f)) => Some(g.max(f)),
                _ => None,
            };
            for (at, e) in worker {
                match e {
                    Event::Wrote(id) => {
                        writes += 1;
                        lost += usize::from(!found.contains(id));
                    }
                    Event::WriteFailed => write_errors += 1,
                    Event::Read { found, read_only } if *at >= settled => {
                        stale += usize::from(!found || *read_only);
                    }
                    _ => {}
                }
            }
        }
        Figures {
            gap,
            lost,
            stale,
            writes,
            write_errors,
        }
    }

    /// `prefix_gap_ms=… prefix_lost=… …` for the figure line.
    pub fn line(&self, prefix: &str) -> String {
        format!(
            "{prefix}_gap_ms={} {prefix}_lost={} {prefix}_stale_reads={} {prefix}_writes={} {prefix}_write_errors={}",
            self.gap
                .map_or_else(|| "never".to_owned(), |g| g.as_millis().to_string()),
            self.lost,
            self.stale,
            self.writes,
            self.write_errors
        )
    }
}
