//! The SQL rules of the Turso wing are the SQLite family's (`sqlite_family/dialect.rs`).

pub(crate) use crate::sqlite_family::dialect::{DIALECT, PLACEHOLDERS};
