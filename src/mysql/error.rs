//! mysql_async errors mapped to [`SqlMiddlewareDbError`], by the server's error number.
//!
//! **No data in messages.** MySQL and MariaDB quote values in many messages (`Duplicate entry
//! 'x' for key …`, `Incorrect integer value: 'x' for column …`, the SQL near a syntax error,
//! the text a `SIGNAL` set). The message an error shows is built by one rule:
//!
//! - a server message whose error number is in [`TEMPLATES`] must have one of that number's
//!   forms: its value parts become `…`, its other parts (the names of tables, columns, keys
//!   and constraints, type names, row numbers) stay. A message of such a number that has none
//!   of its forms (a server speaking another language, or a `SIGNAL` that borrowed the number
//!   with its own text) is not shown at all;
//! - the messages of `SIGNAL` and `RESIGNAL` (1642–1644) are the application's own text, which
//!   may hold anything: they are never shown;
//! - any other message is shown with everything from its first single quote to its last one
//!   blanked, since MySQL quotes values (and, in messages not known to be safe, names) in single
//!   quotes, and names in backticks.
//!
//! The driver's own error, with the server's full text, stays behind
//! [`SqlMiddlewareDbError::unredacted_message`].

use mysql_async::{DriverError, Error as E, IoError};

use crate::error::{Backend, ErrorKind, SqlMiddlewareDbError};

/// The kind of a server error number.
fn kind_of(code: u16) -> ErrorKind {
    match code {
        // ER_DUP_KEY, ER_DUP_ENTRY, ER_DUP_UNIQUE, ER_DUP_ENTRY_WITH_KEY_NAME,
        // ER_DUP_ENTRY_AUTOINCREMENT_CASE, ER_FOREIGN_DUPLICATE_KEY(_WITH(OUT)_CHILD_INFO),
        // ER_DUP_UNKNOWN_IN_INDEX
        1022 | 1062 | 1169 | 1557 | 1569 | 1586 | 1761 | 1762 | 1859 => ErrorKind::UniqueViolation,
        // ER_NO_REFERENCED_ROW(_2), ER_ROW_IS_REFERENCED(_2)
        1216 | 1217 | 1451 | 1452 => ErrorKind::ForeignKeyViolation,
        // ER_BAD_NULL_ERROR (an explicit NULL), ER_NO_DEFAULT_FOR_FIELD (a NOT NULL column
        // without a default left out of the row), ER_WARN_NULL_TO_NOTNULL,
        // ER_NO_DEFAULT_FOR_VIEW_FIELD
        1048 | 1364 | 1263 | 1423 => ErrorKind::NotNullViolation,
        // ER_CHECK_CONSTRAINT_VIOLATED (MySQL), ER_CONSTRAINT_FAILED (MariaDB)
        3819 | 4025 => ErrorKind::CheckViolation,
        // ER_LOCK_DEADLOCK
        1213 => ErrorKind::Deadlock,
        // ER_CHECKREAD: a row changed since the transaction's snapshot (MariaDB's
        // `innodb_snapshot_isolation`)
        1020 => ErrorKind::SerializationFailure,
        // ER_LOCK_WAIT_TIMEOUT
        1205 => ErrorKind::Busy,
        // ER_OPTION_PREVENTS_STATEMENT (`--read-only`; see `refine`), ER_READ_ONLY_MODE,
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
        // A value that does not fit its column, bound or written in the SQL (the server's
        // message cannot tell which): ER_TRUNCATED_WRONG_VALUE(_FOR_FIELD),
        // ER_WARN_DATA_OUT_OF_RANGE, ER_DATA_TOO_LONG, ER_WARN_DATA_TRUNCATED,
        // ER_INVALID_JSON_TEXT
        1292 | 1366 | 1264 | 1406 | 1265 | 3140 => ErrorKind::ParameterType,
        // ER_CON_COUNT_ERROR, ER_SERVER_SHUTDOWN, ER_CONNECTION_KILLED (KILL of the session)
        1040 | 1053 | 1927 | 2006 | 2013 => ErrorKind::ConnectionLost,
        // Galera's "WSREP has not yet prepared node for application use" (SQLSTATE 08S01): the
        // node is out of the primary component; its connection is of no more use, and the
        // pool leaves the node (see `hosts.rs`), so a retry goes to another one.
        1047 => ErrorKind::ConnectionLost,
        // The user lacks a privilege: ER_DBACCESS_DENIED_ERROR, ER_ACCESS_DENIED_ERROR,
        // ER_TABLEACCESS_DENIED_ERROR, ER_COLUMNACCESS_DENIED_ERROR,
        // ER_SPECIFIC_ACCESS_DENIED_ERROR, ER_PROCACCESS_DENIED_ERROR,
        // ER_ACCESS_DENIED_NO_PASSWORD_ERROR; and ER_NOT_SUPPORTED_AUTH_MODE
        1044 | 1045 | 1142 | 1143 | 1227 | 1370 | 1698 | 1251 => ErrorKind::Config,
        // ER_CANT_DO_THIS_DURING_AN_TRANSACTION, ER_XAER_RMFAIL
        1179 | 1399 => ErrorKind::TransactionState,
        // ER_SIGNAL_EXCEPTION (and every other number): a trigger's or routine's own error
        // (`SIGNAL SQLSTATE '45000'`) means what its author meant, so it is `Other`.
        _ => ErrorKind::Other,
    }
}

/// The kind of a server error, where its number alone does not tell: `1290` names the option
/// that prevents the statement, which is read-only only for `--read-only` and
/// `--super-read-only` (`--secure-file-priv` and others prevent statements too).
fn refine(code: u16, message: &str, kind: ErrorKind) -> ErrorKind {
    if code == 1290 && !message.contains("read-only") && !message.contains("read_only") {
        return ErrorKind::Other;
    }
    kind
}

/// What a message whose form is not known is replaced by.
const NOT_SHOWN: &str = "the server's message is not shown: it has none of the forms this error \
     number is known to take, and may quote data (see unredacted_message())";

/// What the message of a `SIGNAL` is replaced by.
const SIGNALLED: &str = "a trigger or stored routine raised this error with SIGNAL; its message \
     text is the application's and may hold data, so it is not shown (see unredacted_message())";

/// The forms of the server messages of some error numbers, in English, MariaDB's first.
///
/// In a form, `{}` is a part that holds no data (the name of a table, column, key or
/// constraint, a user, a type, a row number) and is kept; `{v}` is a part that may hold data
/// (a value, the SQL near a syntax error) and is replaced by `…`. A kept part never holds a
/// single quote, so a value with quotes in it cannot pass for a name.
///
/// Numbers whose messages quote nothing are not listed: they are shown as they are.
static TEMPLATES: &[(u16, &[&str])] = &[
    // --- messages that quote a value --------------------------------------------------------
    // ER_DUP_ENTRY, ER_DUP_ENTRY_WITH_KEY_NAME
    (
        1062,
        &[
            "Duplicate entry '{v}' for key '{}'",
            "Duplicate entry '{v}' for key {}",
        ],
    ),
    (1586, &["Duplicate entry '{v}' for key '{}'"]),
    // ER_DUP_ENTRY_AUTOINCREMENT_CASE
    (
        1569,
        &[
            "ALTER TABLE causes auto_increment resequencing, resulting in duplicate entry '{v}' for key '{}'",
        ],
    ),
    // ER_FOREIGN_DUPLICATE_KEY (MySQL), ER_FOREIGN_DUPLICATE_KEY_WITH(OUT)_CHILD_INFO
    (
        1557,
        &[
            "Upholding foreign key constraints for table '{}', entry '{v}', key {} would lead to a duplicate entry",
        ],
    ),
    (
        1761,
        &[
            "Foreign key constraint for table '{}', record '{v}' would lead to a duplicate entry in table '{}', key '{}'",
        ],
    ),
    (
        1762,
        &[
            "Foreign key constraint for table '{}', record '{v}' would lead to a duplicate entry in a child table",
        ],
    ),
    // ER_WRONG_VALUE_FOR_VAR
    (1231, &["Variable '{}' can't be set to the value of '{v}'"]),
    // ER_TRUNCATED_WRONG_VALUE, ER_TRUNCATED_WRONG_VALUE_FOR_FIELD, ER_WRONG_VALUE_FOR_TYPE,
    // ER_WRONG_VALUE: the server uses their forms interchangeably.
    (1292, INCORRECT_VALUE),
    (1366, INCORRECT_VALUE),
    (1411, INCORRECT_VALUE),
    (1525, INCORRECT_VALUE),
    // ER_DUPLICATED_VALUE_IN_TYPE
    (1291, &["Column '{}' has duplicated value '{v}' in {}"]),
    // ER_UNKNOWN_TIME_ZONE
    (1298, &["Unknown or incorrect time zone: '{v}'"]),
    // ER_INVALID_CHARACTER_STRING
    (1300, &["Invalid {} character string: '{v}'"]),
    // ER_ILLEGAL_VALUE_FOR_TYPE
    (1367, &["Illegal {} '{v}' value found during parsing"]),
    // ER_WRONG_STRING_LENGTH
    (
        1470,
        &["String '{v}' is too long for {} (should be no longer than {})"],
    ),
    // ER_NO_PARTITION_FOR_GIVEN_VALUE: the value is not even quoted.
    (1526, &["Table has no partition for value {v}"]),
    // ER_DATA_OUT_OF_RANGE: quotes the expression, with the literals in it.
    (1690, &["{} value is out of range in '{v}'"]),
    // ER_BAD_OPTION_VALUE
    (1912, &["Incorrect value '{v}' for option '{}'"]),
    // ER_DATA_OVERFLOW, ER_DATA_TRUNCATED, ER_BAD_DATA
    (
        1916,
        &["Got overflow when converting '{v}' to {}. Value truncated"],
    ),
    (1917, &["Truncated value '{v}' when converting to {}"]),
    (
        1918,
        &["Encountered illegal value '{v}' when converting to {}"],
    ),
    // ER_INVALID_DEFAULT_VALUE_FOR_FIELD
    (1978, &["Incorrect default value '{v}' for column '{}'"]),
    // ER_PARSE_ERROR: the SQL from the error on, literals and all; the line number stays.
    (1064, &["{} near '{v}' at line {}"]),
    // --- messages that quote names only ---------------------------------------------------
    // ER_DBACCESS_DENIED_ERROR, ER_ACCESS_DENIED_ERROR, ER_ACCESS_DENIED_NO_PASSWORD_ERROR
    (1044, &["Access denied for user '{}'@'{}' to database '{}'"]),
    (
        1045,
        &["Access denied for user '{}'@'{}' (using password: {})"],
    ),
    (1698, &["Access denied for user '{}'@'{}'"]),
    // ER_BAD_NULL_ERROR, ER_NO_DEFAULT_FOR_FIELD, ER_WARN_NULL_TO_NOTNULL
    (1048, &["Column '{}' cannot be null"]),
    (1364, &["Field '{}' doesn't have a default value"]),
    (
        1263,
        &["Column set to default value; NULL supplied to NOT NULL column '{}' at row {}"],
    ),
    // ER_BAD_DB_ERROR, ER_TABLE_EXISTS_ERROR, ER_BAD_TABLE_ERROR, ER_BAD_FIELD_ERROR,
    // ER_DUP_FIELDNAME, ER_DUP_KEYNAME, ER_UNKNOWN_TABLE, ER_NO_SUCH_TABLE
    (1049, &["Unknown database '{}'"]),
    (1050, &["Table '{}' already exists"]),
    (1051, &["Unknown table '{}'"]),
    (1054, &["Unknown column '{}' in '{}'"]),
    (1060, &["Duplicate column name '{}'"]),
    (1061, &["Duplicate key name '{}'"]),
    (
        1091,
        &[
            "Can't DROP '{}'; check that column/key exists",
            "Can't DROP {}; check that it exists",
        ],
    ),
    (1109, &["Unknown table '{}' in {}"]),
    (1146, &["Table '{}' doesn't exist"]),
    // ER_DUP_KEY, ER_DUP_UNIQUE, ER_DUP_UNKNOWN_IN_INDEX
    (1022, &["Can't write; duplicate key in table '{}'"]),
    (
        1169,
        &["Can't write, because of unique constraint, to table '{}'"],
    ),
    (1859, &["Duplicate entry for key '{}'"]),
    // ER_UPDATE_TABLE_USED
    (
        1093,
        &[
            "Table '{}' is specified twice, both as a target for '{}' and as a separate source for data",
        ],
    ),
    // ER_TABLEACCESS_DENIED_ERROR, ER_COLUMNACCESS_DENIED_ERROR, ER_PROCACCESS_DENIED_ERROR
    (
        1142,
        &[
            "{} command denied to user '{}'@'{}' for table {}",
            "{} command denied to user '{}'@'{}' for table '{}'",
        ],
    ),
    (
        1143,
        &["{} command denied to user '{}'@'{}' for column '{}' in table '{}'"],
    ),
    (
        1370,
        &["{} command denied to user '{}'@'{}' for routine '{}'"],
    ),
    // ER_KEY_DOES_NOT_EXITS
    (1176, &["Key '{}' doesn't exist in table '{}'"]),
    // ER_NOT_SUPPORTED_YET
    (1235, &["This version of {} doesn't yet support '{}'"]),
    // ER_CANT_AGGREGATE_2COLLATIONS, ER_CANT_AGGREGATE_3COLLATIONS
    (
        1267,
        &["Illegal mix of collations ({},{}) and ({},{}) for operation '{}'"],
    ),
    (
        1270,
        &["Illegal mix of collations ({},{}), ({},{}), ({},{}) for operation '{}'"],
    ),
    // ER_VIEW_INVALID
    (
        1356,
        &[
            "View '{}' references invalid table(s) or column(s) or function(s) or definer/invoker of view lack rights to use them",
        ],
    ),
    // ER_DROP_INDEX_FK
    (
        1553,
        &["Cannot drop index '{}': needed in a foreign key constraint"],
    ),
    // ER_WRONG_PARAMCOUNT_TO_NATIVE_FCT
    (
        1582,
        &["Incorrect parameter count in the call to native function '{}'"],
    ),
    // ER_FUNC_INEXISTENT_NAME_COLLISION
    (
        1630,
        &[
            "FUNCTION {} does not exist. Check the 'Function Name Parsing and Resolution' section in the Reference Manual",
        ],
    ),
    // ER_INVALID_JSON_TEXT (MySQL): the parser's complaint and the column, not the value.
    (
        3140,
        &["Invalid JSON text: \"{}\" at position {} in value for column '{}'."],
    ),
    // ER_CHECK_CONSTRAINT_VIOLATED (MySQL)
    (3819, &["Check constraint '{}' is violated."]),
    // ER_ILLEGAL_PARAMETER_DATA_TYPES2_FOR_OPERATION, ER_ILLEGAL_PARAMETER_DATA_TYPE_FOR_OPERATION
    (
        4078,
        &["Illegal parameter data types {} and {} for operation '{}'"],
    ),
    (4079, &["Illegal parameter data type {} for operation '{}'"]),
];

/// The forms of the "incorrect value" messages (1292, 1366, 1411, 1525): MariaDB names the
/// column with backticks, MySQL with single quotes.
const INCORRECT_VALUE: &[&str] = &[
    "Incorrect {} value: '{v}' for column {} at row {}",
    "Incorrect {} value: '{v}' for column '{}' at row {}",
    "Incorrect {} value: '{v}' for function {}",
    "Incorrect {} value: '{v}'",
    "Truncated incorrect {} value: '{v}'",
];

/// One piece of a form.
#[derive(Clone, Copy)]
enum Piece<'a> {
    Text(&'a str),
    Keep,
    Value,
}

/// The pieces of a form: its text between `{}` and `{v}` slots.
fn pieces(form: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = form;
    while let Some(i) = rest.find('{') {
        let (slot, len) = if rest[i..].starts_with("{v}") {
            (Piece::Value, 3)
        } else if rest[i..].starts_with("{}") {
            (Piece::Keep, 2)
        } else {
            // A brace that opens no slot is text.
            out.push(Piece::Text(&rest[..=i]));
            rest = &rest[i + 1..];
            continue;
        };
        if i > 0 {
            out.push(Piece::Text(&rest[..i]));
        }
        out.push(slot);
        rest = &rest[i + len..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// Matches `message` against `pieces` from its start to its end, pushing the public text to
/// `out`. A value takes as much as it can (so a quote inside a value cannot end it early), a
/// kept part as little as it can, and never a single quote.
fn fit(pieces: &[Piece<'_>], message: &str, out: &mut String) -> bool {
    let Some((first, rest)) = pieces.split_first() else {
        return message.is_empty();
    };
    let mark = out.len();
    match *first {
        Piece::Text(t) => {
            if let Some(tail) = message.strip_prefix(t) {
                out.push_str(t);
                if fit(rest, tail, out) {
                    return true;
                }
            }
        }
        Piece::Value => {
            out.push('…');
            let ends: Vec<usize> = message
                .char_indices()
                .map(|(i, _)| i)
                .chain([message.len()])
                .collect();
            for &end in ends.iter().rev() {
                if fit(rest, &message[end..], out) {
                    return true;
                }
                out.truncate(mark + '…'.len_utf8());
            }
        }
        Piece::Keep => {
            for (end, c) in message
                .char_indices()
                .map(|(i, c)| (i, Some(c)))
                .chain([(message.len(), None)])
            {
                out.truncate(mark);
                out.push_str(&message[..end]);
                if fit(rest, &message[end..], out) {
                    return true;
                }
                if c == Some('\'') {
                    break;
                }
            }
        }
    }
    out.truncate(mark);
    false
}

/// The server's message without the data it may quote (see the module's documentation).
fn redacted(code: u16, message: &str) -> String {
    if matches!(code, 1642..=1644) {
        return SIGNALLED.to_owned();
    }
    if let Some((_, forms)) = TEMPLATES.iter().find(|(c, _)| *c == code) {
        let mut out = String::with_capacity(message.len());
        for form in forms.iter() {
            out.clear();
            if fit(&pieces(form), message, &mut out) {
                return out;
            }
        }
        return NOT_SHOWN.to_owned();
    }
    match (message.find('\''), message.rfind('\'')) {
        (Some(first), Some(last)) if last > first => {
            format!("{}'…'{}", &message[..first], &message[last + 1..])
        }
        (Some(only), _) => format!("{}'…", &message[..only]),
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
            refine(s.code, &s.message, kind_of(s.code)),
            Some(s.code.to_string()),
            format!("{} ({})", redacted(s.code, &s.message), s.state),
        ),
        E::Io(IoError::Io(e)) => (
            ErrorKind::ConnectionLost,
            None,
            format!("the connection to the MySQL server failed: {e}"),
        ),
        #[allow(unreachable_patterns)]
        E::Io(e) => (
            ErrorKind::Tls,
            None,
            format!("TLS with the MySQL server failed: {e}"),
        ),
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
        for (code, message, want) in [
            (
                1062,
                "Duplicate entry 'alice@example.com' for key 'users.email'",
                "Duplicate entry '…' for key 'users.email'",
            ),
            // A value that holds the form's own words cannot pass for the key.
            (
                1062,
                "Duplicate entry 'a' for key 'x' for key 'email'",
                "Duplicate entry '…' for key 'email'",
            ),
            (
                1366,
                "Incorrect integer value: 'secret' for column `test`.`t`.`n` at row 1",
                "Incorrect integer value: '…' for column `test`.`t`.`n` at row 1",
            ),
            (
                1366,
                "Incorrect integer value: 'secret' for column 'n' at row 1",
                "Incorrect integer value: '…' for column 'n' at row 1",
            ),
            (
                1292,
                "Truncated incorrect DOUBLE value: 'abc'",
                "Truncated incorrect DOUBLE value: '…'",
            ),
            (
                1761,
                "Foreign key constraint for table 'p', record 'k1' would lead to a duplicate entry in table 'c', key 'k'",
                "Foreign key constraint for table 'p', record '…' would lead to a duplicate entry in table 'c', key 'k'",
            ),
            (
                1064,
                "You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near ''secret' LIMIT 1' at line 3",
                "You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near '…' at line 3",
            ),
            (
                1526,
                "Table has no partition for value 4111111111111111",
                "Table has no partition for value …",
            ),
            (
                1146,
                "Table 'test.x' doesn't exist",
                "Table 'test.x' doesn't exist",
            ),
            (
                1054,
                "Unknown column 'nope' in 'field list'",
                "Unknown column 'nope' in 'field list'",
            ),
        ] {
            assert_eq!(redacted(code, message), want, "{code}: {message}");
        }
    }

    #[test]
    fn unknown_forms_and_signals_are_not_shown() {
        // A SIGNAL's own text, whatever number it borrowed.
        assert_eq!(redacted(1644, "card 4111 refused"), SIGNALLED);
        assert_eq!(redacted(1062, "card 4111 refused"), NOT_SHOWN);
        // A server speaking German.
        assert_eq!(
            redacted(1062, "Doppelter Eintrag 'x' für Schlüssel 'email'"),
            NOT_SHOWN
        );
        // A number the table does not know: everything between the outer quotes goes.
        assert_eq!(redacted(9999, "Some 'a'b' thing 'c' here"), "Some '…' here");
        assert_eq!(redacted(9999, "it's open"), "it'…");
        assert_eq!(redacted(9999, "no quotes at all"), "no quotes at all");
    }

    #[test]
    fn kinds_follow_the_error_numbers() {
        assert_eq!(kind_of(1062), ErrorKind::UniqueViolation);
        assert_eq!(kind_of(1452), ErrorKind::ForeignKeyViolation);
        assert_eq!(kind_of(1364), ErrorKind::NotNullViolation);
        assert_eq!(kind_of(1213), ErrorKind::Deadlock);
        assert_eq!(kind_of(1205), ErrorKind::Busy);
        assert_eq!(kind_of(1290), ErrorKind::ReadOnly);
        assert_eq!(kind_of(1064), ErrorKind::Syntax);
        assert_eq!(kind_of(1406), ErrorKind::ParameterType);
        assert_eq!(kind_of(1142), ErrorKind::Config);
        assert_eq!(kind_of(1644), ErrorKind::Other);
        assert_eq!(kind_of(9999), ErrorKind::Other);
        let ro = "The MariaDB server is running with the --read-only option so it cannot execute this statement";
        assert_eq!(refine(1290, ro, ErrorKind::ReadOnly), ErrorKind::ReadOnly);
        let fp = "The MySQL server is running with the --secure-file-priv option so it cannot execute this statement";
        assert_eq!(refine(1290, fp, ErrorKind::ReadOnly), ErrorKind::Other);
    }
}
