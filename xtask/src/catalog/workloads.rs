//! The workloads of the report's "Side by side" tables: the contenders of each and which row
//! each is divided by.

/// What a row of a workload table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The raw driver: the floor.
    Raw,
    /// The middleware.
    Middleware,
    /// SQLx.
    Sqlx,
    /// Another async library over the same driver (deadpool-sqlite, tokio-rusqlite). Tables of
    /// peers point their `sqlx` index at the middleware row: the second ratio column is then
    /// "× sql-middleware".
    Peer,
}

/// One row of a workload table: a contender and the id that measures it.
#[derive(Debug, Clone, Copy)]
pub struct Contender {
    /// Label in the table.
    pub label: &'static str,
    /// Raw, middleware or SQLx.
    pub role: Role,
    /// Criterion group.
    pub group: &'static str,
    /// Function id.
    pub function: &'static str,
    /// Index (in the workload's contenders) of the raw driver this row is divided by.
    pub raw: Option<usize>,
    /// Index of the SQLx row this row is divided by.
    pub sqlx: Option<usize>,
}

/// One side-by-side table of the report.
#[derive(Debug, Clone, Copy)]
pub struct Workload {
    /// Heading.
    pub title: &'static str,
    /// File stem of its chart (`bench_results/<key>.svg`).
    pub key: &'static str,
    /// What one operation is.
    pub operation: &'static str,
    /// Rows.
    pub contenders: &'static [Contender],
    /// A note printed under the table.
    pub note: &'static str,
}

const fn c(
    label: &'static str,
    role: Role,
    group: &'static str,
    function: &'static str,
    raw: Option<usize>,
    sqlx: Option<usize>,
) -> Contender {
    Contender {
        label,
        role,
        group,
        function,
        raw,
        sqlx,
    }
}

/// The workloads of `bench_results/index.md`, in order.
pub const WORKLOADS: &[Workload] = &[
    Workload {
        title: "SQLite point lookup",
        key: "sqlite_lookup",
        operation: "one `SELECT … WHERE id = ?` on a held connection, decoded into `BenchRow`",
        contenders: &[
            c(
                "rusqlite (raw)",
                Role::Raw,
                "sqlite_single_row_lookup",
                "rusqlite",
                Some(0),
                Some(2),
            ),
            c(
                "sql-middleware",
                Role::Middleware,
                "sqlite_single_row_lookup",
                "middleware",
                Some(0),
                Some(2),
            ),
            c(
                "SQLx",
                Role::Sqlx,
                "sqlite_single_row_lookup_sqlx",
                "sqlx",
                Some(0),
                Some(2),
            ),
            c(
                "sql-middleware, tracing spans on, no subscriber",
                Role::Middleware,
                "sqlite_single_row_lookup",
                "middleware_tracing",
                Some(0),
                Some(2),
            ),
            c(
                "rusqlite (raw), `prepare_cached` per call",
                Role::Raw,
                "sqlite_single_row_lookup",
                "rusqlite_prepare_cached",
                Some(0),
                Some(2),
            ),
            c(
                "sql-middleware, `query(..).one()` per call",
                Role::Middleware,
                "sqlite_single_row_lookup",
                "middleware_query_one",
                Some(4),
                Some(2),
            ),
            c(
                "sql-middleware, `query(..).select()` per call",
                Role::Middleware,
                "sqlite_single_row_lookup",
                "middleware_select",
                Some(4),
                Some(2),
            ),
            c(
                "sql-middleware, checkout + `query(..).one()` per call",
                Role::Middleware,
                "sqlite_single_row_lookup",
                "middleware_checkout_query_one",
                Some(4),
                Some(2),
            ),
        ],
        note: "Middleware: one pooled connection, statement prepared once, reused `RowValues` buffer (with the `tracing` feature built in, this pool has spans off; the tracing row has them on and no subscriber). SQLx: its own pool, statement prepared outside the loop. The per-call rows are divided by raw rusqlite with `prepare_cached` per call, their floor.",
    },
    Workload {
        title: "SQLite fan-out (C concurrent tasks)",
        key: "sqlite_fanout",
        operation: "one lookup with decode; N lookups split over C tasks, each with its own connection",
        contenders: &[
            c(
                "rusqlite (raw, blocking pool)",
                Role::Raw,
                "sqlite_multithread_pool_checkout",
                "rusqlite_blocking",
                Some(0),
                Some(2),
            ),
            c(
                "sql-middleware",
                Role::Middleware,
                "sqlite_multithread_pool_checkout",
                "middleware_parallel_select",
                Some(0),
                Some(2),
            ),
            c(
                "SQLx",
                Role::Sqlx,
                "sqlite_multithread_pool_checkout_sqlx",
                "sqlx_parallel_select",
                Some(0),
                Some(2),
            ),
        ],
        note: "The parameter is C; pools hold C connections. Time per operation is the wall time of the whole fan-out divided by N.",
    },
    Workload {
        title: "Inserts (R rows in one transaction)",
        key: "inserts",
        operation: "one row inserted with a prepared statement, R rows per transaction",
        contenders: &[
            c(
                "SQLite: rusqlite (raw)",
                Role::Raw,
                "database_inserts",
                "sqlite_raw",
                Some(0),
                None,
            ),
            c(
                "SQLite: sql-middleware",
                Role::Middleware,
                "database_inserts",
                "sqlite_middleware",
                Some(0),
                None,
            ),
            c(
                "Postgres: tokio-postgres (raw)",
                Role::Raw,
                "database_inserts",
                "postgres_raw",
                Some(2),
                None,
            ),
            c(
                "Postgres: sql-middleware",
                Role::Middleware,
                "database_inserts",
                "postgres_middleware",
                Some(2),
                None,
            ),
            c(
                "Turso: turso (raw)",
                Role::Raw,
                "database_inserts",
                "turso_raw",
                Some(4),
                None,
            ),
            c(
                "Turso: sql-middleware",
                Role::Middleware,
                "database_inserts",
                "turso_middleware",
                Some(4),
                None,
            ),
        ],
        note: "Each middleware row is divided by the raw driver of its own backend. There is no SQLx insert bench.",
    },
    Workload {
        title: "Bulk load (B rows into an empty table)",
        key: "bulk_load",
        operation: "one row loaded, B rows per load (every `RowValues` kind, 13 columns)",
        contenders: &[
            c(
                "Postgres: tokio-postgres binary COPY (raw)",
                Role::Raw,
                "bulk_load",
                "postgres_copy_raw",
                Some(0),
                None,
            ),
            c(
                "Postgres: sql-middleware bulk_insert",
                Role::Middleware,
                "bulk_load",
                "postgres_middleware_bulk",
                Some(0),
                None,
            ),
            c(
                "Postgres: sql-middleware, row by row",
                Role::Middleware,
                "bulk_load",
                "postgres_middleware_rows",
                Some(0),
                None,
            ),
            c(
                "SQLite: rusqlite, row by row (raw)",
                Role::Raw,
                "bulk_load",
                "sqlite_raw_rows",
                Some(3),
                None,
            ),
            c(
                "SQLite: sql-middleware bulk_insert",
                Role::Middleware,
                "bulk_load",
                "sqlite_middleware_bulk",
                Some(3),
                None,
            ),
            c(
                "SQLite: sql-middleware, row by row",
                Role::Middleware,
                "bulk_load",
                "sqlite_middleware_rows",
                Some(3),
                None,
            ),
            c(
                "Turso: sql-middleware bulk_insert",
                Role::Middleware,
                "bulk_load",
                "turso_middleware_bulk",
                None,
                None,
            ),
            c(
                "Turso: sql-middleware, row by row",
                Role::Middleware,
                "bulk_load",
                "turso_middleware_rows",
                None,
                None,
            ),
        ],
        note: "Row by row: a prepared insert per row in one transaction. Postgres rows are divided by the raw binary COPY, SQLite rows by rusqlite's prepared insert per row in one transaction; Turso has no raw row here (see database_inserts). Q10 in docs/dev/Benchmarks.md states the bulk ÷ row-by-row targets.",
    },
    Workload {
        title: "Turso point lookup",
        key: "turso_lookup",
        operation: "one `SELECT … WHERE id = ?` on a held connection, decoded into `BenchRow`",
        contenders: &[
            c(
                "turso (raw)",
                Role::Raw,
                "turso_single_row_lookup",
                "turso_raw",
                Some(0),
                None,
            ),
            c(
                "sql-middleware",
                Role::Middleware,
                "turso_single_row_lookup",
                "middleware",
                Some(0),
                None,
            ),
            c(
                "sql-middleware, `query(..).one()` per call",
                Role::Middleware,
                "turso_single_row_lookup",
                "middleware_query_one",
                Some(0),
                None,
            ),
            c(
                "sql-middleware, `query(..).select()` per call",
                Role::Middleware,
                "turso_single_row_lookup",
                "middleware_select",
                Some(0),
                None,
            ),
            c(
                "sql-middleware, checkout + `query(..).one()` per call",
                Role::Middleware,
                "turso_single_row_lookup",
                "middleware_checkout_query_one",
                Some(0),
                None,
            ),
        ],
        note: "SQLx has no Turso driver, so there is no SQLx row. The per-call rows (the statement cache included) are divided by the raw driver's prepared lookup.",
    },
    Workload {
        title: "Postgres point lookup",
        key: "postgres_lookup",
        operation: "one `SELECT … WHERE id = $1` over the local unix socket, decoded into `BenchRow`",
        contenders: &[
            c(
                "tokio-postgres (raw)",
                Role::Raw,
                "postgres_single_row_lookup",
                "tokio_postgres_raw",
                Some(0),
                Some(3),
            ),
            c(
                "sql-middleware",
                Role::Middleware,
                "postgres_single_row_lookup",
                "middleware",
                Some(0),
                Some(3),
            ),
            c(
                "sql-middleware, pipelined",
                Role::Middleware,
                "postgres_single_row_lookup",
                "middleware_pipelined",
                Some(0),
                Some(3),
            ),
            c(
                "SQLx",
                Role::Sqlx,
                "postgres_single_row_lookup_sqlx",
                "sqlx",
                Some(0),
                Some(3),
            ),
            c(
                "sql-middleware, `query(..).one()` per call",
                Role::Middleware,
                "postgres_single_row_lookup",
                "middleware_query_one",
                Some(0),
                Some(3),
            ),
            c(
                "sql-middleware, `query(..).select()` per call",
                Role::Middleware,
                "postgres_single_row_lookup",
                "middleware_select",
                Some(0),
                Some(3),
            ),
            c(
                "sql-middleware, checkout + `query(..).one()` per call",
                Role::Middleware,
                "postgres_single_row_lookup",
                "middleware_checkout_query_one",
                Some(0),
                Some(3),
            ),
        ],
        note: "The server runs on the same 2 vCPUs as the benchmark. The pipelined row sends all N lookups at once on one connection; the others are sequential. The per-call rows go through the connection's statement cache; the raw row uses a statement prepared once.",
    },
    Workload {
        title: "SQLite point lookup: async-SQLite peers",
        key: "sqlite_lookup_peers",
        operation: "one `SELECT … WHERE id = ?` on a held connection, decoded into `BenchRow`",
        contenders: &[
            c(
                "rusqlite (raw), `prepare_cached` per call",
                Role::Raw,
                "sqlite_single_row_lookup",
                "rusqlite_prepare_cached",
                Some(0),
                Some(1),
            ),
            c(
                "sql-middleware, `query(..).one()` per call",
                Role::Middleware,
                "sqlite_single_row_lookup",
                "middleware_query_one",
                Some(0),
                Some(1),
            ),
            c(
                "deadpool-sqlite (`interact`)",
                Role::Peer,
                "sqlite_single_row_lookup_peers",
                "deadpool_sqlite",
                Some(0),
                Some(1),
            ),
            c(
                "tokio-rusqlite (`call`)",
                Role::Peer,
                "sqlite_single_row_lookup_peers",
                "tokio_rusqlite",
                Some(0),
                Some(1),
            ),
        ],
        note: "The peers run in `bench-harnesses/sqlite_peers` (same rusqlite, same bundled SQLite, same file). deadpool-sqlite: one pool object held for the loop, one `interact` per lookup; tokio-rusqlite: one connection, one `call` per lookup; both with `prepare_cached` inside the closure, so they are set beside the per-call forms of rusqlite and of sql-middleware (statement cache included). The last column divides by sql-middleware.",
    },
    Workload {
        title: "SQLite fan-out (C concurrent tasks): async-SQLite peers",
        key: "sqlite_fanout_peers",
        operation: "one lookup with decode; N lookups split over C tasks, each with its own connection",
        contenders: &[
            c(
                "rusqlite (raw, blocking pool)",
                Role::Raw,
                "sqlite_multithread_pool_checkout",
                "rusqlite_blocking",
                Some(0),
                Some(1),
            ),
            c(
                "sql-middleware",
                Role::Middleware,
                "sqlite_multithread_pool_checkout",
                "middleware_parallel_select",
                Some(0),
                Some(1),
            ),
            c(
                "deadpool-sqlite (`interact`)",
                Role::Peer,
                "sqlite_multithread_pool_checkout_peers",
                "deadpool_sqlite_parallel_select",
                Some(0),
                Some(1),
            ),
            c(
                "tokio-rusqlite (`call`)",
                Role::Peer,
                "sqlite_multithread_pool_checkout_peers",
                "tokio_rusqlite_parallel_select",
                Some(0),
                Some(1),
            ),
        ],
        note: "The parameter is C. deadpool-sqlite: a pool of C objects, each task checks one out and runs one `interact` per lookup; tokio-rusqlite: C connections, one per task, one `call` per lookup. The last column divides by sql-middleware.",
    },
    Workload {
        title: "Postgres fan-out (T tasks on a pool of C)",
        key: "postgres_fanout",
        operation: "a pool checkout, one per-call `SELECT … WHERE id = $1` decoded into `BenchRow`, the return; N operations split over T tasks sharing C connections",
        contenders: &[
            c(
                "deadpool-postgres (raw)",
                Role::Raw,
                "postgres_fanout",
                "deadpool_postgres_raw",
                Some(0),
                Some(2),
            ),
            c(
                "sql-middleware",
                Role::Middleware,
                "postgres_fanout",
                "middleware",
                Some(0),
                Some(2),
            ),
            c(
                "SQLx",
                Role::Sqlx,
                "postgres_fanout",
                "sqlx",
                Some(0),
                Some(2),
            ),
        ],
        note: "T = `BENCH_FANOUT_TASKS` (default 32), C = `BENCH_CONCURRENCY` (default 8). Raw: deadpool-postgres with `RecyclingMethod::Fast`, `prepare_cached` + `query_one`. Middleware: `get_connection()` + `query(..).params(..).one()`. SQLx: `query_as(..).bind(..).fetch_one(&pool)` on a pool of C opened up front, `test_before_acquire` off. The SQLx row comes from the SQLx harness (`postgres_fanout_sqlx`).",
    },
    Workload {
        title: "MySQL/MariaDB point lookup",
        key: "mysql_lookup",
        operation: "one `SELECT … WHERE id = ?` over loopback TCP on a held connection, decoded into `BenchRow`",
        contenders: &[
            c(
                "mysql_async (raw), statement prepared once",
                Role::Raw,
                "mysql_single_row_lookup",
                "mysql_async_raw",
                Some(0),
                Some(3),
            ),
            c(
                "mysql_async (raw), `exec_first(sql)` per call",
                Role::Raw,
                "mysql_single_row_lookup",
                "mysql_async_raw_cached",
                Some(0),
                Some(3),
            ),
            c(
                "sql-middleware",
                Role::Middleware,
                "mysql_single_row_lookup",
                "middleware",
                Some(0),
                Some(3),
            ),
            c(
                "SQLx",
                Role::Sqlx,
                "mysql_single_row_lookup_sqlx",
                "sqlx",
                Some(0),
                Some(3),
            ),
            c(
                "sql-middleware, `query(..).one()` per call",
                Role::Middleware,
                "mysql_single_row_lookup",
                "middleware_query_one",
                Some(0),
                Some(6),
            ),
            c(
                "sql-middleware, checkout + `query(..).one()` per call",
                Role::Middleware,
                "mysql_single_row_lookup",
                "middleware_checkout_query_one",
                Some(0),
                Some(6),
            ),
            c(
                "SQLx, `query_as(sql)` per call",
                Role::Sqlx,
                "mysql_single_row_lookup_sqlx",
                "sqlx_query_one",
                Some(0),
                Some(6),
            ),
        ],
        note: "The server (MariaDB or MySQL) runs on the same machine as the benchmark. Every row is divided by raw mysql_async with the lookup prepared once; the per-call rows of sql-middleware are divided by SQLx's per-call row in the last column (the prepared rows by SQLx's prepared row). The raw per-call row shows what the driver's own statement cache costs.",
    },
    Workload {
        title: "MySQL/MariaDB fan-out (T tasks on a pool of C)",
        key: "mysql_fanout",
        operation: "a pool checkout, one per-call `SELECT … WHERE id = ?` decoded into `BenchRow`, the return; N operations split over T tasks sharing C connections",
        contenders: &[
            c(
                "mysql_async::Pool (raw), `reset_connection` off",
                Role::Raw,
                "mysql_fanout",
                "mysql_async_raw",
                Some(0),
                Some(3),
            ),
            c(
                "mysql_async::Pool (raw), `reset_connection` on (its default)",
                Role::Raw,
                "mysql_fanout",
                "mysql_async_raw_reset",
                Some(0),
                Some(3),
            ),
            c(
                "sql-middleware",
                Role::Middleware,
                "mysql_fanout",
                "middleware",
                Some(0),
                Some(3),
            ),
            c("SQLx", Role::Sqlx, "mysql_fanout", "sqlx", Some(0), Some(3)),
        ],
        note: "T = `BENCH_FANOUT_TASKS` (default 32), C = `BENCH_CONCURRENCY` (default 8). Raw: a `mysql_async::Pool` of exactly C connections, `get_conn()` + `exec_first(sql, (id,))` through the connection's statement cache; with `reset_connection` on, every return runs `COM_RESET_CONNECTION`, which also empties that cache. Middleware: `get_connection()` + `query(..).params(..).one()`. SQLx: `query_as(..).bind(..).fetch_one(&pool)` on a pool of C opened up front, `test_before_acquire` off. The SQLx row comes from the SQLx harness (`mysql_fanout_sqlx`).",
    },
];
