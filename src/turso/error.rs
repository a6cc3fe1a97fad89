//! Turso errors mapped to [`SqlMiddlewareDbError`].
//!
//! Turso reports constraint failures as one `Constraint` variant with SQLite's message text, so
//! the kind (unique, not-null, check, foreign key) is read from that message. Its errors carry
//! no numeric codes; [`SqlMiddlewareDbError::driver_code`] gives the variant name instead.

use crate::error::{Backend, ErrorKind, SqlMiddlewareDbError};
use crate::sqlite_family::errors::{RAISED, classify_message, public_text};

/// Whether a bare `Error` text of Turso's has a form the engine writes itself. Turso reports a
/// trigger's `RAISE(…)` as nothing but the trigger's text, under the same variant as its own
/// errors: a text of no known form may be such a text (which can hold row values), so it is
/// not shown. Turso's own texts carry a prefix (`Parse error: …`), are a parser's complaint
/// about a token, or are one of its fixed phrases.
fn written_by_turso(m: &str) -> bool {
    const STARTS: &[&str] = &[
        "Parse error: ",
        "Conversion error: ",
        "Internal error: ",
        "Transaction error: ",
        "Locking error: ",
        "Modifier parsing error: ",
        "Invalid formatter supplied: ",
        "Extension error: ",
        "Planning error: ",
        "Corrupt database: ",
        "Checkpoint failed: ",
        "Conflict: ",
        "Unsupported text encoding: ",
        "No such transaction ID: ",
        "Invalid blob size",
        "Env variable error: ",
        "near \"",
        "unrecognized token: ",
        "non-terminated ",
        "bad number ",
        "bad fractional part ",
        "bad exponent part ",
        "expected = sign ",
        "malformed hex integer ",
        "incomplete input",
        "integer overflow",
        "string or blob too big",
        "database table is locked",
        "attempt to write a readonly database",
        "Database is busy",
        "interrupt",
        "Null value",
        "invalid column type",
        "blob handle expired",
        "Out of memory",
        "Transaction terminated",
        "Write-write conflict",
        "Commit dependency aborted",
        "Database schema changed",
        "Database schema conflict",
        "database or disk is full",
        "File is not a database",
        "The supplied SQL string contains no statements",
    ];
    STARTS.iter().any(|s| m.starts_with(s))
}

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
            // A STRICT table refused a value of another type for its column, as SQLite's
            // `SQLITE_CONSTRAINT_DATATYPE` and MySQL's `1366` are.
            let k = if m.starts_with("cannot store ") && m.contains(" value in ") {
                ErrorKind::ParameterType
            } else {
                k
            };
            (k, "Constraint")
        }
        // `PRAGMA query_only = 1`: refused while compiling, reported as a parse error.
        E::Error(m) if m.contains("query_only mode") => (ErrorKind::ReadOnly, "Error"),
        // MVCC (`BEGIN CONCURRENT`): another transaction wrote the same row first. Nothing of
        // this transaction commits; running it again may succeed, as after a stale snapshot.
        E::Error(m) if m.starts_with("Write-write conflict") => {
            (ErrorKind::SerializationFailure, "Error")
        }
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
        // A write to a database opened read-only.
        E::Readonly(_) => (ErrorKind::ReadOnly, "Readonly"),
        E::NotAdb(_) => (ErrorKind::Config, "NotAdb"),
        E::Corrupt(_) => (ErrorKind::Other, "Corrupt"),
        E::DatabaseFull(_) => (ErrorKind::Other, "DatabaseFull"),
        E::IoError(..) => (ErrorKind::Other, "IoError"),
        _ => (ErrorKind::Other, "Other"),
    };
    // A conversion failure's text may quote the value converted: only its kind is named.
    // Other texts lose the literals they quote; a bare text of no known form may be a
    // trigger's `RAISE` text and is not shown (see `written_by_turso`).
    let mut message = match &err {
        E::ConversionFailure(_) => "a value cannot be converted to the requested type".to_owned(),
        E::ToSqlConversionFailure(_) => {
            "a parameter value cannot be bound (the value is not shown)".to_owned()
        }
        E::Error(m) if !written_by_turso(m) => RAISED.to_owned(),
        _ => public_text(&err.to_string()),
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
    async fn a_write_to_a_database_opened_read_only_is_read_only() {
        let dir = std::env::temp_dir().join(format!(
            "sqlmw-turso-ro-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ro.db");
        let path = path.to_str().unwrap();
        {
            let db = turso::Builder::new_local(path).build().await.unwrap();
            let c = db.connect().unwrap();
            c.execute("CREATE TABLE t (a INTEGER)", ()).await.unwrap();
        }
        let db = turso::Builder::new_local(path)
            .read_only(true)
            .build()
            .await
            .unwrap();
        let c = db.connect().unwrap();
        let e = map_err(c.execute("INSERT INTO t VALUES (1)", ()).await.unwrap_err());
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(e.kind(), ErrorKind::ReadOnly, "{e:?}");
    }

    #[test]
    fn conflicts_are_serialization_failures() {
        for e in [
            turso::Error::Error("Write-write conflict".into()),
            turso::Error::BusySnapshot(
                "database snapshot is stale, rollback and retry the transaction".into(),
            ),
        ] {
            assert_eq!(map_err(e).kind(), ErrorKind::SerializationFailure);
        }
    }

    #[test]
    fn texts_of_no_known_form_are_not_shown() {
        let e = map_err(turso::Error::Error("refused: alice@example.com".into()));
        assert_eq!(e.kind(), ErrorKind::Other);
        assert!(!e.to_string().contains("alice"), "{e}");
        let e = map_err(turso::Error::Error("near \"'alice'\": syntax error".into()));
        assert_eq!(e.kind(), ErrorKind::Syntax);
        assert_eq!(e.message(), "near \"…\": syntax error");
        let e = map_err(turso::Error::Error("Parse error: no such table: t".into()));
        assert_eq!(e.message(), "Parse error: no such table: t");
    }

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
