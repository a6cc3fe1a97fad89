//! The crate's one error type and its classification.

use std::borrow::Cow;
use std::error::Error as StdError;
use std::fmt;

/// What went wrong, in terms an application can act on.
///
/// Match on this (with a wildcard arm: more kinds may be added) instead of parsing messages.
/// Each kind has one meaning on every engine: the same failing statement gives the same kind
/// on SQLite, Postgres, Turso and MySQL/MariaDB. Where an engine cannot fail that way at all,
/// the kind's entry says what it does instead. The engine's own code stays available through
/// [`SqlMiddlewareDbError::driver_code`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// A `UNIQUE` or primary-key constraint rejected the row: an insert, an update, or a
    /// cascade that would duplicate a key (Postgres `23505`, SQLite `2067`/`1555`, MySQL
    /// `1062`, `1586`, `1761`, …).
    UniqueViolation,
    /// A foreign-key constraint rejected the change (also at `COMMIT` for deferred keys).
    ForeignKeyViolation,
    /// A `NOT NULL` column would be left without a value: an explicit `NULL`, or a row that
    /// leaves out a column that has no default (Postgres `23502`, SQLite `1299`, MySQL `1048`
    /// and `1364`).
    NotNullViolation,
    /// A `CHECK` constraint rejected the row (MariaDB also checks a `JSON` column this way).
    CheckViolation,
    /// Another integrity constraint, of a kind the engine did not name (a Postgres exclusion
    /// constraint, `23P01`; SQLite's rarer constraint codes).
    ConstraintViolation,
    /// A lock stayed held by another connection for longer than the wait allows: SQLite's and
    /// Turso's busy timeout, MySQL's `innodb_lock_wait_timeout` (`1205`), Postgres `NOWAIT` or
    /// `lock_timeout` (`55P03`). SQLite and Turso detect no deadlocks and need not: a
    /// transaction takes the database's write lock when it begins, so of two writers that
    /// would deadlock on a server engine the second waits for the first and, past the busy
    /// timeout, gets `Busy`. Retry the whole transaction.
    Busy,
    /// The transaction could not be serialized (Postgres `40001`, a stale Turso snapshot): retry it.
    SerializationFailure,
    /// The server detected a deadlock and aborted this transaction (Postgres `40P01`, MySQL
    /// `1213`): retry it. SQLite and Turso report the same situation as [`ErrorKind::Busy`].
    Deadlock,
    /// The connection to the server was lost; the pool replaces it. A connection lost while
    /// `COMMIT` was under way is [`ErrorKind::OutcomeUnknown`] instead. Not
    /// [`retryable`](SqlMiddlewareDbError::is_retryable) in general; the retrying transaction
    /// ([`crate::MiddlewarePool::transaction`]) runs its work again after one, because it knows
    /// that its `COMMIT` was not yet sent.
    ConnectionLost,
    /// No pooled connection became free within the pool's wait timeout.
    PoolTimeout,
    /// The pool was closed.
    PoolClosed,
    /// The number of parameters does not match the statement's placeholders.
    ParameterCount,
    /// A value does not fit the type it goes to: a parameter that cannot be bound to its
    /// placeholder's declared type without loss, or a value the engine refuses for its column's
    /// declared type, bound or written in the SQL: too long for a `VARCHAR(n)` (Postgres
    /// `22001`, MySQL `1406`), out of the column's range or not a number or date at all (MySQL
    /// `1264`, `1265`, `1292`, `1366`), of another type in a SQLite or Turso `STRICT` table.
    /// (MySQL's errors cannot tell a bound value from a literal, so neither can this kind;
    /// SQLite and Turso enforce no declared length: a `CHECK` does, as
    /// [`ErrorKind::CheckViolation`].) A Postgres data exception raised by the SQL itself
    /// (`2147483647::int4 + 1`, a bad literal cast) is [`ErrorKind::Other`].
    ParameterType,
    /// A column value could not be decoded into the requested Rust type (or was NULL for a non-`Option`).
    TypeMismatch,
    /// A row has no column of the requested name or index.
    ColumnNotFound,
    /// A query that must return a row returned none.
    NoRows,
    /// The SQL text could not be parsed.
    Syntax,
    /// The statement names a table, column or function that does not exist.
    UndefinedObject,
    /// The input was rejected before it reached the engine (e.g. a NUL byte in SQL text), or
    /// is beyond what the engine can take at all (a statement too complex, a value larger than
    /// the server's packet limit).
    InvalidInput,
    /// The transaction was already aborted by an earlier error and can only be rolled back.
    TransactionAborted,
    /// The transaction state does not allow this operation (e.g. nested `BEGIN`).
    TransactionState,
    /// A write was refused because the session, the database or the server is read-only, on
    /// every engine: a reader connection or a standby (Postgres `25006`), a read-only
    /// transaction or session (Postgres `25006`, MySQL `1792`), a server run read-only (MySQL
    /// `1290` for `--read-only`, `1836`), `PRAGMA query_only` or a database file opened
    /// read-only (SQLite `SQLITE_READONLY`, Turso). A database that cannot be opened or set up
    /// at all is [`ErrorKind::Config`] instead.
    ReadOnly,
    /// The statement was interrupted (cancelled by another session, or by the engine).
    Interrupted,
    /// The statement ran past its timeout (the pool's `statement_timeout` or a per-call
    /// `.timeout(..)`, the checkout wait, `connect_timeout`, or the server's own
    /// `statement_timeout`) and was stopped, and **its effect was not committed**: retrying it
    /// cannot apply it twice. Inside a transaction the transaction is aborted (roll it back and
    /// run it again). A limit that passes when a commit may have raced the stop is reported as
    /// [`ErrorKind::OutcomeUnknown`] instead.
    Timeout,
    /// The limit passed while the statement's commit may have been under way, and whether it
    /// took effect is unknown: check before retrying, or make the write idempotent.
    ///
    /// Returned on Postgres and MySQL by `Tx::commit` when the connection is lost while its
    /// `COMMIT` is under way (the server may have committed before the answer was lost).
    ///
    /// Returned on Postgres by:
    /// - `Tx::commit` (its `COMMIT` was sent when the limit passed);
    /// - a write outside a transaction (autocommit), from `dml`, `select`, `optional`, `all`,
    ///   `one`, `pipeline`, `execute_batch` and `bulk_insert` through a query, a prepared
    ///   statement or the `Executor`, when its limit passes after the statement was sent.
    ///
    /// On SQLite and Turso, by `execute_batch` outside a transaction, when its limit stops the
    /// script after a part of it may have committed: a script with transaction control of its
    /// own, or one that a statement that cannot run inside a transaction (`VACUUM`, `ATTACH`,
    /// some `PRAGMA`s) splits into parts that commit one by one.
    ///
    /// Read-only statements and statements inside a transaction return
    /// [`ErrorKind::Timeout`].
    OutcomeUnknown,
    /// The operation does not exist on this connection's backend (e.g. raw SQLite access on Postgres).
    Unsupported,
    /// The connection or pool configuration is invalid, or the connection's user lacks a
    /// privilege: a refused login, a database that does not exist or cannot be opened, and a
    /// statement refused for want of a grant where the engine has users (Postgres `42501`,
    /// MySQL `1044`, `1142`, `1143`, `1227`, `1370`). Fix the setup or the grants; retrying
    /// does not help. (SQLite and Turso have no users or grants.)
    Config,
    /// The TLS handshake with the server failed: the server offers no TLS where it is required,
    /// its certificate does not chain to a trusted root or does not name the host, or the
    /// server refused the client certificate. The message carries the TLS library's reason.
    Tls,
    /// Anything else; see the message and [`SqlMiddlewareDbError::driver_code`].
    ///
    /// This includes an error the application's own SQL code raises: a trigger that refuses a
    /// write or a routine that gives up (SQLite and Turso `RAISE(ABORT|FAIL|ROLLBACK, …)`,
    /// Postgres `RAISE EXCEPTION` (`P0001`) and `ASSERT` (`P0004`), MySQL `SIGNAL SQLSTATE
    /// '45000'` (`1644`)). Such an error means what its author meant, which the engines do not
    /// say (Turso reports only its text), so the middleware does not guess a kind for it; its
    /// text is not shown, since it may quote the row. Where the engine lets the author choose
    /// a standard SQLSTATE (Postgres `RAISE … USING ERRCODE = 'check_violation'`), the kind
    /// follows that code.
    Other,
}

pub use crate::engine::Backend;

/// The error type of every fallible call in this crate.
///
/// It is one pointer wide, so `Result<T, SqlMiddlewareDbError>` stays small on hot paths.
///
/// **No data in errors.** Its `Display` and `Debug`, and those of every error in its
/// [`source`](std::error::Error::source) chain, never hold a bound value or row data, so a
/// logger that prints the error and walks its chain logs no secret or personal data. The
/// message still names the cause class: the constraint or column, connection refused,
/// authentication failed, TLS, read-only. What a server writes into its errors that may quote
/// data (a Postgres `DETAIL` such as `Key (email)=(…) already exists`, the value quoted by a
/// failed cast) is left out; the driver's own error stays reachable through the explicit
/// accessors [`Self::driver_error`] and [`Self::unredacted_message`], whose output **may
/// contain data**.
pub struct SqlMiddlewareDbError {
    inner: Box<Inner>,
}

struct Inner {
    kind: ErrorKind,
    backend: Backend,
    message: Cow<'static, str>,
    code: Option<String>,
    source: Option<DriverError>,
}

/// The driver's error as the `source()` chain shows it: only which engine raised it and its
/// code. The driver's own error (whose text may quote data) is behind
/// [`SqlMiddlewareDbError::driver_error`].
pub struct DriverError {
    backend: Backend,
    code: Option<String>,
    raw: Box<dyn StdError + Send + Sync + 'static>,
}

impl fmt::Display for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} driver error", self.backend.name())?;
        if let Some(code) = &self.code {
            write!(f, " [{code}]")?;
        }
        f.write_str(" (its text may quote data; see SqlMiddlewareDbError::unredacted_message)")
    }
}

impl fmt::Debug for DriverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DriverError")
            .field("backend", &self.backend)
            .field("code", &self.code)
            .finish_non_exhaustive()
    }
}

/// The end of the chain: the driver's own error and its sources are not reachable from here.
impl StdError for DriverError {}

/// Shorthand for `Result<T, SqlMiddlewareDbError>`.
pub type Result<T, E = SqlMiddlewareDbError> = std::result::Result<T, E>;

impl SqlMiddlewareDbError {
    /// Builds an error raised by the middleware itself.
    pub fn new(kind: ErrorKind, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            inner: Box::new(Inner {
                kind,
                backend: Backend::Middleware,
                message: message.into(),
                code: None,
                source: None,
            }),
        }
    }

    /// Builds an error that wraps a driver error.
    pub fn from_driver(
        backend: Backend,
        kind: ErrorKind,
        code: Option<String>,
        message: impl Into<Cow<'static, str>>,
        source: impl StdError + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner: Box::new(Inner {
                kind,
                backend,
                message: message.into(),
                source: Some(DriverError {
                    backend,
                    code: code.clone(),
                    raw: Box::new(source),
                }),
                code,
            }),
        }
    }

    /// The classification of this error.
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The engine that raised the error ([`Backend::Middleware`] when the middleware did).
    pub fn backend(&self) -> Backend {
        self.inner.backend
    }

    /// The driver's own code: a Postgres SQLSTATE (`"23505"`), a SQLite extended result code
    /// (`"2067"`), a MySQL error number (`"1062"`), or `None` when the driver gave none.
    pub fn driver_code(&self) -> Option<&str> {
        self.inner.code.as_deref()
    }

    /// The human-readable message, without the source chain.
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The driver's own error (a `tokio_postgres::Error`, a `rusqlite::Error`, a
    /// `turso::Error`), unredacted, for downcasting. **Its `Display`, `Debug` and sources may
    /// contain bound values and row data** (a Postgres `DETAIL`, a value quoted by a failed
    /// cast): do not log them. `None` for errors the middleware raised itself.
    pub fn driver_error(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        self.inner.source.as_ref().map(|d| &*d.raw)
    }

    /// The full text of the driver's error and of its sources, unredacted: for Postgres the
    /// server's message with its `DETAIL` and `HINT`. **It may contain bound values and row
    /// data**: keep it out of logs that must not hold them. `None` for errors the middleware
    /// raised itself.
    pub fn unredacted_message(&self) -> Option<String> {
        let raw = self.driver_error()?;
        let mut text = raw.to_string();
        let mut next = raw.source();
        while let Some(e) = next {
            let part = e.to_string();
            if !text.contains(&part) {
                text.push_str(": ");
                text.push_str(&part);
            }
            next = e.source();
        }
        Some(text)
    }

    /// True when retrying the whole transaction may succeed (busy, serialization failure,
    /// deadlock). [`crate::MiddlewarePool::transaction`] retries these, and also a connection
    /// lost before its `COMMIT` was sent (see [`ErrorKind::ConnectionLost`]).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.inner.kind,
            ErrorKind::Busy | ErrorKind::SerializationFailure | ErrorKind::Deadlock
        )
    }

    /// This error re-classified as `kind`, keeping its message, driver code and source: for
    /// code that knows more about a failure than the driver said (a refused `COMMIT` that means
    /// the transaction was aborted, say).
    #[must_use]
    pub fn with_kind(mut self, kind: ErrorKind) -> Self {
        self.inner.kind = kind;
        self
    }

    pub(crate) fn parameter_count(expected: usize, got: usize) -> Self {
        Self::new(
            ErrorKind::ParameterCount,
            format!(
                "the statement expects {expected} parameter(s) but {got} were given; pass one RowValues per placeholder"
            ),
        )
    }

    pub(crate) fn no_rows() -> Self {
        Self::new(
            ErrorKind::NoRows,
            "the query returned no rows; use `optional()` when a missing row is expected",
        )
    }

    pub(crate) fn blank_sql() -> Self {
        Self::new(
            ErrorKind::InvalidInput,
            "the SQL text holds no statement (only whitespace or comments)",
        )
    }

    /// `begin` on a connection where raw SQL left a transaction open: one error on every engine.
    pub(crate) fn raw_tx_open() -> Self {
        Self::new(
            ErrorKind::TransactionState,
            "a transaction begun by raw SQL is still open on this connection; commit or roll it back first",
        )
    }

    pub(crate) fn nul_in_sql() -> Self {
        Self::new(
            ErrorKind::InvalidInput,
            "the SQL text contains a NUL byte; SQLite would silently ignore everything after it, so it is rejected",
        )
    }
}

impl fmt::Debug for SqlMiddlewareDbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("SqlMiddlewareDbError");
        d.field("kind", &self.inner.kind)
            .field("backend", &self.inner.backend)
            .field("message", &self.inner.message);
        if let Some(code) = &self.inner.code {
            d.field("code", code);
        }
        if let Some(source) = &self.inner.source {
            d.field("source", source);
        }
        d.finish()
    }
}

impl fmt::Display for SqlMiddlewareDbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} ", self.inner.kind)?;
        if let Some(code) = &self.inner.code {
            write!(f, "[{code}] ")?;
        }
        f.write_str(&self.inner.message)
    }
}

impl StdError for SqlMiddlewareDbError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|e| e as &(dyn StdError + 'static))
    }
}

/// Errors from decoding one value, before the column is known. Wrapped into
/// [`ErrorKind::TypeMismatch`] with the column name by the row accessors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub(crate) expected: &'static str,
    pub(crate) found: &'static str,
}

impl DecodeError {
    /// A value of kind `found` cannot become an `expected`.
    pub fn new(expected: &'static str, found: &'static str) -> Self {
        Self { expected, found }
    }

    pub(crate) fn at_column(self, column: &str) -> SqlMiddlewareDbError {
        SqlMiddlewareDbError::new(
            ErrorKind::TypeMismatch,
            format!(
                "column `{column}`: cannot decode {} as {}{}",
                self.found,
                self.expected,
                if self.found == "NULL" {
                    "; decode into Option<_> when the column may be NULL"
                } else {
                    ""
                }
            ),
        )
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cannot decode {} as {}", self.found, self.expected)
    }
}

impl StdError for DecodeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_is_one_pointer() {
        assert_eq!(
            std::mem::size_of::<SqlMiddlewareDbError>(),
            std::mem::size_of::<usize>()
        );
    }

    #[test]
    fn display_names_kind_and_code() {
        let e = SqlMiddlewareDbError::from_driver(
            Backend::Postgres,
            ErrorKind::UniqueViolation,
            Some("23505".into()),
            "duplicate key",
            std::io::Error::other("x"),
        );
        assert_eq!(e.to_string(), "UniqueViolation [23505] duplicate key");
        assert!(e.source().is_some());
        assert_eq!(e.driver_code(), Some("23505"));
    }
}
