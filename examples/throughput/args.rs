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
    /// The SQLx contender's binary (`--sqlx`; see `sqlx.rs`).
    pub sqlx: Option<String>,
}

fn fail(msg: &str) -> ! {
    eprintln!("{msg}");
    std::process::exit(2)
}

impl Args {
    /// Parses the command line; `known` lists the example's workloads as `(name, aliases)`,
    /// all of which run by default.
    pub fn parse(known: &[(&'static str, &[&str])]) -> Args {
        let mut a = Args {
            clients: vec![8, 64],
            seconds: 5,
            rounds: 3,
            workloads: known.iter().map(|(name, _)| *name).collect(),
            only: None,
            transactions: 100_000,
            sqlx: None,
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
                "--sqlx" => a.sqlx = Some(value),
                other => fail(&format!(
                    "unknown flag `{other}` (--clients, --seconds, --rounds, --workload, --only, --transactions, --sqlx)"
                )),
            }
        }
        if a.clients.contains(&0) {
            fail("--clients: each count must be at least 1");
        }
        a
    }
}
