//! Scaling sweeps, behind `BENCH_SWEEP=1` so ordinary runs stay short. Reported by
//! `cargo xtask bench-report`; see docs/dev/BenchTooling.md, "Scaling sweeps".
//!
//! - `sweep_lookup_rows`: L point lookups per iteration on a table of 1k, 10k and 100k rows.
//! - `sweep_fanout_concurrency`: L lookups per iteration split over C = 1…32 concurrent tasks.
//! - `sweep_text_payload`: L point lookups per iteration returning a text of 16 B, 1 KiB, 64 KiB.
//!
//! L = `BENCH_LOOKUPS` (default 1000) in every group, and every id declares
//! `Throughput::Elements(L)`, so the time per operation is comparable along each curve. The
//! ids are `rusqlite` (the raw driver, one connection, or C connections behind a minimal
//! blocking pool for the fan-out) and `middleware` (the public API on pooled connections with a
//! statement prepared once and a reused `RowValues` buffer), each with the parameter as value.

mod common;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use criterion::{BenchmarkId, Criterion, Throughput};
use sql_middleware::drivers::rusqlite::{self, Connection};
use sql_middleware::prelude::*;
use sql_middleware_bench::workloads;
use sql_middleware_bench::{BenchRow, dataset, sqlite as bs};

const ROWS: &[usize] = &[1_000, 10_000, 100_000];
const CONCURRENCY: &[usize] = &[1, 2, 4, 8, 16, 32];
const PAYLOAD_BYTES: &[usize] = &[16, 1_024, 65_536];

fn enabled() -> bool {
    std::env::var("BENCH_SWEEP").is_ok_and(|v| !v.is_empty() && v != "0")
}

fn manifest() -> &'static str {
    env!("CARGO_MANIFEST_DIR")
}

/// `l` ids spread over a table of `n` rows: the first `l` of the shuffled `1..=n`.
fn ids_over(n: usize, l: usize) -> Arc<Vec<i64>> {
    let mut ids = dataset::shuffled_ids(n);
    ids.truncate(l.min(n));
    Arc::new(ids)
}

fn sweep_lookup_rows(c: &mut Criterion) {
    if !enabled() {
        return;
    }
    let l = dataset::bench_lookups();
    let rt = common::runtime();
    let mut g = c.benchmark_group("sweep_lookup_rows");
    for &n in ROWS {
        let path = dataset::sqlite_lookup_path(manifest(), n);
        bs::ensure_lookup_db(&path, n).expect("build the SQLite lookup file");
        let ids = ids_over(n, l);
        g.throughput(Throughput::Elements(ids.len() as u64));
        let raw = bs::open_raw(&path).expect("open rusqlite");
        let mut raw_stmt = bs::lookup_stmt(&raw).expect("prepare the raw lookup");
        for &id in ids.iter().take(16) {
            let row = bs::raw_lookup(&mut raw_stmt, id).expect("raw lookup");
            workloads::check_row(id, &row).expect("rusqlite returns the dataset's rows");
        }
        let db = rt
            .block_on(common::plain(ConfigAndPool::sqlite(&path)).build())
            .expect("build the middleware pool");
        eprintln!(
            "[sweep_lookup_rows] {} lookups per iteration on {n} rows ({})",
            ids.len(),
            path.display()
        );
        g.bench_function(BenchmarkId::new("rusqlite", n), |b| {
            b.iter(|| {
                for &id in ids.iter() {
                    black_box(bs::raw_lookup(&mut raw_stmt, black_box(id)).expect("lookup"));
                }
            });
        });
        g.bench_function(BenchmarkId::new("middleware", n), |b| {
            b.iter_custom(|iters| {
                common::middleware_lookups::<BenchRow>(
                    &rt,
                    &db,
                    &ids,
                    dataset::LOOKUP_SQL_DOLLAR,
                    iters,
                )
            });
        });
    }
    g.finish();
}

fn sweep_fanout_concurrency(c: &mut Criterion) {
    if !enabled() {
        return;
    }
    let n = dataset::bench_lookups();
    let ids = Arc::new(dataset::shuffled_ids(n));
    let path = dataset::sqlite_lookup_path(manifest(), n);
    bs::ensure_lookup_db(&path, n).expect("build the SQLite lookup file");
    let rt = common::runtime();
    let mut g = c.benchmark_group("sweep_fanout_concurrency");
    g.throughput(Throughput::Elements(n as u64));
    for &conc in CONCURRENCY {
        let ranges = workloads::chunks(n, conc);
        let db = rt
            .block_on(common::plain(ConfigAndPool::sqlite(&path).max_size(conc)).build())
            .expect("build the middleware pool");
        let raw_pool: Arc<Mutex<Vec<Connection>>> = Arc::new(Mutex::new(
            (0..conc)
                .map(|_| bs::open_raw(&path).expect("open a raw rusqlite connection"))
                .collect(),
        ));
        eprintln!(
            "[sweep_fanout_concurrency] {n} lookups per iteration over C = {conc} tasks; pools of {conc}"
        );
        g.bench_function(BenchmarkId::new("rusqlite", conc), |b| {
            b.iter_custom(|iters| {
                common::fan_out(&rt, iters, &ranges, |r| {
                    let (pool, ids) = (Arc::clone(&raw_pool), Arc::clone(&ids));
                    async move {
                        tokio::task::spawn_blocking(move || bs::raw_share(&pool, &ids[r]))
                            .await
                            .expect("the blocking share panicked");
                    }
                })
            });
        });
        g.bench_function(BenchmarkId::new("middleware", conc), |b| {
            b.iter_custom(|iters| {
                common::fan_out(&rt, iters, &ranges, |r| {
                    common::middleware_share(db.clone(), Arc::clone(&ids), r)
                })
            });
        });
    }
    g.finish();
}

/// One row of the payload table.
#[derive(Debug)]
struct PayloadRow {
    id: i64,
    body: String,
}

impl FromRow for PayloadRow {
    fn from_row<R: SqlRow>(row: &R) -> Result<Self, SqlMiddlewareDbError> {
        Ok(PayloadRow {
            id: row.get(0)?,
            body: row.get(1)?,
        })
    }
}

const PAYLOAD_SQL_QMARK: &str = "SELECT id, body FROM payload WHERE id = ?1";
const PAYLOAD_SQL_DOLLAR: &str = "SELECT id, body FROM payload WHERE id = $1";

/// The text of row `id`: `bytes` ASCII characters, deterministic.
fn payload(id: i64, bytes: usize) -> String {
    let mut rng = dataset::SplitMix64::new(dataset::SEED ^ id as u64);
    (0..bytes)
        .map(|_| (b'a' + rng.below(26) as u8) as char)
        .collect()
}

/// Builds (or reuses) `bench_data/payload_{n}_{bytes}.sqlite` in WAL mode.
fn ensure_payload_db(n: usize, bytes: usize) -> rusqlite::Result<PathBuf> {
    let path = dataset::data_dir(manifest()).join(format!("payload_{n}_{bytes}.sqlite"));
    let ready = |p: &Path| -> bool {
        Connection::open(p)
            .and_then(|c| {
                c.query_row(
                    "SELECT COUNT(*), COALESCE(MAX(length(body)), 0) FROM payload",
                    [],
                    |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)),
                )
            })
            .is_ok_and(|v| v == (n as i64, bytes as i64))
    };
    if path.exists() && ready(&path) {
        return Ok(path);
    }
    std::fs::create_dir_all(dataset::data_dir(manifest())).expect("create bench_data");
    let tmp = dataset::build_tmp_path(&path);
    for p in [&tmp, &path] {
        for s in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(dataset::with_suffix(p, s));
        }
    }
    {
        let mut conn = Connection::open(&tmp)?;
        conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))?;
        conn.execute_batch("CREATE TABLE payload (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")?;
        let tx = conn.transaction()?;
        {
            let mut st = tx.prepare("INSERT INTO payload (id, body) VALUES (?1, ?2)")?;
            for id in 1..=n as i64 {
                st.execute(rusqlite::params![id, payload(id, bytes)])?;
            }
        }
        tx.commit()?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
    }
    std::fs::rename(&tmp, &path).expect("move the payload file into place");
    Ok(path)
}

fn sweep_text_payload(c: &mut Criterion) {
    if !enabled() {
        return;
    }
    let n = dataset::bench_lookups();
    let ids = Arc::new(dataset::shuffled_ids(n));
    let rt = common::runtime();
    let mut g = c.benchmark_group("sweep_text_payload");
    g.throughput(Throughput::Elements(n as u64));
    for &bytes in PAYLOAD_BYTES {
        let path = ensure_payload_db(n, bytes).expect("build the payload file");
        let raw = bs::open_raw(&path).expect("open rusqlite");
        let mut st = raw
            .prepare(PAYLOAD_SQL_QMARK)
            .expect("prepare the raw lookup");
        let mut raw_lookup = |id: i64| -> rusqlite::Result<PayloadRow> {
            st.query_row([id], |r| {
                Ok(PayloadRow {
                    id: r.get(0)?,
                    body: r.get(1)?,
                })
            })
        };
        let first = raw_lookup(ids[0]).expect("raw lookup");
        assert_eq!((first.id, first.body.len()), (ids[0], bytes), "payload row");
        let db = rt
            .block_on(common::plain(ConfigAndPool::sqlite(&path)).build())
            .expect("build the middleware pool");
        eprintln!(
            "[sweep_text_payload] {n} lookups per iteration, {bytes}-byte text ({})",
            path.display()
        );
        g.bench_function(BenchmarkId::new("rusqlite", bytes), |b| {
            b.iter(|| {
                for &id in ids.iter() {
                    black_box(raw_lookup(black_box(id)).expect("lookup"));
                }
            });
        });
        g.bench_function(BenchmarkId::new("middleware", bytes), |b| {
            b.iter_custom(|iters| {
                common::middleware_lookups::<PayloadRow>(&rt, &db, &ids, PAYLOAD_SQL_DOLLAR, iters)
            });
        });
    }
    g.finish();
}

fn note_when_disabled(_: &mut Criterion) {
    if !enabled() {
        eprintln!(
            "[scaling_sweeps] skipped: set BENCH_SWEEP=1 (or run `cargo xtask bench --sweep sweeps`)"
        );
    }
}

bench_main!(
    note_when_disabled,
    sweep_lookup_rows,
    sweep_fanout_concurrency,
    sweep_text_payload
);
