//! MySQL/MariaDB side of the benchmarks: the server's URL, the lookup database (created and
//! dropped by the bench, the same table and rows as every other engine), and the raw
//! `mysql_async` controls: one connection with the lookup prepared once (`Conn::prep`, then
//! `exec_first` with positional parameters, the driver's documented fast path), and a
//! `mysql_async::Pool` of C connections for the fan-out.
//!
//! The crate re-exports [`mysql_async`] so the bench targets and examples use the same version
//! the middleware is built on.

pub use mysql_async;

use mysql_async::prelude::*;
use mysql_async::{Conn, Opts, OptsBuilder, Pool, PoolConstraints, PoolOpts, Statement, TxOpts};
use std::hint::black_box;
use std::ops::Range;
use std::sync::Arc;

use sql_middleware::{ConfigAndPool, ErrorKind, Result, RowValues, SqlMiddlewareDbError};

use crate::check_ident;
use crate::dataset::{self, BenchRow};
use crate::driver_err as map_err;

/// The server of the MySQL ids when `SQL_MIDDLEWARE_MYSQL_URL` is not set.
pub const DEFAULT_URL: &str = "mysql://root@127.0.0.1:3306/test";

/// The lookup query with `?` (the raw `mysql_async` controls; the middleware takes
/// [`dataset::LOOKUP_SQL_DOLLAR`] and translates it to this).
pub const LOOKUP_SQL_QMARK: &str = "SELECT id, name, score, active FROM test WHERE id = ?";

/// The insert of the dataset with `?` placeholders.
const LOOKUP_INSERT_QMARK: &str = "INSERT INTO test (id, name, score, active) VALUES (?, ?, ?, ?)";

/// `SQL_MIDDLEWARE_MYSQL_URL`, else [`DEFAULT_URL`].
pub fn base_url() -> String {
    std::env::var("SQL_MIDDLEWARE_MYSQL_URL")
        .ok()
        .map(|u| u.trim().to_owned())
        .filter(|u| !u.is_empty())
        .unwrap_or_else(|| DEFAULT_URL.to_owned())
}

/// The database holding the lookup table of `n` rows for a bench (`suffix` tells the benches
/// apart: `""` for the lookup group, `"_fanout"`, `"_ratios"`). Created and dropped by them.
pub fn lookup_database(n: usize, suffix: &str) -> String {
    format!("sqlmw_bench_lookup_{n}{suffix}")
}

/// `url` naming `database` instead of its own (the path part of a `mysql://` or `mariadb://`
/// URL; the query string, if any, is kept).
pub fn url_with_database(url: &str, database: &str) -> String {
    let (head, query) = match url.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (url, None),
    };
    let after_scheme = head.find("://").map_or(0, |i| i + 3);
    let authority_end = head[after_scheme..]
        .find('/')
        .map_or(head.len(), |i| after_scheme + i);
    let mut out = format!("{}/{database}", &head[..authority_end]);
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    out
}

/// `mysql_async` options for `url` (`mariadb://` read as `mysql://`, which is the only scheme
/// the driver parses), over the same transport as the middleware's: the URL's host and port.
/// mysql_async's default (`prefer_socket`) would move a loopback connection to the server's
/// Unix socket, which is faster than TCP; every contender talks TCP unless the URL asks for the
/// socket (`prefer_socket=true`), as the middleware does.
pub fn raw_opts(url: &str) -> Result<Opts> {
    let url = match url.strip_prefix("mariadb://") {
        Some(rest) => format!("mysql://{rest}"),
        None => url.to_owned(),
    };
    let opts = Opts::from_url(&url).map_err(map_err)?;
    if url.contains("prefer_socket=") {
        return Ok(opts);
    }
    Ok(OptsBuilder::from_opts(opts).prefer_socket(false).into())
}

/// A raw `mysql_async` connection to `url`.
pub async fn connect_raw(url: &str) -> Result<Conn> {
    Conn::new(raw_opts(url)?).await.map_err(map_err)
}

/// The raw lookup control: one connection and the lookup statement prepared on it once.
pub async fn raw_lookup_conn(url: &str) -> Result<(Conn, Statement)> {
    let mut conn = connect_raw(url).await?;
    let stmt = conn.prep(LOOKUP_SQL_QMARK).await.map_err(map_err)?;
    Ok((conn, stmt))
}

/// The raw fan-out control: a `mysql_async::Pool` of exactly `size` connections
/// (`PoolConstraints::new(size, size)`), with `reset_connection` as given. With `false`, a
/// returned connection keeps its session and its statement cache (the driver's documented
/// opt-out "to increase overall performance"); with `true` (the driver's default), every return
/// runs `COM_RESET_CONNECTION`, one more round trip, which also empties the statement cache.
pub fn raw_pool(url: &str, size: usize, reset_connection: bool) -> Result<Pool> {
    let constraints = PoolConstraints::new(size, size).ok_or_else(|| {
        SqlMiddlewareDbError::new(ErrorKind::InvalidInput, "pool size must be at least 1")
    })?;
    let opts = OptsBuilder::from_opts(raw_opts(url)?).pool_opts(
        PoolOpts::default()
            .with_constraints(constraints)
            .with_reset_connection(reset_connection),
    );
    Ok(Pool::new(opts))
}

/// One lookup row as `mysql_async` decodes it by position: `INTEGER` (INT), `TEXT`, `REAL`
/// (DOUBLE on MySQL and MariaDB) and `INTEGER` 0 or 1.
pub type RawRow = (i64, String, f64, i64);

/// The raw controls' decode of a lookup row into [`BenchRow`].
#[inline]
pub fn to_bench_row((id, name, score, active): RawRow) -> BenchRow {
    BenchRow {
        id,
        name,
        score,
        active: active != 0,
    }
}

/// One raw lookup on a held connection with the statement prepared once: `exec_first` with the
/// id as its one positional parameter, decoded into [`BenchRow`].
#[inline]
pub async fn raw_lookup(
    conn: &mut Conn,
    stmt: &Statement,
    id: i64,
) -> std::result::Result<BenchRow, mysql_async::Error> {
    let row: Option<RawRow> = conn.exec_first(stmt, (id,)).await?;
    row.map(to_bench_row)
        .ok_or_else(|| mysql_async::Error::Other(format!("no row with id {id}").into()))
}

/// One raw per-call lookup: `exec_first` with the SQL text, which `mysql_async` prepares once
/// per connection and then finds in the connection's statement cache (its per-call form).
#[inline]
pub async fn raw_lookup_cached(
    conn: &mut Conn,
    id: i64,
) -> std::result::Result<BenchRow, mysql_async::Error> {
    let row: Option<RawRow> = conn.exec_first(LOOKUP_SQL_QMARK, (id,)).await?;
    row.map(to_bench_row)
        .ok_or_else(|| mysql_async::Error::Other(format!("no row with id {id}").into()))
}

/// One task's share of the raw fan-out: per id of `range`, a checkout from the
/// `mysql_async::Pool`, [`raw_lookup_cached`] (a hit in the connection's statement cache unless
/// a reset emptied it), and the return of the connection (by drop, as the driver documents).
pub async fn raw_fanout_share(pool: Pool, ids: Arc<Vec<i64>>, range: Range<usize>) {
    for &id in &ids[range] {
        let mut conn = pool.get_conn().await.expect("checkout");
        black_box(raw_lookup_cached(&mut conn, id).await.expect("lookup"));
    }
}

/// One task's share of the middleware fan-out: per id of `range`, a checkout and one per-call
/// `query(..).params(..).one::<BenchRow>()` (its statement cache included), then the return.
pub async fn middleware_fanout_share(db: ConfigAndPool, ids: Arc<Vec<i64>>, range: Range<usize>) {
    for &id in &ids[range] {
        let mut conn = db.get_connection().await.expect("checkout");
        let row: BenchRow = conn
            .query(dataset::LOOKUP_SQL_DOLLAR)
            .params(&[RowValues::Int(id)])
            .one()
            .await
            .expect("lookup");
        black_box(row);
    }
}

/// Opens all `size` connections of a raw pool at once and checks that each returns the
/// dataset's rows for the first 64 of `ids` (untimed; this also puts the lookup in each
/// connection's statement cache).
pub async fn warm_raw_pool(pool: &Pool, size: usize, ids: &[i64]) -> Result<()> {
    let mut conns = Vec::with_capacity(size);
    for _ in 0..size {
        conns.push(pool.get_conn().await.map_err(map_err)?);
    }
    for conn in &mut conns {
        for &id in ids.iter().take(64) {
            let row = raw_lookup_cached(conn, id).await.map_err(map_err)?;
            crate::workloads::check_row(id, &row)?;
        }
    }
    Ok(())
}

/// Drops `database` (and everything in it) if it exists, connecting through `base_url`.
pub async fn drop_database(base_url: &str, database: &str) -> Result<()> {
    check_ident("database", database)?;
    let mut conn = connect_raw(base_url).await?;
    conn.query_drop(format!("DROP DATABASE IF EXISTS {database}"))
        .await
        .map_err(map_err)?;
    conn.disconnect().await.map_err(map_err)
}

/// Recreates `database` holding the lookup table [`dataset::LOOKUP_SCHEMA`] (InnoDB, the
/// server's default engine) with the rows `1..=n` (the same rows as every other harness;
/// `active` stored as the integer 0 or 1), inserted in one transaction through a prepared
/// statement, then `ANALYZE TABLE`. Returns the URL of `base_url`'s server naming `database`.
pub async fn create_lookup_database(base_url: &str, database: &str, n: usize) -> Result<String> {
    check_ident("database", database)?;
    let mut admin = connect_raw(base_url).await?;
    admin
        .query_drop(format!("DROP DATABASE IF EXISTS {database}"))
        .await
        .map_err(map_err)?;
    admin
        .query_drop(format!("CREATE DATABASE {database}"))
        .await
        .map_err(map_err)?;
    admin.disconnect().await.map_err(map_err)?;
    let url = url_with_database(base_url, database);
    let mut conn = connect_raw(&url).await?;
    conn.query_drop(dataset::LOOKUP_SCHEMA)
        .await
        .map_err(map_err)?;
    {
        let mut tx = conn
            .start_transaction(TxOpts::default())
            .await
            .map_err(map_err)?;
        let st = tx.prep(LOOKUP_INSERT_QMARK).await.map_err(map_err)?;
        tx.exec_batch(
            &st,
            (1..=n as i64).map(|id| {
                let r = dataset::row(id);
                (r.id, r.name, r.score, i64::from(r.active))
            }),
        )
        .await
        .map_err(map_err)?;
        tx.commit().await.map_err(map_err)?;
    }
    conn.query_drop("ANALYZE TABLE test")
        .await
        .map_err(map_err)?;
    let (count, min, max): (i64, i64, i64) = conn
        .query_first(dataset::LOOKUP_CHECK_SQL)
        .await
        .map_err(map_err)?
        .ok_or_else(|| SqlMiddlewareDbError::new(ErrorKind::Other, "no count row"))?;
    if (count, min, max) != (n as i64, 1, n as i64) {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::Other,
            format!("the lookup table holds ({count}, {min}, {max}), expected ({n}, 1, {n})"),
        ));
    }
    conn.disconnect().await.map_err(map_err)?;
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_names_the_database() {
        assert_eq!(
            url_with_database("mysql://root@127.0.0.1:3306/test", "db1"),
            "mysql://root@127.0.0.1:3306/db1"
        );
        assert_eq!(
            url_with_database("mariadb://u:p@h/test?ssl-mode=disabled", "db1"),
            "mariadb://u:p@h/db1?ssl-mode=disabled"
        );
        assert_eq!(
            url_with_database("mysql://root@localhost", "db1"),
            "mysql://root@localhost/db1"
        );
    }

    #[test]
    fn rows_decode_as_the_dataset() {
        assert_eq!(to_bench_row((4, "name-4".into(), 2.0, 1)), dataset::row(4));
    }
}
