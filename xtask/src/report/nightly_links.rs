//! The "Nightly comparisons" section of `index.md`: links to the newest pages that
//! `cargo xtask nightly` wrote under `<out>/nightly/`.

use std::fmt::Write as _;
use std::path::Path;

/// The latest nightly comparison pages found in `<out>/nightly/`, newest first.
pub fn render(out: &Path) -> String {
    let mut pages: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(out.join("nightly"))
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let t = e.metadata().and_then(|m| m.modified()).ok()?;
                    name.ends_with(".md").then_some((t, name))
                })
                .collect()
        })
        .unwrap_or_default();
    pages.sort_by(|a, b| b.cmp(a));
    let mut s = String::from("## Nightly comparisons\n\n");
    if pages.is_empty() {
        s.push_str("None yet: `cargo xtask nightly` writes them to `bench_results/nightly/`.\n");
        return s;
    }
    s.push_str(
        "Newest first (`cargo xtask nightly`; the verdict rule is in docs/dev/BenchTooling.md):\n\n",
    );
    for (_, name) in pages.iter().take(10) {
        let _ = writeln!(s, "- [{}](nightly/{name})", name.trim_end_matches(".md"));
    }
    s
}
