//! Postgres bulk loading: one `COPY … FROM STDIN (FORMAT binary)`, each value encoded for the
//! column type the server declares, by the same lossless rules as parameters (`params.rs`).
//!
//! The column types come from preparing `SELECT <columns> FROM <table> LIMIT 0`, pipelined
//! with the `COPY` statement's own prepare (one round trip). The rows are encoded straight from
//! the caller's values into 64 KiB messages. A `COPY` is one statement: when a row fails (a
//! constraint, a value of the wrong type, a row of the wrong width), the copy is aborted and
//! nothing is loaded; the connection stays usable.

use bytes::{BufMut, Bytes, BytesMut};
use futures_util::{SinkExt, pin_mut};
use postgres_types::{IsNull, ToSql, Type};
use tokio_postgres::Client;

use super::conn::PgConnection;
use super::error::map_err;
use super::params::PgParam;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::sql::ident::BulkTarget;
use crate::value::RowValues;

/// The binary copy format's signature, flags and header extension length.
const HEADER: &[u8] = b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0\0\0";
/// A message goes to the server once this many bytes are encoded.
const FLUSH_AT: usize = 64 * 1024;

impl PgConnection {
    /// [`crate::contract::Wing::bulk_insert`] on Postgres (without its time limit). The rows
    /// are taken out of `rows` only once the load is prepared: a call that failed before then
    /// wrote nothing, and may run again with them (see `liveness.rs`).
    pub(super) async fn bulk_load<I, R>(
        &mut self,
        target: &BulkTarget,
        rows: &mut Option<I>,
        in_tx: bool,
    ) -> Result<u64>
    where
        I: Iterator<Item = R> + Send,
        R: AsRef<[RowValues]> + Send + Sync,
    {
        if self.needs_rollback || self.in_flight {
            self.repair().await?;
        }
        let d = super::dialect::DIALECT;
        let (table, cols) = (target.table_sql(d), target.columns_sql(d));
        let select = format!("SELECT {cols} FROM {table} LIMIT 0");
        let copy = format!("COPY {table} ({cols}) FROM STDIN (FORMAT binary)");
        // Behind a transaction-mode pooler, the prepares and the copy must share one server
        // connection: a transaction keeps them together.
        // (Not when raw SQL left a transaction open: its COMMIT would end that one.)
        let own_tx = !in_tx && self.unnamed() && !self.raw_tx_open().await?;
        // If this future is dropped mid-way, the connection is replaced (the abandoned copy is
        // aborted by the server when the connection closes): nothing is loaded.
        self.in_flight = true;
        if own_tx {
            self.client()?
                .batch_execute("BEGIN")
                .await
                .map_err(map_err)?;
        }
        let r = match describe(self.client()?, &select, &copy).await {
            Ok((types, statement)) => {
                // The server answered; from here on the call writes and never runs again.
                self.unverified = false;
                match rows.take() {
                    Some(rows) => copy_rows(self.client()?, target, &types, &statement, rows).await,
                    None => Err(SqlMiddlewareDbError::new(
                        ErrorKind::InvalidInput,
                        "the rows of this bulk insert were already used",
                    )),
                }
            }
            Err(e) => Err(e),
        };
        let r = if own_tx {
            let end = if r.is_ok() { "COMMIT" } else { "ROLLBACK" };
            match (r, self.client()?.batch_execute(end).await.map_err(map_err)) {
                (Ok(n), Ok(())) => Ok(n),
                (Err(e), _) | (Ok(_), Err(e)) => Err(e),
            }
        } else {
            r
        };
        // An error ended the copy (the server answered it): the connection is in a known state.
        self.in_flight = false;
        r
    }
}

/// The target's column types and the prepared `COPY`, in one round trip.
async fn describe(
    client: &Client,
    select: &str,
    copy: &str,
) -> Result<(Vec<Type>, tokio_postgres::Statement)> {
    let (described, statement) =
        futures_util::future::try_join(client.prepare(select), client.prepare(copy))
            .await
            .map_err(map_err)?;
    let types: Vec<Type> = described
        .columns()
        .iter()
        .map(|c| c.type_().clone())
        .collect();
    Ok((types, statement))
}

async fn copy_rows<I, R>(
    client: &Client,
    target: &BulkTarget,
    types: &[Type],
    statement: &tokio_postgres::Statement,
    rows: I,
) -> Result<u64>
where
    I: Iterator<Item = R> + Send,
    R: AsRef<[RowValues]> + Send + Sync,
{
    let width = i16::try_from(types.len()).map_err(|_| {
        SqlMiddlewareDbError::new(ErrorKind::InvalidInput, "too many columns for one COPY")
    })?;
    let sink = client
        .copy_in::<_, Bytes>(statement)
        .await
        .map_err(map_err)?;
    pin_mut!(sink);
    let mut buf = BytesMut::with_capacity(FLUSH_AT + FLUSH_AT / 4);
    buf.put_slice(HEADER);
    // Returning early drops the sink unfinished, which aborts the copy (`CopyFail`).
    for (number, row) in (1_u64..).zip(rows) {
        let row = row.as_ref();
        if row.len() != types.len() {
            return Err(target.wrong_width(number, row.len()));
        }
        buf.put_i16(width);
        for (k, (v, ty)) in row.iter().zip(types).enumerate() {
            let at = buf.len();
            buf.put_i32(0);
            let len = match PgParam(v).to_sql(ty, &mut buf) {
                Ok(IsNull::Yes) => -1,
                Ok(IsNull::No) => i32::try_from(buf.len() - at - 4).map_err(|_| {
                    SqlMiddlewareDbError::new(
                        ErrorKind::InvalidInput,
                        "a value is larger than Postgres accepts (1 GiB)",
                    )
                })?,
                Err(e) => {
                    return Err(SqlMiddlewareDbError::new(
                        ErrorKind::ParameterType,
                        format!(
                            "row {number}, column `{}`: {e}; nothing was loaded",
                            target.column(k)
                        ),
                    ));
                }
            };
            buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
        }
        if buf.len() >= FLUSH_AT {
            sink.send(buf.split().freeze()).await.map_err(map_err)?;
        }
    }
    buf.put_i16(-1);
    sink.send(buf.split().freeze()).await.map_err(map_err)?;
    sink.as_mut().finish().await.map_err(map_err)
}
