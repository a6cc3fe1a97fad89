//! Test databases on MySQL and MariaDB (feature `testing`): a database per test (`utf8mb4`,
//! binary collation), migrated; the sessions still in one are ended before it is dropped (a
//! lock of an open transaction would stall the drop); a kept one holds a marker table.

use crate::contract::{TestDbRules, TestDbSql};

/// MySQL's test database rules.
pub(crate) const RULES: TestDbRules = TestDbRules {
    server: Some(TestDbSql {
        create: "CREATE DATABASE `{name}` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin",
        template: None,
        drop: "DROP DATABASE IF EXISTS `{name}`",
        sessions: Some((
            "SELECT CAST(ID AS SIGNED) FROM information_schema.PROCESSLIST \
             WHERE DB = '{name}' AND ID <> CONNECTION_ID()",
            "KILL {id}",
        )),
        list: "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA \
               WHERE SCHEMA_NAME LIKE 'sqlmw\\_t\\_%' AND SCHEMA_NAME NOT IN \
               (SELECT TABLE_SCHEMA FROM information_schema.TABLES \
                WHERE TABLE_NAME = '_sql_middleware_kept')",
        mark_kept: (
            "CREATE TABLE IF NOT EXISTS _sql_middleware_kept (kept INT)",
            true,
        ),
        free_connections: "SELECT CAST(@@max_connections - (SELECT COUNT(*) \
             FROM information_schema.PROCESSLIST \
             WHERE COALESCE(DB, '') NOT LIKE 'sqlmw\\_t\\_%') AS SIGNED)",
    }),
    file_scheme: "",
};
