//! The suites: every bench target, the crate it belongs to, the Criterion groups it writes, and
//! the commands that run it.

/// Which crate a bench target belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Crate {
    /// The root crate (`benches/`).
    Main,
    /// The SQLx harness (`bench-harnesses/sqlx_lookup`, its own Cargo.lock).
    Sqlx,
    /// The async-SQLite peer harness (`bench-harnesses/sqlite_peers`, its own Cargo.lock).
    Peers,
}

impl Crate {
    /// Every crate, in the order `cargo xtask bench` builds them.
    pub const ALL: [Crate; 3] = [Crate::Main, Crate::Sqlx, Crate::Peers];

    /// The manifest of a harness crate, relative to the repository root (`None`: the root crate).
    pub fn manifest(self) -> Option<&'static str> {
        match self {
            Crate::Main => None,
            Crate::Sqlx => Some(SQLX_MANIFEST),
            Crate::Peers => Some(PEERS_MANIFEST),
        }
    }

    /// The folder a bench of this crate runs in, relative to the repository root.
    pub fn dir(self) -> &'static str {
        match self {
            Crate::Main => ".",
            Crate::Sqlx => "bench-harnesses/sqlx_lookup",
            Crate::Peers => "bench-harnesses/sqlite_peers",
        }
    }
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
            Crate::Sqlx | Crate::Peers => format!(
                "cargo bench --manifest-path {} --bench {}",
                self.krate.manifest().unwrap_or_default(),
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

/// Features every main-crate bench target is built with (one build serves all of them: every
/// backend, named rather than left to the default features; `postgres-tls` gives the Postgres
/// suite its TLS ids; `mysql` the MySQL/MariaDB suites; `tracing` gives the SQLite lookup its
/// `middleware_tracing` id, the plain ids run with spans off for their pools).
pub const MAIN_FEATURES: &str = "sqlite,postgres,turso,postgres-tls,mysql,tracing";

/// Manifest of the SQLx harness, relative to the repository root.
pub const SQLX_MANIFEST: &str = "bench-harnesses/sqlx_lookup/Cargo.toml";

/// Manifest of the async-SQLite peer harness, relative to the repository root.
pub const PEERS_MANIFEST: &str = "bench-harnesses/sqlite_peers/Cargo.toml";

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
        groups: &["postgres_single_row_lookup", "postgres_connect"],
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
        name: "bulk",
        krate: Crate::Main,
        target: "bench_bulk_load",
        groups: &["bulk_load"],
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
    Suite {
        name: "peers-sqlite-lookup",
        krate: Crate::Peers,
        target: "sqlite_single_row_lookup_peers",
        groups: &["sqlite_single_row_lookup_peers"],
        sweep: false,
    },
    Suite {
        name: "peers-fanout",
        krate: Crate::Peers,
        target: "sqlite_multithread_pool_checkout_peers",
        groups: &["sqlite_multithread_pool_checkout_peers"],
        sweep: false,
    },
    Suite {
        name: "postgres-fanout",
        krate: Crate::Main,
        target: "bench_postgres_fanout",
        groups: &["postgres_fanout"],
        sweep: false,
    },
    // Writes the `sqlx` id of the main crate's `postgres_fanout` group.
    Suite {
        name: "sqlx-postgres-fanout",
        krate: Crate::Sqlx,
        target: "postgres_fanout_sqlx",
        groups: &["postgres_fanout"],
        sweep: false,
    },
    Suite {
        name: "mysql-lookup",
        krate: Crate::Main,
        target: "bench_mysql_single_row_lookup",
        groups: &["mysql_single_row_lookup"],
        sweep: false,
    },
    Suite {
        name: "sqlx-mysql-lookup",
        krate: Crate::Sqlx,
        target: "mysql_single_row_lookup_sqlx",
        groups: &["mysql_single_row_lookup_sqlx"],
        sweep: false,
    },
    Suite {
        name: "mysql-fanout",
        krate: Crate::Main,
        target: "bench_mysql_fanout",
        groups: &["mysql_fanout"],
        sweep: false,
    },
    // Writes the `sqlx` id of the main crate's `mysql_fanout` group.
    Suite {
        name: "sqlx-mysql-fanout",
        krate: Crate::Sqlx,
        target: "mysql_fanout_sqlx",
        groups: &["mysql_fanout"],
        sweep: false,
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
