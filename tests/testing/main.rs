//! The test databases of feature `testing` (`TestDatabase`, `run_test` and
//! `#[sql_middleware::test]`) on every engine: isolation, migrations (and the Postgres
//! template), fixtures, clean-up after a pass, a panic or an error, kept databases, orphans of
//! killed processes, and the connection bound across threads and processes.
//!
//! The servers are the test suites' own (`SQL_MIDDLEWARE_PG_URL`, `SQL_MIDDLEWARE_MYSQL_URL`,
//! else the local default, else a throwaway server; never skipped).

#[path = "../common/mod.rs"]
mod common;

mod api;
mod attr;
mod bound;
mod support;
mod timing;
