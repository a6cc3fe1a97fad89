//! Recovery on a SQLite connection: after a cancelled call, the recycle check (rolled back,
//! restored, or discarded when broken), and rolling back what an abandoned call left, off the
//! calling thread.

use super::conn::SqliteConn;
use super::offload::broken;
use crate::error::{Result, SqlMiddlewareDbError};
use crate::sqlite_family::session::Effects;

impl SqliteConn {
    /// After a cancelled operation outside a transaction: nothing may stay open.
    pub(super) async fn recover_after_cancel(&mut self) -> Result<()> {
        self.settle_stream().await;
        self.rollback_if_open();
        Ok(())
    }

    /// Recycle check: the connection must be present, not broken, and outside any transaction.
    pub(crate) fn make_clean(&mut self) -> Result<()> {
        self.stream_returned();
        self.rollback_if_open();
        if !self.conn_mut()?.is_autocommit() {
            return Err(broken());
        }
        // Settings are restored; attached databases and temporary objects cannot be, so a
        // connection that holds any is discarded (an in-memory database lives on in the pool's
        // keeper).
        let effects = std::mem::take(&mut self.session)
            .with(self.cell.take())
            .lasting();
        if effects == Effects::NONE {
            return Ok(());
        }
        let clean = !effects.discards()
            && self
                .restore_session(effects)
                .inspect_err(|_| self.broken = true)?;
        if !clean {
            self.broken = true;
            return Err(SqlMiddlewareDbError::new(
                crate::error::ErrorKind::ConnectionLost,
                "this SQLite connection holds session state a fresh one lacks (an attached database, temporary objects, or a setting the pool cannot put back); it is discarded",
            ));
        }
        Ok(())
    }

    /// A transaction was dropped without commit: it is rolled back off the calling thread (see
    /// [`Self::rollback_off_thread`]); the connection's next operation takes it back first.
    pub(super) fn abandon(&mut self) {
        self.stream_returned();
        if self.conn.is_none() {
            if self.returning.is_some() {
                // A dropped stream's worker still has it: rolled back when it comes back.
                self.abandoned = true;
            } else {
                self.broken = true;
            }
            return;
        }
        self.rollback_off_thread();
    }

    pub(super) fn rollback_if_open(&mut self) {
        let Some(c) = self.conn.as_mut() else {
            return;
        };
        if !c.is_autocommit() && c.execute_batch("ROLLBACK").is_err() {
            self.broken = true;
        }
    }

    /// Rolls back an open transaction on tokio's blocking pool, never on the calling thread:
    /// a rollback rewrites the pages a large transaction spilled to the database file (in
    /// rollback-journal mode, milliseconds for a few megabytes), and `Drop` must not block. The
    /// connection comes back through `self.returning`, as from a dropped stream's worker, and
    /// is discarded if the rollback failed. Outside any runtime it rolls back here.
    pub(super) fn rollback_off_thread(&mut self) {
        if self.conn.as_ref().is_none_or(|c| c.is_autocommit()) {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            self.rollback_if_open();
            return;
        };
        let Some(conn) = self.conn.take() else {
            return;
        };
        let (back, returning) = tokio::sync::oneshot::channel();
        drop(handle.spawn_blocking(move || {
            let failed = !conn.is_autocommit() && conn.execute_batch("ROLLBACK").is_err();
            let _ = back.send((conn, failed));
        }));
        self.returning = Some(returning);
    }
}
