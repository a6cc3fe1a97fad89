//! Transactions on a MySQL connection: `START TRANSACTION`, `COMMIT` and `ROLLBACK` within the
//! call's time limit, a transaction abandoned by its owner, the server's transaction status, and
//! a transaction the server ended or committed by itself.

use super::conn::{MyConnection, limited};
use super::stmt::Effects;
use crate::deadline::At;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// Whether the server reported an open transaction in its last answer. Only right after a
/// statement ran to its end: mysql_async keeps a prepare's answer as its "last OK packet" too,
/// whose status bits mean nothing.
#[inline]
pub(crate) fn in_transaction(conn: &mysql_async::Conn) -> bool {
    conn.last_ok_packet().is_some_and(|ok| {
        ok.status_flags()
            .contains(mysql_async::consts::StatusFlags::SERVER_STATUS_IN_TRANS)
    })
}

impl MyConnection {
    pub(super) async fn begin_tx(&mut self, at: At) -> Result<()> {
        self.ready(at, false).await?;
        self.tx_ended = false;
        if self.unknown {
            // Ask the server: `DO 1` answers with its transaction status.
            self.simple("DO 1").await?;
            if in_transaction(&self.client()?.conn) {
                return Err(SqlMiddlewareDbError::raw_tx_open());
            }
            self.unknown = false;
        }
        // If this future is dropped after the statement went out, the flag rolls it back.
        limited!(
            self,
            at,
            {
                self.needs_rollback = true;
                self.simple("START TRANSACTION").await
            },
            false
        )?;
        self.needs_rollback = false;
        self.in_tx = true;
        Ok(())
    }

    /// Commits. Past the limit the `COMMIT` may have raced the stop: its outcome is unknown.
    pub(super) async fn commit_tx(&mut self, at: At) -> Result<()> {
        if std::mem::take(&mut self.tx_ended) {
            // The server ended the transaction; a `COMMIT` now would commit nothing and say Ok.
            self.in_tx = false;
            return Err(ended());
        }
        // What an earlier call left is settled while the transaction still counts as open, so
        // that a connection given up since its last statement fails the commit (see `ready`)
        // instead of being replaced by one whose `COMMIT` would commit nothing and say Ok.
        // Nothing left, it does nothing; a commit waits for the server anyway.
        let settled = self.ready(at, true).await;
        self.in_tx = false;
        settled?;
        // A connection already given up never sends the COMMIT: nothing can have committed.
        let sent = self.obj.is_some();
        let r = limited!(self, at, self.simple("COMMIT").await, true);
        match r {
            Ok(()) => self.after_tx().await,
            // Lost while the COMMIT was under way (the session killed, the network gone): the
            // server may have committed before the answer was lost.
            Err(e) if e.kind() == ErrorKind::ConnectionLost && sent => {
                Err(e.with_kind(ErrorKind::OutcomeUnknown))
            }
            // Past the limit after `COMMIT` was sent: its outcome is unknown (limited! says so);
            // before it was sent: a `Timeout`, and the transaction is rolled back on return.
            Err(e) if matches!(e.kind(), ErrorKind::OutcomeUnknown | ErrorKind::Timeout) => Err(e),
            // Galera's `1180` ("Got error during COMMIT"): the node lost the cluster while the
            // commit was under way, which the others may have applied.
            Err(e) if e.driver_code() == Some("1180") => {
                Err(e.with_kind(ErrorKind::OutcomeUnknown))
            }
            Err(e) => {
                if self.obj.is_some() && !self.in_flight {
                    let _ = self.simple("ROLLBACK").await;
                }
                Err(e)
            }
        }
    }

    pub(super) async fn rollback_tx(&mut self, at: At) -> Result<()> {
        self.needs_rollback = false;
        self.in_tx = false;
        self.tx_ended = false;
        if self.in_flight {
            // A statement of the transaction was left running: the connection is given up,
            // which ends the transaction on the server.
            self.give_up();
            return Ok(());
        }
        match limited!(self, at, self.simple("ROLLBACK").await, false) {
            Ok(()) => self.after_tx().await,
            Err(e) if e.kind() == ErrorKind::Timeout && self.in_flight => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// A transaction dropped without commit or rollback: rolled back before the next use.
    pub(super) fn abandon(&mut self) {
        self.needs_rollback = true;
        self.in_tx = false;
        self.tx_ended = false;
    }

    /// After a transaction of the middleware ended: autocommit turned back on if a statement of
    /// it turned it off, and a transaction that `COMMIT` chained (a `completion_type` the
    /// middleware did not see) rolled back.
    pub(super) async fn after_tx(&mut self) -> Result<()> {
        let c = self.client()?;
        if c.autocommit_off || in_transaction(&c.conn) {
            self.in_flight = true;
            super::check::restore_autocommit(self.client()?).await?;
            self.in_flight = false;
        }
        Ok(())
    }

    /// Before a statement that may run a routine inside a transaction: a savepoint, whose
    /// disappearance afterwards shows that the routine committed or rolled back.
    pub(super) async fn guard(&mut self, s: Effects) -> Result<()> {
        if self.in_tx && s.routine {
            self.simple(&format!("SAVEPOINT {CANARY}")).await?;
            self.canary = true;
        }
        Ok(())
    }
}

/// The savepoint that guards a routine's run inside a transaction (see `MyConnection::guard`).
pub(super) const CANARY: &str = "sqlmw_routine_guard";

/// A transaction whose connection was given up before its `COMMIT` (or a later statement).
pub(super) fn connection_gone() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::TransactionAborted,
        "this transaction's connection was given up (a raw call on it was dropped part-way), which rolled the transaction back; nothing of it was committed: start it again",
    )
}

/// A call in a transaction the server already ended.
pub(super) fn ended() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::TransactionAborted,
        "the server ended this transaction by itself (a deadlock, a lock wait, a conflict) and rolled it back; nothing of it was committed: start it again",
    )
}

/// A statement that ended the middleware's transaction by itself.
pub(super) fn implicit_commit() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::TransactionState,
        "MySQL committed the transaction implicitly (a statement such as DDL, LOCK TABLES or one inside a routine ends it); what ran before it is committed and the Tx is over",
    )
}
