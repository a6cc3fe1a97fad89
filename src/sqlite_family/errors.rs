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

/// What the text of a trigger's `RAISE(…)` is replaced by.
pub(crate) const RAISED: &str = "a trigger refused the statement with RAISE; its message text is the \
     application's and may hold data (RAISE takes any expression), so it is not shown (see \
     unredacted_message())";

/// Whether a token an engine quotes in a message may be a literal of the SQL (it holds a quote,
/// or starts like a number or a blob): such a token is data, a keyword or a name is not.
fn may_be_literal(token: &str) -> bool {
    token.contains('\'')
        || token
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+'))
}

/// An engine's message without the data it may quote. SQLite and Turso quote values in single
/// quotes (a JSON path, an unterminated literal, a `CHECK` expression's constants) and the
/// token a syntax error stopped at in double quotes (`near "'secret'": syntax error`,
/// `unrecognized token: "'secret"`): a token that may be a literal becomes `…`, and everything
/// from the first single quote left to the last one becomes `'…'`.
pub(crate) fn public_text(message: &str) -> String {
    let mut text = message.to_owned();
    for lead in ["near \"", "unrecognized token: \""] {
        if let Some(i) = text.find(lead) {
            let start = i + lead.len();
            let end = text[start..].rfind('"').map_or(text.len(), |e| start + e);
            if may_be_literal(&text[start..end]) {
                text.replace_range(start..end, "…");
            }
        }
    }
    match (text.find('\''), text.rfind('\'')) {
        (Some(first), Some(last)) if last > first => {
            text.replace_range(first..=last, "'…'");
            text
        }
        (Some(only), _) => {
            text.truncate(only);
            text.push_str("'…");
            text
        }
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_literals_are_left_out() {
        for (msg, want) in [
            (
                "near \"'s3cret'\": syntax error",
                "near \"…\": syntax error",
            ),
            (
                "near \"4111111111111111\": syntax error",
                "near \"…\": syntax error",
            ),
            (
                "near \"SELEC\": syntax error",
                "near \"SELEC\": syntax error",
            ),
            (
                "unrecognized token: \"'s3cret\"",
                "unrecognized token: \"…\"",
            ),
            (
                "non-terminated literal ''s3cret' at offset 7",
                "non-terminated literal '…' at offset 7",
            ),
            ("bad JSON path: '$.s3cret['", "bad JSON path: '…'"),
            (
                "CHECK constraint failed: s <> 'a''b'",
                "CHECK constraint failed: s <> '…'",
            ),
            ("it's", "it'…"),
            (
                "UNIQUE constraint failed: t.email",
                "UNIQUE constraint failed: t.email",
            ),
            ("no such column: nope", "no such column: nope"),
        ] {
            assert_eq!(public_text(msg), want, "{msg}");
        }
    }

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
