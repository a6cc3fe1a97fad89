//! What the history table says about each migration, beside the files: applied, pending,
//! missing (recorded, but no file), modified (the file changed since it was applied) or dirty
//! (failed part-way, or being applied outside a transaction right now).

use super::history::AppliedMigration;
use super::source::Migration;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// The state of one migration.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MigrationState {
    /// Applied, and its file has not changed since.
    Applied,
    /// Not applied yet.
    Pending,
    /// Recorded as applied, but no file has its version.
    Missing,
    /// Applied, but its file has changed since (another checksum).
    Modified,
    /// Failed part-way on an engine without transactional DDL, or being applied outside a
    /// transaction by a runner right now: resolve it with `Migrator::repair`.
    Dirty,
}

/// One migration's status (see [`crate::migrate::Migrator::status`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigrationStatus {
    /// The migration's version.
    pub version: i64,
    /// Its name.
    pub name: String,
    /// The file that applies on this engine (`None` for a missing migration).
    pub file: Option<String>,
    /// Its state.
    pub state: MigrationState,
    /// Its row in the history table, once applied (or dirty).
    pub applied: Option<AppliedMigration>,
}

/// The status of every migration, in version order.
pub(crate) fn merge(files: &[Migration], rows: &[AppliedMigration]) -> Vec<MigrationStatus> {
    let mut out: Vec<MigrationStatus> = files
        .iter()
        .map(|m| {
            let row = rows.iter().find(|r| r.version == m.version);
            let state = match row {
                None => MigrationState::Pending,
                Some(r) if !r.success => MigrationState::Dirty,
                Some(r) if r.checksum != m.checksum => MigrationState::Modified,
                Some(_) => MigrationState::Applied,
            };
            MigrationStatus {
                version: m.version,
                name: m.name.clone(),
                file: Some(m.file_name.clone()),
                state,
                applied: row.cloned(),
            }
        })
        .collect();
    for r in rows {
        if !files.iter().any(|m| m.version == r.version) {
            out.push(MigrationStatus {
                version: r.version,
                name: r.name.clone(),
                file: None,
                state: if r.success {
                    MigrationState::Missing
                } else {
                    MigrationState::Dirty
                },
                applied: Some(r.clone()),
            });
        }
    }
    out.sort_by_key(|s| s.version);
    out
}

/// The error of a dirty migration.
pub(crate) fn dirty_error(version: i64, name: &str, failed: Option<&str>) -> SqlMiddlewareDbError {
    let what = match failed {
        Some(stmt) => format!("it failed part-way at: {}", one_line(stmt)),
        None => "a runner started it and has not finished it (it may still be running, or it died)"
            .to_owned(),
    };
    SqlMiddlewareDbError::new(
        ErrorKind::TransactionState,
        format!(
            "migration {version} ({name}) is dirty: {what}; fix the database, then call Migrator::repair (or `sql-middleware migrate repair`) to mark it applied or to forget it"
        ),
    )
}

/// Refuses to go on past a dirty migration, and past a modified one unless `allow_modified`.
pub(crate) fn check(statuses: &[MigrationStatus], allow_modified: bool) -> Result<()> {
    for s in statuses {
        match s.state {
            MigrationState::Dirty => {
                let failed = s
                    .applied
                    .as_ref()
                    .and_then(|r| r.failed_statement.as_deref());
                return Err(dirty_error(s.version, &s.name, failed));
            }
            MigrationState::Modified if !allow_modified => {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "migration file {} has changed since it was applied (checksum differs); restore it, or opt out with Migrator::allow_modified",
                        s.file.as_deref().unwrap_or(&s.name)
                    ),
                ));
            }
            _ => {}
        }
    }
    Ok(())
}

/// A statement on one line, cut to a readable length, for messages.
pub(crate) fn one_line(stmt: &str) -> String {
    let flat: String = stmt.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > 200 {
        let cut: String = flat.chars().take(200).collect();
        format!("{cut}…")
    } else {
        flat
    }
}
