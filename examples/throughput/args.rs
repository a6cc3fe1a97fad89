//! The command line of the throughput examples.

/// What to run.
pub struct Args {
    pub clients: Vec<usize>,
    pub seconds: u64,
    pub rounds: usize,
    /// The workloads to run, by name (each example knows its own).
    pub workloads: Vec<&'static str>,
    /// One contender for a fixed count of transactions (for profilers).
    pub only: Option<String>,
    pub transactions: u64,
    /// The external contenders' binaries named on the command line, by flag (see
    /// [`EXTERNAL`]).
    binaries: Vec<(&'static str, String)>,
}

/// The external contenders' flags (`--NAME PATH`), each with the suites it belongs to: `sqlx.rs`
/// and `peers.rs`.
const EXTERNAL: [(&str, &str); 2] = [
    (
        "sqlx",
        "SQLx is a contender of the Postgres and MySQL suites only",
    ),
    (
        "peers",
        "the async-SQLite peers are contenders of the SQLite suite only",
    ),
];

fn fail(msg: &str) -> ! {
    eprintln!("{msg}");
    std::process::exit(2)
}

impl Args {
    /// Parses the command line; `known` lists the example's workloads as `(name, aliases)`,
    /// all of which run by default, and `external` the flags of [`EXTERNAL`] the example takes
    /// (another one is refused, saying which suites it belongs to).
    pub fn parse(known: &[(&'static str, &[&str])], external: &[&str]) -> Args {
        let mut a = Args {
            clients: vec![8, 64],
            seconds: 5,
            rounds: 3,
            workloads: known.iter().map(|(name, _)| *name).collect(),
            only: None,
            transactions: 100_000,
            binaries: Vec::new(),
        };
        let mut it = std::env::args().skip(1);
        while let Some(flag) = it.next() {
            let value = it
                .next()
                .unwrap_or_else(|| fail(&format!("{flag} needs a value")));
            let number = |v: &str| -> u64 {
                v.parse()
                    .unwrap_or_else(|_| fail(&format!("{flag}: `{v}` is not a number")))
            };
            match flag.as_str() {
                "--clients" => {
                    a.clients = value
                        .split(',')
                        .map(|v| usize::try_from(number(v)).expect("a client count"))
                        .collect();
                }
                "--seconds" => a.seconds = number(&value).max(1),
                "--rounds" => a.rounds = usize::try_from(number(&value)).unwrap_or(1).max(1),
                "--transactions" => a.transactions = number(&value).max(1),
                "--workload" => {
                    a.workloads = value
                        .split(',')
                        .map(|w| {
                            known
                                .iter()
                                .find(|(name, aliases)| *name == w || aliases.contains(&w))
                                .map(|(name, _)| *name)
                                .unwrap_or_else(|| {
                                    let names: Vec<&str> = known.iter().map(|(n, _)| *n).collect();
                                    fail(&format!("unknown workload `{w}` ({})", names.join(", ")))
                                })
                        })
                        .collect();
                }
                "--only" => a.only = Some(value),
                other => {
                    let name = other.strip_prefix("--").unwrap_or(other);
                    match EXTERNAL.iter().find(|(n, _)| *n == name) {
                        Some((n, _)) if external.contains(n) => a.binaries.push((n, value)),
                        Some((_, suites)) => fail(&format!("{other}: {suites}")),
                        None => {
                            let flags: Vec<String> =
                                external.iter().map(|n| format!(", --{n}")).collect();
                            fail(&format!(
                                "unknown flag `{other}` (--clients, --seconds, --rounds, --workload, --only, --transactions{})",
                                flags.concat()
                            ))
                        }
                    }
                }
            }
        }
        if a.clients.contains(&0) {
            fail("--clients: each count must be at least 1");
        }
        a
    }

    /// The `--workload` names, each as the example's own type.
    pub fn workloads_as<W>(&self, parse: impl Fn(&str) -> W) -> Vec<W> {
        self.workloads.iter().map(|w| parse(w)).collect()
    }

    /// `--only NAME` mode: `run(NAME, workload, clients, transactions)` once for each workload
    /// and client count given, each timed and printed by `drive::only`. Returns whether the
    /// mode was asked for.
    pub fn run_only<W: Copy>(
        &self,
        workloads: &[W],
        label: impl Fn(W) -> &'static str,
        mut run: impl FnMut(&str, W, usize, u64) -> u64,
    ) -> bool {
        let Some(only) = &self.only else {
            return false;
        };
        for &w in workloads {
            for &c in &self.clients {
                super::drive::only(only, &format!("{} clients={c}", label(w)), || {
                    run(only, w, c, self.transactions)
                });
            }
        }
        true
    }

    /// The binary named by `--NAME` (one of the example's external flags), if given.
    pub fn binary(&self, name: &str) -> Option<&str> {
        self.binaries
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
            .map(|(_, path)| path.as_str())
    }
}
