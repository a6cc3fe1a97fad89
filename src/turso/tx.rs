//! Transactions on a Turso connection: `BEGIN IMMEDIATE`, `COMMIT` and `ROLLBACK`, and the
//! rollback of a transaction dropped without commit, off the calling thread.

use super::conn::TursoConn;
use crate::contract::Wing;
use crate::deadline::At;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::translation::TranslationMode;

impl TursoConn {
    pub(super) async fn begin_tx(&mut self, at: At) -> Result<()> {
        if self.unsettled() {
            self.settle().await?;
        }
        if !self.autocommit()? {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TransactionState,
                "a transaction begun by raw SQL is still open on this connection; commit or roll it back first",
            ));
        }
        self.simple("BEGIN IMMEDIATE", at).await
    }

    /// Commits; when the engine refuses, the transaction is rolled back and the error returned.
    pub(super) async fn commit_tx(&mut self, at: At) -> Result<()> {
        match self.simple("COMMIT", at).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.rollback_if_open().await;
                Err(e)
            }
        }
    }

    pub(super) async fn rollback_tx(&mut self, at: At) -> Result<()> {
        if self.autocommit()? {
            return Ok(());
        }
        self.simple("ROLLBACK", at).await
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

    /// Runs transaction control (`BEGIN IMMEDIATE`, `COMMIT`, `ROLLBACK`) as an operation of its
    /// own, within `at`.
    pub(super) async fn simple(&mut self, sql: &'static str, at: At) -> Result<()> {
        self.start_limit(at)?;
        self.simple_within(sql).await
    }

    /// Runs transaction control as a step of the operation running now (a script's own
    /// `BEGIN IMMEDIATE … COMMIT`), under that operation's limit.
    pub(super) async fn simple_within(&mut self, sql: &'static str) -> Result<()> {
        // Preparing starts an operation of its own (without a limit); keep ours.
        let stop = self.stop_at;
        let s = self.prepare(sql, TranslationMode::Off, None).await;
        self.stop_at = stop;
        self.dml_inner(&s?, &[]).await.map(drop)
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
