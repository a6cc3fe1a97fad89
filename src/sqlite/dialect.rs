//! The SQL rules of the SQLite wing are the SQLite family's (`sqlite_family/dialect.rs`).

pub(crate) use crate::sqlite_family::dialect::{DIALECT, PLACEHOLDERS};
