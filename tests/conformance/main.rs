//! The conformance suite: the same test bodies run on SQLite, Postgres (feature `postgres`),
//! Turso (feature `turso`) and MySQL/MariaDB (feature `mysql`) through the public API only.
//! Where the engines differ by design, the test says so with a comment and a `match db.kind`.
//!
//! Test paths are `<topic>::<backend>::<test>`, e.g. `round_trips::postgres::round_trip_values`:
//! each topic file below ends with its own `backend_tests!` list, which puts one copy of every
//! body in a module per engine of the list in `common::engines`: `sqlite` (feature `sqlite`),
//! `postgres` (feature `postgres`), `turso` (feature `turso`) and `mysql` (feature `mysql`).
//! So `cargo test --all-features --test conformance -- postgres::` runs exactly the Postgres
//! tests (CI runs them that way against a throwaway cluster, and `-- mysql::` against a
//! throwaway MariaDB server), and `-- round_trips::` one topic. Where a topic only spells SQL
//! differently per engine, it asks the list (`db.sql()`, `db.ty(..)`) instead of matching on
//! the engine.
//! Tests that are not per backend sit directly in their topic (`errors::config::…`); their
//! names never contain `postgres::` or `mysql::`.

#[path = "../common/mod.rs"]
mod common;
mod helpers;

mod after_connect;
mod aggregates;
mod bad_input;
mod batches;
mod bulk;
mod cached_meaning;
mod columns;
mod counts;
#[cfg(feature = "derive")]
mod derive;
mod durability;
mod error_kinds;
mod error_redaction;
mod errors;
mod executor;
mod group_commit;
#[cfg(feature = "migrate")]
mod migrate;
#[cfg(feature = "migrate")]
mod migrate_concurrent;
#[cfg(all(feature = "migrate", unix))]
mod migrate_kill;
mod pool;
mod retry;
mod round_trips;
mod runtime;
mod savepoints;
mod server_ended;
mod single_writer;
#[cfg(feature = "tracing")]
mod spans;
mod stats;
#[cfg(feature = "metrics")]
mod stats_metrics;
mod streams;
mod taking;
mod timeouts;
mod transactions;
mod urls;
mod user_types;
mod value_limits;
