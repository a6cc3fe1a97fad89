//! What the throughput examples share besides their command line and report: the per-client
//! random generator, the loop that drives the Rust contenders' clients (a warm-up, then a
//! measured window; or a fixed count for profilers), and the interleaved rounds.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A small per-client generator (xorshift): the draws cost the same on every Rust side.
pub struct Rng(u64);

impl Rng {
    /// The generator of client `k` (each client draws its own sequence).
    pub fn for_client(k: usize) -> Rng {
        Rng(0x9E37_79B9_7F4A_7C15 ^ ((k as u64 + 1) << 20))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = u64::try_from(hi - lo + 1).expect("a range");
        lo + i64::try_from(self.next() % span).expect("in range")
    }
}

/// The runtime every Rust contender of an example shares: multi-thread, a worker per CPU.
pub fn runtime(cpus: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cpus)
        .enable_all()
        .build()
        .expect("runtime")
}

/// How long a Rust contender's clients run.
#[derive(Clone, Copy)]
pub enum Stop {
    /// Until this many transactions are done in all.
    Count(u64),
    /// For a one-second warm-up, then a measured window.
    Window(Duration),
}

/// One client of a Rust contender: it owns what it needs (a pool handle, its generator).
pub trait Client: Send + 'static {
    /// Runs one transaction to its end (retrying it itself when the engine asks for a retry).
    fn transaction(&mut self) -> impl Future<Output = ()> + Send;
}

/// Runs the clients concurrently on the current runtime and returns the transactions done (in
/// the measured window for [`Stop::Window`]).
pub async fn drive<C: Client>(clients: Vec<C>, stop: Stop) -> u64 {
    let counted = Arc::new(AtomicU64::new(0));
    let left = Arc::new(AtomicU64::new(match stop {
        Stop::Count(n) => n,
        Stop::Window(_) => u64::MAX,
    }));
    let measuring = Arc::new(AtomicBool::new(matches!(stop, Stop::Count(_))));
    let stopped = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::with_capacity(clients.len());
    for mut client in clients {
        let (counted, left, measuring, stopped) = (
            Arc::clone(&counted),
            Arc::clone(&left),
            Arc::clone(&measuring),
            Arc::clone(&stopped),
        );
        tasks.push(tokio::spawn(async move {
            while !stopped.load(Ordering::Relaxed) {
                if left
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                    .is_err()
                {
                    break;
                }
                client.transaction().await;
                if measuring.load(Ordering::Relaxed) {
                    counted.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    if let Stop::Window(window) = stop {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let from = counted.load(Ordering::Relaxed);
        measuring.store(true, Ordering::Relaxed);
        tokio::time::sleep(window).await;
        let to = counted.load(Ordering::Relaxed);
        stopped.store(true, Ordering::Relaxed);
        for t in tasks {
            t.await.expect("a client");
        }
        return to - from;
    }
    for t in tasks {
        t.await.expect("a client");
    }
    counted.load(Ordering::Relaxed)
}

/// Runs `rounds` rounds of every contender, each round in an order that rotates by one, and
/// returns `tps[round][contender]`; `run(i)` runs contender `i` once and returns its
/// transactions per second. Each round is logged to stderr as `[tag] label round r: …`.
pub fn rounds(
    tag: &str,
    label: &str,
    contenders: &[&'static str],
    rounds: usize,
    mut run: impl FnMut(&'static str) -> f64,
) -> Vec<Vec<f64>> {
    let n = contenders.len();
    let mut out = Vec::with_capacity(rounds);
    for r in 0..rounds {
        let mut tps = vec![0.0; n];
        for k in 0..n {
            let i = (k + r) % n;
            tps[i] = run(contenders[i]);
        }
        let sides: Vec<String> = contenders
            .iter()
            .zip(&tps)
            .map(|(c, t)| format!("{c} {t:.0}"))
            .collect();
        eprintln!("[{tag}] {label} round {}: {} tps", r + 1, sides.join(", "));
        out.push(tps);
    }
    out
}

/// `--only` mode: runs `run` (which returns the transactions done) once, timed, and prints the
/// figure for profilers.
pub fn only(name: &str, label: &str, run: impl FnOnce() -> u64) {
    let t = Instant::now();
    let done = run();
    let s = t.elapsed().as_secs_f64();
    println!(
        "{name} {label} transactions={done} seconds={s:.3} tps={:.0}",
        done as f64 / s
    );
}
