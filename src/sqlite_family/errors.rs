//! Classifying the SQLite family's errors by message: both engines report some situations only
//! as a generic error whose text names the cause.

use crate::error::{ErrorKind, SqlMiddlewareDbError};

/// The SQL text held more than one statement where one was expected: SQLite refuses it, Turso
/// would run the first and silently ignore the rest, so both wings report this.
pub(crate) fn multiple_statements() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::InvalidInput,
        "the SQL text holds more than one statement; run scripts with execute_batch",
    )
}

/// SQLite and Turso report these only as a generic error with a message.
pub(crate) fn classify_message(msg: &str) -> ErrorKind {
    let m = msg.to_ascii_lowercase();
    if m.contains("no such table")
        || m.contains("no such column")
        || m.contains("no such function")
        || m.contains("no such index")
        || m.contains("no such view")
        || m.contains("no such trigger")
    {
        ErrorKind::UndefinedObject
    } else if m.contains("variable number must be between")
        || m.contains("too many sql variables")
        || m.contains("column index out of range")
    {
        ErrorKind::ParameterCount
    } else if m.contains("syntax error")
        || m.contains("non-terminated")
        || m.contains("unterminated")
        || m.contains("incomplete input")
        || m.contains("unrecognized token")
        || m.contains("parse error")
    {
        ErrorKind::Syntax
    } else if m.contains("within a transaction")
        || m.contains("no transaction is active")
        || m.contains("cannot rollback")
        || m.contains("cannot commit")
    {
        ErrorKind::TransactionState
    } else if m.contains("database is locked") || m.contains("busy") {
        ErrorKind::Busy
    } else if m.contains("interrupt") {
        ErrorKind::Interrupted
    } else if m.contains("foreign key") {
        ErrorKind::ForeignKeyViolation
    } else if m.contains("unique constraint") {
        ErrorKind::UniqueViolation
    } else if m.contains("not null constraint") {
        ErrorKind::NotNullViolation
    } else if m.contains("check constraint") {
        ErrorKind::CheckViolation
    } else {
        ErrorKind::Other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_map_to_kinds() {
        assert_eq!(
            classify_message("no such table: t"),
            ErrorKind::UndefinedObject
        );
        assert_eq!(
            classify_message("near \"SELEC\": syntax error"),
            ErrorKind::Syntax
        );
        assert_eq!(classify_message("database is locked"), ErrorKind::Busy);
        assert_eq!(
            classify_message("cannot start a transaction within a transaction"),
            ErrorKind::TransactionState
        );
        assert_eq!(classify_message("something else"), ErrorKind::Other);
    }
}
