//! A write the server accepted only by changing a value is an error, never `Ok`.
//!
//! The session is strict (`STRICT_ALL_TABLES`, see `check.rs`), so a value that does not fit
//! its column is refused by the server before anything is written. What strict mode still lets
//! through with only a warning or a note is checked here, after every statement that writes,
//! when its answer counts warnings (free: the count is in the answer): more decimal places than
//! the column keeps (note 1265, the value rounded), and errors that `INSERT IGNORE` or
//! `UPDATE IGNORE` turn into warnings (a value clamped or cut). `SHOW WARNINGS` then says which;
//! a warning that a value was changed turns the call into a [`ErrorKind::ParameterType`] error.
//! Inside a `Tx` the transaction is aborted and rolled back, so nothing stays written. Outside
//! one the statement has already taken effect (autocommit): the error says so.
//!
//! Scripts (`execute_batch`) bind no values; their literals are left to strict mode.

use mysql_async::prelude::Queryable;

use super::config::MyClient;
use super::error::map_err;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// Warnings and notes that say a value was stored other than as given.
const CHANGED: [u16; 14] = [
    1048, // NULL to NOT NULL (IGNORE: the column's default stored)
    1246, // a column converted
    1262, // a row truncated
    1263, // NULL to NOT NULL, default stored
    1264, // out of range, clamped
    1265, // truncated (a decimal rounded)
    1292, // truncated incorrect value
    1300, // invalid character string
    1364, // no default value (IGNORE: an implicit default stored)
    1366, // incorrect value for the column
    1367, // illegal value during parsing
    1406, // too long, cut
    1411, // incorrect value for a function
    1918, // illegal value when converting
];

/// The warnings of the statement that just ran on `c`, when its answer counted some: the
/// first one that says a value was changed, as an error; `None` otherwise.
pub(crate) async fn changed_value(
    c: &mut MyClient,
    in_tx: bool,
) -> Result<Option<SqlMiddlewareDbError>> {
    if c.conn.get_warnings() == 0 {
        return Ok(None);
    }
    let rows: Vec<(String, u16, String)> = c.conn.query("SHOW WARNINGS").await.map_err(map_err)?;
    let Some((_, code, message)) = rows.into_iter().find(|(_, code, _)| CHANGED.contains(code))
    else {
        return Ok(None);
    };
    let what = super::error::public_message(code, &message);
    let effect = if in_tx {
        "the transaction is aborted: roll it back (a table that is not transactional, such as Aria or MyISAM, keeps the change)"
    } else {
        "outside a transaction the statement took effect before the warning could be read; run it inside a Tx to have it rolled back"
    };
    Ok(Some(SqlMiddlewareDbError::new(
        ErrorKind::ParameterType,
        format!(
            "the server stored a value other than the one given (warning {code}: {what}); {effect}; give a value that fits the column, or widen it"
        ),
    )))
}
