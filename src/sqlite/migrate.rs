//! Migrations on SQLite (feature `migrate`): DDL is transactional, and the write transaction the
//! wing begins (`BEGIN IMMEDIATE`) is the lock that keeps concurrent runners apart.

use crate::contract::{MigrateLock, MigrateRules};

/// SQLite's migration rules.
pub(crate) const MIGRATE: MigrateRules = MigrateRules {
    transactional_ddl: true,
    lock: MigrateLock::WriteTransaction,
    suffixes: &["sqlite"],
};
