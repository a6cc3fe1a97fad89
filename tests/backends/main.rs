//! Promises of one backend each, beyond the conformance suite: a module per backend, built
//! only with that backend's feature (`sqlite`, `postgres`, `turso`, `mysql`).
//!
//! Test paths are `<backend>::<test>`. Each module was once a test binary of its own, and some
//! tests measure time (heartbeat lateness, lock waits, round trips), so every test first enters
//! its backend's group (`common::groups`): tests of two modules never run at the same time.

#[path = "../common/mod.rs"]
mod common;

mod mysql;
mod mysql_errors;
mod mysql_hosts;
mod mysql_kill;
mod mysql_kill_balancer;
mod mysql_procedures;
mod mysql_readers;
mod mysql_server_defaults;
mod mysql_sql_modes;
mod mysql_tls;
mod mysql_values;
mod postgres;
mod postgres_cancel_balancer;
mod postgres_encoding;
mod postgres_replicas;
mod postgres_strings;
mod postgres_tls;
mod sqlite;
mod turso;
