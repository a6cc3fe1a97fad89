//! What `tracing` spans cost a SQLite lookup when no subscriber is installed, measured so that
//! drift on a shared machine cancels: two pools on the benchmark's lookup file, one with spans
//! on (the default) and one with `.tracing(false)`, run in alternating rounds (the order swapped
//! every round) on one connection each, and the ratio of each round pair is kept. Prints the
//! median ratio and its interquartile range (the bench id `middleware_tracing` measures the same
//! in Criterion, but one id after the other).
//!
//! `cargo run --release --features tracing --example tracing_overhead [ROUNDS]`

use std::hint::black_box;
use std::time::{Duration, Instant};

use sql_middleware::prelude::*;
use sql_middleware_bench::{BenchRow, dataset, sqlite as bs};

async fn round(stmt: &mut PreparedStatement<'_>, ids: &[i64]) -> Duration {
    let mut buf = [RowValues::Int(0)];
    let start = Instant::now();
    for &id in ids {
        buf[0] = RowValues::Int(id);
        black_box(stmt.one::<BenchRow>(&buf).await.expect("lookup"));
    }
    start.elapsed()
}

fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

#[tokio::main]
async fn main() -> Result<(), SqlMiddlewareDbError> {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    let n = dataset::bench_lookups();
    let path = dataset::sqlite_lookup_path(env!("CARGO_MANIFEST_DIR"), n);
    bs::ensure_lookup_db(&path, n)?;
    let ids = dataset::shuffled_ids(n);

    let plain = ConfigAndPool::sqlite(&path).tracing(false).build().await?;
    let traced = ConfigAndPool::sqlite(&path).build().await?;
    let mut plain_conn = plain.get_connection().await?;
    let mut traced_conn = traced.get_connection().await?;
    let mut plain_stmt = plain_conn.prepare(dataset::LOOKUP_SQL_DOLLAR).await?;
    let mut traced_stmt = traced_conn.prepare(dataset::LOOKUP_SQL_DOLLAR).await?;
    // Warm both paths.
    for _ in 0..5 {
        round(&mut plain_stmt, &ids).await;
        round(&mut traced_stmt, &ids).await;
    }

    let mut ratios = Vec::with_capacity(rounds);
    let (mut sum_plain, mut sum_traced) = (Duration::ZERO, Duration::ZERO);
    for r in 0..rounds {
        let (p, t) = if r % 2 == 0 {
            let p = round(&mut plain_stmt, &ids).await;
            (p, round(&mut traced_stmt, &ids).await)
        } else {
            let t = round(&mut traced_stmt, &ids).await;
            (round(&mut plain_stmt, &ids).await, t)
        };
        sum_plain += p;
        sum_traced += t;
        ratios.push(t.as_secs_f64() / p.as_secs_f64());
    }
    let (q1, med, q3) = quartiles(ratios);
    let per = |d: Duration| d.as_secs_f64() * 1e9 / (rounds * n) as f64;
    println!(
        "{rounds} rounds of {n} lookups: spans on {:.0} ns, off {:.0} ns per lookup; \
         on ÷ off per round: median {med:.4}, interquartile {q1:.4}–{q3:.4}",
        per(sum_traced),
        per(sum_plain)
    );
    Ok(())
}
