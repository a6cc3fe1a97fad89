//! The one definition of the benchmark data, shared as source by every harness.
//!
//! This file depends on `std` only, so the SQLx harness (which cannot link rusqlite) includes it
//! with `#[path]` and builds byte-for-byte the same rows and the same shuffled ids.

use std::path::{Path, PathBuf};

/// One lookup result: `SELECT id, name, score, active FROM test WHERE id = ?1`.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRow {
    /// Primary key, `1..=N`.
    pub id: i64,
    /// `name-{id}`.
    pub name: String,
    /// `id * 0.5`.
    pub score: f64,
    /// `id % 2 == 0`.
    pub active: bool,
}

/// Seed of every pseudo-random choice in the benchmarks.
pub const SEED: u64 = 0x5eed_1234_abcd_0042;

/// The lookup table's schema (valid on SQLite, Turso and Postgres).
pub const LOOKUP_SCHEMA: &str = "CREATE TABLE test (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL NOT NULL, active INTEGER NOT NULL)";

/// The lookup query with `?1` (SQLite, Turso, SQLx-SQLite).
pub const LOOKUP_SQL_QMARK: &str = "SELECT id, name, score, active FROM test WHERE id = ?1";
/// The lookup query with `$1` (Postgres, and the middleware on every backend).
pub const LOOKUP_SQL_DOLLAR: &str = "SELECT id, name, score, active FROM test WHERE id = $1";
/// The insert statement of the dataset with `?N` placeholders.
pub const LOOKUP_INSERT_QMARK: &str =
    "INSERT INTO test (id, name, score, active) VALUES (?1, ?2, ?3, ?4)";
/// The insert statement of the dataset with `$N` placeholders.
pub const LOOKUP_INSERT_DOLLAR: &str =
    "INSERT INTO test (id, name, score, active) VALUES ($1, $2, $3, $4)";

/// The row with primary key `id`.
pub fn row(id: i64) -> BenchRow {
    BenchRow {
        id,
        name: format!("name-{id}"),
        score: id as f64 * 0.5,
        active: id % 2 == 0,
    }
}

/// A tiny deterministic generator (SplitMix64), so no harness depends on `rand`'s versioned streams.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator starting at `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}

/// The ids `1..=n`, shuffled with [`SEED`] (Fisher–Yates).
pub fn shuffled_ids(n: usize) -> Vec<i64> {
    let mut ids: Vec<i64> = (1..=n as i64).collect();
    let mut rng = SplitMix64::new(SEED);
    for i in (1..ids.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        ids.swap(i, j);
    }
    ids
}

/// Reads a positive integer knob from the environment.
pub fn env_usize(name: &str) -> Option<usize> {
    std::env::var(name)
        .ok()?
        .trim()
        .parse()
        .ok()
        .filter(|n| *n > 0)
}

/// `BENCH_ROWS` (default 10).
pub fn bench_rows() -> usize {
    env_usize("BENCH_ROWS").unwrap_or(10)
}

/// `BENCH_LOOKUPS`, falling back to `BENCH_ROWS` when only that is set, else 1000.
pub fn bench_lookups() -> usize {
    env_usize("BENCH_LOOKUPS")
        .or_else(|| env_usize("BENCH_ROWS"))
        .unwrap_or(1000)
}

/// `BENCH_CONCURRENCY` (default 8).
pub fn bench_concurrency() -> usize {
    env_usize("BENCH_CONCURRENCY").unwrap_or(8)
}

/// `BENCH_TRACE` set and not `0`.
pub fn bench_trace() -> bool {
    std::env::var("BENCH_TRACE").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// The repository root, given the manifest directory of the harness (`CARGO_MANIFEST_DIR`).
/// The SQLx harness lives two levels below it.
pub fn repo_root(manifest_dir: &str) -> PathBuf {
    let dir = Path::new(manifest_dir);
    if dir.join("bench-harnesses").is_dir() {
        dir.to_path_buf()
    } else {
        dir.ancestors()
            .find(|p| p.join("bench-harnesses").is_dir())
            .map_or_else(|| dir.to_path_buf(), Path::to_path_buf)
    }
}

/// The committed figures: `<repo>/bench_results`, each id's `reference/` baseline.
pub fn reference_home(manifest_dir: &str) -> PathBuf {
    repo_root(manifest_dir).join("bench_results")
}

/// Where Criterion writes: `$CRITERION_HOME`, else `<repo>/bench_results` (its run folders,
/// `new/`, `base/` and `change/`, are git-ignored there; the committed figures are the
/// `reference/` baselines, see [`reference_home`]). A relative
/// `$CRITERION_HOME` is taken from the repository root: cargo runs each crate's benches in that
/// crate's own folder, so the current directory would split the results of the main crate and
/// the SQLx harness.
pub fn criterion_home(manifest_dir: &str) -> PathBuf {
    let root = repo_root(manifest_dir);
    match std::env::var_os("CRITERION_HOME") {
        Some(p) if !p.is_empty() => root.join(p),
        _ => root.join("bench_results"),
    }
}

/// The git-ignored folder holding the benchmark database files: `<repo>/bench_data`.
pub fn data_dir(manifest_dir: &str) -> PathBuf {
    repo_root(manifest_dir).join("bench_data")
}

/// The SQLite lookup database of `n` rows, shared by the middleware and SQLx harnesses.
pub fn sqlite_lookup_path(manifest_dir: &str, n: usize) -> PathBuf {
    data_dir(manifest_dir).join(format!("lookup_{n}.sqlite"))
}

/// The Turso lookup database of `n` rows (built by the Turso bench itself, with the same rows).
pub fn turso_lookup_path(manifest_dir: &str, n: usize) -> PathBuf {
    data_dir(manifest_dir).join(format!("lookup_{n}.turso.db"))
}

/// A process-private sibling of `path` to build a database in before renaming it into place.
pub fn build_tmp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp-{}", std::process::id()));
    path.with_file_name(name)
}

/// `path` with `suffix` appended to its file name (`-wal`, `-shm`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// Checks an existing lookup database: its one row of `COUNT(*)`, `MIN(id)`, `MAX(id)` must
/// read `(n, 1, n)`.
///
/// How every harness builds (or reuses) the SQLite lookup file at [`sqlite_lookup_path`]:
///
/// 1. If the file exists, is in WAL mode (`PRAGMA journal_mode` reads `wal`) and this query
///    reads `(n, 1, n)`, reuse it as it is.
/// 2. Otherwise build it at [`build_tmp_path`]: `PRAGMA journal_mode=WAL`, [`LOOKUP_SCHEMA`],
///    then one transaction inserting [`row`]`(id)` for `id = 1..=n` in ascending order with
///    [`LOOKUP_INSERT_QMARK`] (`active` bound as the integer 0 or 1); then
///    `PRAGMA wal_checkpoint(TRUNCATE)` and close.
/// 3. Remove the old file with its `-wal` and `-shm` siblings ([`with_suffix`]) and rename the
///    new file into place.
pub const LOOKUP_CHECK_SQL: &str =
    "SELECT COUNT(*), COALESCE(MIN(id), 0), COALESCE(MAX(id), 0) FROM test";

/// The Postgres schema holding the lookup table of the benches (created and dropped by them).
pub fn postgres_schema(n: usize) -> String {
    format!("sqlmw_bench_lookup_{n}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffle_is_a_fixed_permutation() {
        let a = shuffled_ids(1000);
        assert_eq!(a, shuffled_ids(1000));
        let mut sorted = a.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (1..=1000).collect::<Vec<_>>());
        assert_ne!(a[..10], sorted[..10]);
    }

    #[test]
    fn rows_follow_the_contract() {
        assert_eq!(
            row(3),
            BenchRow {
                id: 3,
                name: "name-3".into(),
                score: 1.5,
                active: false
            }
        );
    }
}
