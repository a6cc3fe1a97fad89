//! The README and the user guides are read in three places: on the repository host, on
//! crates.io, and on docs.rs (the README is the crate's front page there, and the guides are the
//! `guide` module's pages). A relative link works in only the first, so every link must be an
//! absolute URL or an anchor of the same page; links into this repository must name a file that
//! exists, and an anchor that one of its headings makes. This test reads the files only.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

/// Where the repository's files are published.
const REPO: &str = "https://github.com/sql-middleware/sql-middleware/blob/main/";
const REPO_ROOT: &str = "https://github.com/sql-middleware/sql-middleware";

/// The pages a user reads: the README and the guides `src/guide.rs` includes.
const PAGES: &[&str] = &[
    "README.md",
    "docs/Api.md",
    "docs/Backends.md",
    "docs/Postgres.md",
    "docs/HighAvailability.md",
    "docs/Observability.md",
];

fn read(rel: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text outside fenced code blocks.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The anchors the headings of `text` make, as the repository host and rustdoc spell them:
/// lower case, spaces as hyphens, punctuation other than `-` and `_` dropped.
fn anchors(text: &str) -> BTreeSet<String> {
    prose(text)
        .lines()
        .filter(|l| l.starts_with('#'))
        .map(|l| {
            l.trim_start_matches('#')
                .trim()
                .chars()
                .filter_map(|c| match c {
                    ' ' => Some('-'),
                    c if c.is_alphanumeric() || c == '-' || c == '_' => {
                        Some(c.to_lowercase().next().unwrap_or(c))
                    }
                    _ => None,
                })
                .collect()
        })
        .collect()
}

/// Every link target of `text`: inline `[text](target)` and reference `[name]: target`.
fn targets(text: &str) -> Vec<String> {
    let text = prose(text);
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find("](") {
        let after = &rest[i + 2..];
        if let Some(end) = after.find(')') {
            out.push(after[..end].to_owned());
        }
        rest = after;
    }
    for line in text.lines() {
        let line = line.trim_start();
        if line.starts_with('[') {
            if let Some(i) = line.find("]: ") {
                out.push(line[i + 3..].trim().to_owned());
            }
        }
    }
    out
}

fn check(page: &str, target: &str) -> Result<(), String> {
    if let Some(anchor) = target.strip_prefix('#') {
        return if anchors(&read(page)).contains(anchor) {
            Ok(())
        } else {
            Err(format!("no heading makes the anchor #{anchor}"))
        };
    }
    if let Some(rel) = target.strip_prefix(REPO) {
        let (file, anchor) = rel
            .split_once('#')
            .map_or((rel, None), |(f, a)| (f, Some(a)));
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        if !path.exists() {
            return Err(format!("{file} is not in the repository"));
        }
        if let Some(anchor) = anchor {
            if file.ends_with(".md") && !anchors(&read(file)).contains(anchor) {
                return Err(format!("no heading of {file} makes the anchor #{anchor}"));
            }
        }
        return Ok(());
    }
    if let Some(anchor) = target
        .strip_prefix(REPO_ROOT)
        .and_then(|r| r.strip_prefix('#'))
    {
        return if anchors(&read("README.md")).contains(anchor) {
            Ok(())
        } else {
            Err(format!(
                "no heading of README.md makes the anchor #{anchor}"
            ))
        };
    }
    if target.starts_with("https://") {
        return Ok(());
    }
    Err("a relative link breaks on docs.rs and crates.io: write an absolute URL".to_owned())
}

#[test]
fn every_link_works_wherever_the_page_is_read() {
    let mut broken = Vec::new();
    let mut seen = 0;
    for page in PAGES {
        for target in targets(&read(page)) {
            seen += 1;
            if let Err(why) = check(page, &target) {
                broken.push(format!("{page}: ({target}): {why}"));
            }
        }
    }
    assert!(seen > 20, "the link reader found only {seen} links");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_stays_a_front_page() {
    let size = read("README.md").len();
    assert!(
        size <= 20 * 1024,
        "README.md is {size} bytes; keep it under 20 KiB and move detail into a guide in docs/"
    );
}

#[test]
fn the_checker_catches_what_it_looks_for() {
    assert!(check("README.md", "docs/Api.md").is_err());
    assert!(check("README.md", "#no-such-heading").is_err());
    assert!(check("README.md", &format!("{REPO}docs/NoSuchGuide.md")).is_err());
    assert!(check("README.md", &format!("{REPO}docs/Api.md#no-such-heading")).is_err());
    assert!(check("README.md", &format!("{REPO}docs/Api.md#bulk-loading")).is_ok());
    assert_eq!(
        anchors("## Setting up each connection (`after_connect`)\n"),
        BTreeSet::from(["setting-up-each-connection-after_connect".to_owned()])
    );
}
