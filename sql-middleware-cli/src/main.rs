//! `sql-middleware`: the command-line tool of sql-middleware. `sql-middleware migrate add`,
//! `run`, `status`, `revert` and `repair` manage versioned SQL migrations on SQLite,
//! PostgreSQL, Turso and MySQL/MariaDB; the database comes from `DATABASE_URL`. Every failure
//! prints a message on standard error and exits non-zero (2 for a usage error, 1 otherwise).

#![forbid(unsafe_code)]

mod args;
mod commands;

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}\n\n{}", args::USAGE);
            return ExitCode::from(2);
        }
    };
    match commands::run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
