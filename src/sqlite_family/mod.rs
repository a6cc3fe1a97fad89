//! What the SQLite and Turso wings share: the SQLite family of engines stores five storage
//! classes, reads declared column types as hints, stores dates and numbers as text, reports most
//! errors as a message, and waits for locks on the same back-off schedule.
//!
//! - [`columns`]: column names and hints from declared types, and widening stored values back.
//! - [`text_form`]: the text forms timestamps and dates are stored in.
//! - [`errors`]: classifying the engines' error messages.
//! - [`storable`]: refusing values the engines would silently change.
//! - [`bulk`]: rows per multi-row `INSERT` of a bulk load.
//! - [`busy`]: the busy-wait schedule.
//! - [`dialect`]: the family's SQL as the neutral readers follow it.
//! - [`sql`]: SQLite's parameter syntax and one-statement checks, through the SQL scanner.
//! - [`session`]: what statements do to a connection's session, as the engine reports it.
//!
//! Compiled only with the `sqlite` or `turso` feature; it imports the core only.

pub(crate) mod bulk;
pub(crate) mod busy;
pub(crate) mod columns;
pub(crate) mod dialect;
pub(crate) mod errors;
#[cfg(feature = "sqlite")]
pub(crate) mod session;
#[cfg(feature = "turso")]
pub(crate) mod sql;
pub(crate) mod storable;
pub(crate) mod text_form;
