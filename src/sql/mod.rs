//! The one SQL scanner, and everything that reads SQL text through it.
//!
//! - [`scanner`]: the lexer, with the lexical rules of every engine ([`scanner::Lexer`]).
//! - [`dialect`]: what the readers need to know about an engine's SQL; each wing defines its
//!   engine's [`Dialect`].
//! - [`ident`]: identifiers given as data (a bulk load's table and columns), checked and quoted.
//! - [`script`]: where statements end (routine bodies included), and what kind each one is:
//!   transaction control, schema changes, DML, blank text; refusing NUL bytes.
//! - [`effects`]: which statements must run outside a transaction, and a script cut there.
//!
//! Placeholder translation (`crate::translation`) reads SQL through the same scanner, and so do
//! the wings where an engine reads SQL its own way (parameter counts, what a statement does to
//! the session).

pub(crate) mod dialect;
pub(crate) mod effects;
pub(crate) mod ident;
#[cfg(test)]
pub(crate) mod props;
pub(crate) mod scanner;
pub(crate) mod script;

pub(crate) use dialect::Dialect;
pub(crate) use effects::{first_outside_tx_only, segments};
pub(crate) use scanner::Lexer;
pub(crate) use script::{
    ends_or_starts_transaction, has_transaction_control, is_blank, is_dml, plain_dml_at_a_glance,
    reject_nul,
};
