//! Every Markdown page of the repository, checked on its text (this test reads files only).
//!
//! The pages are read by two audiences, in different places:
//!
//! - **Published pages**: the README and the user guides in `docs/` (and the derive crate's
//!   README). They are read on the repository host, on crates.io and on docs.rs (the README is
//!   the crate's front page there, and the guides are the `guide` module's pages). A relative
//!   link works in only the first, so every link must be an absolute URL or an anchor of the
//!   same page. `docs/` holds the guides `src/guide.rs` compiles and nothing else but the
//!   contributor folder, and the package ships every one of them.
//! - **Repository pages**: `CONTRIBUTING.md`, the contributor docs in `docs/dev/`, the reports in
//!   `reports/` and `bench_results/`, `CHANGELOG.md` and the harnesses' READMEs. They are read
//!   in the repository only, where a relative link works and stays on the branch being read.
//!
//! On every page, a link into this repository, absolute or relative, must name a file or folder
//! that exists, and an anchor that one of its headings makes.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// Where the repository's files are published.
const REPO: &str = "https://github.com/sql-middleware/sql-middleware/blob/main/";
const REPO_TREE: &str = "https://github.com/sql-middleware/sql-middleware/tree/main/";
const REPO_ROOT: &str = "https://github.com/sql-middleware/sql-middleware";

/// The crates' own READMEs, shown on crates.io and (the library's) on docs.rs.
const CRATE_READMES: &[&str] = &[
    "README.md",
    "sql-middleware-derive/README.md",
    "sql-middleware-cli/README.md",
];

/// Folders no page is looked for in: build output and the benchmarks' data files.
const SKIPPED_DIRS: &[&str] = &["target", "bench_data"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let path = root().join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `.md` file of the repository, as a path from its root with `/` separators, sorted.
fn pages() -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        let entries = fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if path.is_dir() {
                if !name.starts_with('.') && !SKIPPED_DIRS.contains(&name) {
                    walk(&path, out);
                }
            } else if name.ends_with(".md") {
                let rel = path.strip_prefix(root()).expect("under the root");
                let parts: Vec<&str> = rel.iter().filter_map(|p| p.to_str()).collect();
                out.push(parts.join("/"));
            }
        }
    }
    let mut out = Vec::new();
    walk(root(), &mut out);
    out.sort();
    out
}

/// The user guides: the Markdown pages at the top of `docs/`, as `docs/<name>.md`.
fn guides() -> Vec<String> {
    let mut out: Vec<String> = fs::read_dir(root().join("docs"))
        .expect("docs/")
        .filter_map(|e| {
            let name = e.expect("a directory entry").file_name();
            let name = name.to_str()?.to_owned();
            name.ends_with(".md").then(|| format!("docs/{name}"))
        })
        .collect();
    out.sort();
    out
}

/// The guides `src/guide.rs` compiles into `sql_middleware::guide` (so their examples are
/// tested with the crate), as `docs/<name>.md`.
fn compiled_guides() -> Vec<String> {
    let source = read("src/guide.rs");
    let mut out = Vec::new();
    let mut rest = source.as_str();
    while let Some(i) = rest.find("include_str!(\"../") {
        let after = &rest[i + "include_str!(\"../".len()..];
        let end = after.find('"').expect("a closed string");
        out.push(after[..end].to_owned());
        rest = &after[end..];
    }
    out
}

/// Whether `page` is read outside the repository too (crates.io, docs.rs).
fn published(page: &str) -> bool {
    CRATE_READMES.contains(&page) || guides().iter().any(|g| g == page)
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

/// `rel` (a path from the repository root, `/` separators, `..` allowed) as a normalised path
/// from the root, or `None` when it leaves the repository.
fn normalise(rel: &str) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for c in Path::new(rel).components() {
        match c {
            Component::Normal(p) => parts.push(p.to_str()?.to_owned()),
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.join("/"))
}

/// `file` (a path from the repository root; empty for the root) exists, and `anchor`, when
/// there is one and `file` is a page, is made by one of its headings.
fn check_file(file: &str, anchor: Option<&str>) -> Result<(), String> {
    let path: PathBuf = root().join(file);
    if !path.exists() {
        return Err(format!("{file} is not in the repository"));
    }
    if let Some(anchor) = anchor {
        if !file.ends_with(".md") {
            return Err(format!("{file} is not a page: it has no anchors"));
        }
        if !anchors(&read(file)).contains(anchor) {
            return Err(format!("no heading of {file} makes the anchor #{anchor}"));
        }
    }
    Ok(())
}

fn check(page: &str, target: &str) -> Result<(), String> {
    if let Some(anchor) = target.strip_prefix('#') {
        return check_file(page, Some(anchor));
    }
    let split = |rel: &str| -> (String, Option<String>) {
        match rel.split_once('#') {
            Some((f, a)) => (f.to_owned(), Some(a.to_owned())),
            None => (rel.to_owned(), None),
        }
    };
    if let Some(rel) = target
        .strip_prefix(REPO)
        .or_else(|| target.strip_prefix(REPO_TREE))
    {
        let (file, anchor) = split(rel);
        let file = file.trim_end_matches('/');
        return check_file(file, anchor.as_deref());
    }
    if target == REPO_ROOT {
        return Ok(());
    }
    if let Some(anchor) = target
        .strip_prefix(REPO_ROOT)
        .and_then(|r| r.strip_prefix('#'))
    {
        return check_file("README.md", Some(anchor));
    }
    if target.starts_with("https://") {
        return Ok(());
    }
    if published(page) {
        return Err(
            "a relative link breaks on docs.rs and crates.io: write an absolute URL".to_owned(),
        );
    }
    let (file, anchor) = split(target);
    let dir = page.rsplit_once('/').map_or("", |(d, _)| d);
    let joined = if dir.is_empty() {
        file.clone()
    } else {
        format!("{dir}/{file}")
    };
    let Some(file) = normalise(&joined) else {
        return Err(format!("{target} leaves the repository"));
    };
    check_file(&file, anchor.as_deref())
}

#[test]
fn every_link_works_wherever_the_page_is_read() {
    let pages = pages();
    for expected in [
        "README.md",
        "CONTRIBUTING.md",
        "docs/Api.md",
        "docs/dev/Design.md",
        "reports/Reliability.md",
    ] {
        assert!(
            pages.iter().any(|p| p == expected),
            "the page walk missed {expected}"
        );
    }
    let mut broken = Vec::new();
    let mut seen = 0;
    for page in &pages {
        for target in targets(&read(page)) {
            seen += 1;
            if let Err(why) = check(page, &target) {
                broken.push(format!("{page}: ({target}): {why}"));
            }
        }
    }
    assert!(seen > 100, "the link reader found only {seen} links");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// `docs/` is what a user reads: the user guides, each in the published package, every one with
/// Rust examples compiled by `src/guide.rs` (so the examples are tested), and the contributor
/// folder `docs/dev/`.
#[test]
fn docs_holds_the_user_guides_only() {
    let guides = guides();
    assert!(guides.len() >= 5, "docs/ holds {guides:?}");
    let manifest = read("Cargo.toml");
    let compiled = compiled_guides();
    for guide in &guides {
        assert!(
            manifest.contains(&format!("\"/{guide}\"")),
            "{guide} is missing from the package's `include` in Cargo.toml"
        );
        if read(guide).contains("```rust") {
            assert!(
                compiled.contains(guide),
                "{guide} has Rust examples: src/guide.rs must compile it"
            );
        }
    }
    for guide in &compiled {
        assert!(
            guides.contains(guide),
            "src/guide.rs compiles {guide}, not a user guide"
        );
    }
    let mut strays = Vec::new();
    for entry in fs::read_dir(root().join("docs")).expect("docs/") {
        let path = entry.expect("a directory entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let rel = format!("docs/{name}");
        if !(guides.contains(&rel) || (name == "dev" && path.is_dir())) {
            strays.push(rel);
        }
    }
    assert!(
        strays.is_empty(),
        "docs/ holds the user guides only (contributor docs go to docs/dev/, what tools write \
         to reports/; a new guide goes into Cargo.toml's `include`, and into src/guide.rs when \
         it has examples): {strays:?}"
    );
}

/// The README's "Guides" list names every user guide and nothing else; contributor docs and
/// reports are linked outside the list, and labelled as such.
#[test]
fn the_readme_lists_the_user_guides() {
    let readme = read("README.md");
    let section = readme
        .split("\n## Guides\n")
        .nth(1)
        .expect("a \"Guides\" section")
        .split("\n## ")
        .next()
        .unwrap_or("");
    let listed: Vec<String> = section
        .lines()
        .filter(|l| l.starts_with("- ["))
        .map(|item| {
            let target = targets(item).into_iter().next().unwrap_or_default();
            let rel = target.strip_prefix(REPO).unwrap_or(&target);
            rel.split('#').next().unwrap_or(rel).to_owned()
        })
        .collect();
    let guides = guides();
    for guide in &guides {
        assert!(
            listed.contains(guide),
            "the README's guide list misses {guide}"
        );
    }
    for page in &listed {
        assert!(
            guides.contains(page),
            "the README's guide list names {page}, not a user guide"
        );
    }
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
    // Published pages: absolute links only.
    assert!(check("README.md", "docs/Api.md").is_err());
    assert!(check("docs/Api.md", "Backends.md").is_err());
    assert!(check("README.md", "#no-such-heading").is_err());
    assert!(check("README.md", &format!("{REPO}docs/NoSuchGuide.md")).is_err());
    assert!(check("README.md", &format!("{REPO}docs/Api.md#no-such-heading")).is_err());
    assert!(check("README.md", &format!("{REPO}docs/Api.md#bulk-loading")).is_ok());
    assert!(check("README.md", &format!("{REPO_TREE}reports")).is_ok());
    assert!(check("README.md", &format!("{REPO_TREE}no-such-folder")).is_err());
    // Repository pages: relative links too, from the page's folder.
    assert!(check("docs/dev/Benchmarks.md", "BenchTooling.md#the-verdict-rule").is_ok());
    assert!(check("docs/dev/Benchmarks.md", "BenchTooling.md#no-such-heading").is_err());
    assert!(check("docs/dev/Benchmarks.md", "../Api.md#bulk-loading").is_ok());
    assert!(check("docs/dev/Benchmarks.md", "Api.md").is_err());
    assert!(check("reports/README.md", "../../outside.md").is_err());
    assert!(check("CONTRIBUTING.md", "docs/dev/").is_ok());
    assert_eq!(
        anchors("## Setting up each connection (`after_connect`)\n"),
        BTreeSet::from(["setting-up-each-connection-after_connect".to_owned()])
    );
    assert!(published("docs/Api.md") && published("README.md"));
    assert!(!published("docs/dev/Design.md") && !published("reports/Reliability.md"));
}
