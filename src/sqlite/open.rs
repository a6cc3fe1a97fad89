//! Opening a SQLite connection and setting it up: the database file (or the pool's in-memory
//! database), the authorizer, busy and progress handlers, the pragmas, the fresh session state,
//! and the pool's `after_connect` hook. `config.rs` keeps the settings and the manager.

use std::sync::Arc;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};

use super::busy::{BusyScope, install_busy_handler};
use super::config::{SqliteManager, SqliteOptions};
use super::conn::SqliteConn;
use super::error::map_err;
use super::offload::ProgressState;
use super::session::{Fresh, SessionCell, install_authorizer};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::sqlite_family::session::Effects;

impl SqliteManager {
    /// The pool manager's `create`: opens and sets up a new connection.
    pub(super) async fn open_conn(&self) -> Result<Box<SqliteConn>> {
        let path = self.path.clone();
        let flags = self.flags;
        let opts = Arc::clone(&self.opts);
        // Opening touches the file system (and may recover a WAL): keep it off the async thread.
        let mut conn = match tokio::runtime::Handle::try_current() {
            Ok(handle) => handle
                .spawn_blocking(move || Self::open_retrying(&path, flags, &opts).map(Box::new))
                .await
                .map_err(|e| {
                    SqlMiddlewareDbError::new(
                        ErrorKind::Other,
                        format!("opening the SQLite connection failed: {e}"),
                    )
                })??,
            Err(_) => Self::open_retrying(&path, flags, &opts).map(Box::new)?,
        };
        if self.opts.after_connect.is_set() {
            // Boxed: the hook's future must not grow every checkout's future.
            Box::pin(conn.set_up(&self.opts.after_connect)).await?;
        }
        Ok(conn)
    }

    /// [`Self::open`], tried again while the database is busy, until the busy timeout.
    ///
    /// SQLite does not always call the busy handler: a connection that opens while another one
    /// closes the last handle on a WAL database (and checkpoints it), or while the WAL index is
    /// being recovered, can get `SQLITE_BUSY` at once. A checkout must not fail for that, so the
    /// whole open is retried on its blocking thread, with a short, growing sleep.
    fn open_retrying(
        path: &str,
        flags: OpenFlags,
        opts: &Arc<SqliteOptions>,
    ) -> Result<SqliteConn> {
        let deadline = std::time::Instant::now() + opts.busy_timeout;
        let mut pause = Duration::from_millis(1);
        loop {
            match Self::open(path, flags, opts) {
                // A new connection holds no transaction: a lock SQLite refused at once is a
                // race that passes, like any lock wait.
                Err(e) if matches!(e.kind(), ErrorKind::Busy | ErrorKind::SerializationFailure) => {
                    let e = e.with_kind(ErrorKind::Busy);
                    let now = std::time::Instant::now();
                    if now >= deadline {
                        return Err(e);
                    }
                    std::thread::sleep(pause.min(deadline - now));
                    pause = (pause * 2).min(Duration::from_millis(50));
                }
                // A read-only database that cannot be set up is a configuration error.
                r => return r.map_err(super::error::at_open),
            }
        }
    }

    fn open(path: &str, flags: OpenFlags, opts: &Arc<SqliteOptions>) -> Result<SqliteConn> {
        let conn = Connection::open_with_flags(path, flags).map_err(super::error::map_err)?;
        // First, so that configuring the connection expires no prepared statement later.
        let cell = Arc::new(SessionCell::default());
        install_authorizer(&conn, &cell)?;
        install_busy_handler(&conn)?;
        // Switching to WAL may wait for another connection's lock: allow the busy timeout.
        let _scope =
            BusyScope::set(u64::try_from(opts.busy_timeout.as_millis()).unwrap_or(u64::MAX));
        if opts.wal {
            let mode: String = conn
                .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
                .map_err(super::error::map_err)?;
            if !mode.eq_ignore_ascii_case("wal") && !mode.eq_ignore_ascii_case("memory") {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::Config,
                    format!("could not switch the database to WAL (journal_mode is {mode})"),
                ));
            }
        }
        conn.execute_batch(if opts.foreign_keys {
            "PRAGMA foreign_keys=ON"
        } else {
            "PRAGMA foreign_keys=OFF"
        })
        .map_err(super::error::map_err)?;
        conn.set_prepared_statement_cache_capacity(opts.statement_cache_capacity);
        let syncing_commits = !opts.in_memory && commits_sync(&conn)?;
        let sync_level: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .map_err(super::error::map_err)?;
        let progress = ProgressState::install(&conn)?;
        let fresh = match opts.fresh.get() {
            Some(f) => Arc::clone(f),
            None => {
                let f = Arc::new(Fresh::read(&conn)?);
                Arc::clone(opts.fresh.get_or_init(|| f))
            }
        };
        // What configuring the connection did is the fresh session, not a borrower's change.
        cell.take();
        Ok(SqliteConn::new(
            conn,
            progress,
            Arc::clone(opts),
            (syncing_commits, sync_level),
            (cell, fresh),
        ))
    }
}

/// Whether every commit on this file database waits for the disk (an fsync): true unless
/// `synchronous` is `OFF`, or `NORMAL` in WAL mode (which syncs only at checkpoints).
pub(super) fn commits_sync(conn: &Connection) -> Result<bool> {
    let level: i64 = conn
        .query_row("PRAGMA synchronous", [], |r| r.get(0))
        .map_err(super::error::map_err)?;
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .map_err(super::error::map_err)?;
    let wal = mode.eq_ignore_ascii_case("wal");
    Ok(match level {
        0 => false,
        1 => !wal,
        _ => !mode.eq_ignore_ascii_case("memory") && !mode.eq_ignore_ascii_case("off"),
    })
}

crate::setup::setup_via_wing!(SqliteConn, SqliteConn::in_tx_now);

impl SqliteConn {
    /// Whether a transaction is open (after taking the connection back from a stream's worker).
    async fn in_tx_now(&mut self) -> Result<bool> {
        if self.returning.is_some() {
            self.settle_stream().await;
        }
        Ok(!self.conn_mut()?.is_autocommit())
    }

    /// Runs the pool's `after_connect` hook on this new connection (see `setup.rs`). What the
    /// hook leaves is the session recycling puts the connection back to (this connection's own
    /// [`Fresh`]).
    pub(crate) async fn set_up(&mut self, hook: &crate::setup::AfterConnect) -> Result<()> {
        if !hook.set_up(self).await? {
            return Ok(());
        }
        let in_memory = self.opts.in_memory;
        let c = self.conn_mut()?;
        // The pool's own lock waiting (a `PRAGMA busy_timeout` replaces it), and the commit
        // policy and `synchronous` level of the session as the hook left it.
        install_busy_handler(c)?;
        let syncing_commits = !in_memory && commits_sync(c)?;
        let sync_level: i64 = c
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .map_err(map_err)?;
        let fresh = Arc::new(Fresh::read(c)?);
        (self.syncing_commits, self.sync_level, self.fresh) = (syncing_commits, sync_level, fresh);
        self.session = Effects::NONE;
        self.cell.take();
        Ok(())
    }
}
