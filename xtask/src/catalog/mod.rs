//! What exists: the Criterion groups and ids (docs/dev/Benchmarks.md, "Targets and ids"), the
//! suites (bench targets) that produce them, the workloads of the report, the micro-bench pairs
//! and the scaling sweeps.
//!
//! Each kind has its own file, re-exported here; the files do not use each other, except
//! `controls`, which reads the workloads.

mod controls;
mod groups;
mod micro;
mod suites;
mod sweeps;
mod workloads;

pub use self::controls::{control_of, is_control};
pub use self::groups::{GROUPS, GroupSpec, group};
pub use self::micro::{MICRO_PAIRS, MicroPair};
pub use self::suites::{
    Crate, MAIN_FEATURES, PEERS_MANIFEST, SQLX_MANIFEST, SUITES, Suite, suite, suite_of_group,
};
pub use self::sweeps::{SWEEPS, Sweep};
pub use self::workloads::{Contender, Role, WORKLOADS, Workload};
