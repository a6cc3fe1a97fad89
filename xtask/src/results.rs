//! What CRITERION_HOME holds for every group of the catalog: complete, partial (and what is
//! missing) or not run, with the lookups the pages and the targets make on it.

use std::collections::BTreeMap;
use std::path::Path;

use crate::catalog::{self, GROUPS, SWEEPS};
use crate::criterion::{GroupScan, Measurement, scan_group_latest};

/// The state of one group in CRITERION_HOME.
#[derive(Debug)]
pub enum GroupState {
    /// No folder at all: the suite was never run.
    NotRun,
    /// Every expected id is readable.
    Complete(GroupScan),
    /// Some ids are missing or unreadable (the messages say which).
    Partial(GroupScan, Vec<String>),
}

/// Every known group, loaded.
#[derive(Debug)]
pub struct Results {
    /// Group name → state.
    pub groups: BTreeMap<&'static str, GroupState>,
}

impl Results {
    /// Scans every group of the catalog under `home` (the `new` folders, else the committed
    /// `reference` ones).
    pub fn load(home: &Path) -> Results {
        let mut groups = BTreeMap::new();
        for g in GROUPS {
            let scan = scan_group_latest(home, g.name);
            let state = if scan.is_empty() {
                GroupState::NotRun
            } else {
                let mut problems = scan.errors();
                let missing: Vec<&str> = g
                    .ids
                    .iter()
                    .copied()
                    .filter(|id| scan.ok(id).is_empty())
                    .collect();
                if !missing.is_empty() {
                    problems.push(format!(
                        "group `{}` is partial: no readable result for {}",
                        g.name,
                        missing
                            .iter()
                            .map(|m| format!("`{m}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                if let Some(sweep) = SWEEPS.iter().find(|s| s.group == g.name) {
                    for id in g.ids {
                        let have: Vec<u64> = scan
                            .ok(id)
                            .iter()
                            .filter_map(|m| m.param.parse().ok())
                            .collect();
                        let lacking: Vec<String> = sweep
                            .values
                            .iter()
                            .filter(|v| !have.contains(v))
                            .map(u64::to_string)
                            .collect();
                        if !scan.ok(id).is_empty() && !lacking.is_empty() {
                            problems.push(format!(
                                "sweep `{}` is partial: `{id}` lacks the point(s) {}",
                                g.name,
                                lacking.join(", ")
                            ));
                        }
                    }
                }
                if problems.is_empty() {
                    GroupState::Complete(scan)
                } else {
                    GroupState::Partial(scan, problems)
                }
            };
            groups.insert(g.name, state);
        }
        Results { groups }
    }

    /// Every problem found, each with the command that reruns its suite: partial groups, and
    /// groups of the default suites that did not run at all (the sweeps are optional).
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (name, state) in &self.groups {
            let fix = catalog::suite_of_group(name)
                .map(|s| format!(" (run it: `{}`)", s.xtask_command()))
                .unwrap_or_default();
            match state {
                GroupState::Partial(_, problems) => {
                    for p in problems {
                        out.push(format!("{p}{fix}"));
                    }
                }
                GroupState::NotRun if !SWEEPS.iter().any(|s| s.group == *name) => {
                    out.push(format!("group `{name}` has no results{fix}"));
                }
                _ => {}
            }
        }
        out
    }

    fn scan(&self, group: &str) -> Option<&GroupScan> {
        match self.groups.get(group)? {
            GroupState::NotRun => None,
            GroupState::Complete(s) | GroupState::Partial(s, _) => Some(s),
        }
    }

    /// Whether the group has any result.
    pub fn ran(&self, group: &str) -> bool {
        self.scan(group).is_some()
    }

    /// The newest result of `group/function` (the parameter of the latest run).
    pub fn newest(&self, group: &str, function: &str) -> Option<&Measurement> {
        self.scan(group)?.newest(function)
    }

    /// Every result of `group/function`, any parameter.
    pub fn all(&self, group: &str, function: &str) -> Vec<&Measurement> {
        self.scan(group).map(|s| s.ok(function)).unwrap_or_default()
    }
}
