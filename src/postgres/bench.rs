//! Benchmark hooks of the Postgres wing, compiled only with the `bench` feature. The Postgres
//! suite times whole lookups through the public API, so the wing lends the benches only its
//! error mapping (for the raw baselines' setup code).

#[cfg(feature = "bench")]
pub(crate) use super::error::map_err;
