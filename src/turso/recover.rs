//! Recovery on a Turso connection: after a cancelled call, settling what an abandoned call or
//! a dropped transaction left before the next use, the recycle check (rolled back, restored,
//! or discarded), and rolling back a dropped transaction off the calling thread.

use super::conn::TursoConn;
use super::error::map_err;
use super::session::{DISCARD, VERIFY};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

impl TursoConn {
    /// After a cancelled operation outside a transaction: forget statements left mid-way and
    /// roll back whatever is open.
    pub(super) async fn recover_after_cancel(&mut self) -> Result<()> {
        self.settle().await?;
        self.rollback_if_open().await;
        Ok(())
    }

    /// Whether an abandoned call or a dropped transaction left work for [`Self::settle`].
    #[inline]
    pub(super) fn unsettled(&self) -> bool {
        self.in_flight || self.needs_rollback || self.raw_used || self.rolling_back.is_some()
    }

    /// Before the next statement: forget cached statements an abandoned call left mid-way (their
    /// state is unknown), and roll back a transaction that was dropped without commit. Turso
    /// itself would roll such a transaction back only lazily, after a write through a cached
    /// statement could already have been acknowledged inside it.
    pub(super) async fn settle(&mut self) -> Result<()> {
        if let Some(rolled_back) = self.rolling_back.as_mut() {
            // Awaited in place (cancel-safe): dropped meanwhile, the next use waits again.
            let _ = rolled_back.await;
            self.rolling_back = None;
        }
        if self.in_flight {
            self.forget_statements();
            self.in_flight = false;
        }
        if self.needs_rollback {
            if !self.autocommit()? {
                self.conn.execute("ROLLBACK", ()).await.map_err(map_err)?;
            }
            self.needs_rollback = false;
        }
        if self.raw_used {
            self.raw_used = false;
            self.schema_changed();
        }
        Ok(())
    }

    /// Whether [`Self::make_clean`] may await: a rollback still under way, a transaction to roll
    /// back, or a session to check. Otherwise it looks at flags only and is ready at once.
    pub(crate) fn clean_may_wait(&self) -> bool {
        self.rolling_back.is_some()
            || self.session & VERIFY != 0
            || !self.autocommit().unwrap_or(true)
    }

    /// Recycle check: outside any transaction, no statement left mid-way.
    pub(crate) async fn make_clean(&mut self) -> Result<()> {
        if let Some(rolled_back) = self.rolling_back.as_mut() {
            // Awaited in place (cancel-safe): dropped meanwhile, the next use waits again.
            let _ = rolled_back.await;
            self.rolling_back = None;
        }
        if self.discard {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::ConnectionLost,
                "this Turso connection went back to the pool mid-call; it is discarded",
            ));
        }
        if self.in_flight {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::ConnectionLost,
                "a call on this Turso connection was abandoned mid-way; the connection is discarded",
            ));
        }
        if !self.autocommit()? {
            self.simple("ROLLBACK", None).await?;
            if !self.autocommit()? {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::TransactionState,
                    "the Turso connection stayed inside a transaction; it is discarded",
                ));
            }
        }
        self.needs_rollback = false;
        // The session: nothing to do after plain statements; checked and restored, or the
        // connection discarded, after anything else (see `session.rs`).
        let mark = std::mem::take(&mut self.session);
        if mark & DISCARD != 0 {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::ConnectionLost,
                "this Turso connection set a sequence's session value, which nothing resets; it is discarded",
            ));
        }
        if mark & VERIFY != 0 {
            self.verify_session().await?;
        }
        Ok(())
    }

    /// A transaction was dropped without commit: it is rolled back at once, off the calling
    /// thread ([`Self::rollback_in_background`]), so the write lock is free for other
    /// connections before this one is used again, and its next statement (or raw access)
    /// waits for that rollback first ([`Self::settle`]).
    pub(super) fn abandon(&mut self) {
        if self.in_flight {
            // A statement of the transaction was left mid-way: reset it.
            self.forget_statements();
            self.in_flight = false;
        }
        if self.rolling_back.is_none() && !self.autocommit().unwrap_or(false) {
            self.rollback_in_background();
        }
    }

    pub(super) async fn rollback_if_open(&mut self) {
        if !self.autocommit().unwrap_or(true) {
            let _ = self.simple_within("ROLLBACK").await;
        }
    }

    /// Rolls the open transaction back off the calling thread: a `ROLLBACK` in Turso discards
    /// the transaction's pages in process, which takes milliseconds for a large one, so it runs
    /// through a clone of the connection on the blocking pool (outside any runtime, on a
    /// short-lived thread), never in `Drop`. The connection's next use waits for it
    /// ([`Self::settle`]) and rolls back itself if the background one could not run.
    pub(super) fn rollback_in_background(&mut self) {
        self.needs_rollback = true;
        let conn = self.conn.clone();
        let (done, rolled_back) = tokio::sync::oneshot::channel();
        let work = move || {
            let _ = futures_executor::block_on(conn.execute("ROLLBACK", ()));
            let _ = done.send(());
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(work)),
            Err(_) => {
                // If no thread can be started, `done` is dropped with the closure and the next
                // use rolls back itself.
                let _ = std::thread::Builder::new()
                    .name("sqlmw-turso-rollback".into())
                    .spawn(work);
            }
        }
        self.rolling_back = Some(rolled_back);
    }
}
