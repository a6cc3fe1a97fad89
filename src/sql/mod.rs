//! The one SQL scanner, and everything that reads SQL text through it.
//!
//! - [`scanner`]: the lexer, knowing every quoting form of SQLite, PostgreSQL and Turso.
//! - [`ident`]: identifiers given as data (a bulk load's table and columns), checked and quoted.
//! - [`script`]: where statements end (routine bodies included), and what kind each one is:
//!   transaction control, schema changes, DML, blank text; refusing NUL bytes.
//!
//! Placeholder translation (`crate::translation`) reads SQL through the same scanner, and so do
//! the wings where a dialect counts parameters its own way (SQLite's `?`/`:name` in the SQLite
//! family, the `$N` limit in the Postgres wing).

pub(crate) mod effects;
pub(crate) mod ident;
#[cfg(feature = "postgres")]
pub(crate) mod pg_effects;
#[cfg(test)]
pub(crate) mod props;
pub(crate) mod scanner;
pub(crate) mod script;

pub(crate) use effects::{first_outside_tx_only, segments};
#[cfg(feature = "postgres")]
pub(crate) use pg_effects::{Session, session_change};
pub(crate) use scanner::Dialect;
#[cfg(any(feature = "postgres", feature = "turso", feature = "mysql"))]
pub(crate) use script::changes_schema;
pub(crate) use script::{
    ends_or_starts_transaction, has_transaction_control, is_blank, is_dml, reject_nul,
};
