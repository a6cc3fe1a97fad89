//! Transactions on a PostgreSQL connection: `BEGIN`, `COMMIT` and `ROLLBACK` within the call's
//! time limit, and a transaction abandoned by its owner.

use super::conn::PgConnection;
use super::error::map_err;
use crate::deadline::At;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

impl PgConnection {
    /// [`Self::simple`] within `at`, if any: past it the connection is given up (see
    /// [`Self::give_up`]) and the call fails with `late`.
    pub(super) async fn simple_limited(
        &mut self,
        sql: &str,
        at: At,
        late: fn() -> SqlMiddlewareDbError,
    ) -> Result<()> {
        match at {
            None => self.simple(sql).await,
            Some(at) => {
                crate::deadline::check(Some(at))?;
                match Box::pin(super::deadline::within(at, self.simple(sql))).await {
                    Some(r) => r,
                    None => {
                        self.give_up();
                        Err(late())
                    }
                }
            }
        }
    }

    /// Whether raw SQL left a transaction open on this connection. Asked of the server only
    /// after raw SQL or transaction control ran outside a `Tx` (`unknown`); otherwise `false`
    /// without a round trip. In a transaction `now()` is the transaction's start; outside one it
    /// is the statement's (simple protocol: with the extended one, each message moves
    /// `statement_timestamp`). Behind a transaction-mode pooler an open transaction pins the
    /// server connection, so the question reaches the session that holds it.
    pub(super) async fn raw_tx_open(&mut self) -> Result<bool> {
        if !self.unknown || self.in_tx {
            return Ok(false);
        }
        let msgs = self
            .client()?
            .simple_query("SELECT now() = statement_timestamp()")
            .await
            .map_err(map_err)?;
        let idle = msgs.iter().any(
            |m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(r) if r.get(0) == Some("t")),
        );
        Ok(!idle)
    }

    pub(super) async fn begin_tx(&mut self, at: At) -> Result<()> {
        // A first call on a connection the server closed while it sat idle: `BEGIN` runs again
        // on another one (see `liveness.rs`).
        super::liveness::first_call!(self, false, true, self.begin_once(at).await)
    }

    async fn begin_once(&mut self, at: At) -> Result<()> {
        if self.in_flight || self.obj.is_none() {
            // A connection given up earlier: replaced within this call's limit.
            Box::pin(self.replace(at)).await?;
        }
        if self.needs_rollback {
            // The rollback of an abandoned transaction, within this call's limit.
            match at {
                None => self.repair().await?,
                Some(at) => match Box::pin(super::deadline::within(at, self.repair())).await {
                    Some(r) => r?,
                    None => {
                        self.give_up();
                        return Err(crate::deadline::error());
                    }
                },
            }
        }
        if self.raw_tx_open().await? {
            return Err(SqlMiddlewareDbError::raw_tx_open());
        }
        // If this future is dropped after BEGIN went out, the flag makes the next user roll back.
        self.needs_rollback = true;
        self.simple_limited("BEGIN", at, crate::deadline::error)
            .await?;
        self.needs_rollback = false;
        self.in_tx = true;
        Ok(())
    }

    /// Commits. A `COMMIT` that the server turns into a rollback (the transaction had failed)
    /// is reported as an error: the middleware checks, when it cannot know, with a probe.
    pub(super) async fn commit_tx(&mut self, at: At) -> Result<()> {
        let r = self.commit_tx_once(at).await;
        self.after_tx_end().await;
        r
    }

    /// What the end of the middleware's transaction undid of how the session reads quotes is
    /// read again (see `session::note_tx_end`).
    async fn after_tx_end(&mut self) {
        self.note_tx_end();
        if self.strings_unsure {
            // A `client_encoding` the transaction left is put back; its end stands.
            let _ = Box::pin(self.reread_strings()).await;
        }
    }

    async fn commit_tx_once(&mut self, at: At) -> Result<()> {
        self.in_tx = false;
        if self.unknown {
            // Raw access happened inside this transaction: make sure it is not aborted.
            if let Err(e) = self.simple("SELECT 1").await {
                let _ = self.simple("ROLLBACK").await;
                return Err(e.with_kind(ErrorKind::TransactionAborted));
            }
        }
        // A connection already closed never sends the COMMIT: nothing can have committed.
        let sent = !self.is_closed();
        // Past the limit the COMMIT may have raced the stop: its outcome is unknown.
        match self
            .simple_limited("COMMIT", at, crate::deadline::unknown_outcome)
            .await
        {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::OutcomeUnknown => Err(e),
            // Lost while the COMMIT was under way (the backend killed, the network gone): the
            // server may have committed before the answer was lost.
            Err(e) if e.kind() == ErrorKind::ConnectionLost && sent => {
                Err(e.with_kind(ErrorKind::OutcomeUnknown))
            }
            Err(e) => {
                if !self.is_closed() {
                    let _ = self.simple("ROLLBACK").await;
                }
                Err(e)
            }
        }
    }

    pub(super) async fn rollback_tx(&mut self, at: At) -> Result<()> {
        let r = self.rollback_tx_once(at).await;
        self.after_tx_end().await;
        r
    }

    async fn rollback_tx_once(&mut self, at: At) -> Result<()> {
        self.needs_rollback = false;
        self.in_tx = false;
        if self.in_flight {
            // A statement of the transaction was left running (a call past its time limit):
            // the connection is given up, which ends the transaction on the server, and the
            // next call checks out a fresh one within its own limit.
            self.give_up();
            return Ok(());
        }
        // Past the limit the connection is given up, which rolls the transaction back.
        match self
            .simple_limited("ROLLBACK", at, crate::deadline::error)
            .await
        {
            Err(e) if e.kind() == ErrorKind::Timeout && self.in_flight => Ok(()),
            r => r,
        }
    }

    /// A transaction dropped without commit or rollback: rolled back before the next use.
    pub(super) fn abandon(&mut self) {
        self.needs_rollback = true;
        self.in_tx = false;
    }
}
