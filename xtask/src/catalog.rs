//! What exists: the Criterion groups and ids fixed by BENCHMARKS.md §2, the suites (bench
//! targets) that produce them, the workloads of the report and the micro-bench pairs.

/// Which crate a bench target belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crate {
    /// The root crate (`benches/`).
    Main,
    /// The SQLx harness (`bench-harnesses/sqlx_lookup`, its own Cargo.lock).
    Sqlx,
}

/// One bench target, runnable on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Suite {
    /// Short name used on the command line (`cargo xtask bench sqlite-lookup`).
    pub name: &'static str,
    /// Crate of the target.
    pub krate: Crate,
    /// `[[bench]]` target name.
    pub target: &'static str,
    /// Criterion groups it writes.
    pub groups: &'static [&'static str],
    /// Runs only with `BENCH_SWEEP=1` / `--sweep`.
    pub sweep: bool,
}

impl Suite {
    /// The plain cargo command that runs this suite alone.
    pub fn cargo_command(&self) -> String {
        match self.krate {
            Crate::Main if self.sweep => format!(
                "BENCH_SWEEP=1 cargo bench --features {MAIN_FEATURES} --bench {}",
                self.target
            ),
            Crate::Main => format!(
                "cargo bench --features {MAIN_FEATURES} --bench {}",
                self.target
            ),
            Crate::Sqlx => format!(
                "cargo bench --manifest-path {SQLX_MANIFEST} --bench {}",
                self.target
            ),
        }
    }

    /// The xtask command that runs this suite and records its resources.
    pub fn xtask_command(&self) -> String {
        if self.sweep {
            format!("cargo xtask bench --sweep {}", self.name)
        } else {
            format!("cargo xtask bench {}", self.name)
        }
    }
}

/// Features every main-crate bench target is built with (one build serves all of them; the
/// default features add `sqlite` and `postgres`).
pub const MAIN_FEATURES: &str = "bench,turso";

/// Manifest of the SQLx harness, relative to the repository root.
pub const SQLX_MANIFEST: &str = "bench-harnesses/sqlx_lookup/Cargo.toml";

/// Every suite, in the order `cargo xtask bench` runs them.
pub const SUITES: &[Suite] = &[
    Suite {
        name: "sqlite-lookup",
        krate: Crate::Main,
        target: "bench_rusqlite_single_row_lookup",
        groups: &["sqlite_single_row_lookup"],
        sweep: false,
    },
    Suite {
        name: "sqlite-fanout",
        krate: Crate::Main,
        target: "bench_rusqlite_multithread_pool_checkout",
        groups: &["sqlite_multithread_pool_checkout"],
        sweep: false,
    },
    Suite {
        name: "turso-lookup",
        krate: Crate::Main,
        target: "bench_turso_single_row_lookup",
        groups: &["turso_single_row_lookup"],
        sweep: false,
    },
    Suite {
        name: "postgres-lookup",
        krate: Crate::Main,
        target: "bench_postgres_single_row_lookup",
        groups: &["postgres_single_row_lookup"],
        sweep: false,
    },
    Suite {
        name: "inserts",
        krate: Crate::Main,
        target: "database_benchmark",
        groups: &["database_inserts"],
        sweep: false,
    },
    Suite {
        name: "sqlx-sqlite-lookup",
        krate: Crate::Sqlx,
        target: "sqlite_single_row_lookup_sqlx",
        groups: &["sqlite_single_row_lookup_sqlx"],
        sweep: false,
    },
    Suite {
        name: "sqlx-fanout",
        krate: Crate::Sqlx,
        target: "bench_sqlx_multithread_pool_checkout",
        groups: &["sqlite_multithread_pool_checkout_sqlx"],
        sweep: false,
    },
    Suite {
        name: "sqlx-postgres-lookup",
        krate: Crate::Sqlx,
        target: "postgres_single_row_lookup_sqlx",
        groups: &["postgres_single_row_lookup_sqlx"],
        sweep: false,
    },
    Suite {
        name: "sweeps",
        krate: Crate::Main,
        target: "scaling_sweeps",
        groups: &[
            "sweep_lookup_rows",
            "sweep_fanout_concurrency",
            "sweep_text_payload",
        ],
        sweep: true,
    },
];

/// The suite called `name` (its short name or its bench target name).
pub fn suite(name: &str) -> Option<&'static Suite> {
    SUITES.iter().find(|s| s.name == name || s.target == name)
}

/// The suite writing `group`.
pub fn suite_of_group(group: &str) -> Option<&'static Suite> {
    SUITES.iter().find(|s| s.groups.contains(&group))
}

/// A Criterion group and the ids a complete run of it writes.
#[derive(Debug, Clone, Copy)]
pub struct GroupSpec {
    /// Group name.
    pub name: &'static str,
    /// Function ids (BENCHMARKS.md §2).
    pub ids: &'static [&'static str],
}

/// Every group the report knows, with its ids.
pub const GROUPS: &[GroupSpec] = &[
    GroupSpec {
        name: "sqlite_single_row_lookup",
        ids: &[
            "rusqlite",
            "middleware",
            "pool_acquire",
            "middleware_prepare",
            "middleware_interact",
            "middleware_marshalling",
            "middleware_decode",
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
            "middleware_pipelined",
            "pool_acquire",
        ],
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
];

/// What a row of a workload table is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The raw driver: the floor.
    Raw,
    /// The middleware.
    Middleware,
    /// SQLx.
    Sqlx,
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
        ],
        note: "Middleware: one pooled connection, statement prepared once, reused `RowValues` buffer. SQLx: its own pool, statement prepared outside the loop.",
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
        ],
        note: "SQLx has no Turso driver, so there is no SQLx row.",
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
        ],
        note: "The server runs on the same 2 vCPUs as the benchmark. The pipelined row sends all N lookups at once on one connection; the others are sequential.",
    },
];

/// A micro-bench and its SQLx twin (BENCHMARKS.md §4).
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

/// A scaling sweep (BENCHMARKS.md §7).
#[derive(Debug, Clone, Copy)]
pub struct Sweep {
    /// Criterion group.
    pub group: &'static str,
    /// Heading.
    pub title: &'static str,
    /// What the parameter is, with its unit.
    pub param: &'static str,
    /// The parameter values the sweep runs.
    pub values: &'static [u64],
}

/// The sweeps.
pub const SWEEPS: &[Sweep] = &[
    Sweep {
        group: "sweep_lookup_rows",
        title: "Point lookup vs table size",
        param: "rows in the table",
        values: &[1_000, 10_000, 100_000],
    },
    Sweep {
        group: "sweep_fanout_concurrency",
        title: "Fan-out vs concurrency",
        param: "concurrent tasks C",
        values: &[1, 2, 4, 8, 16, 32],
    },
    Sweep {
        group: "sweep_text_payload",
        title: "Point lookup vs text payload",
        param: "payload bytes",
        values: &[16, 1_024, 65_536],
    },
];

/// The group spec called `name`.
pub fn group(name: &str) -> Option<&'static GroupSpec> {
    GROUPS.iter().find(|g| g.name == name)
}
