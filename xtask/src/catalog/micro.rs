//! The micro-bench pairs: a middleware step and its SQLx twin (docs/dev/BenchTooling.md,
//! "`cargo xtask bench-report`").

/// A micro-bench and its SQLx twin (docs/dev/BenchTooling.md, "`cargo xtask bench-report`").
#[derive(Debug, Clone, Copy)]
pub struct MicroPair {
    /// Page name (`bench_results/micro/<key>.md`).
    pub key: &'static str,
    /// Heading.
    pub title: &'static str,
    /// What one operation is, for the middleware side.
    pub middleware_op: &'static str,
    /// What one operation is, for the SQLx side.
    pub sqlx_op: &'static str,
    /// Middleware group and id.
    pub middleware: (&'static str, &'static str),
    /// SQLx group and id.
    pub sqlx: (&'static str, &'static str),
    /// The same middleware id on other backends (shown for context, not compared).
    pub also: &'static [(&'static str, &'static str, &'static str)],
}

/// The micro-bench pairs.
pub const MICRO_PAIRS: &[MicroPair] = &[
    MicroPair {
        key: "pool_acquire",
        title: "Pool checkout",
        middleware_op: "check a pooled connection out and drop it",
        sqlx_op: "acquire a connection from `SqlitePool` and drop it",
        middleware: ("sqlite_single_row_lookup", "pool_acquire"),
        sqlx: ("sqlite_single_row_lookup_sqlx", "sqlx_pool_acquire"),
        also: &[
            ("Turso", "turso_single_row_lookup", "pool_acquire"),
            ("Postgres", "postgres_single_row_lookup", "pool_acquire"),
            ("MySQL", "mysql_single_row_lookup", "pool_acquire"),
        ],
    },
    MicroPair {
        key: "prepare",
        title: "Statement preparation",
        middleware_op: "prepare the lookup statement through the middleware",
        sqlx_op: "prepare the lookup statement with SQLx",
        middleware: ("sqlite_single_row_lookup", "middleware_prepare"),
        sqlx: ("sqlite_single_row_lookup_sqlx", "sqlx_prepare"),
        also: &[("Turso", "turso_single_row_lookup", "middleware_prepare")],
    },
    MicroPair {
        key: "marshalling",
        title: "Row materialisation",
        middleware_op: "execute the bound lookup and build a `ResultSet` (no decode)",
        sqlx_op: "fetch the lookup as a `SqliteRow` and stop before decoding",
        middleware: ("sqlite_single_row_lookup", "middleware_marshalling"),
        sqlx: ("sqlite_single_row_lookup_sqlx", "sqlx_query_raw"),
        also: &[("Turso", "turso_single_row_lookup", "middleware_marshalling")],
    },
    MicroPair {
        key: "decode",
        title: "Decode into `BenchRow`",
        middleware_op: "decode one `CustomDbRow` into `BenchRow`",
        sqlx_op: "decode one fetched `SqliteRow` into `BenchRow`",
        middleware: ("sqlite_single_row_lookup", "middleware_decode"),
        sqlx: ("sqlite_single_row_lookup_sqlx", "sqlx_decode"),
        also: &[("Turso", "turso_single_row_lookup", "middleware_decode")],
    },
    MicroPair {
        key: "param_convert",
        title: "Parameter conversion and binding",
        middleware_op: "convert a `[RowValues; 1]` and bind it to the prepared statement",
        sqlx_op: "build the query and `.bind(id)` on it",
        middleware: ("sqlite_single_row_lookup", "middleware_param_convert"),
        sqlx: ("sqlite_single_row_lookup_sqlx", "sqlx_param_bind"),
        also: &[(
            "Turso",
            "turso_single_row_lookup",
            "middleware_param_convert",
        )],
    },
    MicroPair {
        key: "pool_checkout_fanout",
        title: "Pool checkout under fan-out",
        middleware_op: "check out and drop a connection, C tasks at once",
        sqlx_op: "acquire and drop a connection, C tasks at once",
        middleware: (
            "sqlite_multithread_pool_checkout",
            "middleware_pool_checkout",
        ),
        sqlx: (
            "sqlite_multithread_pool_checkout_sqlx",
            "sqlx_pool_checkout",
        ),
        also: &[],
    },
];
