//! The throughput examples' report: per workload and client count, each contender's median
//! transactions per second over the rounds, and the median of the per-round ratios of the
//! crate to each other contender; printed, and saved as JSON under
//! `<CRITERION_HOME>/throughput/<engine>.json` for the benchmark report.

/// One workload at one client count.
pub struct Line {
    workload: &'static str,
    clients: usize,
    contenders: Vec<&'static str>,
    /// Median tps per contender.
    median: Vec<f64>,
    /// Median over the rounds of middleware ÷ contender, per contender.
    ratio: Vec<f64>,
    rounds: usize,
    /// A count per contender summed over the rounds (SQLite's `Busy` errors, MySQL's retried
    /// deadlocks), under its name.
    errors: Option<(&'static str, Vec<u64>)>,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

impl Line {
    /// `rounds[r][i]`: contender `i`'s tps in round `r`; the crate is the contender named
    /// `middleware`.
    pub fn new(
        workload: &'static str,
        clients: usize,
        contenders: &[&'static str],
        rounds: &[Vec<f64>],
    ) -> Line {
        let n = contenders.len();
        let mw = contenders
            .iter()
            .position(|c| *c == "middleware")
            .expect("a middleware contender");
        Line {
            workload,
            clients,
            contenders: contenders.to_vec(),
            median: (0..n)
                .map(|i| median(rounds.iter().map(|r| r[i]).collect()))
                .collect(),
            ratio: (0..n)
                .map(|i| median(rounds.iter().map(|r| r[mw] / r[i]).collect()))
                .collect(),
            rounds: rounds.len(),
            errors: None,
        }
    }

    /// One entry per contender, `f(name, value)` in the order of [`Line::new`]'s contenders,
    /// joined with commas; `f` may leave a contender out (`None`).
    fn each<T, S: Into<Option<String>>>(&self, values: &[T], f: impl Fn(&str, &T) -> S) -> String {
        let parts: Vec<String> = self
            .contenders
            .iter()
            .zip(values)
            .filter_map(|(c, v)| f(c, v).into())
            .collect();
        parts.join(", ")
    }

    /// The line with a count per contender (in the order of [`Line::new`]'s contenders),
    /// printed and saved under `kind`.
    pub fn with_errors(mut self, kind: &'static str, counts: &[u64]) -> Line {
        assert_eq!(counts.len(), self.contenders.len(), "a count per contender");
        self.errors = Some((kind, counts.to_vec()));
        self
    }
}

/// Prints the lines and writes them to `<CRITERION_HOME>/throughput/<engine>.json`.
pub fn print_and_save(engine: &str, settings: &str, lines: &[Line]) {
    println!(
        "{engine} throughput, transactions per second (median of the rounds); server {settings}"
    );
    let mut json = Vec::new();
    for l in lines {
        let sides = l.each(&l.median, |c, t| format!("{c} {t:.0}"));
        let ratios = l.each(&l.ratio, |c, r| {
            (c != "middleware").then(|| format!("middleware ÷ {c} {r:.3}×"))
        });
        let (errors, errors_json) = match &l.errors {
            Some((kind, n)) => (
                format!("; {kind}: {}", l.each(n, |c, n| format!("{c} {n}"))),
                format!(
                    ", \"{kind}\": {{{}}}",
                    l.each(n, |c, n| format!("\"{c}\": {n}"))
                ),
            ),
            None => (String::new(), String::new()),
        };
        println!(
            "  {} C={}: {sides} | {ratios} ({} rounds){errors}",
            l.workload, l.clients, l.rounds
        );
        json.push(format!(
            "{{\"workload\": \"{}\", \"clients\": {}, \"rounds\": {}, \"contenders\": [{}], \"tps\": {{{}}}, \"middleware_ratio\": {{{}}}{errors_json}}}",
            l.workload,
            l.clients,
            l.rounds,
            l.contenders
                .iter()
                .map(|c| format!("\"{c}\""))
                .collect::<Vec<_>>()
                .join(", "),
            l.each(&l.median, |c, t| format!("\"{c}\": {t:.1}")),
            l.each(&l.ratio, |c, r| format!("\"{c}\": {r:.4}")),
        ));
    }
    let home = std::env::var("CRITERION_HOME").unwrap_or_else(|_| "bench_results".to_owned());
    let dir = std::path::Path::new(&home).join("throughput");
    let file = dir.join(format!("{engine}.json"));
    let body = format!(
        "{{\"engine\": \"{engine}\", \"server\": \"{}\", \"lines\": [\n  {}\n]}}\n",
        settings.replace('"', "'"),
        json.join(",\n  ")
    );
    match std::fs::create_dir_all(&dir).and_then(|()| std::fs::write(&file, body)) {
        Ok(()) => println!("wrote {}", file.display()),
        Err(e) => eprintln!("could not write {}: {e}", file.display()),
    }
}
