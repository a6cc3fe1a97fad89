//! Migrations on PostgreSQL (feature `migrate`): DDL is transactional, and each migration's
//! transaction takes a transaction-scoped advisory lock, which the commit or rollback releases
//! (so it works through a pooler in transaction mode, and a runner that dies releases it).

use crate::contract::{MigrateLock, MigrateRules};

/// PostgreSQL's migration rules.
pub(crate) const MIGRATE: MigrateRules = MigrateRules {
    transactional_ddl: true,
    lock: MigrateLock::InTransaction {
        try_sql: "SELECT pg_try_advisory_xact_lock($1)",
    },
    suffixes: &["postgres"],
};
