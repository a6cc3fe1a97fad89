//! The crate's layers, checked on its source (docs/dev/Design.md, "Layers"):
//!
//! face (lib with the prelude and bench hooks, api, guide) → hall (config, dispatch, pool, query,
//! statement, stream, transaction, after_connect, …) → wings (sqlite, postgres, turso, mysql) →
//! neutral (contract, knobs, limits, pooling, setup, …) → SQLite family (sqlite_family) → core
//! (engine, value, results, decode, error, translation, sql, …).
//!
//! Every `crate::…` path outside comments and unit tests must point to the same top-level module
//! or to a lower layer; a wing never names another wing; the core, neutral and hall modules
//! import each other without a cycle; every wing has the same file set; the core needs no
//! `allow(dead_code)` switch; no file is over 700 lines; and each engine is named in at most six
//! files outside its folder. This test reads the files only (std, no crate code).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

const LAYERS: &[(&str, &[&str])] = &[
    (
        "core",
        &[
            "engine",
            "value",
            "results",
            "decode",
            "error",
            "translation",
            "sql",
            "interval",
            "json",
            "param",
            "time_types",
        ],
    ),
    ("family", &["sqlite_family"]),
    (
        "neutral",
        &[
            "contract",
            "credentials",
            "replica_health",
            "knobs",
            "limits",
            "url_text",
            "pooling",
            "readers_pool",
            "stmt_cache",
            "stats",
            "stats_metrics",
            "deadline",
            "telemetry",
            "setup",
            "server",
        ],
    ),
    ("wings", &["sqlite", "postgres", "turso", "mysql"]),
    (
        "hall",
        &[
            "after_connect",
            "bulk",
            "config",
            "connection",
            "dispatch",
            "executor",
            "group_commit",
            "migrate",
            "pool",
            "query",
            "retry",
            "savepoint",
            "statement",
            "stream",
            "testing",
            "transaction",
        ],
    ),
    (
        "face",
        &["lib", "api", "prelude", "guide", "bench_hooks", "drivers"],
    ),
];

/// The files every wing has, one job each (docs/dev/Design.md, "The wing file set"); a wing may
/// add extras named for their one job (SQLite: `offload`, `busy`, `slowdown`; Turso: `busy`;
/// Postgres: `hosts`, `replica`, `listen`, `tls`, …; MySQL: `tls`, `warnings`, …).
const WING_FILES: &[&str] = &[
    "mod.rs",
    "config.rs",
    "url.rs",
    "dialect.rs",
    "open.rs",
    "conn.rs",
    "exec.rs",
    "tx.rs",
    "session.rs",
    "deadline.rs",
    "recover.rs",
    "stmt.rs",
    "params.rs",
    "rows.rs",
    "error.rs",
    "stream.rs",
    "bulk.rs",
    "migrate.rs",
];

fn layer_of(module: &str) -> Option<(usize, &'static str)> {
    LAYERS
        .iter()
        .enumerate()
        .find(|(_, (_, mods))| mods.contains(&module))
        .map(|(i, (name, _))| (i, *name))
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).expect("read src") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The top-level module a file under `src/` belongs to (`sqlite/conn.rs` → `sqlite`).
fn top_module(path: &Path) -> String {
    let rel = path.strip_prefix(src()).expect("under src");
    let first = rel.components().next().expect("a component");
    first
        .as_os_str()
        .to_string_lossy()
        .trim_end_matches(".rs")
        .to_owned()
}

/// The code of a file without comments and without its `#[cfg(test)] mod tests`.
fn code_of(text: &str) -> String {
    let body = text
        .find("#[cfg(test)]\nmod tests")
        .map_or(text, |i| &text[..i]);
    body.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::<module>` named in `code`.
fn crate_paths(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // e.g. `sql_middleware_crate::`
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
}

/// The module graph: `from → {to}` for every `crate::to` path in `from`'s files.
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in files {
        let from = top_module(&f);
        let text = fs::read_to_string(&f).expect("read file");
        let entry = g.entry(from.clone()).or_default();
        for to in crate_paths(&code_of(&text)) {
            if to != from && layer_of(&to).is_some() {
                entry.insert(to);
            }
        }
    }
    g
}

#[test]
fn every_module_has_a_layer() {
    for m in graph().keys() {
        assert!(
            layer_of(m).is_some(),
            "src/{m} belongs to no layer; add it to LAYERS here and to docs/dev/Design.md"
        );
    }
}

#[test]
fn imports_point_down() {
    let mut bad = Vec::new();
    for (from, tos) in graph() {
        let Some((lf, nf)) = layer_of(&from) else {
            continue;
        };
        for to in tos {
            let (lt, nt) = layer_of(&to).expect("known module");
            let wing_to_wing = nf == "wings" && nt == "wings";
            if lt > lf || wing_to_wing {
                bad.push(format!("{from} ({nf}) imports {to} ({nt})"));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "imports against the layers:\n{}",
        bad.join("\n")
    );
}

/// An import cycle among the modules of `layer`, if there is one.
fn cycle_in(layer: &str) -> Option<Vec<String>> {
    let g = graph();
    let mods: Vec<&str> = LAYERS
        .iter()
        .find(|(n, _)| *n == layer)
        .expect("layer")
        .1
        .to_vec();
    // Depth-first search for a back edge among the layer's own modules.
    fn visit<'a>(
        m: &'a str,
        g: &'a BTreeMap<String, BTreeSet<String>>,
        mods: &[&'a str],
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<String>> {
        if let Some(i) = stack.iter().position(|s| *s == m) {
            let mut cycle: Vec<String> = stack[i..].iter().map(|s| s.to_string()).collect();
            cycle.push(m.to_owned());
            return Some(cycle);
        }
        if !done.insert(m) {
            return None;
        }
        stack.push(m);
        if let Some(tos) = g.get(m) {
            for to in tos {
                if let Some(&t) = mods.iter().find(|x| **x == to.as_str())
                    && let Some(c) = visit(t, g, mods, stack, done)
                {
                    return Some(c);
                }
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    mods.iter()
        .find_map(|m| visit(m, &g, &mods, &mut Vec::new(), &mut done))
}

#[test]
fn core_and_neutral_layers_have_no_cycle() {
    for layer in ["core", "neutral"] {
        if let Some(cycle) = cycle_in(layer) {
            panic!("import cycle in the {layer} layer: {}", cycle.join(" → "));
        }
    }
}

/// The hall's modules import each other in one direction only: the pool does not build the
/// queries, statements and transactions that import it (each type's constructor method lives
/// with the type), and the configuration builds the pool without the pool knowing it.
#[test]
fn the_hall_has_no_cycle() {
    if let Some(cycle) = cycle_in("hall") {
        panic!("import cycle in the hall: {}", cycle.join(" → "));
    }
}

#[test]
fn wings_have_the_same_file_set() {
    for wing in ["sqlite", "postgres", "turso", "mysql"] {
        let dir = src().join(wing);
        let have: BTreeSet<String> = fs::read_dir(&dir)
            .expect("wing folder")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        for f in WING_FILES {
            assert!(have.contains(*f), "src/{wing}/ has no {f}");
        }
    }
}

/// Benchmark support is a crate of its own (`bench-support/`): the library has no `bench`
/// feature and no benchmark module, and no wing keeps bench code. What a micro-bench times inside
/// the crate is reached through the one hidden `bench_hooks` module.
#[test]
fn benchmark_support_stays_out_of_the_library() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest: toml::Table = fs::read_to_string(root.join("Cargo.toml"))
        .expect("read Cargo.toml")
        .parse()
        .expect("Cargo.toml parses");
    let features = manifest["features"].as_table().expect("[features]");
    assert!(
        !features.contains_key("bench"),
        "the library has a `bench` feature"
    );
    let mut support = Vec::new();
    if src().join("bench_support").is_dir() {
        rust_files(&src().join("bench_support"), &mut support);
    }
    assert!(
        support.is_empty(),
        "src/bench_support/ is still in the library: {support:?}"
    );
    for wing in ["sqlite", "postgres", "turso", "mysql"] {
        assert!(
            !src().join(wing).join("bench.rs").exists(),
            "src/{wing}/bench.rs keeps bench code in the wing"
        );
    }
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    for f in files {
        let code = code_of(&fs::read_to_string(&f).expect("read"));
        assert!(
            !code.contains("bench_support"),
            "{} names bench_support",
            f.display()
        );
    }
}

#[test]
fn the_core_needs_no_dead_code_switches() {
    let core = LAYERS[0].1;
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    for f in files {
        if !core.contains(&top_module(&f).as_str()) {
            continue;
        }
        let code = code_of(&fs::read_to_string(&f).expect("read"));
        assert!(
            !code.contains("dead_code"),
            "{} silences dead code; the core must be used by every feature set",
            f.display()
        );
        for engine in ["rusqlite", "tokio_postgres", "turso::"] {
            assert!(
                !code.contains(engine),
                "{} names the engine `{engine}`; the core knows no engine",
                f.display()
            );
        }
    }
}

#[test]
fn the_path_scanner_sees_paths_and_skips_comments() {
    let code = code_of(
        "use crate::value::X; // crate::pool\nfn f() { crate::error::e() }\n#[cfg(test)]\nmod tests { use crate::pool; }",
    );
    let paths = crate_paths(&code);
    assert_eq!(
        paths.into_iter().collect::<Vec<_>>(),
        vec!["error".to_owned(), "value".to_owned()]
    );
}

/// The longest a file of `src/` may be: past it, a file holds more than one job.
const MAX_LINES: usize = 700;

#[test]
fn no_source_file_is_too_long() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = fs::read_to_string(f).expect("read").lines().count();
            (n > MAX_LINES).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(
        long.is_empty(),
        "files over {MAX_LINES} lines (split them by job):\n{}",
        long.join("\n")
    );
}

/// Each engine: its folder (and the family folder it shares), the words that name it in code,
/// and the driver crates it links.
const ENGINES: &[(&str, &[&str], &[&str])] = &[
    (
        "sqlite",
        &["sqlite", "sqlite_family"],
        &["Sqlite", "sqlite::", "\"sqlite\"", "rusqlite"],
    ),
    (
        "postgres",
        &["postgres"],
        &[
            "Postgres",
            "postgres::",
            "\"postgres\"",
            "\"postgres-tls\"",
            "tokio_postgres",
            "deadpool_postgres",
        ],
    ),
    (
        "turso",
        &["turso", "sqlite_family"],
        &["Turso", "turso::", "\"turso\""],
    ),
    (
        "mysql",
        &["mysql"],
        &[
            "Mysql",
            "mysql::",
            "\"mysql\"",
            "\"mysql-tls\"",
            "mysql_async",
        ],
    ),
];

/// The most files outside an engine's folder that may name it: the engine list (`engine.rs`),
/// the dispatch (`dispatch.rs`), its API file (`api/<engine>.rs`), the crate root (`lib.rs`),
/// the read-replica knobs of the server engines (`api/replicas.rs`), and one more (a guide of
/// its own).
const MAX_FILES_NAMING_AN_ENGINE: usize = 6;

/// Whether `code` holds `word` with no identifier character glued to either end.
fn has_word(code: &str, word: &str) -> bool {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(i) = code[from..].find(word).map(|i| from + i) {
        let before = code[..i].chars().next_back();
        let after = code[i + word.len()..].chars().next();
        let glued_before = word.starts_with(ident) && before.is_some_and(ident);
        let glued_after = word.ends_with(ident) && after.is_some_and(ident);
        if !glued_before && !glued_after {
            return true;
        }
        from = i + word.len();
    }
    false
}

/// The files outside `folders` whose code (without comments and unit tests) holds one of
/// `words`.
fn files_naming(folders: &[&str], words: &[&str]) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut out: Vec<String> = files
        .iter()
        .filter(|f| !folders.contains(&top_module(f).as_str()))
        .filter(|f| {
            let code = code_of(&fs::read_to_string(f).expect("read"));
            words.iter().any(|w| has_word(&code, w))
        })
        .map(|f| {
            f.strip_prefix(src())
                .expect("under src")
                .display()
                .to_string()
        })
        .collect();
    out.sort();
    out
}

/// Adding an engine is mechanical: apart from its own folder, an engine is named in a few
/// registration files only (CONTRIBUTING.md, "Adding an engine", lists them).
#[test]
fn each_engine_is_named_in_few_files_outside_its_folder() {
    for (engine, folders, words) in ENGINES {
        let naming = files_naming(folders, words);
        assert!(
            naming.len() <= MAX_FILES_NAMING_AN_ENGINE,
            "{} files outside src/{engine}/ name {engine} (at most {MAX_FILES_NAMING_AN_ENGINE}): {naming:?}",
            naming.len()
        );
        for registration in ["engine.rs", "dispatch.rs", "lib.rs"] {
            assert!(
                naming.iter().any(|f| f == registration),
                "src/{registration} does not name {engine}: the check no longer sees registrations"
            );
        }
    }
}

#[test]
fn the_engine_name_finder_sees_words_not_parts_of_words() {
    assert!(has_word("crate::sqlite::x", "sqlite::"));
    assert!(has_word("DatabaseType::Sqlite =>", "Sqlite"));
    assert!(!has_word("SqliteExecModel", "Sqlite"));
    assert!(!has_word("sqlite_family::x", "sqlite::"));
    assert!(has_word("feature = \"sqlite\"", "\"sqlite\""));
    assert!(!has_word("use rusqlite_x;", "rusqlite"));
    assert!(has_word("rusqlite::Connection", "rusqlite"));
}
