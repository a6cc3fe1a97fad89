//! The command line: `migrate add|run|status|revert|repair` and their options.

use std::path::PathBuf;
use std::time::Duration;

/// The usage text, printed for `--help` and after a usage error.
pub const USAGE: &str = "\
usage: sql-middleware migrate <command> [options]

commands:
  add <name> [--down]              create the next migration file (and its down file)
  run [--allow-modified]           apply the pending migrations
  status                           list applied, pending, missing, modified and dirty migrations
  revert [--to VERSION]            revert the latest migration, or every one newer than VERSION
  repair <VERSION> (--mark-applied | --forget)
                                   resolve a dirty migration once the database is fixed by hand

options:
  --dir DIR                        the migrations folder (default: migrations)
  --database-url URL               the database (default: the DATABASE_URL environment variable)
  --table NAME                     the history table (default: _sql_middleware_migrations)
  --lock-wait SECONDS              how long to wait for another runner's lock (default: 60)

URLs: postgres://…, sqlite://FILE, turso://FILE, mysql://… (or mariadb://…)";

/// What to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// Create the next migration file.
    Add { name: String, down: bool },
    /// Apply the pending migrations.
    Run { allow_modified: bool },
    /// List the migrations and their states.
    Status,
    /// Revert down to a version (`None`: the latest migration only).
    Revert { to: Option<i64> },
    /// Resolve a dirty migration.
    Repair { version: i64, mark_applied: bool },
    /// Print the usage.
    Help,
}

/// The command with its options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    /// The command.
    pub command: Command,
    /// The migrations folder.
    pub dir: PathBuf,
    /// `--database-url`, if given.
    pub url: Option<String>,
    /// `--table`, if given.
    pub table: Option<String>,
    /// `--lock-wait`, if given.
    pub lock_wait: Option<Duration>,
}

fn number(flag: &str, v: Option<String>) -> Result<i64, String> {
    let v = v.ok_or_else(|| format!("{flag} needs a value"))?;
    v.parse()
        .map_err(|_| format!("{flag} takes a whole number, not {v:?}"))
}

/// Parses the arguments after the program's name.
pub fn parse(args: impl IntoIterator<Item = String>) -> Result<Args, String> {
    let mut it = args.into_iter();
    match it.next().as_deref() {
        Some("migrate") => {}
        Some("-h" | "--help" | "help") | None => {
            return Ok(Args {
                command: Command::Help,
                dir: PathBuf::from("migrations"),
                url: None,
                table: None,
                lock_wait: None,
            });
        }
        Some(other) => return Err(format!("unknown command {other:?} (only `migrate` is)")),
    }
    let sub = it.next().ok_or("`migrate` needs a command")?;
    let (mut dir, mut url, mut table, mut lock_wait) = (None, None, None, None);
    let (mut down, mut allow_modified, mut to) = (false, false, None);
    let (mut mark_applied, mut forget) = (false, false);
    let mut positional = Vec::new();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--dir" => dir = Some(it.next().ok_or("--dir needs a value")?),
            "--database-url" => url = Some(it.next().ok_or("--database-url needs a value")?),
            "--table" => table = Some(it.next().ok_or("--table needs a value")?),
            "--lock-wait" => {
                let secs = number("--lock-wait", it.next())?;
                let secs = u64::try_from(secs).map_err(|_| "--lock-wait cannot be negative")?;
                lock_wait = Some(Duration::from_secs(secs));
            }
            "--down" if sub == "add" => down = true,
            "--allow-modified" if sub == "run" => allow_modified = true,
            "--to" if sub == "revert" => to = Some(number("--to", it.next())?),
            "--mark-applied" if sub == "repair" => mark_applied = true,
            "--forget" if sub == "repair" => forget = true,
            "-h" | "--help" => positional.push("--help".to_owned()),
            f if f.starts_with('-') => return Err(format!("unknown option {f:?} for `{sub}`")),
            _ => positional.push(a),
        }
    }
    let command = if positional.iter().any(|p| p == "--help") {
        Command::Help
    } else {
        match (sub.as_str(), positional.as_slice()) {
            ("add", [name]) => Command::Add {
                name: name.clone(),
                down,
            },
            ("add", _) => return Err("`add` takes one name".into()),
            ("run", []) => Command::Run { allow_modified },
            ("status", []) => Command::Status,
            ("revert", []) => Command::Revert { to },
            ("repair", [v]) => {
                if mark_applied == forget {
                    return Err("`repair` needs one of --mark-applied and --forget".into());
                }
                Command::Repair {
                    version: number("the version", Some(v.clone()))?,
                    mark_applied,
                }
            }
            ("repair", _) => return Err("`repair` takes one version".into()),
            ("run" | "status" | "revert", _) => {
                return Err(format!("`{sub}` takes no arguments"));
            }
            _ => return Err(format!("unknown migrate command {sub:?}")),
        }
    };
    Ok(Args {
        command,
        dir: PathBuf::from(dir.unwrap_or_else(|| "migrations".into())),
        url,
        table,
        lock_wait,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Args, String> {
        parse(s.split_whitespace().map(str::to_owned))
    }

    #[test]
    fn commands_parse() {
        let a = p("migrate add users --down --dir db").unwrap();
        assert_eq!(
            a.command,
            Command::Add {
                name: "users".into(),
                down: true
            }
        );
        assert_eq!(a.dir, PathBuf::from("db"));
        assert_eq!(
            p("migrate revert --to 3").unwrap().command,
            Command::Revert { to: Some(3) }
        );
        assert_eq!(
            p("migrate repair 2 --forget").unwrap().command,
            Command::Repair {
                version: 2,
                mark_applied: false
            }
        );
        assert_eq!(
            p("migrate run --lock-wait 5").unwrap().lock_wait,
            Some(Duration::from_secs(5))
        );
        for bad in [
            "migrate",
            "migrate run x",
            "migrate repair 2",
            "migrate add",
            "migrate run --down",
            "migrate revert --to x",
            "other",
        ] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }
}
