//! The Criterion groups and the ids a complete run of each writes (docs/dev/Benchmarks.md,
//! "Targets and ids").

/// A Criterion group and the ids a complete run of it writes.
#[derive(Debug, Clone, Copy)]
pub struct GroupSpec {
    /// Group name.
    pub name: &'static str,
    /// Function ids (docs/dev/Benchmarks.md, "Targets and ids").
    pub ids: &'static [&'static str],
}

/// Every group the report knows, with its ids.
pub const GROUPS: &[GroupSpec] = &[
    GroupSpec {
        name: "sqlite_single_row_lookup",
        ids: &[
            "rusqlite",
            "middleware",
            "middleware_tracing",
            "rusqlite_prepare_cached",
            "middleware_query_one",
            "middleware_select",
            "middleware_checkout_query_one",
            "pool_acquire",
            "middleware_prepare",
            "middleware_interact",
            "middleware_marshalling",
            "middleware_decode",
            "middleware_decode_by_name",
            "middleware_decode_derive",
            "middleware_param_convert",
        ],
    },
    GroupSpec {
        name: "sqlite_multithread_pool_checkout",
        ids: &[
            "middleware_parallel_select",
            "middleware_pool_checkout",
            "rusqlite_blocking",
        ],
    },
    GroupSpec {
        name: "turso_single_row_lookup",
        ids: &[
            "turso_raw",
            "middleware",
            "middleware_query_one",
            "middleware_select",
            "middleware_checkout_query_one",
            "pool_acquire",
            "middleware_prepare",
            "middleware_interact",
            "middleware_marshalling",
            "middleware_decode",
            "middleware_param_convert",
        ],
    },
    GroupSpec {
        name: "postgres_single_row_lookup",
        ids: &[
            "tokio_postgres_raw",
            "middleware",
            "middleware_query_one",
            "middleware_select",
            "middleware_checkout_query_one",
            "middleware_pipelined",
            "middleware_unnamed",
            "middleware_via_pgbouncer",
            "middleware_tls",
            "pool_acquire",
        ],
    },
    GroupSpec {
        name: "postgres_connect",
        ids: &["connect_plain", "connect_tls"],
    },
    GroupSpec {
        name: "database_inserts",
        ids: &[
            "sqlite_raw",
            "sqlite_middleware",
            "postgres_raw",
            "postgres_middleware",
            "turso_raw",
            "turso_middleware",
        ],
    },
    GroupSpec {
        name: "bulk_load",
        ids: &[
            "postgres_copy_raw",
            "postgres_middleware_bulk",
            "postgres_middleware_rows",
            "sqlite_middleware_bulk",
            "sqlite_middleware_rows",
            "sqlite_raw_rows",
            "turso_middleware_bulk",
            "turso_middleware_rows",
        ],
    },
    GroupSpec {
        name: "sqlite_single_row_lookup_sqlx",
        ids: &[
            "sqlx",
            "sqlx_pool_acquire",
            "sqlx_prepare",
            "sqlx_query_raw",
            "sqlx_decode",
            "sqlx_param_bind",
        ],
    },
    GroupSpec {
        name: "sqlite_multithread_pool_checkout_sqlx",
        ids: &[
            "sqlx_parallel_select",
            "sqlx_pool_checkout",
            "sqlx_prepare_parallel",
        ],
    },
    GroupSpec {
        name: "postgres_single_row_lookup_sqlx",
        ids: &["sqlx"],
    },
    GroupSpec {
        name: "sweep_lookup_rows",
        ids: &["rusqlite", "middleware"],
    },
    GroupSpec {
        name: "sweep_fanout_concurrency",
        ids: &["rusqlite", "middleware"],
    },
    GroupSpec {
        name: "sweep_text_payload",
        ids: &["rusqlite", "middleware"],
    },
    GroupSpec {
        name: "sqlite_single_row_lookup_peers",
        ids: &["deadpool_sqlite", "tokio_rusqlite"],
    },
    GroupSpec {
        name: "sqlite_multithread_pool_checkout_peers",
        ids: &[
            "deadpool_sqlite_parallel_select",
            "tokio_rusqlite_parallel_select",
        ],
    },
    GroupSpec {
        name: "postgres_fanout",
        ids: &["deadpool_postgres_raw", "middleware", "sqlx"],
    },
    GroupSpec {
        name: "mysql_single_row_lookup",
        ids: &[
            "mysql_async_raw",
            "mysql_async_raw_cached",
            "middleware",
            "middleware_query_one",
            "middleware_select",
            "middleware_checkout_query_one",
            "pool_acquire",
        ],
    },
    GroupSpec {
        name: "mysql_single_row_lookup_sqlx",
        ids: &["sqlx", "sqlx_query_one"],
    },
    GroupSpec {
        name: "mysql_fanout",
        ids: &[
            "mysql_async_raw",
            "mysql_async_raw_reset",
            "middleware",
            "sqlx",
        ],
    },
];

/// The group spec called `name`.
pub fn group(name: &str) -> Option<&'static GroupSpec> {
    GROUPS.iter().find(|g| g.name == name)
}
