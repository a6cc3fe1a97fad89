//! The module structure of `src/`: every import between the library's modules points down the
//! layers stated in `src/lib.rs` (so no import cycle can come back), and no source file reaches
//! 700 lines.
//!
//! Imports are found by reading the source: every path starting with `crate::`, `super::` or
//! `self::` (in `use` items and in expressions), with `use` groups expanded, outside comments
//! and `#[cfg(test)] mod tests`. A path is charged to the longest module it names.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The library's top-level modules, lowest layer first (as in `src/lib.rs`).
const LAYERS: &[&[&str]] = &[
    &["util"],
    &["catalog", "criterion", "environment", "side_files", "svg"],
    &["results"],
    &["targets"],
    &["nightly", "reliability", "report", "runner"],
];

/// The files of each folder module, lowest layer first; the folder's `mod.rs` is above them.
const FOLDERS: &[(&str, &[&[&str]])] = &[
    (
        "catalog",
        &[
            &["groups", "micro", "suites", "sweeps", "workloads"],
            &["controls"],
        ],
    ),
    (
        "nightly",
        &[
            &["history", "references", "verdict"],
            &["compare"],
            &["drift"],
            &["page"],
        ],
    ),
    (
        "report",
        &[
            &["cells"],
            &[
                "micro",
                "nightly_links",
                "resources",
                "sweeps",
                "targets_section",
                "throughput",
                "workloads",
            ],
        ],
    ),
];

/// No file under `src/` may have this many lines.
const MAX_LINES: usize = 700;

type ModPath = Vec<String>;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every module file under `src/` but the crate roots, by module path (`["report", "cells"]`).
fn module_files() -> BTreeMap<ModPath, PathBuf> {
    fn walk(dir: &Path, prefix: &[String], out: &mut BTreeMap<ModPath, PathBuf>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            let mut m = prefix.to_vec();
            if path.is_dir() {
                m.push(name);
                walk(&path, &m, out);
            } else if path.extension().is_some_and(|x| x == "rs") {
                let root = prefix.is_empty() && (name == "lib" || name == "main");
                if root {
                    continue;
                }
                if name != "mod" {
                    m.push(name);
                }
                out.insert(m, path);
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(&src(), &[], &mut out);
    out
}

/// The declared layer of a module: (top-level layer, layer inside its folder). A folder's
/// `mod.rs` is above its files.
fn layer(m: &[String]) -> Option<(usize, usize)> {
    let top = LAYERS.iter().position(|l| l.contains(&m[0].as_str()))?;
    let folder = FOLDERS.iter().find(|(f, _)| *f == m[0]);
    match (m.len(), folder) {
        (1, None) => Some((top, 0)),
        (1, Some((_, files))) => Some((top, files.len())),
        (2, Some((_, files))) => {
            let inner = files.iter().position(|l| l.contains(&m[1].as_str()))?;
            Some((top, inner))
        }
        _ => None,
    }
}

/// Why the import `from` → `to` breaks the layers, if it does.
fn violation(from: &[String], to: &[String]) -> Option<String> {
    if from == to || to.starts_with(from) {
        // Itself, or a folder's `mod.rs` using one of its files.
        return None;
    }
    let (f, t) = (layer(from)?, layer(to)?);
    let ok = if from[0] == to[0] {
        t.1 < f.1
    } else {
        t.0 < f.0
    };
    (!ok).then(|| format!("`{}` imports `{}`", from.join("::"), to.join("::")))
}

/// The source without comments and without `#[cfg(test)] mod tests { … }` (whose `super` is
/// the file itself).
fn code(text: &str) -> String {
    let stripped: String = text
        .lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::new();
    let mut rest = stripped.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        if !after.trim_start().starts_with("mod tests") {
            out.push_str("#[cfg(test)]");
            rest = after;
            continue;
        }
        let open = after.find('{').expect("mod tests has a body");
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Reads one use tree (or expression path) at `chars[*i..]`: segments joined by `::`, possibly
/// ending in a `{…}` group, which is expanded.
fn tree(chars: &[char], i: &mut usize) -> Vec<Vec<String>> {
    let skip_ws = |i: &mut usize| {
        while *i < chars.len() && chars[*i].is_whitespace() {
            *i += 1;
        }
    };
    let mut segs: Vec<String> = Vec::new();
    loop {
        skip_ws(i);
        if chars.get(*i) == Some(&'{') {
            *i += 1;
            let mut out = Vec::new();
            loop {
                skip_ws(i);
                match chars.get(*i) {
                    None => return out,
                    Some('}') => {
                        *i += 1;
                        return out;
                    }
                    _ => {}
                }
                for t in tree(chars, i) {
                    out.push(segs.iter().cloned().chain(t).collect());
                }
                // Skip `as name` up to the next item of the group.
                while *i < chars.len() && chars[*i] != ',' && chars[*i] != '}' {
                    *i += 1;
                }
                if chars.get(*i) == Some(&',') {
                    *i += 1;
                }
            }
        }
        let start = *i;
        while *i < chars.len()
            && (chars[*i].is_alphanumeric() || chars[*i] == '_' || chars[*i] == '*')
        {
            *i += 1;
        }
        if *i == start {
            break;
        }
        segs.push(chars[start..*i].iter().collect());
        skip_ws(i);
        if chars.get(*i) == Some(&':') && chars.get(*i + 1) == Some(&':') {
            *i += 2;
        } else {
            break;
        }
    }
    vec![segs]
}

/// Every path starting with `crate::`, `super::` or `self::` in `code`, groups expanded.
fn paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let word_start = i == 0
            || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_' || chars[i - 1] == '$');
        let here: String = chars[i..chars.len().min(i + 7)].iter().collect();
        if word_start
            && ["crate::", "super::", "self::"]
                .iter()
                .any(|k| here.starts_with(k))
        {
            out.extend(tree(&chars, &mut i));
        } else {
            i += 1;
        }
    }
    out
}

/// The module a path found in module `from` names: the longest known module it starts with
/// (None: the crate root).
fn target(from: &[String], path: &[String], known: &BTreeSet<ModPath>) -> Option<ModPath> {
    let mut full: Vec<String> = match path[0].as_str() {
        "crate" => Vec::new(),
        _ => from.to_vec(),
    };
    let mut rest = match path[0].as_str() {
        "crate" | "self" => &path[1..],
        _ => path,
    };
    while rest.first().is_some_and(|s| s == "super") {
        full.pop();
        rest = &rest[1..];
    }
    full.extend(rest.iter().filter(|s| *s != "self" && *s != "*").cloned());
    (1..=full.len())
        .rev()
        .map(|n| full[..n].to_vec())
        .find(|p| known.contains(p))
}

#[test]
fn use_trees_are_expanded() {
    let p = paths(
        "use crate::a::{self, b::{c, d as e}, f};\nlet x = super::g::h(1);\nmy_self::z; $crate::q;",
    );
    let s: Vec<String> = p.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        s,
        [
            "crate::a::self",
            "crate::a::b::c",
            "crate::a::b::d",
            "crate::a::f",
            "super::g::h"
        ]
    );
    let c = code(
        "use crate::a; // crate::b\n#[cfg(test)]\nmod tests {\n    use super::*;\n    fn f() { if x { } }\n}\nuse crate::c;\n",
    );
    let s: Vec<String> = paths(&c).iter().map(|p| p.join("::")).collect();
    assert_eq!(s, ["crate::a", "crate::c"]);
    let known: BTreeSet<ModPath> = [vec!["r".to_string()], vec!["r".into(), "k".into()]].into();
    let from = vec!["r".to_string(), "m".to_string()];
    let to = |p: &[&str]| {
        let p: Vec<String> = p.iter().map(|s| s.to_string()).collect();
        target(&from, &p, &known)
    };
    assert_eq!(to(&["super", "k", "f"]), Some(vec!["r".into(), "k".into()]));
    assert_eq!(to(&["super", "Files"]), Some(vec!["r".into()]));
    assert_eq!(to(&["crate", "nothing"]), None);
}

#[test]
fn imports_point_down_the_layers() {
    let files = module_files();
    let known: BTreeSet<ModPath> = files.keys().cloned().collect();
    let mut declared: BTreeSet<ModPath> = LAYERS
        .iter()
        .flat_map(|l| l.iter())
        .map(|m| vec![m.to_string()])
        .collect();
    for (folder, layers) in FOLDERS {
        for f in layers.iter().flat_map(|l| l.iter()) {
            declared.insert(vec![folder.to_string(), f.to_string()]);
        }
    }
    let names = |set: Vec<&ModPath>| set.iter().map(|m| m.join("::")).collect::<Vec<_>>();
    assert!(
        known == declared,
        "modules without a layer in tests/layering.rs: {:?}; layers without a module: {:?}",
        names(known.difference(&declared).collect()),
        names(declared.difference(&known).collect())
    );
    let mut problems = Vec::new();
    for (m, path) in &files {
        let text = std::fs::read_to_string(path).unwrap();
        for p in paths(&code(&text)) {
            match target(m, &p, &known) {
                None => problems.push(format!(
                    "`{}` uses the crate root: `{}`",
                    m.join("::"),
                    p.join("::")
                )),
                Some(t) => problems.extend(violation(m, &t)),
            }
        }
    }
    problems.sort();
    problems.dedup();
    assert!(
        problems.is_empty(),
        "imports against the layers of src/lib.rs:\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn no_source_file_is_too_long() {
    let mut files: Vec<PathBuf> = module_files().into_values().collect();
    files.extend(["lib.rs", "main.rs"].map(|f| src().join(f)));
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).unwrap().lines().count();
            (n >= MAX_LINES).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "split these files: {long:?}");
}
