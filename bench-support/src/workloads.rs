//! Backend-neutral workloads: the insert dataset (every [`RowValues`] kind), the fan-out
//! chunking and the `BENCH_TRACE` query/decode split.

use std::time::Instant;

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use rust_decimal::Decimal;
use uuid::Uuid;

use sql_middleware::{
    ErrorKind, FromRow, MiddlewarePoolConnection, Result, RowValues, SqlMiddlewareDbError,
};

use crate::dataset::{self, BenchRow, SplitMix64};

// ---------------------------------------------------------------------------------------------
// Insert dataset
// ---------------------------------------------------------------------------------------------

/// The table the insert benchmark fills.
pub const INSERT_TABLE: &str = "bench_insert";

/// The insert table on SQLite and Turso. The declared types are the ones the middleware reads
/// back as typed values (see [`RowValues`]).
pub const INSERT_SCHEMA_SQLITE: &str = "CREATE TABLE IF NOT EXISTS bench_insert (
    id INTEGER PRIMARY KEY,
    i_int INTEGER NOT NULL,
    f_float REAL NOT NULL,
    t_text TEXT NOT NULL,
    b_bool BOOLEAN NOT NULL,
    ts_timestamp TIMESTAMP NOT NULL,
    tz_timestamptz TIMESTAMPTZ NOT NULL,
    d_date DATE NOT NULL,
    u_uuid UUID NOT NULL,
    n_numeric NUMERIC NOT NULL,
    bl_blob BLOB NOT NULL,
    j_json JSON NOT NULL,
    z_null TEXT
)";

/// The insert table on Postgres (native types for every kind).
pub const INSERT_SCHEMA_POSTGRES: &str = "CREATE TABLE IF NOT EXISTS bench_insert (
    id BIGINT PRIMARY KEY,
    i_int BIGINT NOT NULL,
    f_float DOUBLE PRECISION NOT NULL,
    t_text TEXT NOT NULL,
    b_bool BOOLEAN NOT NULL,
    ts_timestamp TIMESTAMP NOT NULL,
    tz_timestamptz TIMESTAMPTZ NOT NULL,
    d_date DATE NOT NULL,
    u_uuid UUID NOT NULL,
    n_numeric NUMERIC NOT NULL,
    bl_blob BYTEA NOT NULL,
    j_json JSONB NOT NULL,
    z_null TEXT
)";

/// The insert with `$N` placeholders (the middleware, and Postgres raw).
pub const INSERT_SQL_DOLLAR: &str = "INSERT INTO bench_insert (id, i_int, f_float, t_text, b_bool, ts_timestamp, tz_timestamptz, d_date, u_uuid, n_numeric, bl_blob, j_json, z_null) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)";

/// The insert with `?N` placeholders (rusqlite and Turso raw).
pub const INSERT_SQL_QMARK: &str = "INSERT INTO bench_insert (id, i_int, f_float, t_text, b_bool, ts_timestamp, tz_timestamptz, d_date, u_uuid, n_numeric, bl_blob, j_json, z_null) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)";

/// The insert table's columns, in the order of [`InsertRecord::to_row_values`] (the bulk load).
pub const INSERT_COLUMNS: [&str; 13] = [
    "id",
    "i_int",
    "f_float",
    "t_text",
    "b_bool",
    "ts_timestamp",
    "tz_timestamptz",
    "d_date",
    "u_uuid",
    "n_numeric",
    "bl_blob",
    "j_json",
    "z_null",
];

/// `BENCH_BULK_ROWS`: rows per bulk load (default 100,000; `default` when given, e.g. a small
/// count for the smoke test).
pub fn bench_bulk_rows(default: usize) -> usize {
    dataset::env_usize("BENCH_BULK_ROWS").unwrap_or(default)
}

/// The Postgres schema of the bulk-load benchmark (created and dropped by it).
pub const POSTGRES_BULK_SCHEMA: &str = "sqlmw_bench_bulk";

/// The Postgres schema of the insert benchmark (created and dropped by it).
pub const POSTGRES_INSERT_SCHEMA: &str = "sqlmw_bench_inserts";

/// One row of the insert dataset, as typed application data. The raw drivers bind these fields
/// natively; the middleware gets the same data as [`RowValues`] ([`InsertRecord::to_row_values`]).
#[derive(Debug, Clone, PartialEq)]
pub struct InsertRecord {
    /// Primary key, `1..=R`.
    pub id: i64,
    /// Any 64-bit integer.
    pub int: i64,
    /// A float with two decimals.
    pub float: f64,
    /// 16 to 47 alphanumeric characters.
    pub text: String,
    /// A boolean.
    pub flag: bool,
    /// A timestamp in 2024 with microseconds.
    pub ts: NaiveDateTime,
    /// The same instant shifted, in UTC.
    pub tstz: DateTime<Utc>,
    /// A date.
    pub date: NaiveDate,
    /// A UUID (deterministic bits).
    pub uuid: Uuid,
    /// An exact decimal with two places.
    pub numeric: Decimal,
    /// 32 to 95 bytes.
    pub blob: Vec<u8>,
    /// A small JSON object.
    pub json: serde_json::Value,
}

impl InsertRecord {
    /// The same row as middleware parameters: one value per column, the last one `Null`.
    pub fn to_row_values(&self) -> Vec<RowValues> {
        vec![
            RowValues::Int(self.id),
            RowValues::Int(self.int),
            RowValues::Float(self.float),
            RowValues::Text(self.text.clone()),
            RowValues::Bool(self.flag),
            RowValues::Timestamp(self.ts),
            RowValues::TimestampTz(self.tstz),
            RowValues::Date(self.date),
            RowValues::Uuid(self.uuid),
            RowValues::Numeric(self.numeric),
            RowValues::Blob(self.blob.clone()),
            RowValues::JSON(self.json.clone()),
            RowValues::Null,
        ]
    }
}

fn alnum(rng: &mut SplitMix64, len: usize) -> String {
    const CHARS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    (0..len)
        .map(|_| CHARS[rng.below(CHARS.len() as u64) as usize] as char)
        .collect()
}

/// The insert dataset of `r` rows: deterministic (seeded with [`dataset::SEED`]), every
/// [`RowValues`] kind in every row.
pub fn insert_records(r: usize) -> Vec<InsertRecord> {
    let mut rng = SplitMix64::new(dataset::SEED ^ 0x1_5e47);
    let base = NaiveDate::from_ymd_opt(2024, 1, 1)
        .and_then(|d| d.and_hms_opt(0, 0, 0))
        .expect("a valid date");
    (1..=r as i64)
        .map(|id| {
            let secs = rng.below(366 * 86_400) as i64;
            let micros = rng.below(1_000_000) as i64;
            let ts =
                base + chrono::Duration::seconds(secs) + chrono::Duration::microseconds(micros);
            let shift = chrono::Duration::seconds(rng.below(86_400) as i64);
            let text_len = 16 + rng.below(32) as usize;
            let blob_len = 32 + rng.below(64) as usize;
            let tag = alnum(&mut rng, 8);
            InsertRecord {
                id,
                int: rng.next_u64() as i64,
                float: (rng.below(100_000_000) as f64) / 100.0,
                text: alnum(&mut rng, text_len),
                flag: rng.next_u64() & 1 == 1,
                ts,
                tstz: (ts + shift).and_utc(),
                date: ts.date(),
                uuid: Uuid::from_u64_pair(rng.next_u64(), rng.next_u64()),
                numeric: Decimal::new(rng.below(10_000_000_000) as i64 - 5_000_000_000, 2),
                blob: (0..blob_len).map(|_| rng.next_u64() as u8).collect(),
                json: serde_json::json!({
                    "id": id,
                    "tag": tag,
                    "vals": [rng.below(1000), rng.below(1000), rng.below(1000)],
                }),
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Lookups
// ---------------------------------------------------------------------------------------------

/// The lookup dataset of one run: `n` rows and the shuffled ids.
#[derive(Debug, Clone)]
pub struct Lookup {
    /// Number of rows (and lookups per iteration).
    pub n: usize,
    /// `1..=n`, shuffled with the fixed seed.
    pub ids: Vec<i64>,
}

impl Lookup {
    /// `BENCH_LOOKUPS` rows and ids.
    pub fn from_env() -> Self {
        Self::new(dataset::bench_lookups())
    }

    /// `n` rows and ids.
    pub fn new(n: usize) -> Self {
        Self {
            n,
            ids: dataset::shuffled_ids(n),
        }
    }
}

pub use crate::tasks::chunks;

/// Fails unless `row` is the dataset's row `id` (used once per contender, outside the timer).
pub fn check_row(id: i64, row: &BenchRow) -> Result<()> {
    let want = dataset::row(id);
    if *row == want {
        Ok(())
    } else {
        Err(SqlMiddlewareDbError::new(
            ErrorKind::Other,
            format!("lookup {id} decoded {row:?}, expected {want:?}"),
        ))
    }
}

/// Looks every id up once through the public API (`stmt.one::<BenchRow>`) and checks each row.
pub async fn verify_lookups(conn: &mut MiddlewarePoolConnection, ids: &[i64]) -> Result<()> {
    let mut stmt = conn.prepare(dataset::LOOKUP_SQL_DOLLAR).await?;
    let mut buf = [RowValues::Int(0)];
    for &id in ids {
        buf[0] = RowValues::Int(id);
        let row: BenchRow = stmt.one(&buf).await?;
        check_row(id, &row)?;
    }
    Ok(())
}

pub use crate::tasks::SplitStats;

/// The `BENCH_TRACE` split of a lookup path, per row.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceSplit {
    /// `stmt.select(&buf)`: execute and materialise the `ResultSet`.
    pub query: SplitStats,
    /// `BenchRow::from_row(&rs.results[0])`.
    pub decode: SplitStats,
    /// `stmt.one::<BenchRow>(&buf)`, the fused path the `middleware` id times.
    pub one: SplitStats,
}

/// The `BENCH_TRACE` pass: `rounds` times over `ids`, times each row's query (materialise a
/// `ResultSet`) and decode separately, and the fused `stmt.one::<BenchRow>` call, with
/// `Instant::now()` around every call. It runs outside Criterion's measurement, so the timed
/// ids are never slowed by it.
pub async fn trace_lookup_split(
    conn: &mut MiddlewarePoolConnection,
    ids: &[i64],
    rounds: usize,
) -> Result<TraceSplit> {
    let mut stmt = conn.prepare(dataset::LOOKUP_SQL_DOLLAR).await?;
    let mut buf = [RowValues::Int(0)];
    let cap = ids.len() * rounds;
    let (mut q, mut d, mut o) = (
        Vec::with_capacity(cap),
        Vec::with_capacity(cap),
        Vec::with_capacity(cap),
    );
    for _ in 0..rounds {
        for &id in ids {
            buf[0] = RowValues::Int(id);
            let t0 = Instant::now();
            let rs = stmt.select(&buf).await?;
            let t1 = Instant::now();
            let row = BenchRow::from_row(&rs.results[0])?;
            let t2 = Instant::now();
            std::hint::black_box(row);
            let t3 = Instant::now();
            let row: BenchRow = stmt.one(&buf).await?;
            let t4 = Instant::now();
            std::hint::black_box(row);
            q.push(t1 - t0);
            d.push(t2 - t1);
            o.push(t4 - t3);
        }
    }
    Ok(TraceSplit {
        query: SplitStats::of(q),
        decode: SplitStats::of(d),
        one: SplitStats::of(o),
    })
}

/// Prints a [`TraceSplit`] to stderr under `label`.
pub fn print_trace(label: &str, split: &TraceSplit) {
    eprintln!("[BENCH_TRACE] {label}: per row");
    eprintln!("[BENCH_TRACE]   query+materialise  {}", split.query);
    eprintln!("[BENCH_TRACE]   decode BenchRow    {}", split.decode);
    eprintln!("[BENCH_TRACE]   stmt.one (fused)   {}", split.one);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_cover_everything_once() {
        let c = chunks(10, 3);
        assert_eq!(c, vec![0..4, 4..7, 7..10]);
        assert_eq!(chunks(2, 4).iter().map(|r| r.len()).sum::<usize>(), 2);
    }

    #[test]
    fn insert_dataset_is_deterministic_and_covers_every_kind() {
        let a = insert_records(5);
        assert_eq!(a, insert_records(5));
        let values = a[0].to_row_values();
        let kinds: std::collections::HashSet<_> = values.iter().map(|v| v.kind_name()).collect();
        assert_eq!(kinds.len(), 12, "{kinds:?}");
    }
}
