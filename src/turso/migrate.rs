//! Migrations on Turso (feature `migrate`): DDL is transactional, and the write transaction the
//! wing begins (`BEGIN IMMEDIATE`) is the lock that keeps concurrent runners apart. A file for
//! SQLite (`.sqlite.sql`) serves Turso when there is none for Turso itself.

use crate::contract::{MigrateLock, MigrateRules};

/// Turso's migration rules.
pub(crate) const MIGRATE: MigrateRules = MigrateRules {
    transactional_ddl: true,
    lock: MigrateLock::WriteTransaction,
    suffixes: &["turso", "sqlite"],
};
