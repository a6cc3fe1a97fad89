//! Savepoints: the bookkeeping behind [`Tx::savepoint`](crate::Tx::savepoint), a nested
//! transaction with the rules of a `Tx`, on every backend.
//!
//! A savepoint at nesting level `n` is `SAVEPOINT sqlmw_sp_n`. Releasing it (commit) keeps its
//! work in the enclosing transaction; rolling back to it undoes its work and, since the error
//! that aborted the transaction happened inside it, makes the transaction usable again (on
//! Postgres this is how a transaction continues after an error). A savepoint dropped unfinished
//! is rolled back to before the connection's next operation (`Drop` cannot wait). Savepoint
//! statements run without a time limit (`None`), like the other bookkeeping of a transaction.

use crate::connection::{MiddlewarePoolConnection, TxFlag};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

fn name(level: u32) -> String {
    format!("sqlmw_sp_{level}")
}

impl MiddlewarePoolConnection {
    /// Opens savepoint `level` inside the current transaction.
    pub(crate) async fn sp_begin(&mut self, level: u32) -> Result<()> {
        self.enter().await?;
        let r = self
            .inner
            .savepoint_stmt(&format!("SAVEPOINT {}", name(level)))
            .await;
        self.note(r)
    }

    /// Releases savepoint `level`, keeping its work. When the transaction was aborted inside
    /// it, its work is rolled back instead and the error says so, as `Tx::commit` does.
    pub(crate) async fn sp_release(&mut self, level: u32) -> Result<()> {
        self.settle_savepoints().await?;
        self.cancelled_means_aborted();
        if self.tx == TxFlag::Aborted {
            self.sp_rollback_to(level).await?;
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TransactionAborted,
                "the savepoint was rolled back because a statement in it failed; the enclosing transaction goes on",
            ));
        }
        self.pending = true;
        let r = self
            .inner
            .savepoint_stmt(&format!("RELEASE SAVEPOINT {}", name(level)))
            .await;
        self.pending = false;
        self.note(r)
    }

    /// Rolls back to savepoint `level` and releases it.
    pub(crate) async fn sp_rollback(&mut self, level: u32) -> Result<()> {
        self.settle_savepoints().await?;
        self.cancelled_means_aborted();
        self.sp_rollback_to(level).await
    }

    /// A savepoint was dropped unfinished: roll back to it before the next operation.
    pub(crate) fn sp_abandon(&mut self, level: u32) {
        self.pending = false;
        self.sp_pending = Some(self.sp_pending.map_or(level, |p| p.min(level)));
    }

    /// Runs the rollback a dropped savepoint left, if any (before any other operation).
    pub(crate) async fn settle_savepoints(&mut self) -> Result<()> {
        match self.sp_pending.take() {
            Some(level) if self.tx != TxFlag::None => {
                self.cancelled_means_aborted();
                self.sp_rollback_to(level).await
            }
            _ => Ok(()),
        }
    }

    /// An operation of this transaction was cancelled mid-way: whether it ran is unknown.
    fn cancelled_means_aborted(&mut self) {
        if self.pending {
            self.pending = false;
            if self.tx == TxFlag::Active {
                self.tx = TxFlag::Aborted;
            }
        }
    }

    /// Undoes everything since savepoint `level` (a failed statement included) and releases
    /// it; the transaction is usable again when the engine did so.
    async fn sp_rollback_to(&mut self, level: u32) -> Result<()> {
        if self.tx == TxFlag::Aborted && self.inner.tx_ended() {
            // The engine rolled the whole transaction back, its savepoints with it: there is
            // nothing to roll back to, and the transaction stays aborted.
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::TransactionAborted,
                "the engine ended the whole transaction after a statement of it failed (a deadlock, say), and its savepoints with it; roll the transaction back and start again",
            ));
        }
        let n = name(level);
        self.pending = true;
        let r = self
            .inner
            .savepoint_stmt(&format!("ROLLBACK TO SAVEPOINT {n}; RELEASE SAVEPOINT {n}"))
            .await;
        self.pending = false;
        match r {
            Ok(()) => {
                self.tx = TxFlag::Active;
                Ok(())
            }
            Err(e) => {
                self.tx = TxFlag::Aborted;
                Err(e)
            }
        }
    }
}
