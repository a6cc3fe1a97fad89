//! Entry points for the repository's micro-benchmarks, hidden from the documentation and not
//! part of the stable API: they may change or go away in any release.
//!
//! Most benchmarks measure the crate from outside, through its public API. The few that time
//! one internal step on its own reach it here:
//!
//! - `sqlite`, `turso`: the materialisation of a result set and the binding (or conversion) of
//!   parameters, each as a timed loop over a prepared lookup, run by the crate's own code;
//! - [`timestamp_text`], [`timestamptz_text`], [`date_text`]: the text forms SQLite and Turso
//!   store dates and times in, so that a raw-driver baseline stores the same text with the same
//!   work.

#[cfg(feature = "sqlite")]
pub mod sqlite;
#[cfg(feature = "turso")]
pub mod turso;

#[cfg(any(feature = "sqlite", feature = "turso"))]
pub use crate::sqlite_family::text_form::{date_text, timestamp_text, timestamptz_text};
