//! The reliability suite: what sql-middleware promises when things go wrong, one topic per
//! module (`reports/Reliability.md` lists the promises, the tests and their latest figures).
//!
//! Every test prints one line of `key=value` figures and asserts them; CI runs this binary
//! again with `-- --nocapture --test-threads=1` and keeps those lines. Helpers live in
//! `tests/common/reliability.rs`.
//!
//! Each topic was once a test binary of its own, and several tests measure time or load the
//! machine on purpose. So every test first enters its topic's group (`common::groups`): tests
//! of one topic run side by side as before, tests of two topics never at the same time. Within
//! `runtime`, the timing tests also take `timing_lock()` and run one at a time.
//!
//! Test paths are `<topic>::<test>` or, for bodies that run once per backend,
//! `<topic>::<backend>::<test>`: `cargo test --all-features --test reliability -- cancel::` runs
//! one topic.

#[path = "../common/mod.rs"]
mod common;

mod bad_input;
#[cfg(feature = "postgres")]
mod bounded;
mod cancel;
mod chaos;
mod config;
mod control;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod credentials;
#[cfg(feature = "postgres")]
mod deadlines;
mod drops;
#[cfg(all(feature = "postgres", unix))]
mod failover;
mod fingerprint;
#[cfg(all(feature = "mysql", unix))]
mod galera;
#[cfg(all(feature = "mysql", feature = "migrate", unix))]
mod galera_migrate;
#[cfg(feature = "postgres")]
mod ha;
mod integrity;
mod leaks;
mod ledger;
#[cfg(feature = "postgres")]
mod lifecycle;
mod model;
mod outcomes;
mod props;
mod runtime;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod server_closed;
#[cfg(feature = "postgres")]
mod server_goodbye;
#[cfg(any(feature = "postgres", feature = "mysql"))]
mod server_statements;
mod session;
#[cfg(any(feature = "sqlite", feature = "turso"))]
mod single_writer;
mod streams;
#[cfg(feature = "postgres-tls")]
mod tls_floor;
mod transactions;
