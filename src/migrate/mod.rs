//! Versioned SQL migrations (feature `migrate`): the [`Migrator`] applies the pending files of a
//! folder (read at run time, or embedded at compile time) in version order, exactly once however
//! many runners start at the same time, and records each in a history table with a checksum.
//!
//! ```no_run
//! # async fn demo(db: &sql_middleware::prelude::ConfigAndPool) -> Result<(), sql_middleware::SqlMiddlewareDbError> {
//! use sql_middleware::migrate::Migrator;
//!
//! let migrator = Migrator::from_dir("migrations")?;
//! let mut conn = db.get_connection().await?;
//! let report = migrator.run(&mut conn).await?;
//! println!("applied {} migrations", report.applied.len());
//! # Ok(()) }
//! ```
//!
//! The guide ([`crate::guide::migrations`]) describes the folder layout, what is atomic on
//! each engine, the lock, the command-line tool and how to move from other tools.

mod checksum;
mod history;
mod lock;
mod lock_table;
mod revert;
mod run;
mod source;
mod status;

use std::path::Path;
use std::time::{Duration, Instant};

use crate::connection::MiddlewarePoolConnection;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

pub use history::AppliedMigration;
pub use lock_table::{DEFAULT_LOCK_TTL, LockTable};
pub use source::NO_TRANSACTION;
/// The `.sql` files of a folder embedded at compile time (feature `derive`): see
/// [`Migrator::from_files`].
#[cfg(feature = "derive")]
pub use sql_middleware_derive::embed_migrations;
pub use status::{MigrationState, MigrationStatus};

use lock::LockSpec;
use source::{Migration, SourceFile};

/// The history table's name unless [`Migrator::table`] sets another.
pub const DEFAULT_TABLE: &str = "_sql_middleware_migrations";

/// How long a runner waits for the lock unless [`Migrator::lock_wait`] sets another.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(60);

/// What a run is doing, for progress output (see [`Migrator::on_event`]).
#[non_exhaustive]
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// A migration is about to be applied.
    Applying {
        /// Its version.
        version: i64,
        /// Its name.
        name: &'a str,
    },
    /// A migration is applied (by this runner, or by another one that held the lock first).
    Applied {
        /// Its version.
        version: i64,
        /// Its name.
        name: &'a str,
        /// How long this runner spent on it.
        took: Duration,
        /// Whether this runner applied it (`false`: another runner did, first).
        by_this_runner: bool,
    },
    /// A migration is about to be reverted with its down file.
    Reverting {
        /// Its version.
        version: i64,
        /// Its name.
        name: &'a str,
    },
    /// A migration is reverted.
    Reverted {
        /// Its version.
        version: i64,
        /// Its name.
        name: &'a str,
        /// How long it took.
        took: Duration,
    },
}

/// How [`Migrator::repair`] resolves a dirty migration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Repair {
    /// The rest of the migration was applied by hand: record it as applied (with the current
    /// file's checksum).
    MarkApplied,
    /// What the migration did was undone by hand: forget it, so that the next run applies it
    /// again.
    Forget,
}

/// What a run or a revert did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunReport {
    /// The versions this runner applied (or reverted), in order.
    pub applied: Vec<i64>,
    /// How long the whole call took.
    pub took: Duration,
}

type Listener = Box<dyn Fn(Event<'_>) + Send + Sync>;

/// The history, read under the lock once no migration is being applied outside a transaction by
/// another runner (a dirty row that stays past the lock's wait is returned as it is, and the
/// caller refuses it).
async fn read_settled(
    conn: &mut MiddlewarePoolConnection,
    spec: &LockSpec<'_>,
) -> Result<Vec<AppliedMigration>> {
    let deadline = Instant::now() + spec.wait;
    loop {
        let rows = run::until_done!(spec, at => run::read_locked(conn, spec, at));
        if rows.iter().all(|r| r.success) || Instant::now() >= deadline {
            return Ok(rows);
        }
        lock::pause(spec, deadline).await?;
    }
}

/// Applies, lists and reverts versioned SQL migrations; see the [module docs](self).
pub struct Migrator {
    files: Vec<SourceFile>,
    table: String,
    allow_modified: bool,
    lock_wait: Duration,
    lock_table: LockTable,
    lock_ttl: Duration,
    listener: Option<Listener>,
}

impl std::fmt::Debug for Migrator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Migrator")
            .field("files", &self.files.len())
            .field("table", &self.table)
            .field("allow_modified", &self.allow_modified)
            .field("lock_wait", &self.lock_wait)
            .field("lock_table", &self.lock_table)
            .finish()
    }
}

impl Migrator {
    fn with_files(files: Vec<SourceFile>) -> Self {
        Self {
            files,
            table: DEFAULT_TABLE.to_owned(),
            allow_modified: false,
            lock_wait: DEFAULT_LOCK_WAIT,
            lock_table: LockTable::Auto,
            lock_ttl: DEFAULT_LOCK_TTL,
            listener: None,
        }
    }

    /// A digest of every file (name and text) and of the history table's name: what names a
    /// database template built from these migrations.
    #[cfg(feature = "testing")]
    pub(crate) fn fingerprint(&self) -> String {
        let mut all = self.table.clone();
        for f in &self.files {
            all.push('\0');
            all.push_str(&f.file_name);
            all.push('\0');
            all.push_str(&f.text);
        }
        checksum::checksum(&all)
    }

    /// The migrations of the folder `dir`, read now: `<version>_<name>.sql`, optional
    /// `.<engine>.sql` files that win on their engine, optional `.down.sql` files. Files not
    /// ending in `.sql` are ignored; a `.sql` file named otherwise is an error.
    pub fn from_dir(dir: impl AsRef<Path>) -> Result<Self> {
        source::from_dir(dir.as_ref()).map(Self::with_files)
    }

    /// The migrations given as `(file name, text)` pairs, named as in a folder: what
    /// `embed_migrations!("migrations")` (feature `derive`; the folder is relative to the
    /// crate's `Cargo.toml`) or a list of `include_str!` gives:
    ///
    /// ```no_run
    /// # fn demo() -> Result<(), sql_middleware::SqlMiddlewareDbError> {
    /// use sql_middleware::migrate::Migrator;
    ///
    /// let migrator = Migrator::from_files([
    ///     ("0001_users.sql", "CREATE TABLE users (id BIGINT PRIMARY KEY);"),
    ///     ("0001_users.down.sql", "DROP TABLE users;"),
    /// ])?;
    /// # Ok(()) }
    /// ```
    pub fn from_files<'a>(files: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self> {
        source::from_pairs(files).map(Self::with_files)
    }

    /// Keeps the history in `table` instead of [`DEFAULT_TABLE`] (letters, digits and `_`).
    pub fn table(mut self, table: &str) -> Result<Self> {
        history::check_table(table)?;
        self.table = table.to_owned();
        Ok(self)
    }

    /// Lets a run go on when an applied migration's file has changed (by default it refuses,
    /// naming the file).
    pub fn allow_modified(mut self, allow: bool) -> Self {
        self.allow_modified = allow;
        self
    }

    /// How long a runner waits for another runner's lock before it fails with
    /// [`ErrorKind::Busy`] (default [`DEFAULT_LOCK_WAIT`]).
    pub fn lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }

    /// On MySQL and MariaDB, whether runners are kept apart by a lock table instead of the
    /// server's named lock (`GET_LOCK`), which is per node on a Galera cluster. By default
    /// ([`LockTable::Auto`]) the lock table is used where the server is a Galera node.
    pub fn lock_table(mut self, mode: LockTable) -> Self {
        self.lock_table = mode;
        self
    }

    /// How long the lock table's lock lasts unless renewed (after each migration; default
    /// [`DEFAULT_LOCK_TTL`]): past it, another runner takes over from one that died. Keep it
    /// longer than the longest migration.
    pub fn lock_ttl(mut self, ttl: Duration) -> Self {
        self.lock_ttl = ttl;
        self
    }

    /// Calls `f` as each migration is applied or reverted (for progress output).
    pub fn on_event(mut self, f: impl Fn(Event<'_>) + Send + Sync + 'static) -> Self {
        self.listener = Some(Box::new(f));
        self
    }

    pub(crate) fn tell(&self, e: Event<'_>) {
        if let Some(f) = &self.listener {
            f(e);
        }
    }

    fn spec(&self, conn: &MiddlewarePoolConnection) -> LockSpec<'_> {
        LockSpec {
            table: &self.table,
            lock: conn.migrate_rules().lock,
            wait: self.lock_wait,
        }
    }

    fn migrations(&self, conn: &MiddlewarePoolConnection) -> Result<Vec<Migration>> {
        source::resolve(&self.files, conn.migrate_rules().suffixes)
    }

    /// Applies the pending migrations in version order and returns the versions this runner
    /// applied. Refuses to start when a migration is dirty, or when an applied migration's file
    /// has changed (unless [`Self::allow_modified`]).
    pub async fn run(&self, conn: &mut MiddlewarePoolConnection) -> Result<RunReport> {
        let started = Instant::now();
        let all = self.migrations(conn)?;
        let rules = conn.migrate_rules();
        let spec = self.spec(conn);
        let applied = if !rules.transactional_ddl {
            let held = self.acquire(conn, &spec).await?;
            let r = self.run_in_session(conn, &spec, &held, &all).await;
            let released = lock::release_session(conn, &spec, &held).await;
            let applied = r?;
            released?;
            applied
        } else {
            let rows = read_settled(conn, &spec).await?;
            let list = self.pending(&all, &rows)?;
            run::apply_transactional(self, conn, &spec, &list).await?
        };
        Ok(RunReport {
            applied,
            took: started.elapsed(),
        })
    }

    async fn acquire(
        &self,
        conn: &mut MiddlewarePoolConnection,
        spec: &LockSpec<'_>,
    ) -> Result<lock::SessionLock> {
        lock::acquire_session(conn, spec, self.lock_table, self.lock_ttl).await
    }

    async fn run_in_session(
        &self,
        conn: &mut MiddlewarePoolConnection,
        spec: &LockSpec<'_>,
        held: &lock::SessionLock,
        all: &[Migration],
    ) -> Result<Vec<i64>> {
        history::ensure(conn, &self.table).await?;
        let rows = history::read(conn, &self.table).await?;
        let list = self.pending(all, &rows)?;
        run::apply_in_session(self, conn, spec, held, &list).await
    }

    /// The migrations to apply, after the checks against the history.
    fn pending<'m>(
        &self,
        all: &'m [Migration],
        rows: &[AppliedMigration],
    ) -> Result<Vec<&'m Migration>> {
        status::check(&status::merge(all, rows), self.allow_modified)?;
        Ok(all
            .iter()
            .filter(|m| !rows.iter().any(|r| r.version == m.version))
            .collect())
    }

    /// Every migration with its state: applied, pending, missing, modified or dirty. Reads the
    /// history without taking the lock; a database without the history table has every
    /// migration pending.
    pub async fn status(
        &self,
        conn: &mut MiddlewarePoolConnection,
    ) -> Result<Vec<MigrationStatus>> {
        let all = self.migrations(conn)?;
        let rows = match history::read(conn, &self.table).await {
            Ok(rows) => rows,
            Err(e) if e.kind() == ErrorKind::UndefinedObject => Vec::new(),
            Err(e) => return Err(e),
        };
        Ok(status::merge(&all, &rows))
    }

    /// Reverts the applied migrations newer than `version`, newest first, with their down
    /// files (`revert_to(0)` reverts them all). Refuses before reverting anything when one of
    /// them has no down file or no file at all, or when a migration is dirty.
    pub async fn revert_to(
        &self,
        conn: &mut MiddlewarePoolConnection,
        version: i64,
    ) -> Result<RunReport> {
        let started = Instant::now();
        let all = self.migrations(conn)?;
        let rules = conn.migrate_rules();
        let spec = self.spec(conn);
        let held = if rules.transactional_ddl {
            None
        } else {
            Some(self.acquire(conn, &spec).await?)
        };
        let r = self
            .revert_locked(conn, &spec, &all, version, held.as_ref())
            .await;
        if let Some(held) = &held {
            let released = lock::release_session(conn, &spec, held).await;
            let reverted = r?;
            released?;
            return Ok(RunReport {
                applied: reverted,
                took: started.elapsed(),
            });
        }
        Ok(RunReport {
            applied: r?,
            took: started.elapsed(),
        })
    }

    async fn revert_locked(
        &self,
        conn: &mut MiddlewarePoolConnection,
        spec: &LockSpec<'_>,
        all: &[Migration],
        version: i64,
        held: Option<&lock::SessionLock>,
    ) -> Result<Vec<i64>> {
        let rows = if held.is_some() {
            history::ensure(conn, &self.table).await?;
            history::read(conn, &self.table).await?
        } else {
            read_settled(conn, spec).await?
        };
        revert::refuse_dirty(&rows)?;
        let mut list = Vec::new();
        for r in rows.iter().rev().filter(|r| r.version > version) {
            let m = all.iter().find(|m| m.version == r.version).ok_or_else(|| {
                SqlMiddlewareDbError::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "migration {} ({}) is applied but has no file, so it cannot be reverted",
                        r.version, r.name
                    ),
                )
            })?;
            revert::down_of(m)?;
            list.push(m);
        }
        if let Some(held) = held {
            revert::revert_in_session(self, conn, spec, held, &list).await
        } else {
            revert::revert_transactional(self, conn, spec, &list).await
        }
    }

    /// Resolves the dirty migration `version` (one that failed part-way on an engine without
    /// transactional DDL, or whose runner died outside a transaction), once the database has
    /// been fixed by hand: [`Repair::MarkApplied`] or [`Repair::Forget`].
    pub async fn repair(
        &self,
        conn: &mut MiddlewarePoolConnection,
        version: i64,
        how: Repair,
    ) -> Result<()> {
        let all = self.migrations(conn)?;
        let sum = all
            .iter()
            .find(|m| m.version == version)
            .map(|m| m.checksum.clone());
        let spec = self.spec(conn);
        if !conn.migrate_rules().transactional_ddl {
            let held = self.acquire(conn, &spec).await?;
            let r = revert::repair_row(conn, &self.table, version, how, sum.as_deref()).await;
            let released = lock::release_session(conn, &spec, &held).await;
            r?;
            released
        } else {
            revert::repair_in_tx(conn, &spec, version, how, sum.as_deref()).await
        }
    }
}
