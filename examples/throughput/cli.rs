//! The command lines of the external contenders' binaries (`sqlx_throughput`,
//! `peers_throughput`): `--flag value` pairs in, checked the same way in each, and one JSON line
//! out. Each harness is a crate of its own, with its own lockfile, so it includes this file by
//! path, as it does `drive.rs`.

use std::str::FromStr;

/// One flag of a command line and its value (empty for a switch).
pub struct Flag {
    pub name: String,
    pub value: String,
}

impl Flag {
    /// The next flag of `it`, with its value; a flag named in `switches` takes none. A flag
    /// that needs a value and has none is an error.
    pub fn next(
        it: &mut impl Iterator<Item = String>,
        switches: &[&str],
    ) -> Option<Result<Flag, String>> {
        let name = it.next()?;
        if switches.contains(&name.as_str()) {
            return Some(Ok(Flag {
                name,
                value: String::new(),
            }));
        }
        Some(match it.next() {
            Some(value) => Ok(Flag { name, value }),
            None => Err(format!("{name} needs a value")),
        })
    }

    /// The error for a value that is not `what`.
    pub fn bad(&self, what: &str) -> String {
        format!("{}: `{}` is not {what}", self.name, self.value)
    }

    /// The value as a `T` that `ok` accepts, else the error saying it is not `what`.
    pub fn parse<T: FromStr>(&self, ok: impl Fn(&T) -> bool, what: &str) -> Result<T, String> {
        self.value
            .parse::<T>()
            .ok()
            .filter(|v| ok(v))
            .ok_or_else(|| self.bad(what))
    }
}

/// The value of a required flag, or the error saying it was not given.
pub fn required<T>(v: Option<T>, name: &str) -> Result<T, String> {
    v.ok_or_else(|| format!("{name} is required"))
}

/// The parsed command line, or (on an error) the error and `usage` on stderr and exit status 2.
pub fn or_usage<T>(bin: &str, parsed: Result<T, String>, usage: &str) -> T {
    parsed.unwrap_or_else(|msg| {
        eprintln!("{bin}: {msg}\n{usage}");
        std::process::exit(2)
    })
}

/// Ends a run of `label`: prints its JSON line (`ran` is that line and the transactions it
/// counted), or its error on stderr. A run that failed or completed no transaction exits with
/// status 1.
pub fn finish(bin: &str, label: &str, ran: Result<(String, u64), String>) {
    match ran {
        Ok((line, done)) => {
            println!("{line}");
            if done == 0 {
                eprintln!("{bin}: {label}: no transaction completed in the window");
                std::process::exit(1);
            }
        }
        Err(msg) => {
            eprintln!("{bin}: {label}: {msg}");
            std::process::exit(1);
        }
    }
}
