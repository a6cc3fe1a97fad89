//! Recovery after a fault on a MySQL connection: a connection whose statement may still run is
//! given up (its statement stopped with `KILL QUERY`) and replaced, a transaction dropped
//! earlier is rolled back, and what raw access or an earlier call left is settled before the
//! next operation.

use mysql_async::prelude::Queryable;

use super::conn::MyConnection;
use super::error::map_err;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

impl MyConnection {
    /// After a call's limit passed: the statement may still run, so the connection is given up
    /// now (its statement stopped with `KILL QUERY` in the background) and the next call checks
    /// out a replacement. Returns the call's error: `OutcomeUnknown` when `writes` outside a
    /// transaction, else `Timeout`.
    pub(super) fn after_limit(&mut self, writes: bool) -> SqlMiddlewareDbError {
        let e = crate::deadline::stopped(writes, self.in_tx);
        // A node that stopped answering (frozen, cut off) is probed (see `hosts.rs`).
        self.node_error(&e);
        self.give_up();
        e
    }

    /// Gives the connection up at once (see `deadline::abandon`).
    pub(super) fn give_up(&mut self) {
        self.in_flight = true;
        if let Some(old) = self.obj.take() {
            super::deadline::abandon(old, self.net_bound());
        }
    }

    /// Before an operation: replaces a connection given up by an earlier call (within
    /// `deadline`), rolls back a transaction dropped earlier, settles what raw access or an
    /// earlier call left (statements to close, the session to check, autocommit to turn back
    /// on), and, for a call that `writes`, makes sure a connection that sat idle in the pool
    /// is still open (see `liveness.rs`).
    pub(super) async fn ready(
        &mut self,
        deadline: Option<std::time::Instant>,
        writes: bool,
    ) -> Result<()> {
        let raw = std::mem::take(&mut self.raw);
        if raw {
            // mysql_async marks a connection whose command was dropped part-way as
            // disconnected: its protocol state is unknown.
            if self.obj.as_ref().is_some_and(|o| o.conn.is_disconnected()) {
                self.in_flight = true;
            }
        }
        if self.in_flight {
            self.give_up();
        }
        if self.obj.is_none() {
            if std::mem::take(&mut self.in_tx) {
                // The transaction's connection is gone (a raw call dropped part-way left it
                // unusable): the server rolls the transaction back as the connection closes,
                // and no later statement of it, nor its `COMMIT`, may run on another one.
                return Err(super::tx::connection_gone());
            }
            self.replace(deadline).await?;
        }
        if self.needs_rollback {
            let bound = self.net_bound();
            self.in_flight = true;
            let c = self.client()?;
            let r = tokio::time::timeout(bound, c.conn.query_drop("ROLLBACK")).await;
            match r {
                Ok(r) => r.map_err(map_err)?,
                Err(_) => {
                    return Err(SqlMiddlewareDbError::new(
                        ErrorKind::ConnectionLost,
                        format!(
                            "the server did not confirm the rollback of an abandoned transaction within {bound:?}; the connection is discarded"
                        ),
                    ));
                }
            }
            self.in_flight = false;
            self.needs_rollback = false;
        }
        if raw && self.obj.is_some() {
            // Raw SQL may have changed the session (the database, the character set,
            // autocommit) or dropped the server's statements: the cached ones are closed and
            // the session checked, as after any statement the middleware cannot read.
            let in_tx = self.in_tx;
            self.in_flight = true;
            let c = self.client()?;
            super::stmt::forget_statements(c).await;
            let found = super::check::session(c, in_tx).await?;
            self.followup |= c.autocommit_off;
            self.in_flight = false;
            self.unverified = false;
            if let Some(e) = found.error() {
                return Err(e);
            }
        }
        if std::mem::take(&mut self.followup) {
            self.settle().await?;
        }
        if writes && self.unverified {
            self.verify(deadline).await?;
        }
        Ok(())
    }

    /// What an earlier call left to do: close the statements of abandoned streams, and turn
    /// autocommit back on once no transaction is open.
    pub(super) async fn settle(&mut self) -> Result<()> {
        let in_tx = self.in_tx;
        self.in_flight = true;
        let c = self.client()?;
        for st in std::mem::take(&mut c.pending_close) {
            c.conn.close(st).await.map_err(map_err)?;
        }
        if c.autocommit_off {
            if in_tx {
                self.followup = true;
            } else {
                super::check::restore_autocommit(c).await?;
            }
        }
        self.in_flight = false;
        Ok(())
    }
}
