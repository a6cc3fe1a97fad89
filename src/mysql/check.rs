//! Asking the server what a statement did to the session: what the middleware's own guarantees
//! depend on, read back after any statement whose text does not prove it harmless (see
//! `session.rs`), after raw access and after the `after_connect` hook.
//!
//! mysql_async does not negotiate the server's session tracking, so the middleware asks: one
//! `SELECT` of the settings below (its answer's status flags say whether autocommit is on and a
//! transaction open), then it puts back what it must:
//!
//! | setting | why the middleware cares | what it does |
//! |---|---|---|
//! | `autocommit`, `completion_type` | outside a `Tx`, an acknowledged write must be committed (a `COMMIT` that chains a new transaction, or releases the connection, breaks that) | put back, the statement refused (`TransactionState`) |
//! | `character_set_client`, `_connection`, `_results` | every text is bound and read as UTF-8 | `SET NAMES utf8mb4`, the statement refused (`Unsupported`) |
//! | `sql_mode` | a value that does not fit its column must be refused, not changed | `STRICT_ALL_TABLES` added back |
//! | `time_zone` | a `TimestampTz` is bound as UTC | remembered: binding a `TimestampTz` is refused while the session is not in UTC |
//! | `DATABASE()`, `sql_mode`, the collation | they decide what a statement's names and quotes mean | the connection's cached statements are closed, to be prepared again; the middleware's SQL readers follow the quotes `sql_mode` sets (`NO_BACKSLASH_ESCAPES`, `ANSI_QUOTES`) |
//!
//! The check costs one round trip, and only after such statements: a plain query or DML
//! statement costs nothing.

use mysql_async::prelude::Queryable;

use super::config::MyClient;
use super::error::map_err;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// What every session is set to when it opens, and again after a reset: UTF-8 in and out, UTC
/// (so `TIMESTAMP` columns, `NOW()` and a bound `DateTime<Utc>` all mean UTC), autocommit on
/// and not chaining transactions, and strict about values that do not fit their column (the
/// server's other `sql_mode` flags are kept).
pub(crate) const SETUP: &str = "SET NAMES utf8mb4, time_zone = '+00:00', autocommit = 1, \
     completion_type = 'NO_CHAIN', \
     sql_mode = CONCAT_WS(',', NULLIF(@@session.sql_mode, ''), 'STRICT_ALL_TABLES')";

/// Puts strict mode back, keeping the session's other `sql_mode` flags.
const STRICT_AGAIN: &str =
    "SET SESSION sql_mode = CONCAT_WS(',', NULLIF(@@session.sql_mode, ''), 'STRICT_ALL_TABLES')";

/// The settings the check reads, in one row.
const ASK: &str = "SELECT DATABASE(), @@session.sql_mode, @@session.collation_connection, \
     @@session.character_set_client, @@session.character_set_connection, \
     @@session.character_set_results, @@session.time_zone, @@session.completion_type";

/// What the middleware last learnt of a session's settings.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Facts {
    /// The default database.
    pub(crate) database: Option<String>,
    pub(crate) sql_mode: String,
    pub(crate) collation: String,
    /// The session's time zone is UTC: a `TimestampTz` binds as its UTC date and time.
    pub(crate) utc: bool,
    /// How `sql_mode` reads quotes: the SQL readers follow it (see [`Facts::dialect`]).
    pub(crate) quotes: crate::sql::scanner::QuoteModes,
}

impl Facts {
    /// The facts of a session set up by [`SETUP`] on a server whose fresh sessions read quotes
    /// as `quotes`.
    pub(crate) fn fresh(quotes: crate::sql::scanner::QuoteModes) -> Self {
        Self {
            utc: true,
            quotes,
            ..Self::default()
        }
    }

    /// The session's SQL as the middleware's readers must follow it: where its strings and
    /// quoted names end depends on `sql_mode`.
    #[inline]
    pub(crate) fn dialect(&self) -> crate::sql::Dialect {
        super::dialect::of_session(self.quotes)
    }
}

/// What the check found that the caller must act on.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Autocommit was off, or `COMMIT` chained a transaction or released the connection (now
    /// put back); a transaction may have been open.
    pub(crate) autocommit_was_off: bool,
    /// The character set was not UTF-8 (now it is again).
    pub(crate) charset_was: Option<String>,
}

impl Found {
    /// The error for the statement that changed what the middleware had to put back.
    pub(crate) fn error(&self) -> Option<SqlMiddlewareDbError> {
        if self.autocommit_was_off {
            return Some(SqlMiddlewareDbError::new(
                ErrorKind::TransactionState,
                "the statement turned autocommit off (or made COMMIT chain a transaction); the middleware commits every statement outside a Tx (use begin() for a transaction), so the setting was put back and anything the statement left uncommitted was rolled back",
            ));
        }
        self.charset_was.as_ref().map(|was| {
            SqlMiddlewareDbError::new(
                ErrorKind::Unsupported,
                format!(
                    "the statement set the session's character set to {was}; the middleware binds and reads text as UTF-8, so the session was put back to utf8mb4"
                ),
            )
        })
    }
}

/// Whether the session's `time_zone` names UTC.
fn is_utc(tz: &str) -> bool {
    matches!(
        tz,
        "+00:00" | "+0:00" | "-00:00" | "UTC" | "utc" | "Etc/UTC" | "GMT"
    )
}

fn is_utf8mb4(cs: Option<&str>) -> bool {
    cs.is_some_and(|c| c.eq_ignore_ascii_case("utf8mb4"))
}

/// Asks the server about the session of `c` and puts back what the middleware owns. `in_tx`:
/// inside a transaction of the middleware, where autocommit cannot be turned back on without
/// committing it (it is turned back on after the transaction ends, see
/// [`MyClient::autocommit_off`]).
pub(crate) async fn session(c: &mut MyClient, in_tx: bool) -> Result<Found> {
    type Row = (
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let row: Option<Row> = c.conn.query_first(ASK).await.map_err(map_err)?;
    let Some((database, sql_mode, collation, client, connection, results, tz, completion)) = row
    else {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::Other,
            "the server returned no session settings",
        ));
    };
    let autocommit = c.conn.last_ok_packet().is_some_and(|ok| {
        ok.status_flags()
            .contains(mysql_async::consts::StatusFlags::SERVER_STATUS_AUTOCOMMIT)
    });
    let mut found = Found::default();
    let sql_mode = sql_mode.unwrap_or_default();
    let strict = sql_mode
        .split(',')
        .any(|m| m.eq_ignore_ascii_case("STRICT_ALL_TABLES"));
    if !strict {
        c.conn.query_drop(STRICT_AGAIN).await.map_err(map_err)?;
    }
    let charsets = [&client, &connection, &results];
    if let Some(bad) = charsets.iter().find(|cs| !is_utf8mb4(cs.as_deref())) {
        found.charset_was = Some(bad.as_deref().unwrap_or("NULL").to_owned());
        c.conn
            .query_drop("SET NAMES utf8mb4")
            .await
            .map_err(map_err)?;
    }
    if !completion
        .as_deref()
        .is_some_and(|m| m.eq_ignore_ascii_case("NO_CHAIN"))
    {
        found.autocommit_was_off = true;
        c.conn
            .query_drop("SET completion_type = 'NO_CHAIN'")
            .await
            .map_err(map_err)?;
    }
    if !autocommit {
        found.autocommit_was_off = true;
        if in_tx {
            c.autocommit_off = true;
        } else {
            restore_autocommit(c).await?;
        }
    }
    let facts = Facts {
        quotes: super::dialect::quotes_of(&sql_mode),
        database,
        // Strictness (added back above if it was missing) does not change what a statement
        // means: it is left out of the comparison.
        sql_mode: without_strict(&sql_mode),
        collation: collation.unwrap_or_default(),
        utc: is_utc(tz.as_deref().unwrap_or("")),
    };
    if facts.database != c.facts.database
        || facts.sql_mode != c.facts.sql_mode
        || facts.collation != c.facts.collation
    {
        // Names and quotes may resolve differently now: statements are prepared again.
        super::stmt::forget_statements(c).await;
    }
    c.facts = facts;
    Ok(found)
}

/// `sql_mode` without `STRICT_ALL_TABLES`.
fn without_strict(mode: &str) -> String {
    mode.split(',')
        .filter(|m| !m.eq_ignore_ascii_case("STRICT_ALL_TABLES"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Rolls back whatever autocommit-off left open and turns autocommit back on.
pub(crate) async fn restore_autocommit(c: &mut MyClient) -> Result<()> {
    c.conn
        .query_drop("ROLLBACK; SET autocommit = 1")
        .await
        .map_err(map_err)?;
    c.autocommit_off = false;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strictness_is_left_out_of_the_comparison() {
        assert_eq!(
            without_strict("STRICT_TRANS_TABLES,STRICT_ALL_TABLES,ANSI_QUOTES"),
            "STRICT_TRANS_TABLES,ANSI_QUOTES"
        );
        assert_eq!(without_strict("STRICT_ALL_TABLES"), "");
    }

    #[test]
    fn utc_spellings() {
        assert!(is_utc("+00:00"));
        assert!(is_utc("UTC"));
        assert!(!is_utc("+05:00"));
        assert!(!is_utc("SYSTEM"));
    }

    #[test]
    fn the_autocommit_error_wins() {
        let f = Found {
            autocommit_was_off: true,
            charset_was: Some("latin1".into()),
        };
        assert_eq!(
            f.error().map(|e| e.kind()),
            Some(ErrorKind::TransactionState)
        );
        let f = Found {
            autocommit_was_off: false,
            charset_was: Some("latin1".into()),
        };
        assert_eq!(f.error().map(|e| e.kind()), Some(ErrorKind::Unsupported));
        assert!(Found::default().error().is_none());
    }
}
