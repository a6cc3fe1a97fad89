//! Shared test support.
#![allow(dead_code)]

pub mod backends;
pub mod cpu;
pub mod engines;
pub mod expect;
pub mod fuzz_harness;
#[cfg(all(feature = "mysql", unix))]
pub mod galera;
#[cfg(all(feature = "mysql", unix))]
pub mod galera_load;
pub mod groups;
pub mod hook_reads;
#[cfg(all(feature = "postgres", unix))]
pub mod ledger;
#[cfg(feature = "mysql")]
pub mod mysql;
#[cfg(feature = "postgres")]
pub mod pg;
pub mod ports;
pub mod proxy;
pub mod reliability;
#[cfg(any(feature = "postgres-tls", feature = "mysql-tls"))]
pub mod tls_matrix;
pub mod transfers;
pub mod unique;
pub mod unwind;
