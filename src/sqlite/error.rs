//! rusqlite errors mapped to [`SqlMiddlewareDbError`].

use rusqlite::ErrorCode;
use rusqlite::ffi;

use crate::error::{Backend, ErrorKind, SqlMiddlewareDbError};

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
            let text = msg.clone().unwrap_or_else(|| e.to_string());
            let kind = match e.extended_code {
                ffi::SQLITE_CONSTRAINT_UNIQUE | ffi::SQLITE_CONSTRAINT_PRIMARYKEY => {
                    ErrorKind::UniqueViolation
                }
                ffi::SQLITE_CONSTRAINT_FOREIGNKEY => ErrorKind::ForeignKeyViolation,
                ffi::SQLITE_CONSTRAINT_NOTNULL => ErrorKind::NotNullViolation,
                ffi::SQLITE_CONSTRAINT_CHECK => ErrorKind::CheckViolation,
                ffi::SQLITE_RANGE => ErrorKind::ParameterCount,
                ffi::SQLITE_TOOBIG => ErrorKind::InvalidInput,
                ffi::SQLITE_MISMATCH => ErrorKind::ParameterType,
                _ => match e.code {
                    ErrorCode::ConstraintViolation => ErrorKind::ConstraintViolation,
                    ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked => ErrorKind::Busy,
                    ErrorCode::OperationInterrupted => ErrorKind::Interrupted,
                    ErrorCode::CannotOpen | ErrorCode::NotADatabase | ErrorCode::ReadOnly => {
                        ErrorKind::Config
                    }
                    _ => crate::error::classify_sqlite_message(&text),
                },
            };
            let message = match kind {
                ErrorKind::Busy => format!(
                    "{text}: another connection held the lock for longer than the busy timeout; retry, or raise busy_timeout"
                ),
                _ => text,
            };
            (kind, Some(e.extended_code.to_string()), message)
        }
        E::SqlInputError { msg, error, .. } => (
            crate::error::classify_sqlite_message(msg),
            Some(error.extended_code.to_string()),
            msg.clone(),
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
        E::Utf8Error(..) | E::FromSqlConversionFailure(..) | E::IntegralValueOutOfRange(..) => {
            (ErrorKind::TypeMismatch, None, err.to_string())
        }
        E::NulError(_) => (ErrorKind::InvalidInput, None, err.to_string()),
        E::ToSqlConversionFailure(_) => (ErrorKind::ParameterType, None, err.to_string()),
        E::MultipleStatement => (
            ErrorKind::InvalidInput,
            None,
            "the SQL text holds more than one statement; use execute_batch for scripts".into(),
        ),
        _ => (ErrorKind::Other, None, err.to_string()),
    }
}

impl From<rusqlite::Error> for SqlMiddlewareDbError {
    fn from(err: rusqlite::Error) -> Self {
        map_err(err)
    }
}
