//! Environment changes: the reference measured on another machine, or the raw-driver controls
//! moving beyond the threshold while the ratios to them hold. Absolute moves of that kind say
//! something about the machine, not about the crate, and never make the nightly fail.

use std::path::Path;

use super::compare::{Basis, Row, compare_baselines};
use super::history::History;
use super::references::{load_runs, machine_of};
use super::verdict::Verdict;
use crate::criterion::IdKey;
use crate::environment::Machine;
use crate::util::{Result, fmt_pct};

/// What changed in the environment between the reference and tonight.
#[derive(Debug, Clone, Default)]
pub struct EnvironmentChange {
    /// The machine the reference was measured on (None: its run record states none).
    pub reference: Option<Machine>,
    /// The machine tonight's baseline was measured on.
    pub tonight: Option<Machine>,
    /// The raw-driver controls that moved beyond the threshold, with their absolute change.
    pub controls_moved: Vec<(IdKey, f64)>,
    /// Ids judged by their ratio whose absolute change went beyond the threshold.
    pub absolute_moves: usize,
    /// Of those, the ids whose ratio did not (noise by the ratio).
    pub absolute_only: usize,
}

impl EnvironmentChange {
    /// The reference and tonight are known to run on different machines.
    pub fn machine_changed(&self) -> bool {
        match (&self.reference, &self.tonight) {
            (Some(r), Some(t)) => !r.same_as(t),
            _ => false,
        }
    }

    /// The machine changed, or the controls moved: absolute times are not comparable.
    pub fn changed(&self) -> bool {
        self.machine_changed() || !self.controls_moved.is_empty()
    }

    /// The page's plain statement of the change (None when there is none).
    pub fn statement(&self, threshold: f64) -> Option<String> {
        if !self.changed() {
            return None;
        }
        let mut parts = Vec::new();
        match (&self.reference, &self.tonight) {
            (Some(r), Some(t)) if !r.same_as(t) => parts.push(format!(
                "the reference was measured on {}, tonight runs on {}",
                r.label(),
                t.label()
            )),
            (Some(r), Some(_)) => parts.push(format!(
                "the reference was measured on the same machine ({})",
                r.label()
            )),
            (None, _) => parts.push("the reference's machine is not recorded".to_string()),
            (Some(r), None) => parts.push(format!(
                "the reference was measured on {}; tonight's machine is not recorded",
                r.label()
            )),
        }
        if self.controls_moved.is_empty() {
            parts.push(format!(
                "no raw control moved beyond ±{:.0}%",
                threshold * 100.0
            ));
        } else {
            let moves: Vec<String> = self
                .controls_moved
                .iter()
                .map(|(k, c)| format!("`{k}` {}", fmt_pct(*c)))
                .collect();
            parts.push(format!(
                "raw controls moved beyond ±{:.0}%: {}",
                threshold * 100.0,
                moves.join(", ")
            ));
        }
        if self.absolute_only > 0 {
            parts.push(format!(
                "{} id(s) moved beyond the threshold in absolute time while their ratio to the control did not",
                self.absolute_only
            ));
        }
        Some(format!(
            "**Environment change:** {}; ids are judged by their ratio to the control measured tonight, and absolute moves (the controls', and those of ids without a control) are reported as environment changes, never as regressions.",
            parts.join("; ")
        ))
    }
}

/// Assesses the environment from the first comparison's rows and the two machines.
pub fn assess(
    rows: &[Row],
    reference: Option<Machine>,
    tonight: Option<Machine>,
    threshold: f64,
) -> EnvironmentChange {
    let controls_moved = rows
        .iter()
        .filter(|r| r.basis == Basis::Control && r.verdict == Verdict::Environment)
        .filter_map(|r| Some((r.key.clone(), r.absolute?.change)))
        .collect();
    let moved: Vec<&Row> = rows
        .iter()
        .filter(|r| matches!(r.basis, Basis::Ratio(_)))
        .filter(|r| r.absolute.is_some_and(|c| c.change.abs() > threshold))
        .collect();
    EnvironmentChange {
        reference,
        tonight,
        controls_moved,
        absolute_moves: moved.len(),
        absolute_only: moved
            .iter()
            .filter(|r| !matches!(r.verdict, Verdict::Regressed | Verdict::Improved))
            .count(),
    }
}

/// When the environment changed, an id judged by the absolute rule (no control) cannot be told
/// apart from the machine: a regressed or improved verdict becomes an environment change.
pub fn apply_environment(rows: &mut [Row], env: &EnvironmentChange) {
    if !env.changed() {
        return;
    }
    for r in rows.iter_mut() {
        if r.basis == Basis::Absolute && matches!(r.verdict, Verdict::Regressed | Verdict::Improved)
        {
            r.verdict = Verdict::Environment;
            r.first = Verdict::Environment;
        }
    }
}

/// Whether the nightly fails: a confirmed regression (judged by the ratio to the control, or,
/// for an id without one, by the absolute rule while the environment did not change), or a
/// suite that failed to build or run.
pub fn fails(rows: &[Row], failures: &[String]) -> bool {
    rows.iter().any(|r| r.verdict == Verdict::Regressed) || !failures.is_empty()
}

/// The first comparison of a nightly: the rows and the environment change.
#[derive(Debug, Clone)]
pub struct Evaluation {
    /// One row per id.
    pub rows: Vec<Row>,
    /// What changed in the environment.
    pub environment: EnvironmentChange,
}

/// Compares the baselines `previous` and `current` under `home`, assesses the environment from
/// the machines their run records state (tonight's falls back to `detected`), and turns the
/// absolute verdicts that cannot be told apart from the environment into environment changes.
pub fn evaluate(
    home: &Path,
    previous: &str,
    current: &str,
    threshold: f64,
    history: &History,
    detected: Option<Machine>,
) -> Result<Evaluation> {
    let mut rows = compare_baselines(home, previous, current, threshold, history)?;
    let runs = load_runs(home)?;
    let environment = assess(
        &rows,
        machine_of(&runs, previous),
        machine_of(&runs, current).or(detected),
        threshold,
    );
    apply_environment(&mut rows, &environment);
    Ok(Evaluation { rows, environment })
}
