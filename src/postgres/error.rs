//! tokio-postgres errors mapped to [`SqlMiddlewareDbError`] by SQLSTATE.

use std::error::Error as _;

use crate::error::{Backend, ErrorKind, SqlMiddlewareDbError};

/// A value could not be bound to the parameter's declared type without loss.
#[derive(Debug)]
pub(crate) struct BindError(pub(crate) String);

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BindError {}

/// The kind of a SQLSTATE. Data exceptions (class `22`) other than a value too long for its
/// column are [`ErrorKind::Other`] here: they name the parameters only when a bound value
/// caused them (see [`caused_by_a_bound_value`]).
fn kind_of_sqlstate(code: &str) -> ErrorKind {
    match code {
        "23505" => ErrorKind::UniqueViolation,
        "23503" => ErrorKind::ForeignKeyViolation,
        "23502" => ErrorKind::NotNullViolation,
        "23514" => ErrorKind::CheckViolation,
        "40001" => ErrorKind::SerializationFailure,
        "40P01" => ErrorKind::Deadlock,
        "42601" => ErrorKind::Syntax,
        "42P01" | "42703" | "42883" | "42704" | "3F000" | "42P02" => ErrorKind::UndefinedObject,
        "25P02" => ErrorKind::TransactionAborted,
        "25001" | "25P01" | "0B000" => ErrorKind::TransactionState,
        "25006" => ErrorKind::ReadOnly,
        "57014" => ErrorKind::Interrupted,
        "55P03" => ErrorKind::Busy,
        "57P01" | "57P02" | "57P03" => ErrorKind::ConnectionLost,
        // The server cannot type a placeholder (`could not determine data type of parameter
        // $1`): the statement's parameters do not line up with its placeholders.
        "42P18" => ErrorKind::ParameterType,
        "08P01" => ErrorKind::ParameterCount,
        // A value too long for its column's declared length (`varchar(n)`, `char(n)`,
        // `bit(n)`): always the value's fault, whether it was bound or written in the SQL (an
        // explicit cast truncates instead), as MySQL's `1406` is.
        "22001" => ErrorKind::ParameterType,
        // The role lacks a privilege: the grants are part of the setup, as a refused login is.
        "42501" => ErrorKind::Config,
        "54000" | "54001" => ErrorKind::InvalidInput,
        c if c.starts_with("23") => ErrorKind::ConstraintViolation,
        c if c.starts_with("08") => ErrorKind::ConnectionLost,
        c if c.starts_with("28") || c.starts_with("3D") => ErrorKind::Config,
        _ => ErrorKind::Other,
    }
}

/// Whether a data exception was raised while the server converted a value the caller bound:
/// a statement's parameter while binding it (the server's context names it: `unnamed portal
/// parameter $1`), or a row value of a bulk load (`COPY t, line 1, column c`). The same codes
/// raised by the SQL itself (`SELECT 2147483647::int4 + 1`, `'abc'::int4`), or by a function
/// given a value that was bound without trouble, are not a parameter's fault.
fn caused_by_a_bound_value(db: &tokio_postgres::error::DbError) -> bool {
    db.code().code().starts_with("22")
        && db.where_().is_some_and(|w| {
            w.lines().any(|l| {
                (l.contains("portal") && l.contains(" parameter $")) || l.starts_with("COPY ")
            })
        })
}

/// Whether an `08P01` message is the server's complaint about the number of bound parameters.
fn is_parameter_count(message: &str) -> bool {
    message.contains("bind message supplies") || message.contains("parameter formats")
}

pub(crate) fn map_err(err: tokio_postgres::Error) -> SqlMiddlewareDbError {
    if let Some(db) = err.as_db_error() {
        let code = db.code().code().to_owned();
        let mut kind = kind_of_sqlstate(&code);
        if caused_by_a_bound_value(db) {
            kind = ErrorKind::ParameterType;
        }
        if code == "42601" && db.message().contains("multiple commands") {
            kind = ErrorKind::InvalidInput;
        }
        // 08P01 is a protocol violation: the server's for a wrong parameter count ("bind
        // message supplies 1 parameters, but prepared statement … requires 2"), but also a
        // pooler's when its server connection is lost or cannot be set up ("server conn
        // crashed?", "invalid server parameter").
        if code == "08P01" && !is_parameter_count(db.message()) {
            kind = ErrorKind::ConnectionLost;
        }
        // 57014 is any cancel; the server's own `statement_timeout` says so in its message.
        if code == "57014" && db.message().contains("statement timeout") {
            kind = ErrorKind::Timeout;
        }
        // The server's DETAIL is left out: it quotes row values ("Key (email)=(…) already
        // exists"), which are often the bound parameters. A data exception's message quotes
        // the value itself (`invalid input syntax for type integer: "…"`): those quotes are
        // blanked. Both stay reachable through `unredacted_message()`.
        let mut message = if raised_by_the_application(db) {
            RAISED.to_owned()
        } else {
            public_message(&code, db.message())
        };
        if kind == ErrorKind::TransactionAborted {
            message.push_str("; roll the transaction back and start again");
        }
        if code == "0A000" && db.message().contains("cached plan") {
            message.push_str(
                "; the table changed shape since the statement was prepared: prepare it again",
            );
        }
        return SqlMiddlewareDbError::from_driver(
            Backend::Postgres,
            kind,
            Some(code),
            message,
            err,
        );
    }
    let mut src = err.source();
    while let Some(s) = src {
        if let Some(b) = s.downcast_ref::<BindError>() {
            let message = format!("{err}: {b}");
            return SqlMiddlewareDbError::from_driver(
                Backend::Postgres,
                ErrorKind::ParameterType,
                None,
                message,
                err,
            );
        }
        src = s.source();
    }
    let mut text = err.to_string();
    if text.starts_with("error connecting")
        || text.starts_with("error communicating")
        || text.starts_with("authentication error")
        || text.starts_with("timeout waiting")
        || text.starts_with("invalid con")
    {
        // tokio-postgres says only "error connecting to server"; the cause class ("Connection
        // refused", "database does not allow writes", a timeout) is in the sources, which hold
        // no data: name it in the message.
        append_sources(&mut text, &err);
    }
    if text.starts_with("error performing TLS handshake") {
        // tokio-postgres's own text says only that; the reason (an unknown issuer, a name
        // mismatch, no TLS on the server) is in the sources.
        let mut message = text;
        append_sources(&mut message, &err);
        return SqlMiddlewareDbError::from_driver(
            Backend::Postgres,
            ErrorKind::Tls,
            None,
            message,
            err,
        );
    }
    // `error connecting to server`: refused, reset or timed out while (re)connecting, as while
    // a server restarts; the pool retries on the next checkout.
    let kind = if err.is_closed()
        || text.contains("connection closed")
        || text.contains("error communicating")
        || text.contains("error connecting")
    {
        ErrorKind::ConnectionLost
    } else if text.contains("deserializing column") {
        ErrorKind::TypeMismatch
    } else if text.contains("serializing parameter") {
        ErrorKind::ParameterType
    } else if text.contains("expected") && text.contains("parameters") {
        ErrorKind::ParameterCount
    } else {
        ErrorKind::Other
    };
    SqlMiddlewareDbError::from_driver(Backend::Postgres, kind, None, text, err)
}

/// Appends the text of each of `err`'s sources that `text` does not hold yet.
fn append_sources(text: &mut String, err: &tokio_postgres::Error) {
    let mut src = err.source();
    while let Some(s) = src {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        src = s.source();
    }
}

/// What the text of a `RAISE` or a failed `ASSERT` is replaced by.
const RAISED: &str = "a trigger or function raised this error (RAISE or ASSERT in PL/pgSQL); its \
     message text is the application's and may hold data, so it is not shown (see \
     unredacted_message())";

/// Whether the error's text was written by the application: PL/pgSQL's `RAISE` and `ASSERT`
/// put any text, row values included (`RAISE EXCEPTION 'bad email %', NEW.email`), into the
/// message, under any SQLSTATE the author chose. The server names the routine that raised it.
fn raised_by_the_application(db: &tokio_postgres::error::DbError) -> bool {
    matches!(db.routine(), Some("exec_stmt_raise" | "exec_stmt_assert"))
}

/// A syntax error's message quotes the token at which it stopped (`syntax error at or near
/// "'secret'"`, `unterminated quoted string at or near "'secret…"`): a token that may be a
/// literal (it holds a quote, or starts like a number or a `$` string) becomes `"…"`; a keyword
/// or a name stays.
fn without_quoted_literal(message: &str) -> String {
    const NEAR: &str = "at or near \"";
    let Some(i) = message.find(NEAR) else {
        return message.to_owned();
    };
    let start = i + NEAR.len();
    let token = message[start..]
        .rfind('"')
        .map_or(&message[start..], |end| &message[start..start + end]);
    let literal = token.contains('\'')
        || token
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '$' | '.' | '-' | '+'));
    if !literal {
        return message.to_owned();
    }
    let rest = &message[start + token.len()..];
    format!("{}…{rest}", &message[..start])
}

/// The server's message without the data it may quote. Syntax errors (`42601`) quote the
/// token they stopped at, which may be a literal (see [`without_quoted_literal`]). Data
/// exceptions (class `22`) quote
/// the offending value (`invalid input syntax for type integer: "abc"`, `value "99999" is out of
/// range for type smallint`, `invalid byte sequence for encoding "UTF8": 0x00`): every quoted
/// part becomes `"…"` and an unquoted value after a colon is cut. Other classes quote only
/// names (of a constraint, a column, a table, a type), which stay.
pub(crate) fn public_message(code: &str, message: &str) -> String {
    if code == "42601" {
        return without_quoted_literal(message);
    }
    if !code.starts_with("22") {
        return message.to_owned();
    }
    let mut out = String::with_capacity(message.len());
    let mut quoted = false;
    for c in message.chars() {
        match (c, quoted) {
            ('"', false) => {
                out.push_str("\"…\"");
                quoted = true;
            }
            ('"', true) => quoted = false,
            (_, true) => {}
            (c, false) => out.push(c),
        }
    }
    // A value left unquoted after the last colon (`…: 0x00`, `…: abc`).
    if let Some(i) = out.rfind(": ") {
        if out[i + 2..] != *"\"…\"" {
            out.truncate(i);
            out.push_str(": …");
        }
    }
    out
}

impl From<tokio_postgres::Error> for SqlMiddlewareDbError {
    fn from(err: tokio_postgres::Error) -> Self {
        map_err(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_servers_bind_complaints_are_parameter_counts() {
        assert!(is_parameter_count(
            "bind message supplies 1 parameters, but prepared statement \"s0\" requires 2"
        ));
        assert!(is_parameter_count(
            "bind message has 2 parameter formats but 1 parameters"
        ));
        assert!(!is_parameter_count("invalid server parameter"));
        assert!(!is_parameter_count("server conn crashed?"));
    }

    #[test]
    fn data_exceptions_lose_their_quoted_values() {
        for (code, msg, want) in [
            (
                "22P02",
                "invalid input syntax for type integer: \"s3cret\"",
                "invalid input syntax for type integer: \"…\"",
            ),
            (
                "22003",
                "value \"98765432101\" is out of range for type integer",
                "value \"…\" is out of range for type integer",
            ),
            (
                "22021",
                "invalid byte sequence for encoding \"UTF8\": 0x00",
                "invalid byte sequence for encoding \"…\": …",
            ),
            (
                "23505",
                "duplicate key value violates unique constraint \"t_email_key\"",
                "duplicate key value violates unique constraint \"t_email_key\"",
            ),
        ] {
            assert_eq!(public_message(code, msg), want);
        }
    }

    #[test]
    fn syntax_errors_lose_the_literal_they_stopped_at() {
        for (msg, want) in [
            (
                "syntax error at or near \"'s3cret'\"",
                "syntax error at or near \"…\"",
            ),
            (
                "unterminated quoted string at or near \"'s3cret LIMIT 1\"",
                "unterminated quoted string at or near \"…\"",
            ),
            (
                "syntax error at or near \"4111111111111111\"",
                "syntax error at or near \"…\"",
            ),
            (
                "unterminated dollar-quoted string at or near \"$$s3cret\"",
                "unterminated dollar-quoted string at or near \"…\"",
            ),
            (
                "syntax error at or near \"SELEC\"",
                "syntax error at or near \"SELEC\"",
            ),
            (
                "syntax error at end of input",
                "syntax error at end of input",
            ),
        ] {
            assert_eq!(public_message("42601", msg), want);
        }
    }

    #[test]
    fn kinds_of_the_cross_engine_cases() {
        assert_eq!(kind_of_sqlstate("22001"), ErrorKind::ParameterType);
        assert_eq!(kind_of_sqlstate("42501"), ErrorKind::Config);
        assert_eq!(kind_of_sqlstate("P0001"), ErrorKind::Other);
        assert_eq!(kind_of_sqlstate("25006"), ErrorKind::ReadOnly);
        assert_eq!(kind_of_sqlstate("40P01"), ErrorKind::Deadlock);
    }
}
