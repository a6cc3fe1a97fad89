//! rusqlite errors mapped to [`SqlMiddlewareDbError`].

use rusqlite::ErrorCode;
use rusqlite::ffi;

use crate::error::{Backend, ErrorKind, SqlMiddlewareDbError};
use crate::sqlite_family::errors::{RAISED, classify_message, public_text};

/// Classifies a rusqlite error by its extended result code (and, for plain `SQLITE_ERROR`, by the
/// engine's message, which is the only place SQLite says "syntax" or "no such table").
pub(crate) fn map_err(err: rusqlite::Error) -> SqlMiddlewareDbError {
    let (kind, code, message) = classify(&err);
    SqlMiddlewareDbError::from_driver(Backend::Sqlite, kind, code, message, err)
}

fn classify(err: &rusqlite::Error) -> (ErrorKind, Option<String>, String) {
    use rusqlite::Error as E;
    match err {
        E::SqliteFailure(e, msg) => {
            // A trigger's `RAISE(…)` text is the application's (any expression, row values
            // included); every other message may quote a literal of the SQL.
            let text = match e.extended_code {
                ffi::SQLITE_CONSTRAINT_TRIGGER => RAISED.to_owned(),
                _ => public_text(msg.as_deref().unwrap_or(&e.to_string())),
            };
            let kind = match e.extended_code {
                ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                    ErrorKind::UniqueViolation
                }
                ffi::SQLITE_CONSTRAINT_FOREIGNKEY => ErrorKind::ForeignKeyViolation,
                ffi::SQLITE_CONSTRAINT_NOTNULL => ErrorKind::NotNullViolation,
                ffi::SQLITE_CONSTRAINT_CHECK => ErrorKind::CheckViolation,
                // A STRICT table refused a value of another type for its column, as MySQL's
                // `1366` and a Postgres bind do.
                ffi::SQLITE_CONSTRAINT_DATATYPE => ErrorKind::ParameterType,
                // A trigger's `RAISE(ABORT|FAIL|ROLLBACK, …)`: an error of the application's
                // own, `Other` as Postgres's `RAISE EXCEPTION` and MySQL's `SIGNAL` are.
                ffi::SQLITE_CONSTRAINT_TRIGGER => ErrorKind::Other,
                ffi::SQLITE_RANGE => ErrorKind::ParameterCount,
                ffi::SQLITE_TOOBIG => ErrorKind::InvalidInput,
                ffi::SQLITE_MISMATCH => ErrorKind::ParameterType,
                // A deferred transaction read a snapshot, then tried to write after another
                // connection committed: SQLite refuses at once (waiting cannot help), as Turso
                // does with `BusySnapshot`. Retrying the whole transaction is the cure.
                ffi::SQLITE_BUSY_SNAPSHOT => ErrorKind::SerializationFailure,
                // A plain BUSY the busy handler never gave up on: SQLite refused at once,
                // without calling it, because this connection's transaction holds a read
                // snapshot and another connection holds the write lock (waiting would
                // deadlock). Only restarting the transaction helps. The crate's busy handler
                // says whether it was called (`busy::gave_up`).
                ffi::SQLITE_BUSY if !super::busy::gave_up() => ErrorKind::SerializationFailure,
                _ => match e.code {
                    ErrorCode::ConstraintViolation => ErrorKind::ConstraintViolation,
                    ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => ErrorKind::Busy,
                    ErrorCode::OperationInterrupted => ErrorKind::Interrupted,
                    // A write the database refused: `PRAGMA query_only`, a database opened
                    // read-only. (A database that cannot be set up at all because it is
                    // read-only is reported as `Config` where it is opened: see `at_open`.)
                    ErrorCode::ReadOnly => ErrorKind::ReadOnly,
                    ErrorCode::CannotOpen | ErrorCode::NotADatabase => ErrorKind::Config,
                    _ => classify_message(&text),
                },
            };
            let message = match (kind, e.code) {
                // The busy handler waited the busy timeout (or the call's time limit) in vain.
                (ErrorKind::Busy, ErrorCode::DatabaseBusy) => format!(
                    "{text}: another connection held a conflicting lock for the whole busy timeout; retry later, or raise busy_timeout if such waits are expected"
                ),
                (ErrorKind::Busy, _) => format!(
                    "{text}: a table is locked by another statement or connection sharing this database's cache; finish or reset that statement first"
                ),
                (ErrorKind::SerializationFailure, _) if e.extended_code == ffi::SQLITE_BUSY => {
                    format!(
                        "{text}: this transaction read the database and now wants to write while another connection holds the write lock; SQLite refuses at once, since waiting cannot help: roll back and restart the transaction (begin() takes the write lock up front and avoids this)"
                    )
                }
                (ErrorKind::SerializationFailure, _) => format!(
                    "{text}: this transaction read data that another connection has since changed, so it cannot write; roll back and restart the transaction (begin() takes the write lock up front and avoids this)"
                ),
                _ => text,
            };
            (kind, Some(e.extended_code.to_string()), message)
        }
        E::SqlInputError { msg, error, .. } => (
            classify_message(msg),
            Some(error.extended_code.to_string()),
            public_text(msg),
        ),
        E::InvalidParameterCount(got, expected) => (
            ErrorKind::ParameterCount,
            None,
            format!("the statement expects {expected} parameter(s) but {got} were given"),
        ),
        E::InvalidColumnType(_, name, ty) => (
            ErrorKind::TypeMismatch,
            None,
            format!("column `{name}` holds a {ty} value of another type than requested"),
        ),
        E::QueryReturnedNoRows => (ErrorKind::NoRows, None, err.to_string()),
        E::InvalidColumnIndex(_) | E::InvalidColumnName(_) => {
            (ErrorKind::ColumnNotFound, None, err.to_string())
        }
        // rusqlite's text quotes the value (`Integer 300 out of range`, a parser's complaint
        // about the text it read): only the column and the kind of failure are named.
        E::IntegralValueOutOfRange(i, _) => (
            ErrorKind::TypeMismatch,
            None,
            format!("column {i}: the integer is out of range for the requested type"),
        ),
        E::FromSqlConversionFailure(i, ty, _) => (
            ErrorKind::TypeMismatch,
            None,
            format!("column {i}: the {ty} value cannot be converted to the requested type"),
        ),
        E::Utf8Error(..) => (ErrorKind::TypeMismatch, None, err.to_string()),
        E::NulError(_) => (ErrorKind::InvalidInput, None, err.to_string()),
        E::ToSqlConversionFailure(_) => (
            ErrorKind::ParameterType,
            None,
            "a parameter value cannot be bound (the value is not shown)".to_owned(),
        ),
        E::MultipleStatement => {
            let e = crate::sqlite_family::errors::multiple_statements();
            (e.kind(), None, e.message().to_owned())
        }
        _ => (ErrorKind::Other, None, err.to_string()),
    }
}

/// An error met while a connection is opened and set up: a database that cannot be written
/// is then a configuration error (the pool cannot set up WAL on a read-only file), as one that
/// cannot be opened is, not a refused write.
pub(crate) fn at_open(e: SqlMiddlewareDbError) -> SqlMiddlewareDbError {
    if e.kind() == ErrorKind::ReadOnly {
        e.with_kind(ErrorKind::Config)
    } else {
        e
    }
}

impl From<rusqlite::Error> for SqlMiddlewareDbError {
    fn from(err: rusqlite::Error) -> Self {
        map_err(err)
    }
}
