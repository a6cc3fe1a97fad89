//! Building and running the bench suites, and recording each suite's peak RSS and CPU time.
//!
//! Each suite's bench binary is built first (`cargo bench --no-run`), then started directly as
//! a child of xtask and reaped with `wait4(2)`, whose `rusage` covers exactly that process and
//! the children it reaped, so neither cargo nor rustc nor an earlier suite is counted (the
//! cumulative `RUSAGE_CHILDREN` of xtask would keep the largest peak RSS seen so far).

use std::collections::BTreeMap;
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use serde::Deserialize;

use crate::catalog::{Crate, MAIN_FEATURES, Suite};
use crate::side_files::{ResourcesFile, SuiteResources};
use crate::util::{self, Error, Result, read_optional_json};

/// The Criterion arguments of `--quick`: Criterion's minimum sample size and short times, so a
/// suite finishes in a minute or two. The full defaults of the benches are 20 samples, 2 s
/// warm-up and 5 s measurement per id.
pub const QUICK_ARGS: &[&str] = &[
    "--warm-up-time",
    "1",
    "--measurement-time",
    "2",
    "--sample-size",
    "10",
];

/// Environment knobs worth recording next to a result. (`SQL_MIDDLEWARE_PG_URL` is left out:
/// it may hold a password, and this file is committed.)
pub const KNOBS: &[&str] = &[
    "BENCH_LOOKUPS",
    "BENCH_ROWS",
    "BENCH_CONCURRENCY",
    "BENCH_SWEEP",
    "BENCH_TRACE",
];

/// What to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Repository root.
    pub root: PathBuf,
    /// CRITERION_HOME (absolute).
    pub home: PathBuf,
    /// Suites, in order.
    pub suites: Vec<&'static Suite>,
    /// Arguments after `--bench` for every bench binary.
    pub criterion_args: Vec<String>,
    /// Extra features of the main crate, and `cfg:NAME` build flags (e.g. [`SLOWDOWN`]).
    pub features: Vec<String>,
    /// Per suite name, a Criterion filter (a regex over `group/function/param`).
    pub filters: BTreeMap<String, String>,
    /// Record the resources in `<home>/resources.json` (not for partial reruns).
    pub record: bool,
}

/// A Criterion filter matching exactly the given full ids.
pub fn exact_filter<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    let escaped: Vec<String> = ids
        .into_iter()
        .map(|id| {
            id.chars()
                .flat_map(|c| {
                    let special = !(c.is_ascii_alphanumeric() || c == '_' || c == '/' || c == '-');
                    special
                        .then_some('\\')
                        .into_iter()
                        .chain(std::iter::once(c))
                })
                .collect()
        })
        .collect();
    format!("^({})$", escaped.join("|"))
}

/// What happened to one suite.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The suite.
    pub suite: &'static Suite,
    /// Its resources, if it ran.
    pub resources: Option<SuiteResources>,
    /// Why it failed, if it did.
    pub failure: Option<String>,
}

#[derive(Deserialize)]
struct CargoMessage {
    reason: String,
    target: Option<CargoTarget>,
    executable: Option<PathBuf>,
}

#[derive(Deserialize)]
struct CargoTarget {
    name: String,
    kind: Vec<String>,
}

/// An entry of [`RunOptions::features`] that is a `--cfg` flag rather than a cargo feature.
pub const CFG_PREFIX: &str = "cfg:";

/// The build variant of `--slowdown`: the deliberate ~20% slowdown of the SQLite lookup path.
pub const SLOWDOWN: &str = "cfg:sqlmw_bench_slowdown";

/// Builds the bench targets of one crate and returns target name → executable.
fn build(
    root: &Path,
    krate: Crate,
    targets: &[&str],
    features: &[String],
) -> Result<BTreeMap<String, PathBuf>> {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(root).args([
        "bench",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]);
    match krate {
        Crate::Main => {
            let (cfgs, extra): (Vec<&String>, Vec<&String>) =
                features.iter().partition(|f| f.starts_with(CFG_PREFIX));
            let mut f = vec![MAIN_FEATURES.to_string()];
            f.extend(extra.into_iter().cloned());
            cmd.args(["--features", &f.join(",")]);
            if !cfgs.is_empty() {
                // A build variant (`--cfg NAME`): its own target dir, so the normal build's
                // cache survives the experiment.
                let mut flags = std::env::var("RUSTFLAGS").unwrap_or_default();
                for c in &cfgs {
                    flags.push_str(" --cfg ");
                    flags.push_str(&c[CFG_PREFIX.len()..]);
                }
                let base = std::env::var_os("CARGO_TARGET_DIR")
                    .map(PathBuf::from)
                    .unwrap_or_else(|| root.join("target"));
                cmd.env("RUSTFLAGS", flags.trim_start())
                    .env("CARGO_TARGET_DIR", base.join("cfg-variant"));
            }
        }
        Crate::Sqlx | Crate::Peers => {
            cmd.args(["--manifest-path", krate.manifest().unwrap_or_default()]);
        }
    }
    for t in targets {
        cmd.args(["--bench", t]);
    }
    eprintln!("xtask: building {targets:?} ({krate:?})");
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| Error(format!("cannot start cargo: {e}")))?;
    let mut exes = BTreeMap::new();
    if let Some(out) = child.stdout.take() {
        for line in std::io::BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            let Ok(msg) = serde_json::from_str::<CargoMessage>(&line) else {
                continue;
            };
            if msg.reason != "compiler-artifact" {
                continue;
            }
            if let (Some(t), Some(exe)) = (msg.target, msg.executable)
                && t.kind.iter().any(|k| k == "bench")
            {
                exes.insert(t.name, exe);
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| Error(format!("cargo did not finish: {e}")))?;
    if !status.success() {
        bail!("building the bench targets {targets:?} failed ({status})");
    }
    for t in targets {
        if !exes.contains_key(*t) {
            bail!("cargo built no executable for bench target `{t}`");
        }
    }
    Ok(exes)
}

/// Rusage of one reaped child.
#[derive(Debug, Clone, Copy)]
pub struct Usage {
    /// Peak RSS, KiB.
    pub max_rss_kib: u64,
    /// User seconds.
    pub user_s: f64,
    /// System seconds.
    pub sys_s: f64,
    /// Exit code (None: a signal).
    pub exit_code: Option<i32>,
}

/// Runs `cmd` to completion and returns its rusage (via `wait4`).
pub fn run_measured(cmd: &mut Command) -> Result<Usage> {
    let child = cmd
        .spawn()
        .map_err(|e| Error(format!("cannot start {cmd:?}: {e}")))?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is plain old data; all-zero is a valid value.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own un-reaped child (std never waited for it) and both pointers
        // are valid for writes for the duration of the call.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == pid {
            break;
        }
        let err = std::io::Error::last_os_error();
        if err.kind() != std::io::ErrorKind::Interrupted {
            return Err(Error(format!("wait4 failed: {err}")));
        }
    }
    // The child is reaped; dropping the handle neither waits nor kills.
    drop(child);
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let exit_code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Ok(Usage {
        max_rss_kib: ru.ru_maxrss.max(0) as u64,
        user_s: tv(ru.ru_utime),
        sys_s: tv(ru.ru_stime),
        exit_code,
    })
}

/// Builds and runs the suites; records each one's resources into
/// `<home>/resources.json` as soon as it finishes. A suite that fails does not stop the others.
pub fn run_suites(opts: &RunOptions) -> Result<Vec<Outcome>> {
    std::fs::create_dir_all(&opts.home)
        .map_err(|e| Error(format!("cannot create {}: {e}", opts.home.display())))?;
    let mut exes: BTreeMap<String, PathBuf> = BTreeMap::new();
    let mut build_failures: BTreeMap<&str, String> = BTreeMap::new();
    for krate in Crate::ALL {
        let targets: Vec<&str> = opts
            .suites
            .iter()
            .filter(|s| s.krate == krate)
            .map(|s| s.target)
            .collect();
        if targets.is_empty() {
            continue;
        }
        match build(&opts.root, krate, &targets, &opts.features) {
            Ok(m) => exes.extend(m),
            Err(e) => {
                for t in targets {
                    build_failures.insert(t, e.0.clone());
                }
            }
        }
    }
    let resources_path = opts.home.join("resources.json");
    let mut outcomes = Vec::new();
    for suite in &opts.suites {
        let Some(exe) = exes.get(suite.target) else {
            outcomes.push(Outcome {
                suite,
                resources: None,
                failure: Some(format!(
                    "suite `{}` was not built: {}",
                    suite.name,
                    build_failures
                        .get(suite.target)
                        .cloned()
                        .unwrap_or_default()
                )),
            });
            continue;
        };
        let dir = match suite.krate {
            Crate::Main => opts.root.clone(),
            k => opts.root.join(k.dir()),
        };
        let mut args = vec!["--bench".to_string()];
        args.extend(opts.criterion_args.iter().cloned());
        if let Some(f) = opts.filters.get(suite.name) {
            args.push(f.clone());
        }
        let mut cmd = Command::new(exe);
        cmd.current_dir(&dir)
            .args(&args)
            .env("CRITERION_HOME", &opts.home);
        if suite.sweep {
            cmd.env("BENCH_SWEEP", "1");
        }
        eprintln!(
            "xtask: running suite `{}` ({} {})",
            suite.name,
            suite.target,
            args.join(" ")
        );
        let start = Instant::now();
        let usage = run_measured(&mut cmd);
        let wall_s = start.elapsed().as_secs_f64();
        let (resources, failure) = match usage {
            Ok(u) => {
                let mut knobs: BTreeMap<String, String> = KNOBS
                    .iter()
                    .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
                    .collect();
                if suite.sweep {
                    knobs.insert("BENCH_SWEEP".into(), "1".into());
                }
                if !opts.features.is_empty() {
                    knobs.insert("features".into(), opts.features.join(","));
                }
                let r = SuiteResources {
                    target: suite.target.to_string(),
                    max_rss_kib: u.max_rss_kib,
                    user_s: u.user_s,
                    sys_s: u.sys_s,
                    wall_s,
                    exit_code: u.exit_code,
                    args: opts.criterion_args.clone(),
                    knobs,
                    recorded_unix: util::unix_now(),
                };
                let failure = (u.exit_code != Some(0)).then(|| {
                    format!(
                        "suite `{}` exited with {}",
                        suite.name,
                        u.exit_code
                            .map_or("a signal".to_string(), |c| format!("code {c}"))
                    )
                });
                (Some(r), failure)
            }
            Err(e) => (None, Some(format!("suite `{}`: {e}", suite.name))),
        };
        if let Some(r) = resources.as_ref().filter(|_| opts.record) {
            let mut file: ResourcesFile = read_optional_json(&resources_path)?.unwrap_or_default();
            file.suites.insert(suite.name.to_string(), r.clone());
            let text = serde_json::to_string_pretty(&file)
                .map_err(|e| Error(format!("cannot serialise resources: {e}")))?;
            util::write(&resources_path, &(text + "\n"))?;
        }
        if let Some(f) = &failure {
            eprintln!("xtask: {f}");
        }
        outcomes.push(Outcome {
            suite,
            resources,
            failure,
        });
    }
    Ok(outcomes)
}

/// Runs `tests/alloc_per_op.rs` with `ALLOC_PER_OP_JSON=<home>/alloc_per_op.json`.
pub fn run_alloc(root: &Path, home: &Path) -> Result<()> {
    let path = home.join("alloc_per_op.json");
    // A stale file must not pass for tonight's figures.
    let _ = std::fs::remove_file(&path);
    eprintln!(
        "xtask: running tests/alloc_per_op.rs (ALLOC_PER_OP_JSON={})",
        path.display()
    );
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .current_dir(root)
        .args([
            "test",
            "--features",
            "sqlite",
            "--test",
            "alloc_per_op",
            "--",
            "--nocapture",
        ])
        .env("ALLOC_PER_OP_JSON", &path)
        .status()
        .map_err(|e| Error(format!("cannot start cargo test: {e}")))?;
    if !status.success() {
        bail!("tests/alloc_per_op.rs failed ({status})");
    }
    if !path.is_file() {
        eprintln!(
            "xtask: warning: tests/alloc_per_op.rs passed but wrote no {} (does it honour ALLOC_PER_OP_JSON yet?); the report will say \"not measured\"",
            path.display()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_are_exact() {
        assert_eq!(
            exact_filter(["g/a/1000", "g/b.c/8"]),
            "^(g/a/1000|g/b\\.c/8)$"
        );
    }

    #[test]
    fn measures_a_child() {
        let u = run_measured(Command::new("true").stdout(Stdio::null())).expect("run true");
        assert_eq!(u.exit_code, Some(0));
        assert!(u.max_rss_kib > 0);
        let u = run_measured(&mut Command::new("false")).expect("run false");
        assert_eq!(u.exit_code, Some(1));
    }
}
