//! Postgres side of the benchmarks: the lookup schema (created and dropped by the bench), the
//! raw tokio-postgres baseline's decode, and the raw insert baseline.

use sql_middleware::drivers::tokio_postgres;
use sql_middleware::{ErrorKind, Result, SqlMiddlewareDbError};

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls};

use crate::check_ident;
use crate::dataset::{self, BenchRow};
use crate::driver_err as map_err;
use crate::workloads::{INSERT_SCHEMA_POSTGRES, InsertRecord};

/// Connects a raw tokio-postgres client to `url`; its connection task runs on the current tokio
/// runtime until the client is dropped.
pub async fn connect_raw(url: &str) -> Result<Client> {
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.map_err(map_err)?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("[bench] raw Postgres connection ended: {e}");
        }
    });
    Ok(client)
}

/// `url` asking for plain text (`sslmode=disable`) unless it names an `sslmode` itself: the
/// benches' raw clients connect with `NoTls`, so the middleware's side stays plain text too, even
/// where the server offers TLS and the build has it (libpq's default, `prefer`, would take it).
pub fn plain_text_url(url: &str) -> String {
    if url.contains("sslmode") {
        url.to_owned()
    } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        let sep = if url.contains('?') { '&' } else { '?' };
        format!("{url}{sep}sslmode=disable")
    } else {
        format!("{url} sslmode=disable")
    }
}

/// Drops `schema` (and everything in it) if it exists.
pub async fn drop_schema(client: &Client, schema: &str) -> Result<()> {
    check_ident("schema", schema)?;
    client
        .batch_execute(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        .await
        .map_err(map_err)
}

/// Recreates `schema` holding the lookup table [`dataset::LOOKUP_SCHEMA`] with rows `1..=n`
/// (the same rows as every other harness; `active` stored as the integer 0 or 1), analysed.
pub async fn create_lookup_schema(client: &mut Client, schema: &str, n: usize) -> Result<()> {
    drop_schema(client, schema).await?;
    client
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; SET search_path TO {schema}; {}",
            dataset::LOOKUP_SCHEMA
        ))
        .await
        .map_err(map_err)?;
    let tx = client.transaction().await.map_err(map_err)?;
    let st = tx
        .prepare(dataset::LOOKUP_INSERT_DOLLAR)
        .await
        .map_err(map_err)?;
    for id in 1..=n as i64 {
        let r = dataset::row(id);
        let id32 = i32::try_from(r.id).map_err(|_| {
            SqlMiddlewareDbError::new(ErrorKind::InvalidInput, "the lookup table's ids are int4")
        })?;
        tx.execute(
            &st,
            &[&id32, &r.name, &(r.score as f32), &i32::from(r.active)],
        )
        .await
        .map_err(map_err)?;
    }
    tx.commit().await.map_err(map_err)?;
    client
        .batch_execute(&format!("ANALYZE {schema}.test; RESET search_path"))
        .await
        .map_err(map_err)
}

/// The raw baseline's decode of a lookup row, by position and by the table's declared types
/// (`INTEGER` is int4 and `REAL` is float4 on Postgres).
pub fn decode_row(
    row: &tokio_postgres::Row,
) -> std::result::Result<BenchRow, tokio_postgres::Error> {
    Ok(BenchRow {
        id: i64::from(row.try_get::<_, i32>(0)?),
        name: row.try_get(1)?,
        score: f64::from(row.try_get::<_, f32>(2)?),
        active: row.try_get::<_, i32>(3)? != 0,
    })
}

/// Recreates `schema` with an empty insert table.
pub async fn create_insert_schema(client: &Client, schema: &str) -> Result<()> {
    drop_schema(client, schema).await?;
    client
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; SET search_path TO {schema}; {INSERT_SCHEMA_POSTGRES}; RESET search_path"
        ))
        .await
        .map_err(map_err)
}

/// Empties the insert table (outside the timer). `TRUNCATE` keeps the table, so prepared
/// statements stay valid.
pub async fn reset_insert_table(client: &Client) -> Result<()> {
    client
        .batch_execute("TRUNCATE bench_insert")
        .await
        .map_err(map_err)
}

/// One insert record as tokio-postgres parameters, each field bound natively.
fn native_row(r: &InsertRecord) -> [&(dyn ToSql + Sync); 13] {
    [
        &r.id,
        &r.int,
        &r.float,
        &r.text,
        &r.flag,
        &r.ts,
        &r.tstz,
        &r.date,
        &r.uuid,
        &r.numeric,
        &r.blob,
        &r.json,
        &None::<&str>,
    ]
}

/// The raw insert baseline: a tokio-postgres transaction, the statement prepared beforehand,
/// every field bound natively (chrono, uuid, rust_decimal, serde_json, `Option::None`), commit.
pub async fn raw_insert(
    client: &mut Client,
    st: &tokio_postgres::Statement,
    records: &[InsertRecord],
) -> std::result::Result<(), tokio_postgres::Error> {
    let tx = client.transaction().await?;
    for r in records {
        let params = native_row(r);
        tx.execute(st, &params).await?;
    }
    tx.commit().await
}

/// The raw bulk-load baseline: `COPY … FROM STDIN BINARY` through tokio-postgres'
/// `BinaryCopyInWriter`, the column types known in advance and every field written natively,
/// as tokio-postgres documents it. Returns the rows copied.
pub async fn raw_copy(
    client: &Client,
    records: &[InsertRecord],
) -> std::result::Result<u64, tokio_postgres::Error> {
    use tokio_postgres::binary_copy::BinaryCopyInWriter;
    use tokio_postgres::types::Type;
    let sink = client.copy_in(RAW_COPY_SQL).await?;
    let types = [
        Type::INT8,
        Type::INT8,
        Type::FLOAT8,
        Type::TEXT,
        Type::BOOL,
        Type::TIMESTAMP,
        Type::TIMESTAMPTZ,
        Type::DATE,
        Type::UUID,
        Type::NUMERIC,
        Type::BYTEA,
        Type::JSONB,
        Type::TEXT,
    ];
    let writer = BinaryCopyInWriter::new(sink, &types);
    futures_util::pin_mut!(writer);
    for r in records {
        let row = native_row(r);
        writer.as_mut().write(&row).await?;
    }
    writer.finish().await
}

/// The raw baseline's `COPY` statement.
pub const RAW_COPY_SQL: &str = "COPY bench_insert (id, i_int, f_float, t_text, b_bool, ts_timestamp, tz_timestamptz, d_date, u_uuid, n_numeric, bl_blob, j_json, z_null) FROM STDIN BINARY";

/// Number of rows in the insert table (to check a run).
pub async fn insert_count(client: &Client) -> Result<i64> {
    client
        .query_one("SELECT COUNT(*) FROM bench_insert", &[])
        .await
        .map(|r| r.get(0))
        .map_err(map_err)
}

/// The read-only watch's work at `n` wake-ups of a connection's driver task: at each, two
/// lookups in the driver's map of the parameters the server reported. This crate is built
/// optimised in every profile, so a test build measures what an optimised build runs. Returns
/// how many lookups found `on` (which keeps the loop from being optimised away).
pub fn watch_lookups(params: &std::collections::HashMap<String, String>, n: u32) -> u32 {
    let mut on = 0u32;
    for _ in 0..n {
        let p = std::hint::black_box(params);
        on += u32::from(p.get("in_hot_standby").map(String::as_str) == Some("on"));
        on += u32::from(p.get("default_transaction_read_only").map(String::as_str) == Some("on"));
    }
    on
}
