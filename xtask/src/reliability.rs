//! `cargo xtask reliability`: runs the reliability suite once and writes the report
//! [`PAGE`] (`reports/Reliability.md`) from that run, so no figure in it is typed by hand.
//!
//! The page is: a header naming the command, the date, the commit and the result; the
//! hand-written notes in [`NOTES`] (`docs/dev/ReliabilityNotes.md`: how to run it, knobs,
//! findings, none of them figures); then one section per topic file of [`TOPICS`], with the
//! file's module documentation (the promises) and, for every test, its result and the
//! `key=value` line it printed.

use std::path::Path;
use std::process::Command;

use crate::util::{self, Error, Result};

/// The page this command writes, from the repository root: a report, beside the others.
pub const PAGE: &str = "reports/Reliability.md";

/// The hand-written notes the page starts with, from the repository root: contributor docs.
pub const NOTES: &str = "docs/dev/ReliabilityNotes.md";

/// The suite's topic files, from the repository root.
pub const TOPICS: &str = "tests/reliability";

/// The command the page is generated from.
pub const SUITE_COMMAND: &str =
    "cargo test --all-features --test reliability -- --nocapture --test-threads=1";

/// One test of the run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// `topic::backend::test` or `topic::test`.
    pub path: String,
    /// It passed.
    pub ok: bool,
    /// The figure lines it printed (`name key=value …`).
    pub figures: Vec<String>,
}

impl Outcome {
    /// The topic (the test file) the test belongs to.
    pub fn topic(&self) -> &str {
        self.path.split("::").next().unwrap_or("")
    }
}

/// A figure line: a lower-case name, a space, then `key=value` pairs.
fn is_figure(line: &str) -> bool {
    let Some((name, rest)) = line.split_once(' ') else {
        return false;
    };
    !name.is_empty()
        && name.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        && rest.contains('=')
}

/// Reads libtest's output of a `--nocapture --test-threads=1` run: each `test <path> ... `
/// line, the figure lines printed until its result (on the same line or after it), and the
/// result. An ignored test (a child process that another test starts) is left out.
pub fn parse_output(out: &str) -> Vec<Outcome> {
    let mut tests: Vec<Outcome> = Vec::new();
    let mut open: Option<usize> = None;
    for line in out.lines() {
        let mut rest = line;
        if let Some(t) = line.strip_prefix("test ")
            && let Some((path, after)) = t.split_once(" ... ")
        {
            tests.push(Outcome {
                path: path.trim().to_owned(),
                ok: false,
                figures: Vec::new(),
            });
            open = Some(tests.len() - 1);
            rest = after;
        }
        let Some(i) = open else { continue };
        let r = rest.trim();
        if r == "ok" {
            tests[i].ok = true;
            open = None;
        } else if r == "FAILED" {
            open = None;
        } else if r == "ignored" || r.starts_with("ignored, ") {
            // Not a test of the suite: a child process another test starts.
            tests.pop();
            open = None;
        } else if is_figure(r) {
            tests[i].figures.push(r.to_owned());
        }
    }
    tests
}

/// A topic file of the suite and its module documentation.
#[derive(Debug, Clone)]
pub struct Topic {
    /// The module name (`cancel`).
    pub name: String,
    /// Its `//!` documentation, without the markers.
    pub doc: String,
    /// `N` of a first line that starts `Reliability N`, for the page order.
    pub order: u32,
}

/// The topic files under `dir` (every `.rs` but `main.rs`), in the order their documentation
/// numbers them.
pub fn topics(dir: &Path) -> Result<Vec<Topic>> {
    let mut out = Vec::new();
    let entries =
        std::fs::read_dir(dir).map_err(|e| Error(format!("cannot list {}: {e}", dir.display())))?;
    for e in entries {
        let path = e.map_err(|e| Error(e.to_string()))?.path();
        let Some(name) = path.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if path.extension().is_none_or(|x| x != "rs") || name == "main" {
            continue;
        }
        let text = util::read_to_string(&path)?;
        let doc: Vec<&str> = text
            .lines()
            .take_while(|l| l.starts_with("//!"))
            .map(|l| l.trim_start_matches("//!").strip_prefix(' ').unwrap_or(""))
            .collect();
        let order = doc
            .first()
            .and_then(|l| l.strip_prefix("Reliability "))
            .and_then(|l| {
                let digits: String = l.chars().take_while(char::is_ascii_digit).collect();
                digits.parse().ok()
            })
            .unwrap_or(u32::MAX);
        out.push(Topic {
            name: name.to_owned(),
            doc: doc.join("\n"),
            order,
        });
    }
    out.sort_by(|a, b| (a.order, &a.name).cmp(&(b.order, &b.name)));
    Ok(out)
}

/// Where and when the run happened.
#[derive(Debug, Clone)]
pub struct Header {
    /// When the run ended, as `util::datetime_of` writes it.
    pub when: String,
    /// The commit the run was made on (and whether the tree had changes).
    pub commit: String,
    /// The machine, in a few words.
    pub machine: String,
}

/// Renders the page.
pub fn render(header: &Header, notes: &str, topics: &[Topic], outcomes: &[Outcome]) -> String {
    let passed = outcomes.iter().filter(|o| o.ok).count();
    let failed = outcomes.len() - passed;
    let mut s = String::new();
    s.push_str("# Reliability\n\n");
    s.push_str(&format!(
        "<!-- Generated by `cargo xtask reliability`: edit {NOTES} or the module documentation \
         of {TOPICS}/*.rs, then run it again. -->\n\n"
    ));
    s.push_str(&format!(
        "Generated by `cargo xtask reliability` on {} from one run of\n`{SUITE_COMMAND}`\n\
         (debug build) at commit {}, on {}.\n\n",
        header.when, header.commit, header.machine
    ));
    let verdict = if failed == 0 {
        "every test passed".to_owned()
    } else {
        format!("{failed} FAILED")
    };
    s.push_str(&format!(
        "**Result: {verdict}** — {passed} of {} tests passed, in {} topics.\n\n",
        outcomes.len(),
        topics.len()
    ));
    s.push_str(notes.trim_end());
    s.push_str("\n\n## Promises, tests, figures\n\n");
    s.push_str(
        "Each section is a topic file's own documentation, then every test of the file with its \
         result and the figures it printed in this run.\n",
    );
    for t in topics {
        s.push_str(&format!(
            "\n### `{}` — `tests/reliability/{}.rs`\n\n",
            t.name, t.name
        ));
        s.push_str(t.doc.trim());
        s.push_str("\n\n| test | result | figures |\n|---|---|---|\n");
        let mine: Vec<&Outcome> = outcomes.iter().filter(|o| o.topic() == t.name).collect();
        if mine.is_empty() {
            s.push_str("| (no test ran) | | |\n");
        }
        for o in mine {
            let test = o.path.split_once("::").map_or(o.path.as_str(), |x| x.1);
            let figures = if o.figures.is_empty() {
                String::new()
            } else {
                o.figures
                    .iter()
                    .map(|f| format!("`{}`", f.replace('|', "\\|")))
                    .collect::<Vec<_>>()
                    .join("<br>")
            };
            s.push_str(&format!(
                "| `{test}` | {} | {figures} |\n",
                if o.ok { "ok" } else { "**FAILED**" }
            ));
        }
    }
    s
}

/// Runs the suite in `root` and writes [`PAGE`]; returns whether every test passed. The page is
/// written either way, failures included. The notes and the topic files are read first, so a
/// missing one fails at once rather than after the run.
pub fn generate(root: &Path) -> Result<bool> {
    let notes = util::read_to_string(&root.join(NOTES))?;
    let topics = topics(&root.join(TOPICS))?;
    let args: Vec<&str> = SUITE_COMMAND.split(' ').skip(1).collect();
    eprintln!("xtask: running {SUITE_COMMAND}");
    let out = Command::new("cargo")
        .args(&args)
        .current_dir(root)
        .output()
        .map_err(|e| Error(format!("cannot run cargo: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let outcomes = parse_output(&stdout);
    if outcomes.is_empty() {
        return Err(Error(format!(
            "the suite ran no test ({}):\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    let header = Header {
        when: util::datetime_of(util::unix_now()),
        commit: commit(root),
        machine: machine(),
    };
    let page = render(&header, &notes, &topics, &outcomes);
    util::write(&root.join(PAGE), &page)?;
    let passed = outcomes.iter().all(|o| o.ok) && out.status.success();
    eprintln!(
        "xtask: wrote {PAGE} ({} tests, {})",
        outcomes.len(),
        if passed { "all passed" } else { "FAILURES" }
    );
    Ok(passed)
}

fn commit(root: &Path) -> String {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let sha = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".to_owned());
    let dirty =
        git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    if dirty {
        format!("`{sha}` (with uncommitted changes)")
    } else {
        format!("`{sha}`")
    }
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{} {}, {cpus} CPUs",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "\
running 3 tests
test cancel::postgres::cancel_at_every_await_point ... cancel postgres scenarios=3 lost=0
cancel_points postgres seed=1 targets=13
ok
test chaos::pg_restart ... pg_restart workers=8 lost=0
FAILED
test props::plain ... ok
test chaos::child_process ... ignored, the child process of another test

test result: FAILED. 2 passed; 1 failed; 1 ignored
";

    #[test]
    fn figures_follow_their_test() {
        let o = parse_output(RUN);
        // The ignored child process is not a test of the suite.
        assert_eq!(o.len(), 3);
        assert_eq!(o[0].path, "cancel::postgres::cancel_at_every_await_point");
        assert!(o[0].ok);
        assert_eq!(
            o[0].figures,
            [
                "cancel postgres scenarios=3 lost=0",
                "cancel_points postgres seed=1 targets=13"
            ]
        );
        assert!(!o[1].ok);
        assert_eq!(o[1].figures, ["pg_restart workers=8 lost=0"]);
        assert!(o[2].ok && o[2].figures.is_empty());
        assert_eq!(o[2].topic(), "props");
    }

    #[test]
    fn page_names_the_run_and_every_failure() {
        let topics = vec![Topic {
            name: "chaos".into(),
            doc: "Reliability 4: killed.".into(),
            order: 4,
        }];
        let page = render(
            &Header {
                when: "2026-01-01 00:00 UTC".into(),
                commit: "`abc`".into(),
                machine: "linux".into(),
            },
            "## Running it\n",
            &topics,
            &parse_output(RUN),
        );
        assert!(page.contains(SUITE_COMMAND));
        assert!(page.contains("1 FAILED"));
        assert!(page.contains("| `pg_restart` | **FAILED** | `pg_restart workers=8 lost=0` |"));
        assert!(page.contains("Reliability 4: killed."));
        assert!(page.contains(&format!("edit {NOTES} ")));
    }

    /// What `generate` reads and writes, checked on this repository without running the suite:
    /// the notes and the topic files are where it looks for them, and the committed page is
    /// where it writes and names the notes it was made from.
    #[test]
    fn reads_and_writes_this_repositorys_files() {
        let root = util::repo_root();
        let notes = util::read_to_string(&root.join(NOTES)).expect("the notes");
        assert!(
            notes.starts_with("## "),
            "{NOTES} is spliced under the page's title"
        );
        let topics = topics(&root.join(TOPICS)).expect("the topic files");
        assert!(
            topics.iter().any(|t| t.name == "cancel"),
            "{TOPICS} has no topic files"
        );
        assert!(topics.iter().all(|t| t.name != "main"));
        let page = util::read_to_string(&root.join(PAGE)).expect("the committed page");
        assert!(page.starts_with("# Reliability\n"));
        assert!(
            page.contains(&format!("edit {NOTES} ")),
            "{PAGE} was not written from {NOTES}: run `cargo xtask reliability`"
        );
    }

    /// A tree without the notes fails at once, naming them, before the suite's minutes of run.
    #[test]
    fn missing_notes_fail_before_the_run() {
        let empty = std::env::temp_dir().join(format!("xtask-no-notes-{}", std::process::id()));
        let started = std::time::Instant::now();
        let err = generate(&empty).expect_err("no notes there");
        assert!(err.0.contains(NOTES), "{}", err.0);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }
}
