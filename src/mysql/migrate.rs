//! Migrations on MySQL and MariaDB (feature `migrate`): DDL commits implicitly, so a migration
//! runs statement by statement and a failure is recorded as dirty; the session holds a named
//! lock (`GET_LOCK`, with a bounded wait) for the whole run, which the server releases when the
//! session ends. On a Galera node (`wsrep_on`), where named locks are per node, the runner
//! uses a lock table instead (see `migrate/lock_table.rs`).

use crate::contract::{MigrateLock, MigrateRules};

/// MySQL's migration rules.
pub(crate) const MIGRATE: MigrateRules = MigrateRules {
    transactional_ddl: false,
    lock: MigrateLock::Session {
        acquire_sql: "SELECT GET_LOCK($1, $2)",
        release_sql: "SELECT RELEASE_LOCK($1)",
        cluster_sql: "SELECT CASE WHEN @@GLOBAL.wsrep_on THEN 1 ELSE 0 END",
    },
    suffixes: &["mysql"],
};
