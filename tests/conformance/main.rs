//! The conformance suite: the same test bodies run on SQLite, Postgres (feature `postgres`) and
//! Turso (feature `turso`) through the public API only. Where the engines differ by design, the
//! test says so with a comment and a `match db.kind`.
//!
//! Test paths are `<topic>::<backend>::<test>`, e.g. `round_trips::postgres::round_trip_values`:
//! each topic file below ends with its own `backend_tests!` list, which puts one copy of every
//! body in the modules `sqlite`, `postgres` (feature `postgres`) and `turso` (feature `turso`).
//! So `cargo test --all-features --test conformance -- postgres::` runs exactly the Postgres
//! tests (CI runs them that way against a throwaway cluster), and `-- round_trips::` one topic.
//! Tests that are not per backend sit directly in their topic (`errors::config::…`); their
//! names never contain `postgres::`.

#[path = "../common/mod.rs"]
mod common;
mod helpers;

mod after_connect;
mod aggregates;
mod bad_input;
mod batches;
mod bulk;
mod columns;
#[cfg(feature = "derive")]
mod derive;
mod errors;
mod executor;
mod pool;
mod round_trips;
mod runtime;
mod savepoints;
#[cfg(feature = "tracing")]
mod spans;
mod stats;
#[cfg(feature = "metrics")]
mod stats_metrics;
mod streams;
mod timeouts;
mod transactions;
mod urls;
mod user_types;
