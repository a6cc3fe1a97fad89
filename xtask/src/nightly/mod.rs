//! `cargo xtask nightly`: compare tonight's Criterion baseline with the previous one and give
//! every id a verdict.
//!
//! # The verdict rule
//!
//! Absolute times only compare within one machine, and a whole process drifts 10–15% from run
//! to run even there; so an id is judged, where it can be, by its cost **relative to the raw
//! driver measured in the same run** (its *control*: the raw row a report workload divides it
//! by, else its group's raw row; `catalog::control_of`). E.g. `sqlite_single_row_lookup/middleware`
//! is judged by `middleware ÷ rusqlite`, `middleware_query_one` by `÷ rusqlite_prepare_cached`.
//!
//! For one id, with medians per operation `before` and `after` and their 95% intervals
//! `[b_lo, b_hi]` and `[a_lo, a_hi]` (Criterion's `estimates.json`), where for an id with a
//! control each of these is the **ratio** id ÷ control in its own run, with the widest interval
//! the two allow (`[id_lo / control_hi, id_hi / control_lo]`):
//!
//! - change = after / before − 1;
//! - the change's interval is the widest one the two intervals allow:
//!   `[a_lo / b_hi − 1, a_hi / b_lo − 1]`;
//! - **regressed** when change > +threshold **and** the interval lies wholly above 0 (the two
//!   intervals do not overlap);
//! - **improved** when change < −threshold **and** the interval lies wholly below 0;
//! - **noise** otherwise;
//! - when earlier nightly baselines exist (the last 5 reference runs, `--history`), a verdict
//!   also needs tonight's value to be beyond the threshold from their median, in the same
//!   direction (the median of the ratios for an id with a control);
//! - a flagged id is measured again, with its control, in fresh processes (`--confirm`, 2 by
//!   default) and keeps its verdict only if every rerun changes the same way beyond the
//!   threshold, against the reference and the history median (the intervals are not asked
//!   again; the ratio again for an id with a control).
//!
//! A raw-driver control itself is judged by its absolute change, and a move beyond the threshold
//! is an **environment change**, never a regression of the crate. The environment changed when
//! the reference's run record (`nightly-runs.json`, which records the CPU model, the logical CPUs
//! and the kernel of each run) names another machine than tonight's, or when a control moved;
//! the page then says so, and the ids without a control (judged by their absolute change) get
//! "environment change" instead of regressed or improved. The nightly exits 1 only for a
//! confirmed regression (and for a suite that failed).
//!
//! The intervals alone are not enough on this machine: each is computed inside one process,
//! while a whole process can run 10–15% faster or slower than the next one (frequency, the
//! other processes' load, where the scheduler puts the threads), and ids that park and wake threads
//! can even switch between a fast and a slow regime (2–5×) from one process to the next. The
//! threshold covers the drift; the interval test keeps a noisy id with a large point change
//! from being called; and a **confirmation rerun** handles the regime switches: every id
//! flagged by the first comparison is measured again in a fresh process and keeps its verdict
//! only if the rerun, compared with the same previous baseline, reaches the same verdict.
//!
//! The rule is in `verdict`, the history median and the control of an id in `history`, the
//! id-by-id comparison and the reruns in `compare`, the environment change and the exit decision
//! in `drift`, the run records and the choice of the reference baseline in `references`, and the
//! page in `page`; everything public is re-exported here.

mod compare;
mod drift;
mod history;
mod page;
mod references;
mod verdict;

pub use self::compare::{Basis, Row, apply_rerun, compare, compare_baselines, counts, flagged};
pub use self::drift::{EnvironmentChange, Evaluation, apply_environment, assess, evaluate, fails};
pub use self::history::{History, Series, control_key, history_median, load_history};
pub use self::page::{RunInfo, render};
pub use self::references::{
    PREFIX, RunRecord, RunsFile, load_runs, machine_of, previous_baseline, record_run,
    reference_candidates, remove_baseline,
};
pub use self::verdict::{Change, DEFAULT_THRESHOLD, Verdict, judge, ratio, rerun_agrees};
pub use crate::criterion::baselines;
