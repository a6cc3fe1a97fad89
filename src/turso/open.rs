//! Opening a Turso connection and setting it up: a connection to the pool's database, Turso's
//! own busy handler off, foreign keys on, the fresh session settings, and the pool's
//! `after_connect` hook. `config.rs` keeps the settings and the manager.

use std::sync::Arc;

use super::config::TursoManager;
use super::conn::TursoConn;
use crate::error::Result;

impl TursoManager {
    /// The pool manager's `create`: opens and sets up a new connection.
    pub(super) async fn open_conn(&self) -> Result<Box<TursoConn>> {
        let conn = self.db.connect().map_err(super::error::map_err)?;
        // Turso's own busy handler spins an executor thread while it waits; the middleware
        // waits for locks itself, on the runtime's timer (see `busy.rs`), so it stays off.
        conn.busy_timeout(std::time::Duration::ZERO)
            .map_err(super::error::map_err)?;
        // Off by default in Turso, as in SQLite; the SQLite backend turns it on too.
        conn.execute("PRAGMA foreign_keys = ON", ())
            .await
            .map_err(super::error::map_err)?;
        if self.opts.read_only {
            // A single-writer pool's reader: a write through it fails with `ReadOnly`.
            conn.execute("PRAGMA query_only = 1", ())
                .await
                .map_err(super::error::map_err)?;
        }
        if self.opts.baseline.get().is_none() {
            let fresh = super::session::read_settings(&conn).await?;
            let _ = self.opts.baseline.set(fresh);
        }
        let mut conn = Box::new(TursoConn::new(conn, Arc::clone(&self.opts)));
        if self.opts.after_connect.is_set() {
            // Boxed: the hook's future must not grow every checkout's future.
            Box::pin(conn.set_up(&self.opts.after_connect)).await?;
        }
        Ok(conn)
    }
}

/// Gives a new, empty database (a new file, or one in memory) its first page, through one
/// connection, before the pool opens any: in Turso 0.8 two connections whose first writes race
/// to create that page trip an assertion in the pager (a panic on the caller's task). A database
/// that has pages is left as it is; an empty one gets its header with `user_version` written as
/// the 0 it already reads.
pub(super) async fn first_page(db: &turso::Database) -> Result<()> {
    use super::error::map_err;
    let conn = db.connect().map_err(map_err)?;
    let mut rows = conn.query("PRAGMA page_count", ()).await.map_err(map_err)?;
    let pages = match rows.next().await.map_err(map_err)? {
        Some(row) => row.get::<i64>(0).map_err(map_err)?,
        None => 0,
    };
    drop(rows);
    if pages == 0 {
        conn.execute("PRAGMA user_version = 0", ())
            .await
            .map_err(map_err)?;
    }
    Ok(())
}

crate::setup::setup_via_wing!(TursoConn, TursoConn::in_tx_now);

impl TursoConn {
    /// Runs the pool's `after_connect` hook on this new connection (see `setup.rs`). What the
    /// hook leaves is the session recycling puts the connection back to.
    pub(crate) async fn set_up(&mut self, hook: &crate::setup::AfterConnect) -> Result<()> {
        if hook.set_up(self).await? {
            self.fresh = Some(super::session::read_fresh(&self.conn).await?);
            self.session = 0;
        }
        Ok(())
    }

    /// Whether a transaction is open.
    async fn in_tx_now(&mut self) -> Result<bool> {
        Ok(!self.autocommit()?)
    }
}
