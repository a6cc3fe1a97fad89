//! Statements that answer with more than one result set (a `CALL` of a procedure that runs
//! several queries): the rows of every set are the answer, so a call that reads one result
//! set never keeps the first and drops the rest. It fails instead, with
//! [`ErrorKind::Unsupported`], after reading everything off the connection (which stays
//! usable); `dml` reads every set off and returns the count, as it does for any statement that
//! returns rows. A procedure's closing status (the empty answer every `CALL` ends with) is no
//! result set.

use mysql_async::{BinaryProtocol, QueryResult};

use super::error::map_err;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// Called once the first result set was read to its end: reads off whatever follows, and fails
/// when another result set with columns was among it.
pub(crate) async fn no_more(qr: &mut QueryResult<'_, '_, BinaryProtocol>) -> Result<()> {
    let mut more = 0usize;
    while !qr.is_empty() {
        if !qr.columns_ref().is_empty() {
            more += 1;
        }
        while qr.next().await.map_err(map_err)?.is_some() {}
    }
    if more == 0 {
        return Ok(());
    }
    Err(SqlMiddlewareDbError::new(
        ErrorKind::Unsupported,
        format!(
            "the statement returned {} result sets (a procedure's); this call reads one: read them all through mysql_connection()",
            more + 1
        ),
    ))
}
