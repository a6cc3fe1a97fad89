//! The command line of the throughput examples.

/// A workload of the engine's own benchmark tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// Point selects (pgbench `-S`, sysbench `oltp_point_select`).
    Select,
    /// Read-write transactions (pgbench's TPC-B-like script, sysbench `oltp_read_write`).
    TpcB,
}

impl Workload {
    pub fn name(self) -> &'static str {
        match self {
            Workload::Select => "select",
            Workload::TpcB => "tpcb",
        }
    }
}

/// What to run.
pub struct Args {
    pub clients: Vec<usize>,
    pub seconds: u64,
    pub rounds: usize,
    pub workloads: Vec<Workload>,
    /// One contender for a fixed count of transactions (for profilers).
    pub only: Option<String>,
    pub transactions: u64,
}

fn fail(msg: &str) -> ! {
    eprintln!("{msg}");
    std::process::exit(2)
}

impl Args {
    pub fn parse() -> Args {
        let mut a = Args {
            clients: vec![8, 64],
            seconds: 5,
            rounds: 3,
            workloads: vec![Workload::Select, Workload::TpcB],
            only: None,
            transactions: 100_000,
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
                        .map(|w| match w {
                            "select" => Workload::Select,
                            "tpcb" | "read_write" => Workload::TpcB,
                            other => fail(&format!("unknown workload `{other}` (select, tpcb)")),
                        })
                        .collect();
                }
                "--only" => a.only = Some(value),
                other => fail(&format!(
                    "unknown flag `{other}` (--clients, --seconds, --rounds, --workload, --only, --transactions)"
                )),
            }
        }
        if a.clients.contains(&0) {
            fail("--clients: each count must be at least 1");
        }
        a
    }
}
