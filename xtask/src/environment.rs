//! The environment line of the report: CPU, cores, crate versions, commit, date.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::util;

/// The crates whose versions the report states, and the lockfile each is read from.
pub const KEY_CRATES: &[(&str, LockFile)] = &[
    ("rusqlite", LockFile::Main),
    ("tokio-postgres", LockFile::Main),
    ("turso", LockFile::Main),
    ("tokio", LockFile::Main),
    ("criterion", LockFile::Main),
    ("sqlx", LockFile::Sqlx),
];

/// Which Cargo.lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockFile {
    /// `<repo>/Cargo.lock`.
    Main,
    /// `<repo>/bench-harnesses/sqlx_lookup/Cargo.lock`.
    Sqlx,
}

/// The environment of a report.
#[derive(Debug, Clone)]
pub struct Environment {
    /// `model name` of /proc/cpuinfo.
    pub cpu: String,
    /// Logical CPUs.
    pub cores: usize,
    /// (crate, version) pairs.
    pub crates: Vec<(String, String)>,
    /// Commit the tree is at (short), or "unknown".
    pub commit: String,
    /// Date and time of the report.
    pub date: String,
}

impl Environment {
    /// Reads everything from the machine and the repository at `root`.
    pub fn detect(root: &Path) -> Environment {
        let Machine { cpu, cores, .. } = Machine::detect();
        let main_lock = std::fs::read_to_string(root.join("Cargo.lock")).unwrap_or_default();
        let sqlx_lock =
            std::fs::read_to_string(root.join("bench-harnesses/sqlx_lookup/Cargo.lock"))
                .unwrap_or_default();
        let crates = KEY_CRATES
            .iter()
            .map(|(name, lock)| {
                let text = match lock {
                    LockFile::Main => &main_lock,
                    LockFile::Sqlx => &sqlx_lock,
                };
                let v = lock_versions(text, name);
                let v = if v.is_empty() {
                    "not locked".to_string()
                } else {
                    v.join(" + ")
                };
                (name.to_string(), v)
            })
            .collect();
        Environment {
            cpu: if cpu.is_empty() {
                "unknown CPU".into()
            } else {
                cpu
            },
            cores,
            crates,
            commit: git_commit(root).unwrap_or_else(|| "unknown".into()),
            date: util::datetime_of(util::unix_now()),
        }
    }

    /// The one-paragraph environment line.
    pub fn line(&self) -> String {
        let crates: Vec<String> = self
            .crates
            .iter()
            .map(|(n, v)| format!("{n} {v}"))
            .collect();
        format!(
            "**Environment:** {} × {} logical CPUs · {} · commit `{}` · report generated {}",
            self.cpu,
            self.cores,
            crates.join(", "),
            self.commit,
            self.date
        )
    }
}

/// The machine a baseline was measured on: what decides whether absolute times of two runs
/// can be compared at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// `model name` of /proc/cpuinfo.
    pub cpu: String,
    /// Logical CPUs.
    pub cores: usize,
    /// The kernel (`/proc/sys/kernel/osrelease`), when known. Stated, not compared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
}

impl Machine {
    /// Reads the machine from /proc.
    pub fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let (cpu, cores) = parse_cpuinfo(&cpuinfo);
        let cores = if cores == 0 {
            std::thread::available_parallelism().map_or(0, |n| n.get())
        } else {
            cores
        };
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .ok()
            .map(|k| format!("Linux {}", k.trim()))
            .filter(|k| k.len() > "Linux ".len());
        Machine {
            cpu: if cpu.is_empty() {
                "unknown CPU".into()
            } else {
                cpu
            },
            cores,
            kernel,
        }
    }

    /// Whether absolute times measured on `self` and on `other` are comparable: the same CPU
    /// model and the same number of logical CPUs (the kernel is not compared).
    pub fn same_as(&self, other: &Machine) -> bool {
        self.cpu == other.cpu && self.cores == other.cores
    }

    /// `<cpu> × <n> logical CPUs[, <kernel>]`.
    pub fn label(&self) -> String {
        match &self.kernel {
            Some(k) => format!("{} × {} logical CPUs, {k}", self.cpu, self.cores),
            None => format!("{} × {} logical CPUs", self.cpu, self.cores),
        }
    }
}

/// (model name, number of `processor` entries) of a /proc/cpuinfo text.
pub fn parse_cpuinfo(text: &str) -> (String, usize) {
    let mut model = String::new();
    let mut cores = 0;
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        match k.trim() {
            "processor" => cores += 1,
            "model name" if model.is_empty() => model = v.trim().to_string(),
            _ => {}
        }
    }
    (model, cores)
}

/// Every locked version of `name` in a Cargo.lock text.
pub fn lock_versions(lock: &str, name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current: Option<&str> = None;
    for line in lock.lines() {
        let line = line.trim();
        if line == "[[package]]" {
            current = None;
        } else if let Some(n) = line.strip_prefix("name = ") {
            current = Some(n.trim_matches('"'));
        } else if let Some(v) = line.strip_prefix("version = ")
            && current == Some(name)
        {
            out.push(v.trim_matches('"').to_string());
        }
    }
    out
}

/// The commit of the work tree, read from `.git` without running git (`GITHUB_SHA` first, for CI).
pub fn git_commit(root: &Path) -> Option<String> {
    if let Ok(sha) = std::env::var("GITHUB_SHA")
        && !sha.is_empty()
    {
        return Some(sha.chars().take(12).collect());
    }
    let mut git = root.join(".git");
    if git.is_file() {
        // A worktree: `gitdir: <path>`.
        let text = std::fs::read_to_string(&git).ok()?;
        let dir = text.strip_prefix("gitdir:")?.trim();
        git = root.join(dir);
    }
    let head = std::fs::read_to_string(git.join("HEAD")).ok()?;
    let head = head.trim();
    let sha = match head.strip_prefix("ref:") {
        None => head.to_string(),
        Some(r) => {
            let r = r.trim();
            let common = std::fs::read_to_string(git.join("commondir"))
                .map(|c| git.join(c.trim()))
                .unwrap_or_else(|_| git.clone());
            match std::fs::read_to_string(git.join(r))
                .or_else(|_| std::fs::read_to_string(common.join(r)))
            {
                Ok(s) => s.trim().to_string(),
                Err(_) => {
                    let packed = std::fs::read_to_string(common.join("packed-refs")).ok()?;
                    packed
                        .lines()
                        .find_map(|l| l.strip_suffix(r).map(|s| s.trim().to_string()))?
                }
            }
        }
    };
    (sha.len() >= 7 && sha.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| sha.chars().take(12).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpuinfo() {
        let text = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Processor\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Processor\n";
        assert_eq!(
            parse_cpuinfo(text),
            ("Intel(R) Xeon(R) Processor".to_string(), 2)
        );
    }

    #[test]
    fn lockfile() {
        let lock = "[[package]]\nname = \"rusqlite\"\nversion = \"0.40.2\"\n\n[[package]]\nname = \"tokio\"\nversion = \"1.54.1\"\n";
        assert_eq!(lock_versions(lock, "rusqlite"), vec!["0.40.2"]);
        assert!(lock_versions(lock, "sqlx").is_empty());
    }
}
