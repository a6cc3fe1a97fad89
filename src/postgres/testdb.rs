//! Test databases on Postgres (feature `testing`): a database per test, copied from a template
//! that holds the migrations (`CREATE DATABASE … TEMPLATE …`); `DROP … WITH (FORCE)` ends the
//! sessions still in one; a kept one carries a comment.

use crate::contract::{TestDbRules, TestDbSql, TestDbTemplate};

/// Postgres's test database rules.
pub(crate) const RULES: TestDbRules = TestDbRules {
    server: Some(TestDbSql {
        create: "CREATE DATABASE \"{name}\"",
        template: Some(TestDbTemplate {
            create_from: "CREATE DATABASE \"{name}\" TEMPLATE \"{template}\"",
            exists: "SELECT 1::bigint FROM pg_database WHERE datname = '{name}'",
            lock: (
                "SELECT pg_advisory_lock(8317129473120286828)",
                "SELECT pg_advisory_unlock(8317129473120286828)",
            ),
            rename: "ALTER DATABASE \"{name}\" RENAME TO \"{template}\"",
        }),
        drop: "DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)",
        sessions: None,
        list: "SELECT datname::text FROM pg_database WHERE datname LIKE 'sqlmw\\_t\\_%' \
               AND COALESCE(shobj_description(oid, 'pg_database'), '') <> 'sql-middleware: kept'",
        mark_kept: (
            "COMMENT ON DATABASE \"{name}\" IS 'sql-middleware: kept'",
            false,
        ),
        free_connections: "SELECT (current_setting('max_connections')::int \
             - current_setting('superuser_reserved_connections')::int \
             - (SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend' \
                AND COALESCE(datname, '') NOT LIKE 'sqlmw\\_t\\_%'))::bigint",
    }),
    file_scheme: "",
};
