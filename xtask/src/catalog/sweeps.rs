//! The scaling sweeps and the parameter values each runs (docs/dev/BenchTooling.md, "Scaling
//! sweeps").

/// A scaling sweep (docs/dev/BenchTooling.md, "Scaling sweeps").
#[derive(Debug, Clone, Copy)]
pub struct Sweep {
    /// Criterion group.
    pub group: &'static str,
    /// Heading.
    pub title: &'static str,
    /// What the parameter is, with its unit.
    pub param: &'static str,
    /// The parameter values the sweep runs.
    pub values: &'static [u64],
}

/// The sweeps.
pub const SWEEPS: &[Sweep] = &[
    Sweep {
        group: "sweep_lookup_rows",
        title: "Point lookup vs table size",
        param: "rows in the table",
        values: &[1_000, 10_000, 100_000],
    },
    Sweep {
        group: "sweep_fanout_concurrency",
        title: "Fan-out vs concurrency",
        param: "concurrent tasks C",
        values: &[1, 2, 4, 8, 16, 32],
    },
    Sweep {
        group: "sweep_text_payload",
        title: "Point lookup vs text payload",
        param: "payload bytes",
        values: &[16, 1_024, 65_536],
    },
];
