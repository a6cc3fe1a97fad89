//! mysql_async errors mapped to [`SqlMiddlewareDbError`], by the server's error number.
//!
//! MySQL quotes values in some messages (`Duplicate entry 'x' for key …`, `Incorrect integer
//! value: 'x' for column …`): those messages are rewritten without the value. The driver's
//! own error stays behind the explicit accessors.

use mysql_async::{DriverError, Error as E, IoError};

use crate::error::{Backend, ErrorKind, SqlMiddlewareDbError};

/// The kind of a server error number.
fn kind_of(code: u16) -> ErrorKind {
    match code {
        // ER_DUP_ENTRY, ER_DUP_UNIQUE, ER_DUP_ENTRY_WITH_KEY_NAME
        1062 | 1169 | 1586 => ErrorKind::UniqueViolation,
        // ER_NO_REFERENCED_ROW(_2), ER_ROW_IS_REFERENCED(_2)
        1216 | 1217 | 1451 | 1452 => ErrorKind::ForeignKeyViolation,
        // ER_BAD_NULL_ERROR
        1048 => ErrorKind::NotNullViolation,
        // ER_CHECK_CONSTRAINT_VIOLATED (MySQL), ER_CONSTRAINT_FAILED (MariaDB)
        3819 | 4025 => ErrorKind::CheckViolation,
        // ER_LOCK_DEADLOCK
        1213 => ErrorKind::Deadlock,
        // ER_CHECKREAD: a row changed since the transaction's snapshot (MariaDB's
        // `innodb_snapshot_isolation`)
        1020 => ErrorKind::SerializationFailure,
        // ER_LOCK_WAIT_TIMEOUT
        1205 => ErrorKind::Busy,
        // ER_OPTION_PREVENTS_STATEMENT (--read-only), ER_READ_ONLY_MODE,
        // ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION
        1290 | 1836 | 1792 => ErrorKind::ReadOnly,
        // ER_PARSE_ERROR, ER_SYNTAX_ERROR, ER_EMPTY_QUERY, and names the parser refuses:
        // ER_TOO_LONG_IDENT, ER_WRONG_DB_NAME, ER_WRONG_TABLE_NAME, ER_WRONG_COLUMN_NAME
        1064 | 1149 | 1065 | 1059 | 1102 | 1103 | 1166 => ErrorKind::Syntax,
        // ER_NO_SUCH_TABLE, ER_BAD_FIELD_ERROR, ER_BAD_DB_ERROR, ER_SP_DOES_NOT_EXIST,
        // ER_BAD_TABLE_ERROR, ER_UNKNOWN_TABLE, ER_FUNCTION_NOT_DEFINED
        1146 | 1054 | 1049 | 1305 | 1051 | 1109 | 1128 => ErrorKind::UndefinedObject,
        // ER_QUERY_INTERRUPTED (KILL QUERY), ER_STATEMENT_TIMEOUT / max_statement_time
        1317 | 1969 | 3024 => ErrorKind::Interrupted,
        // ER_WRONG_VALUE_COUNT_ON_ROW, ER_WRONG_ARGUMENTS (bad parameter count at execute)
        1210 => ErrorKind::ParameterCount,
        // ER_TRUNCATED_WRONG_VALUE(_FOR_FIELD), ER_WARN_DATA_OUT_OF_RANGE, ER_DATA_TOO_LONG,
        // ER_WARN_DATA_TRUNCATED, ER_INVALID_JSON_TEXT
        1292 | 1366 | 1264 | 1406 | 1265 | 3140 => ErrorKind::ParameterType,
        // ER_CON_COUNT_ERROR, ER_SERVER_SHUTDOWN, ER_CONNECTION_KILLED (KILL of the session)
        1040 | 1053 | 1927 | 2006 | 2013 => ErrorKind::ConnectionLost,
        // ER_ACCESS_DENIED_ERROR, ER_DBACCESS_DENIED_ERROR, ER_NOT_SUPPORTED_AUTH_MODE
        1044 | 1045 | 1251 => ErrorKind::Config,
        // ER_CANT_DO_THIS_DURING_AN_TRANSACTION, ER_XAER_RMFAIL
        1179 | 1399 => ErrorKind::TransactionState,
        _ => ErrorKind::Other,
    }
}

/// The server's message without the values MySQL quotes in some of them.
fn redacted(code: u16, message: &str) -> String {
    let tail = |from: &str| message.find(from).map(|i| &message[i..]);
    match code {
        1062 | 1586 => match tail(" for key ") {
            Some(key) => format!("Duplicate entry (value not shown){key}"),
            None => "Duplicate entry (value not shown)".to_owned(),
        },
        1264 | 1265 | 1292 | 1366 | 1367 | 1411 | 3140 => {
            let head = message.split(':').next().unwrap_or(message);
            let head = head.split('\'').next().unwrap_or(head).trim_end();
            match tail(" for column ").or_else(|| tail(" at row ")) {
                Some(t) => format!("{head} (value not shown){t}"),
                None => format!("{head} (value not shown)"),
            }
        }
        _ => message.to_owned(),
    }
}

/// A server message (an error's or a warning's) without the values it may quote.
pub(crate) fn public_message(code: u16, message: &str) -> String {
    redacted(code, message)
}

/// Maps a mysql_async error.
pub(crate) fn map_err(err: E) -> SqlMiddlewareDbError {
    let (kind, code, message) = match &err {
        E::Server(s) => (
            kind_of(s.code),
            Some(s.code.to_string()),
            format!("{} ({})", redacted(s.code, &s.message), s.state),
        ),
        E::Io(IoError::Io(e)) => (
            ErrorKind::ConnectionLost,
            None,
            format!("the connection to the MySQL server failed: {e}"),
        ),
        #[allow(unreachable_patterns)]
        E::Io(e) => (ErrorKind::Tls, None, format!("TLS with the MySQL server failed: {e}")),
        E::Driver(d) => match d {
            DriverError::ConnectionClosed | DriverError::PoolDisconnected => (
                ErrorKind::ConnectionLost,
                None,
                "the connection to the MySQL server was closed".to_owned(),
            ),
            DriverError::NoClientSslFlagFromServer => (
                ErrorKind::Tls,
                None,
                "the MySQL server offers no TLS, and this connection requires it".to_owned(),
            ),
            DriverError::StmtParamsMismatch { required, supplied } => (
                ErrorKind::ParameterCount,
                None,
                format!("the statement takes {required} parameters; {supplied} were given"),
            ),
            DriverError::FromValue { .. } | DriverError::FromRow { .. } => (
                ErrorKind::TypeMismatch,
                None,
                "a value cannot be converted to the requested type (the value is not shown)"
                    .to_owned(),
            ),
            DriverError::UnknownAuthPlugin { .. } | DriverError::CleartextPluginDisabled => {
                (ErrorKind::Config, None, d.to_string())
            }
            _ => (ErrorKind::Other, None, d.to_string()),
        },
        E::Url(u) => (
            ErrorKind::Config,
            None,
            format!("the MySQL URL is invalid: {u}"),
        ),
        E::Other(_) => (ErrorKind::Other, None, err.to_string()),
    };
    SqlMiddlewareDbError::from_driver(Backend::Mysql, kind, code, message, err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_quoted_by_the_server_are_left_out() {
        let m = redacted(1062, "Duplicate entry 'alice@example.com' for key 'users.email'");
        assert_eq!(m, "Duplicate entry (value not shown) for key 'users.email'");
        let m = redacted(
            1366,
            "Incorrect integer value: 'secret' for column `test`.`t`.`n` at row 1",
        );
        assert!(!m.contains("secret"), "{m}");
        assert!(m.contains("for column `test`.`t`.`n` at row 1"), "{m}");
        let m = redacted(1292, "Truncated incorrect DOUBLE value: 'abc'");
        assert!(!m.contains("abc"), "{m}");
        assert_eq!(redacted(1146, "Table 'test.x' doesn't exist"), "Table 'test.x' doesn't exist");
    }

    #[test]
    fn kinds_follow_the_error_numbers() {
        assert_eq!(kind_of(1062), ErrorKind::UniqueViolation);
        assert_eq!(kind_of(1452), ErrorKind::ForeignKeyViolation);
        assert_eq!(kind_of(1213), ErrorKind::Deadlock);
        assert_eq!(kind_of(1205), ErrorKind::Busy);
        assert_eq!(kind_of(1290), ErrorKind::ReadOnly);
        assert_eq!(kind_of(1064), ErrorKind::Syntax);
        assert_eq!(kind_of(9999), ErrorKind::Other);
    }
}
