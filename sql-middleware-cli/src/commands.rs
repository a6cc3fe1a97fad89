//! The `migrate` commands, on the `Migrator` of sql-middleware. Each returns what to print, or
//! an error message; nothing printed ever holds the database URL.

use std::path::Path;

use sql_middleware::SqlMiddlewareDbError;
use sql_middleware::migrate::{Event, MigrationState, Migrator, Repair};
use sql_middleware::prelude::*;

use crate::args::{Args, Command};

/// A failure, as the user reads it.
pub type Failure = String;

fn db_error(what: &str, e: &SqlMiddlewareDbError) -> Failure {
    format!("{what}: {} ({:?})", e.message(), e.kind())
}

/// Runs the command.
pub async fn run(args: Args) -> Result<(), Failure> {
    match &args.command {
        Command::Help => {
            println!("{}", crate::args::USAGE);
            Ok(())
        }
        Command::Add { name, down } => add(&args.dir, name, *down),
        _ => with_database(&args).await,
    }
}

/// The next version in `dir` (one more than the highest), with the migration files named.
fn next_version(dir: &Path) -> Result<i64, Failure> {
    let mut max = 0;
    match std::fs::read_dir(dir) {
        Ok(entries) => {
            for e in entries {
                let e = e.map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
                let name = e.file_name().to_string_lossy().into_owned();
                let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
                if let (true, Ok(v)) = (name.ends_with(".sql"), digits.parse::<i64>()) {
                    max = max.max(v);
                }
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot read {}: {e}", dir.display())),
    }
    max.checked_add(1)
        .ok_or_else(|| "the highest version is already the largest number".to_owned())
}

fn add(dir: &Path, name: &str, down: bool) -> Result<(), Failure> {
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "the name {name:?} must be letters, digits, `_` or `-`"
        ));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let version = next_version(dir)?;
    let up = dir.join(format!("{version:04}_{name}.sql"));
    let mut made = vec![up.clone()];
    if down {
        made.push(dir.join(format!("{version:04}_{name}.down.sql")));
    }
    for (i, path) in made.iter().enumerate() {
        let body = if i == 0 {
            format!("-- Migration {version:04}: {name}\n")
        } else {
            format!("-- Revert migration {version:04}: {name}\n")
        };
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .and_then(|mut f| std::io::Write::write_all(&mut f, body.as_bytes()))
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        println!("created {}", path.display());
    }
    Ok(())
}

fn progress(e: Event<'_>) {
    match e {
        Event::Applying { version, name } => println!("applying {version:04} {name} …"),
        Event::Applied {
            version,
            name,
            took,
            by_this_runner,
        } => {
            let who = if by_this_runner {
                "applied"
            } else {
                "already applied by another runner"
            };
            println!("{who} {version:04} {name} ({} ms)", took.as_millis());
        }
        Event::Reverting { version, name } => println!("reverting {version:04} {name} …"),
        Event::Reverted {
            version,
            name,
            took,
        } => {
            println!("reverted {version:04} {name} ({} ms)", took.as_millis());
        }
        _ => {}
    }
}

async fn with_database(args: &Args) -> Result<(), Failure> {
    let url = match &args.url {
        Some(u) => u.clone(),
        None => std::env::var("DATABASE_URL").map_err(|_| {
            "no database: set DATABASE_URL (or pass --database-url), e.g. sqlite://app.db, postgres://user@host/db, mysql://user@host/db, turso://app.db".to_owned()
        })?,
    };
    if !args.dir.is_dir() {
        return Err(format!(
            "no migrations folder {} (create one with `sql-middleware migrate add <name>`, or pass --dir)",
            args.dir.display()
        ));
    }
    let mut m = Migrator::from_dir(&args.dir)
        .map_err(|e| db_error("cannot read the migrations", &e))?
        .on_event(progress);
    if let Some(t) = &args.table {
        m = m.table(t).map_err(|e| db_error("bad --table", &e))?;
    }
    if let Some(w) = args.lock_wait {
        m = m.lock_wait(w);
    }
    let db = ConfigAndPool::from_url(&url)
        .map_err(|e| db_error("bad DATABASE_URL", &e))?
        .max_size(1)
        .build()
        .await
        .map_err(|e| db_error("cannot open the database", &e))?;
    let mut conn = db
        .get_connection()
        .await
        .map_err(|e| db_error("cannot connect to the database", &e))?;
    match args.command {
        Command::Run { allow_modified } => {
            let report = m
                .allow_modified(allow_modified)
                .run(&mut conn)
                .await
                .map_err(|e| db_error("migrate run failed", &e))?;
            println!(
                "{} applied in {} ms",
                count(report.applied.len()),
                report.took.as_millis()
            );
        }
        Command::Status => status(&m, &mut conn).await?,
        Command::Revert { to } => {
            let to = match to {
                Some(v) => v,
                None => latest_but_one(&m, &mut conn).await?,
            };
            let report = m
                .revert_to(&mut conn, to)
                .await
                .map_err(|e| db_error("migrate revert failed", &e))?;
            println!(
                "{} reverted in {} ms",
                count(report.applied.len()),
                report.took.as_millis()
            );
        }
        Command::Repair {
            version,
            mark_applied,
        } => {
            let how = if mark_applied {
                Repair::MarkApplied
            } else {
                Repair::Forget
            };
            m.repair(&mut conn, version, how)
                .await
                .map_err(|e| db_error("migrate repair failed", &e))?;
            println!(
                "repaired {version:04} ({})",
                if mark_applied {
                    "marked applied"
                } else {
                    "forgotten"
                }
            );
        }
        Command::Help | Command::Add { .. } => {}
    }
    Ok(())
}

fn count(n: usize) -> String {
    if n == 1 {
        "1 migration".into()
    } else {
        format!("{n} migrations")
    }
}

async fn status(m: &Migrator, conn: &mut MiddlewarePoolConnection) -> Result<(), Failure> {
    let list = m
        .status(conn)
        .await
        .map_err(|e| db_error("migrate status failed", &e))?;
    if list.is_empty() {
        println!("no migrations");
    }
    for s in &list {
        let state = match s.state {
            MigrationState::Applied => "applied",
            MigrationState::Pending => "pending",
            MigrationState::Missing => "missing (no file)",
            MigrationState::Modified => "modified (file changed since applied)",
            MigrationState::Dirty => "DIRTY (see `migrate repair`)",
            _ => "unknown",
        };
        let when = s
            .applied
            .as_ref()
            .filter(|r| r.success)
            .map(|r| format!("  {} ({} ms)", r.applied_at, r.duration_ms))
            .unwrap_or_default();
        println!("{:04} {:<32} {state}{when}", s.version, s.name);
        if let Some(stmt) = s
            .applied
            .as_ref()
            .and_then(|r| r.failed_statement.as_deref())
        {
            println!(
                "     failed at: {}",
                stmt.split_whitespace().collect::<Vec<_>>().join(" ")
            );
        }
    }
    Ok(())
}

/// The version to revert to so that only the latest applied migration goes.
async fn latest_but_one(m: &Migrator, conn: &mut MiddlewarePoolConnection) -> Result<i64, Failure> {
    let list = m
        .status(conn)
        .await
        .map_err(|e| db_error("migrate status failed", &e))?;
    let applied: Vec<i64> = list
        .iter()
        .filter(|s| s.applied.is_some())
        .map(|s| s.version)
        .collect();
    match applied.as_slice() {
        [] => Err("nothing to revert: no migration is applied".into()),
        [.., prev, _] => Ok(*prev),
        [_] => Ok(0),
    }
}
