//! Turso errors mapped to [`SqlMiddlewareDbError`].
//!
//! Turso reports constraint failures as one `Constraint` variant with SQLite's message text, so
//! the kind (unique, not-null, check, foreign key) is read from that message. Its errors carry
//! no numeric codes; [`SqlMiddlewareDbError::driver_code`] gives the variant name instead.

use crate::error::{Backend, ErrorKind, SqlMiddlewareDbError};
use crate::sqlite_family::errors::classify_message;

pub(crate) fn map_err(err: turso::Error) -> SqlMiddlewareDbError {
    use turso::Error as E;
    let (kind, code) = match &err {
        // Turso reports "SQL statements in progress" (a statement of this same connection, such
        // as one left part-way through raw access, still runs) as busy, but no wait helps: only
        // finishing or resetting that statement does.
        E::Busy(m) if m.contains("statements in progress") => (ErrorKind::TransactionState, "Busy"),
        E::Busy(_) => (ErrorKind::Busy, "Busy"),
        E::BusySnapshot(_) => (ErrorKind::SerializationFailure, "BusySnapshot"),
        E::Interrupt(_) => (ErrorKind::Interrupted, "Interrupt"),
        E::Constraint(m) => {
            let k = match classify_message(m) {
                k @ (ErrorKind::UniqueViolation
                | ErrorKind::NotNullViolation
                | ErrorKind::CheckViolation
                | ErrorKind::ForeignKeyViolation) => k,
                _ if m.to_ascii_lowercase().contains("primary key") => ErrorKind::UniqueViolation,
                _ => ErrorKind::ConstraintViolation,
            };
            (k, "Constraint")
        }
        // `PRAGMA query_only = 1`: refused while compiling, reported as a parse error.
        E::Error(m) if m.contains("query_only mode") => (ErrorKind::ReadOnly, "Error"),
        E::Error(m) => (classify_message(m), "Error"),
        E::Misuse(m) => {
            let lower = m.to_ascii_lowercase();
            let k = if lower.contains("parameter") || lower.contains("bind") {
                ErrorKind::ParameterCount
            } else {
                classify_message(m)
            };
            (k, "Misuse")
        }
        E::QueryReturnedNoRows => (ErrorKind::NoRows, "QueryReturnedNoRows"),
        E::ConversionFailure(_) => (ErrorKind::TypeMismatch, "ConversionFailure"),
        E::ToSqlConversionFailure(_) => (ErrorKind::ParameterType, "ToSqlConversionFailure"),
        E::Readonly(_) => (ErrorKind::Config, "Readonly"),
        E::NotAdb(_) => (ErrorKind::Config, "NotAdb"),
        E::Corrupt(_) => (ErrorKind::Other, "Corrupt"),
        E::DatabaseFull(_) => (ErrorKind::Other, "DatabaseFull"),
        E::IoError(..) => (ErrorKind::Other, "IoError"),
        _ => (ErrorKind::Other, "Other"),
    };
    // A conversion failure's text may quote the value converted: only its kind is named.
    let mut message = match &err {
        E::ConversionFailure(_) => "a value cannot be converted to the requested type".to_owned(),
        E::ToSqlConversionFailure(_) => {
            "a parameter value cannot be bound (the value is not shown)".to_owned()
        }
        _ => err.to_string(),
    };
    match kind {
        ErrorKind::Busy => message.push_str(
            ": another connection held the lock for longer than the busy timeout; retry, or raise busy_timeout",
        ),
        ErrorKind::TransactionState if code == "Busy" => message.push_str(
            ": a statement of this connection is still running; finish or reset it first",
        ),
        _ => {}
    }
    SqlMiddlewareDbError::from_driver(Backend::Turso, kind, Some(code.to_owned()), message, err)
}

impl From<turso::Error> for SqlMiddlewareDbError {
    fn from(err: turso::Error) -> Self {
        map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_write_in_a_query_only_session_is_read_only() {
        let db = turso::Builder::new_local(":memory:").build().await.unwrap();
        let c = db.connect().unwrap();
        c.execute("CREATE TABLE t (a INTEGER)", ()).await.unwrap();
        c.execute("PRAGMA query_only = 1", ()).await.unwrap();
        let e = map_err(c.execute("INSERT INTO t VALUES (1)", ()).await.unwrap_err());
        assert_eq!(e.kind(), ErrorKind::ReadOnly, "{e:?}");
    }
}
