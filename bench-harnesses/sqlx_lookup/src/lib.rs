//! Shared setup of the SQLx comparison benches: the dataset (included by path from the main
//! crate, never copied), the SQLite lookup file, the Postgres lookup schema, the MySQL lookup
//! database, `BenchRow` decoding and the Criterion configuration.
//!
//! Everything here runs outside the timed loops.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use criterion::Criterion;
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions, MySqlRow};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
};
use sqlx::{ConnectOptions, Connection, Executor, FromRow, PgPool, Row};
use tokio::runtime::Runtime;

/// The one dataset definition of the repository (std only), shared as source with the main crate.
#[path = "../../../bench-support/src/dataset.rs"]
pub mod dataset;

/// Postgres server resolution shared with the main crate's tests (`SQL_MIDDLEWARE_PG_URL`, the
/// local default server, or a throwaway cluster).
#[path = "../../../tests/common/pg/mod.rs"]
pub mod pg;
/// The panic-catching runner the shared server code uses to tear down after a test body.
#[path = "../../../tests/common/unwind.rs"]
#[allow(dead_code)]
pub mod unwind;

/// The timed-loop helpers of the main crate's benches (std and tokio only), shared as source:
/// both harnesses spawn, fan out and split the ids the same way.
#[path = "../../../bench-support/src/tasks.rs"]
pub mod tasks;

pub use tasks::{SplitStats, chunks, fan_out, in_task};

pub use dataset::BenchRow;

/// This crate's manifest directory; the dataset helpers find the repository root from it.
pub const MANIFEST_DIR: &str = env!("CARGO_MANIFEST_DIR");

/// Pool size of the single-connection suites (`sqlite_single_row_lookup_sqlx`,
/// `postgres_single_row_lookup_sqlx`): SQLx's own default `max_connections`.
pub const SINGLE_POOL_MAX: u32 = 10;

/// `BenchRow` from a SQLite row: four `try_get` by column index, the same decode work as the
/// middleware's `BenchRow` decoder (no derive, no by-name lookup).
impl<'r> FromRow<'r, SqliteRow> for BenchRow {
    #[inline]
    fn from_row(row: &'r SqliteRow) -> Result<Self, sqlx::Error> {
        Ok(BenchRow {
            id: row.try_get(0)?,
            name: row.try_get(1)?,
            score: row.try_get(2)?,
            active: row.try_get(3)?,
        })
    }
}

/// `BenchRow` from a Postgres row of [`PG_LOOKUP_TABLE`] (int4, text, float4, int4), by column
/// index and the declared types, the same decode as the main crate's raw tokio-postgres baseline.
impl<'r> FromRow<'r, PgRow> for BenchRow {
    #[inline]
    fn from_row(row: &'r PgRow) -> Result<Self, sqlx::Error> {
        Ok(BenchRow {
            id: i64::from(row.try_get::<i32, _>(0)?),
            name: row.try_get(1)?,
            score: f64::from(row.try_get::<f32, _>(2)?),
            active: row.try_get::<i32, _>(3)? != 0,
        })
    }
}

/// `BenchRow` from a MySQL/MariaDB row of the lookup table (`INTEGER`, `TEXT`, `REAL`,
/// `INTEGER`: INT, TEXT, DOUBLE, INT 0/1 on the server), by column index and the declared types,
/// the same decode as the main crate's raw `mysql_async` control.
impl<'r> FromRow<'r, MySqlRow> for BenchRow {
    #[inline]
    fn from_row(row: &'r MySqlRow) -> Result<Self, sqlx::Error> {
        Ok(BenchRow {
            id: i64::from(row.try_get::<i32, _>(0)?),
            name: row.try_get(1)?,
            score: row.try_get(2)?,
            active: row.try_get::<i32, _>(3)? != 0,
        })
    }
}

/// The Criterion configuration of every suite: results in the shared CRITERION_HOME
/// (`$CRITERION_HOME`, else `<repo>/bench_results/`), 20 samples, 2 s warm-up, 5 s measurement.
/// Command-line flags (`--quick`, `--sample-size`, `--profile-time`, ...) still override it.
pub fn criterion() -> Criterion {
    let home = dataset::criterion_home(MANIFEST_DIR);
    Criterion::default()
        .output_directory(&home)
        .sample_size(20)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(5))
        .configure_from_args()
}

/// The multi-thread tokio runtime every suite runs on (default worker count = cores), the
/// runtime `#[tokio::main]` gives an application.
pub fn runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("cannot build the tokio runtime")
}

/// Connect options for the SQLite lookup file: SQLx defaults plus WAL, as SQLx recommends
/// for concurrent readers (the file is already in WAL mode; the pragma is then a no-op).
pub fn sqlite_options(path: &Path) -> SqliteConnectOptions {
    SqliteConnectOptions::new()
        .filename(path)
        .journal_mode(SqliteJournalMode::Wal)
}

/// A SQLx pool on the SQLite lookup file with `max_connections` connections at most, all opened
/// up front (`min_connections`), without the ping before each acquire (`test_before_acquire =
/// false`): a local file cannot lose its connection, and the middleware's SQLite pool does no I/O
/// to check a connection either. Every other pool option is SQLx's default.
pub async fn sqlite_pool(path: &Path, max_connections: u32) -> SqlitePool {
    SqlitePoolOptions::new()
        .max_connections(max_connections)
        .min_connections(max_connections)
        .test_before_acquire(false)
        .connect_with(sqlite_options(path))
        .await
        .unwrap_or_else(|e| panic!("cannot open a SQLx pool on {}: {e}", path.display()))
}

/// Returns the SQLite lookup database of `n` rows, `<repo>/bench_data/lookup_{n}.sqlite`,
/// building it first unless a valid one already exists. This follows the recipe documented at
/// `dataset::LOOKUP_CHECK_SQL`, which the main crate's benches follow too, so whichever runs
/// first creates the file and the other reuses it:
///
/// 1. reuse the file if it is in WAL mode and `LOOKUP_CHECK_SQL` reads `(n, 1, n)`;
/// 2. otherwise build it at `dataset::build_tmp_path` (WAL, `LOOKUP_SCHEMA`, one transaction
///    inserting `dataset::row(id)` for `1..=n` in order, `active` bound as the integer 0 or 1,
///    `wal_checkpoint(TRUNCATE)`, close);
/// 3. remove the old file and its `-wal`/`-shm` siblings, and rename the new file into place,
///    so a half-built file is never picked up.
pub async fn ensure_sqlite_lookup(n: usize) -> PathBuf {
    let path = dataset::sqlite_lookup_path(MANIFEST_DIR, n);
    if path.is_file() && sqlite_lookup_is_valid(&path, n).await {
        eprintln!("[sqlx bench] reusing {}", path.display());
        return path;
    }
    let dir = path.parent().expect("the lookup path has a parent folder");
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
    let tmp = dataset::build_tmp_path(&path);
    remove_sqlite_files(&tmp);
    if let Err(e) = build_sqlite_lookup(&tmp, n).await {
        remove_sqlite_files(&tmp);
        panic!("cannot build {}: {e}", tmp.display());
    }
    remove_sqlite_files(&path);
    std::fs::rename(&tmp, &path).unwrap_or_else(|e| {
        remove_sqlite_files(&tmp);
        panic!("cannot rename {} to {}: {e}", tmp.display(), path.display())
    });
    remove_sqlite_files(&tmp);
    assert!(
        sqlite_lookup_is_valid(&path, n).await,
        "the freshly built {} does not check out",
        path.display()
    );
    eprintln!("[sqlx bench] built {} ({n} rows)", path.display());
    path
}

/// Removes a database file and its `-wal`/`-shm` siblings, ignoring errors.
fn remove_sqlite_files(path: &Path) {
    let _ = std::fs::remove_file(path);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(dataset::with_suffix(path, suffix));
    }
}

/// Whether `path` holds a complete lookup database of `n` rows in WAL mode (recipe step 1).
async fn sqlite_lookup_is_valid(path: &Path, n: usize) -> bool {
    let check = async {
        let mut conn = SqliteConnectOptions::new().filename(path).connect().await?;
        let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
            .fetch_one(&mut conn)
            .await?;
        let counts: (i64, i64, i64) = sqlx::query_as(dataset::LOOKUP_CHECK_SQL)
            .fetch_one(&mut conn)
            .await?;
        conn.close().await?;
        Ok::<bool, sqlx::Error>(
            mode.eq_ignore_ascii_case("wal") && counts == (n as i64, 1, n as i64),
        )
    };
    match check.await {
        Ok(valid) => valid,
        Err(e) => {
            eprintln!("[sqlx bench] cannot use {} ({e})", path.display());
            false
        }
    }
}

/// Writes the lookup database of `n` rows into `path` (recipe step 2).
async fn build_sqlite_lookup(path: &Path, n: usize) -> Result<(), sqlx::Error> {
    let mut conn = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .connect()
        .await?;
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(sqlx::Error::Protocol(format!(
            "could not build the lookup file in WAL mode (journal_mode is {mode})"
        )));
    }
    conn.execute(dataset::LOOKUP_SCHEMA).await?;
    let mut tx = conn.begin().await?;
    for id in 1..=n as i64 {
        let row = dataset::row(id);
        sqlx::query(dataset::LOOKUP_INSERT_QMARK)
            .bind(row.id)
            .bind(row.name)
            .bind(row.score)
            .bind(i64::from(row.active))
            .execute(&mut *tx)
            .await?;
    }
    tx.commit().await?;
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").await?;
    conn.close().await?;
    Ok(())
}

/// Connect options for `url` (a `postgres://` URL or a libpq `key=value` string) with
/// `search_path` set to `schema`, and otherwise SQLx's defaults (statement cache on).
pub fn pg_options(url: &str, schema: &str) -> PgConnectOptions {
    let options = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        url.parse::<PgConnectOptions>()
            .unwrap_or_else(|e| panic!("SQLx cannot parse the Postgres URL: {e}"))
    } else {
        pg_options_from_key_values(url)
    };
    options.options([("search_path", schema)])
}

/// A minimal reader of libpq `key=value` connect strings (host, hostaddr, port, user, password,
/// dbname), enough for `SQL_MIDDLEWARE_PG_URL` in that form.
fn pg_options_from_key_values(conninfo: &str) -> PgConnectOptions {
    let mut options = PgConnectOptions::new();
    for pair in conninfo.split_whitespace() {
        let Some((key, value)) = pair.split_once('=') else {
            continue;
        };
        let value = value.trim_matches('\'');
        options = match key {
            "host" | "hostaddr" if value.starts_with('/') => options.socket(value),
            "host" | "hostaddr" => options.host(value),
            "port" => options.port(value.parse().expect("a numeric Postgres port")),
            "user" => options.username(value),
            "password" => options.password(value),
            "dbname" => options.database(value),
            _ => options,
        };
    }
    options
}

/// The lookup table's definition on Postgres: `dataset::LOOKUP_SCHEMA` run as is, exactly as
/// the main crate's `bench_postgres_single_row_lookup` does (`bench-support/src/postgres.rs`),
/// which makes it `test(id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL NOT NULL,
/// active INTEGER NOT NULL)`, i.e. int4, text, float4, int4 (0 or 1).
pub const PG_LOOKUP_TABLE: &str = dataset::LOOKUP_SCHEMA;

/// Makes sure schema `dataset::postgres_schema(n)` holds the lookup table with the rows
/// `dataset::row(1..=n)`, the same schema, table and rows as the main crate's Postgres bench
/// (which drops and recreates it the same way). When the schema is missing or does not hold
/// exactly those rows, it is dropped and recreated: `CREATE SCHEMA`, [`PG_LOOKUP_TABLE`], one
/// transaction inserting every row (id as int4, score as float4, active as int4 0/1), `ANALYZE`.
pub async fn ensure_pg_lookup(url: &str, n: usize) {
    ensure_pg_lookup_in(url, &dataset::postgres_schema(n), n).await;
}

/// [`ensure_pg_lookup`] in the schema `schema` (the fan-out bench's own schema).
pub async fn ensure_pg_lookup_in(url: &str, schema: &str, n: usize) {
    let pool = pg_admin_pool(url, schema).await;
    if pg_lookup_is_valid(&pool, n).await {
        eprintln!("[sqlx bench] reusing Postgres table {schema}.test");
    } else {
        let mut tx = pool.begin().await.expect("cannot begin");
        tx.execute(sqlx::AssertSqlSafe(format!(
            "DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
        )))
        .await
        .unwrap_or_else(|e| panic!("cannot drop schema {schema}: {e}"));
        tx.execute(sqlx::AssertSqlSafe(format!("CREATE SCHEMA \"{schema}\"")))
            .await
            .unwrap_or_else(|e| panic!("cannot create schema {schema}: {e}"));
        tx.execute(PG_LOOKUP_TABLE)
            .await
            .expect("cannot create the lookup table");
        for id in 1..=n as i64 {
            let row = dataset::row(id);
            sqlx::query(dataset::LOOKUP_INSERT_DOLLAR)
                .bind(i32::try_from(row.id).expect("the lookup table's ids are int4"))
                .bind(row.name)
                .bind(row.score as f32)
                .bind(i32::from(row.active))
                .execute(&mut *tx)
                .await
                .expect("cannot insert a lookup row");
        }
        tx.commit().await.expect("cannot commit the lookup rows");
        pool.execute("ANALYZE test")
            .await
            .expect("cannot analyze the lookup table");
        eprintln!("[sqlx bench] created Postgres table {schema}.test ({n} rows)");
    }
    pool.close().await;
}

/// Whether the lookup table in the pool's `search_path` holds exactly the `n` dataset rows,
/// with the column types [`BenchRow`]'s Postgres decoder expects.
async fn pg_lookup_is_valid(pool: &PgPool, n: usize) -> bool {
    let counts: Result<(i64, i32, i32), _> = sqlx::query_as(dataset::LOOKUP_CHECK_SQL)
        .fetch_one(pool)
        .await;
    let last: Result<Option<BenchRow>, _> = sqlx::query_as(dataset::LOOKUP_SQL_DOLLAR)
        .bind(i32::try_from(n).unwrap_or(i32::MAX))
        .fetch_optional(pool)
        .await;
    matches!(counts, Ok((c, 1, m)) if c == n as i64 && m as i64 == n as i64)
        && matches!(last, Ok(Some(row)) if row == dataset::row(n as i64))
}

/// Drops schema `dataset::postgres_schema(n)` (with `CASCADE`).
pub async fn drop_pg_lookup(url: &str, n: usize) {
    drop_pg_schema(url, &dataset::postgres_schema(n)).await;
}

/// Drops the schema `schema` (with `CASCADE`).
pub async fn drop_pg_schema(url: &str, schema: &str) {
    let pool = pg_admin_pool(url, "public").await;
    pool.execute(sqlx::AssertSqlSafe(format!(
        "SET lock_timeout = '30s'; DROP SCHEMA IF EXISTS \"{schema}\" CASCADE"
    )))
    .await
    .unwrap_or_else(|e| panic!("cannot drop schema {schema}: {e}"));
    pool.close().await;
}

/// A one-connection pool for setup and teardown.
async fn pg_admin_pool(url: &str, schema: &str) -> PgPool {
    PgPoolOptions::new()
        .max_connections(1)
        .connect_with(pg_options(url, schema))
        .await
        .unwrap_or_else(|e| panic!("SQLx cannot connect to Postgres: {e}"))
}

/// The `BENCH_TRACE` pass over a SQLite connection: `rounds` times over `ids`, times each
/// row's query (execute and fetch the `SqliteRow`) and decode separately, and the fused
/// `query_as` call, with `Instant::now()` around every call. It runs outside Criterion's
/// measurement, so the timed ids are never slowed by it. Returns (query, decode, fused).
pub async fn trace_sqlite_split(
    conn: &mut sqlx::SqliteConnection,
    stmt: &sqlx::sqlite::SqliteStatement,
    ids: &[i64],
    rounds: usize,
) -> (Vec<Duration>, Vec<Duration>, Vec<Duration>) {
    use sqlx::Statement;
    let cap = ids.len() * rounds;
    let (mut query, mut decode, mut fused) = (
        Vec::with_capacity(cap),
        Vec::with_capacity(cap),
        Vec::with_capacity(cap),
    );
    for _ in 0..rounds {
        for &id in ids {
            let t0 = Instant::now();
            let row = stmt
                .query()
                .bind(id)
                .fetch_one(&mut *conn)
                .await
                .expect("lookup");
            let t1 = Instant::now();
            std::hint::black_box(BenchRow::from_row(&row).expect("decode"));
            let t2 = Instant::now();
            let row: BenchRow = stmt
                .query_as()
                .bind(id)
                .fetch_one(&mut *conn)
                .await
                .expect("lookup");
            let t3 = Instant::now();
            std::hint::black_box(row);
            query.push(t1 - t0);
            decode.push(t2 - t1);
            fused.push(t3 - t2);
        }
    }
    (query, decode, fused)
}

/// Prints a `BENCH_TRACE` split: `query` = execute and fetch the row, `decode` = `BenchRow`
/// from the fetched row, `fused` = the `query_as` path the `sqlx` id times.
pub fn print_trace(
    label: &str,
    (query, decode, fused): (Vec<Duration>, Vec<Duration>, Vec<Duration>),
) {
    eprintln!("[BENCH_TRACE] {label}: per row");
    eprintln!(
        "[BENCH_TRACE]   query+fetch row    {}",
        SplitStats::of(query)
    );
    eprintln!(
        "[BENCH_TRACE]   decode BenchRow    {}",
        SplitStats::of(decode)
    );
    eprintln!(
        "[BENCH_TRACE]   query_as (fused)   {}",
        SplitStats::of(fused)
    );
}

/// The MySQL/MariaDB server when `SQL_MIDDLEWARE_MYSQL_URL` is not set (the main crate's
/// benches use the same default).
pub const MYSQL_DEFAULT_URL: &str = "mysql://root@127.0.0.1:3306/test";

/// `SQL_MIDDLEWARE_MYSQL_URL`, else [`MYSQL_DEFAULT_URL`].
pub fn mysql_base_url() -> String {
    std::env::var("SQL_MIDDLEWARE_MYSQL_URL")
        .ok()
        .map(|u| u.trim().to_owned())
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| MYSQL_DEFAULT_URL.to_owned())
}

/// The database of a MySQL lookup bench, named as the main crate's benches name theirs
/// (`sqlmw_bench_lookup_{n}{suffix}`), so both harnesses measure the same table and rows.
pub fn mysql_database(n: usize, suffix: &str) -> String {
    format!("sqlmw_bench_lookup_{n}{suffix}")
}

/// Connect options for `url` (`mariadb://` read as `mysql://`) naming `database`, otherwise
/// SQLx's defaults (persistent statements, statement cache of 100).
pub fn mysql_options(url: &str, database: &str) -> MySqlConnectOptions {
    let url = match url.strip_prefix("mariadb://") {
        Some(rest) => format!("mysql://{rest}"),
        None => url.to_owned(),
    };
    url.parse::<MySqlConnectOptions>()
        .unwrap_or_else(|e| panic!("SQLx cannot parse the MySQL URL: {e}"))
        .database(database)
}

/// The database named in `url` (its path), the one the admin connection opens.
fn mysql_url_database(url: &str) -> String {
    let head = url.split('?').next().unwrap_or(url);
    let after_scheme = head.find("://").map_or(0, |i| i + 3);
    head[after_scheme..]
        .split_once('/')
        .map(|(_, db)| db.to_owned())
        .filter(|db| !db.is_empty())
        .unwrap_or_else(|| "test".to_owned())
}

/// Makes sure `database` holds the lookup table with the rows `dataset::row(1..=n)`, as the
/// main crate's MySQL benches build it: when it is missing or holds anything else it is dropped
/// and recreated (`CREATE DATABASE`, `dataset::LOOKUP_SCHEMA`, one transaction inserting every
/// row with `active` as the integer 0 or 1, `ANALYZE TABLE`).
pub async fn ensure_mysql_lookup(url: &str, database: &str, n: usize) {
    assert!(
        database
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
        "database name {database:?} must be lower-case ASCII letters, digits and _"
    );
    let admin = mysql_admin_pool(url, &mysql_url_database(url)).await;
    let exists: Option<(String,)> =
        sqlx::query_as("SELECT schema_name FROM information_schema.schemata WHERE schema_name = ?")
            .bind(database)
            .fetch_optional(&admin)
            .await
            .expect("cannot read information_schema");
    if exists.is_some() {
        let pool = mysql_admin_pool(url, database).await;
        let valid = mysql_lookup_is_valid(&pool, n).await;
        pool.close().await;
        if valid {
            eprintln!("[sqlx bench] reusing MySQL table {database}.test");
            admin.close().await;
            return;
        }
    }
    admin
        .execute(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {database}"
        )))
        .await
        .unwrap_or_else(|e| panic!("cannot drop database {database}: {e}"));
    admin
        .execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {database}")))
        .await
        .unwrap_or_else(|e| panic!("cannot create database {database}: {e}"));
    admin.close().await;
    let pool = mysql_admin_pool(url, database).await;
    pool.execute(dataset::LOOKUP_SCHEMA)
        .await
        .expect("cannot create the lookup table");
    let mut tx = pool.begin().await.expect("cannot begin");
    for id in 1..=n as i64 {
        let row = dataset::row(id);
        sqlx::query("INSERT INTO test (id, name, score, active) VALUES (?, ?, ?, ?)")
            .bind(row.id)
            .bind(row.name)
            .bind(row.score)
            .bind(i32::from(row.active))
            .execute(&mut *tx)
            .await
            .expect("cannot insert a lookup row");
    }
    tx.commit().await.expect("cannot commit the lookup rows");
    pool.execute("ANALYZE TABLE test")
        .await
        .expect("cannot analyze the lookup table");
    assert!(
        mysql_lookup_is_valid(&pool, n).await,
        "the freshly built MySQL table {database}.test does not check out"
    );
    pool.close().await;
    eprintln!("[sqlx bench] created MySQL table {database}.test ({n} rows)");
}

/// Whether the lookup table of the pool's database holds exactly the `n` dataset rows.
async fn mysql_lookup_is_valid(pool: &MySqlPool, n: usize) -> bool {
    let counts: Result<(i64, i64, i64), _> = sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(MIN(id), 0) AS SIGNED), CAST(COALESCE(MAX(id), 0) AS SIGNED) FROM test",
    )
    .fetch_one(pool)
    .await;
    let last: Result<Option<BenchRow>, _> =
        sqlx::query_as("SELECT id, name, score, active FROM test WHERE id = ?")
            .bind(i32::try_from(n).unwrap_or(i32::MAX))
            .fetch_optional(pool)
            .await;
    matches!(counts, Ok((c, 1, m)) if c == n as i64 && m == n as i64)
        && matches!(last, Ok(Some(row)) if row == dataset::row(n as i64))
}

/// Drops `database` if it exists.
pub async fn drop_mysql_database(url: &str, database: &str) {
    let admin = mysql_admin_pool(url, &mysql_url_database(url)).await;
    admin
        .execute(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {database}"
        )))
        .await
        .unwrap_or_else(|e| panic!("cannot drop database {database}: {e}"));
    admin.close().await;
}

/// A one-connection pool on `database` for setup and teardown.
async fn mysql_admin_pool(url: &str, database: &str) -> MySqlPool {
    MySqlPoolOptions::new()
        .max_connections(1)
        .connect_with(mysql_options(url, database))
        .await
        .unwrap_or_else(|e| panic!("SQLx cannot connect to MySQL: {e}"))
}
