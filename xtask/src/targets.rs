//! The performance targets (P1–P9 of the first round, T1 and Q1–Q12 of the second, in
//! docs/dev/Benchmarks.md) and their evaluation from the same results the report prints: each is
//! met, or missed by a stated amount, or not measured. The report's "Performance targets"
//! section renders them.

use crate::criterion::Measurement;
use crate::results::Results;
use crate::side_files::{AllocFile, CallgrindFile};

/// Which side of the bound a figure must stay on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Bound {
    /// The figure must be at most this.
    AtMost(f64),
    /// The figure must be at least this.
    AtLeast(f64),
}

impl Bound {
    /// The bound as the targets table states it: `≤ 1.3`, `≥ 5`.
    pub fn text(self) -> String {
        match self {
            Bound::AtMost(b) => format!("≤ {}", fmt_bound(b)),
            Bound::AtLeast(b) => format!("≥ {}", fmt_bound(b)),
        }
    }

    /// `None` when met; otherwise how far the figure is past the bound, as a fraction of it.
    pub fn miss(self, value: f64) -> Option<f64> {
        match self {
            Bound::AtMost(b) if value > b => Some(value / b - 1.0),
            Bound::AtLeast(b) if value < b => Some(1.0 - value / b),
            _ => None,
        }
    }
}

fn fmt_bound(b: f64) -> String {
    if b.fract() == 0.0 {
        format!("{b:.0}")
    } else {
        format!("{b}")
    }
}

/// `group`, `function`, and the parameter the target is stated for (`None`: any).
type IdRef = (&'static str, &'static str, Option<&'static str>);

/// Where a target's figure comes from.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// The ratio of two medians per operation.
    Ratio {
        /// Numerator.
        num: IdRef,
        /// Denominator.
        den: IdRef,
    },
    /// Allocations per operation of a path in `alloc_per_op.json`.
    Allocs(&'static str),
    /// Middleware ÷ raw instructions per lookup from `callgrind_lookup.json`.
    Instructions,
}

/// One target.
#[derive(Debug, Clone, Copy)]
pub struct Target {
    /// `P1` … `P9`, `T1`, `Q1` … `Q12` (with a letter or engine where one target has parts).
    pub id: &'static str,
    /// What is measured.
    pub what: &'static str,
    /// Where the figure comes from.
    pub source: Source,
    /// The bound.
    pub bound: Bound,
}

const fn ratio(num: IdRef, den: IdRef) -> Source {
    Source::Ratio { num, den }
}

/// The targets, in the order of docs/dev/Benchmarks.md.
pub const TARGETS: &[Target] = &[
    Target {
        id: "P1",
        what: "SQLite lookup: middleware ÷ rusqlite",
        source: ratio(
            ("sqlite_single_row_lookup", "middleware", None),
            ("sqlite_single_row_lookup", "rusqlite", None),
        ),
        bound: Bound::AtMost(1.3),
    },
    Target {
        id: "P2",
        what: "SQLite lookup: SQLx ÷ middleware",
        source: ratio(
            ("sqlite_single_row_lookup_sqlx", "sqlx", None),
            ("sqlite_single_row_lookup", "middleware", None),
        ),
        bound: Bound::AtLeast(5.0),
    },
    Target {
        id: "P3",
        what: "Turso lookup: middleware ÷ turso_raw",
        source: ratio(
            ("turso_single_row_lookup", "middleware", None),
            ("turso_single_row_lookup", "turso_raw", None),
        ),
        bound: Bound::AtMost(1.10),
    },
    Target {
        id: "P4a",
        what: "Postgres lookup: middleware ÷ tokio_postgres_raw",
        source: ratio(
            ("postgres_single_row_lookup", "middleware", None),
            ("postgres_single_row_lookup", "tokio_postgres_raw", None),
        ),
        bound: Bound::AtMost(1.05),
    },
    Target {
        id: "P4b",
        what: "Postgres lookup: sequential middleware ÷ middleware_pipelined",
        source: ratio(
            ("postgres_single_row_lookup", "middleware", None),
            ("postgres_single_row_lookup", "middleware_pipelined", None),
        ),
        bound: Bound::AtLeast(4.0),
    },
    Target {
        id: "P5a",
        what: "Fan-out (C = 8): middleware_parallel_select ÷ rusqlite_blocking",
        source: ratio(
            (
                "sqlite_multithread_pool_checkout",
                "middleware_parallel_select",
                Some("8"),
            ),
            (
                "sqlite_multithread_pool_checkout",
                "rusqlite_blocking",
                Some("8"),
            ),
        ),
        bound: Bound::AtMost(1.5),
    },
    Target {
        id: "P5b",
        what: "Fan-out (C = 8): sqlx_parallel_select ÷ middleware_parallel_select",
        source: ratio(
            (
                "sqlite_multithread_pool_checkout_sqlx",
                "sqlx_parallel_select",
                Some("8"),
            ),
            (
                "sqlite_multithread_pool_checkout",
                "middleware_parallel_select",
                Some("8"),
            ),
        ),
        bound: Bound::AtLeast(3.0),
    },
    Target {
        id: "P6 SQLite",
        what: "Inserts (R = 1000): sqlite_middleware ÷ sqlite_raw",
        source: ratio(
            ("database_inserts", "sqlite_middleware", Some("1000")),
            ("database_inserts", "sqlite_raw", Some("1000")),
        ),
        bound: Bound::AtMost(1.10),
    },
    Target {
        id: "P6 Postgres",
        what: "Inserts (R = 1000): postgres_middleware ÷ postgres_raw",
        source: ratio(
            ("database_inserts", "postgres_middleware", Some("1000")),
            ("database_inserts", "postgres_raw", Some("1000")),
        ),
        bound: Bound::AtMost(1.10),
    },
    Target {
        id: "P6 Turso",
        what: "Inserts (R = 1000): turso_middleware ÷ turso_raw",
        source: ratio(
            ("database_inserts", "turso_middleware", Some("1000")),
            ("database_inserts", "turso_raw", Some("1000")),
        ),
        bound: Bound::AtMost(1.10),
    },
    Target {
        id: "Q10 Postgres",
        what: "Bulk load (B = 100000): postgres_middleware_rows ÷ postgres_middleware_bulk",
        source: ratio(
            ("bulk_load", "postgres_middleware_rows", Some("100000")),
            ("bulk_load", "postgres_middleware_bulk", Some("100000")),
        ),
        bound: Bound::AtLeast(10.0),
    },
    Target {
        id: "Q10 SQLite",
        what: "Bulk load (B = 100000): sqlite_middleware_rows ÷ sqlite_middleware_bulk",
        source: ratio(
            ("bulk_load", "sqlite_middleware_rows", Some("100000")),
            ("bulk_load", "sqlite_middleware_bulk", Some("100000")),
        ),
        bound: Bound::AtLeast(1.5),
    },
    Target {
        id: "Q10 COPY",
        what: "Bulk load (B = 100000): postgres_middleware_bulk ÷ postgres_copy_raw",
        source: ratio(
            ("bulk_load", "postgres_middleware_bulk", Some("100000")),
            ("bulk_load", "postgres_copy_raw", Some("100000")),
        ),
        bound: Bound::AtMost(1.10),
    },
    Target {
        id: "P7",
        what: "Heap allocations per SQLite lookup through the API (prepared `one`)",
        source: Source::Allocs("sqlite/prepared_one"),
        bound: Bound::AtMost(3.0),
    },
    Target {
        id: "P8",
        what: "Instructions per SQLite lookup: middleware ÷ rusqlite (callgrind)",
        source: Source::Instructions,
        bound: Bound::AtMost(1.5),
    },
    Target {
        id: "P9",
        what: "pool_acquire ÷ one raw rusqlite lookup",
        source: ratio(
            ("sqlite_single_row_lookup", "pool_acquire", None),
            ("sqlite_single_row_lookup", "rusqlite", None),
        ),
        bound: Bound::AtMost(1.0),
    },
    Target {
        id: "T1",
        what: "SQLite lookup: middleware_tracing (spans on, no subscriber) ÷ middleware",
        source: ratio(
            ("sqlite_single_row_lookup", "middleware_tracing", None),
            ("sqlite_single_row_lookup", "middleware", None),
        ),
        bound: Bound::AtMost(1.03),
    },
    Target {
        id: "Q1",
        what: "SQLite lookup: prepared `stmt.one` (middleware) ÷ rusqlite",
        source: ratio(
            ("sqlite_single_row_lookup", "middleware", None),
            ("sqlite_single_row_lookup", "rusqlite", None),
        ),
        bound: Bound::AtMost(1.10),
    },
    Target {
        id: "Q2",
        what: "SQLite lookup: per-call `query(..).one()` ÷ rusqlite",
        source: ratio(
            ("sqlite_single_row_lookup", "middleware_query_one", None),
            ("sqlite_single_row_lookup", "rusqlite", None),
        ),
        bound: Bound::AtMost(1.15),
    },
    Target {
        id: "Q3",
        what: "SQLite lookup: per-call `select()` ÷ rusqlite",
        source: ratio(
            ("sqlite_single_row_lookup", "middleware_select", None),
            ("sqlite_single_row_lookup", "rusqlite", None),
        ),
        bound: Bound::AtMost(1.20),
    },
    Target {
        id: "Q4",
        what: "SQLite lookup: checkout + `query(..).one()` ÷ rusqlite_prepare_cached",
        source: ratio(
            (
                "sqlite_single_row_lookup",
                "middleware_checkout_query_one",
                None,
            ),
            ("sqlite_single_row_lookup", "rusqlite_prepare_cached", None),
        ),
        bound: Bound::AtMost(1.25),
    },
    Target {
        id: "Q7",
        what: "Turso lookup: middleware ÷ turso_raw",
        source: ratio(
            ("turso_single_row_lookup", "middleware", None),
            ("turso_single_row_lookup", "turso_raw", None),
        ),
        bound: Bound::AtMost(1.05),
    },
    Target {
        id: "Q8",
        what: "SQLite inserts (R = 1000): sqlite_middleware ÷ sqlite_raw",
        source: ratio(
            ("database_inserts", "sqlite_middleware", Some("1000")),
            ("database_inserts", "sqlite_raw", Some("1000")),
        ),
        bound: Bound::AtMost(1.10),
    },
    Target {
        id: "Q9",
        what: "Postgres lookup, per call: middleware_query_one ÷ tokio_postgres_raw",
        source: ratio(
            ("postgres_single_row_lookup", "middleware_query_one", None),
            ("postgres_single_row_lookup", "tokio_postgres_raw", None),
        ),
        bound: Bound::AtMost(1.03),
    },
    Target {
        id: "Q12a",
        what: "SQLite lookup: deadpool_sqlite ÷ middleware_query_one (both per call, statement cache included)",
        source: ratio(
            ("sqlite_single_row_lookup_peers", "deadpool_sqlite", None),
            ("sqlite_single_row_lookup", "middleware_query_one", None),
        ),
        bound: Bound::AtLeast(5.0),
    },
    Target {
        id: "Q12b",
        what: "SQLite lookup: tokio_rusqlite ÷ middleware_query_one (both per call, statement cache included)",
        source: ratio(
            ("sqlite_single_row_lookup_peers", "tokio_rusqlite", None),
            ("sqlite_single_row_lookup", "middleware_query_one", None),
        ),
        bound: Bound::AtLeast(5.0),
    },
    Target {
        id: "Q12c",
        what: "Fan-out (C = 8): deadpool_sqlite_parallel_select ÷ middleware_parallel_select",
        source: ratio(
            (
                "sqlite_multithread_pool_checkout_peers",
                "deadpool_sqlite_parallel_select",
                Some("8"),
            ),
            (
                "sqlite_multithread_pool_checkout",
                "middleware_parallel_select",
                Some("8"),
            ),
        ),
        bound: Bound::AtLeast(2.0),
    },
    Target {
        id: "Q12d",
        what: "Fan-out (C = 8): tokio_rusqlite_parallel_select ÷ middleware_parallel_select",
        source: ratio(
            (
                "sqlite_multithread_pool_checkout_peers",
                "tokio_rusqlite_parallel_select",
                Some("8"),
            ),
            (
                "sqlite_multithread_pool_checkout",
                "middleware_parallel_select",
                Some("8"),
            ),
        ),
        bound: Bound::AtLeast(2.0),
    },
    Target {
        id: "Q11a",
        what: "Postgres fan-out (32 tasks, pool of 8): middleware ÷ deadpool_postgres_raw",
        source: ratio(
            ("postgres_fanout", "middleware", Some("32")),
            ("postgres_fanout", "deadpool_postgres_raw", Some("32")),
        ),
        bound: Bound::AtMost(1.05),
    },
    Target {
        id: "Q11b",
        what: "Postgres fan-out (32 tasks, pool of 8): sqlx ÷ middleware",
        source: ratio(
            ("postgres_fanout", "sqlx", Some("32")),
            ("postgres_fanout", "middleware", Some("32")),
        ),
        bound: Bound::AtLeast(2.0),
    },
    Target {
        id: "M1",
        what: "MySQL lookup, per call: middleware_query_one ÷ mysql_async_raw",
        source: ratio(
            ("mysql_single_row_lookup", "middleware_query_one", None),
            ("mysql_single_row_lookup", "mysql_async_raw", None),
        ),
        bound: Bound::AtMost(1.05),
    },
    Target {
        id: "M2",
        what: "MySQL fan-out (32 tasks, pool of 8): middleware ÷ mysql_async_raw",
        source: ratio(
            ("mysql_fanout", "middleware", Some("32")),
            ("mysql_fanout", "mysql_async_raw", Some("32")),
        ),
        bound: Bound::AtMost(1.10),
    },
];

/// A target's evaluated figure.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The figure, and a note (e.g. measured at another parameter).
    Measured(f64, Option<String>),
    /// Why there is no figure.
    NotMeasured(String),
}

fn pick(results: &Results, (g, f, want): IdRef) -> Result<&Measurement, String> {
    let all = results.all(g, f);
    if let Some(p) = want
        && let Some(m) = all.iter().find(|m| m.param == p)
    {
        return Ok(m);
    }
    results
        .newest(g, f)
        .ok_or_else(|| format!("`{g}/{f}` not run"))
}

/// Evaluates one target.
pub fn evaluate(
    t: &Target,
    results: &Results,
    alloc: Option<&AllocFile>,
    callgrind: Option<&CallgrindFile>,
) -> Outcome {
    match t.source {
        Source::Ratio { num, den } => {
            let (n, d) = match (pick(results, num), pick(results, den)) {
                (Ok(n), Ok(d)) => (n, d),
                (Err(e), _) | (_, Err(e)) => return Outcome::NotMeasured(e),
            };
            let (np, dp) = (n.per_op().point, d.per_op().point);
            if dp <= 0.0 {
                return Outcome::NotMeasured("zero denominator".into());
            }
            let mut notes = Vec::new();
            for (m, (_, _, want)) in [(n, num), (d, den)] {
                if let Some(w) = want
                    && m.param != w
                {
                    notes.push(format!(
                        "`{}` measured at {} (the target is stated for {w})",
                        m.function, m.param
                    ));
                }
            }
            Outcome::Measured(np / dp, (!notes.is_empty()).then(|| notes.join("; ")))
        }
        Source::Allocs(path) => match alloc.and_then(|a| a.paths.get(path)) {
            Some(p) => Outcome::Measured(p.allocs_per_op, None),
            None => Outcome::NotMeasured("run `cargo xtask bench alloc`".into()),
        },
        Source::Instructions => match callgrind {
            Some(c) if c.raw_per_lookup > 0.0 => Outcome::Measured(
                c.middleware_per_lookup / c.raw_per_lookup,
                Some(format!(
                    "{:.0} vs {:.0} instructions per lookup, runs of {} and {} lookups",
                    c.middleware_per_lookup, c.raw_per_lookup, c.short, c.long
                )),
            ),
            _ => Outcome::NotMeasured("run `scripts/callgrind-lookup.sh`".into()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_say_how_far_they_missed() {
        assert_eq!(Bound::AtMost(1.3).miss(1.2), None);
        assert_eq!(Bound::AtMost(1.3).miss(1.3), None);
        let m = Bound::AtMost(1.0).miss(1.25).unwrap();
        assert!((m - 0.25).abs() < 1e-9, "{m}");
        assert_eq!(Bound::AtLeast(5.0).miss(9.0), None);
        let m = Bound::AtLeast(4.0).miss(3.0).unwrap();
        assert!((m - 0.25).abs() < 1e-9, "{m}");
        assert_eq!(Bound::AtMost(1.05).text(), "≤ 1.05");
        assert_eq!(Bound::AtLeast(3.0).text(), "≥ 3");
    }

    #[test]
    fn target_ids_are_unique() {
        let mut ids: Vec<&str> = TARGETS.iter().map(|t| t.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), TARGETS.len());
    }

    #[test]
    fn instructions_need_a_file() {
        let t = TARGETS.iter().find(|t| t.id == "P8").unwrap();
        let results = Results {
            groups: Default::default(),
        };
        assert!(matches!(
            evaluate(t, &results, None, None),
            Outcome::NotMeasured(_)
        ));
        let c = CallgrindFile {
            raw_per_lookup: 8000.0,
            middleware_per_lookup: 10000.0,
            short: 2000,
            long: 12000,
        };
        match evaluate(t, &results, None, Some(&c)) {
            Outcome::Measured(v, Some(_)) => assert!((v - 1.25).abs() < 1e-9),
            other => panic!("{other:?}"),
        }
    }
}
