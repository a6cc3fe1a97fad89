//! The "Resources" section of `index.md`: allocations per operation (`alloc_per_op.json`) and
//! each suite's peak memory and CPU time (`resources.json`).

use std::fmt::Write as _;

use crate::side_files::{AllocFile, ResourcesFile};
use crate::util;

/// The section's markdown; a file that was not written yet is said to be missing.
pub fn section(alloc: Option<&AllocFile>, resources: Option<&ResourcesFile>) -> String {
    let mut s = String::from("## Resources\n\n");
    s.push_str(&render_alloc(alloc));
    s.push_str(&render_resources(resources));
    s
}

fn render_alloc(alloc: Option<&AllocFile>) -> String {
    let mut s = String::from("### Allocations per operation\n\n");
    match alloc {
        None => s.push_str("Not measured. Run `cargo xtask bench alloc` (it runs `tests/alloc_per_op.rs` with `ALLOC_PER_OP_JSON=<CRITERION_HOME>/alloc_per_op.json`).\n\n"),
        Some(a) => {
            let _ = writeln!(
                s,
                "Counted with a counting allocator (dhat) over {} operations per path, from `alloc_per_op.json`.\n",
                a.lookups
            );
            s.push_str("| path | allocations / op | bytes / op |\n|---|---:|---:|\n");
            for (name, p) in &a.paths {
                let _ = writeln!(
                    s,
                    "| `{name}` | {:.2} | {} |",
                    p.allocs_per_op,
                    p.bytes_per_op.map_or("—".into(), |b| format!("{b:.0}"))
                );
            }
            s.push('\n');
        }
    }
    s
}

fn render_resources(r: Option<&ResourcesFile>) -> String {
    let mut s = String::from("### Peak memory and CPU time of each suite\n\n");
    match r {
        None => s.push_str("Not recorded. `cargo xtask bench` records them in `<CRITERION_HOME>/resources.json`.\n\n"),
        Some(r) if r.suites.is_empty() => s.push_str("Not recorded yet.\n\n"),
        Some(r) => {
            s.push_str("`getrusage` of each suite's bench process and its children, recorded by `cargo xtask bench` (Criterion's own analysis is included; the build is not).\n\n");
            s.push_str("| suite | bench target | peak RSS | user CPU | system CPU | wall | CPU / wall | Criterion args | knobs | recorded |\n|---|---|---:|---:|---:|---:|---:|---|---|---|\n");
            for (name, x) in &r.suites {
                let cpu = x.user_s + x.sys_s;
                let knobs: Vec<String> = x.knobs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let _ = writeln!(
                    s,
                    "| {name}{} | `{}` | {:.1} MiB | {:.1} s | {:.1} s | {:.1} s | {:.2} | `{}` | {} | {} |",
                    if x.exit_code == Some(0) { "" } else { " (failed)" },
                    x.target,
                    x.max_rss_kib as f64 / 1024.0,
                    x.user_s,
                    x.sys_s,
                    x.wall_s,
                    if x.wall_s > 0.0 { cpu / x.wall_s } else { 0.0 },
                    x.args.join(" "),
                    if knobs.is_empty() { "defaults".into() } else { format!("`{}`", knobs.join(" ")) },
                    util::datetime_of(x.recorded_unix)
                );
            }
            s.push('\n');
        }
    }
    s
}
