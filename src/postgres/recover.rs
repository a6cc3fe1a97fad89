//! Recovery after a fault on a PostgreSQL connection: a connection whose statement may still
//! run is given up (cancelled and closed) and replaced, and an abandoned transaction is rolled
//! back before the next statement.

use super::conn::{Obj, PgConnection};
use super::effects::Session;
use super::error::map_err;
use super::stmt::StatementCache;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// Whether an abandoned statement on `obj` is cancelled with a cancel request before the
/// connection is closed. Not in the unnamed (pooler) mode: a pooler routes cancel requests to
/// whatever server connection it maps them to, and PgBouncer 1.18 was seen to crash on them
/// (`disconnect_client(): bad client state`); the connection is closed instead, and the statement
/// runs to its end on the server.
pub(super) fn cancels(obj: &Obj) -> bool {
    obj.opts.statement_cache == StatementCache::Named
}

impl PgConnection {
    /// After a call's limit passed: the statement may still run, so the connection is given up
    /// now (cancelled and closed in the background, see `deadline.rs`) and the next call
    /// checks out a replacement within its own limit. Inside a transaction the hall treats the
    /// transaction as aborted (the server rolls it back as the connection closes). Returns the
    /// call's error: `OutcomeUnknown` when `writes` (the statement may have committed by
    /// itself before it was stopped), else `Timeout`.
    pub(super) fn after_limit(&mut self, writes: bool) -> SqlMiddlewareDbError {
        self.give_up();
        crate::deadline::stopped(writes, self.in_tx)
    }

    /// Gives the connection up at once: a statement of it may still run (see
    /// `deadline::abandon`). It is replaced before its next use.
    pub(super) fn give_up(&mut self) {
        self.in_flight = true;
        if let Some(old) = self.obj.take() {
            let cancel = cancels(&old);
            super::deadline::abandon(old, cancel, self.net_bound());
        }
    }

    /// Replaces a connection given up (or lost) by an earlier call, within `deadline`.
    pub(super) async fn replace(&mut self, deadline: Option<std::time::Instant>) -> Result<()> {
        if self.in_flight {
            self.give_up();
        }
        if self.obj.is_none() {
            self.needs_rollback = false;
            self.unknown = false;
            self.in_tx = false;
            self.session = Session::Untouched;
            let obj = super::deadline::checkout(&self.pool, deadline).await?;
            self.unverified = super::liveness::unverified(&obj);
            self.backslash_strings = obj.backslash_strings;
            self.strings_unsure = false;
            self.strings_touched = false;
            self.obj = Some(obj);
            self.in_flight = false;
        }
        Ok(())
    }

    /// Makes the connection usable again after an abandoned transaction or query.
    ///
    /// A dropped query future may have left its statement running on the server. A cancel
    /// request is sent, but Postgres acts on it asynchronously: it could land on a later,
    /// unrelated statement. So the connection is not reused at all: it is detached from the
    /// pool and closed, and a fresh one is checked out in its place.
    pub(super) async fn repair(&mut self) -> Result<()> {
        if self.in_flight || self.obj.is_none() {
            // The cancel runs in the background; the replacement is bounded by the pool's
            // wait timeout.
            self.replace(None).await?;
        }
        if self.needs_rollback {
            let bound = self.net_bound();
            match tokio::time::timeout(bound, self.client()?.batch_execute("ROLLBACK")).await {
                Ok(r) => r.map_err(map_err)?,
                Err(_) => {
                    // The rollback may still be running: the connection is given up on drop.
                    self.in_flight = true;
                    return Err(SqlMiddlewareDbError::new(
                        ErrorKind::ConnectionLost,
                        format!(
                            "the server did not confirm the rollback of an abandoned transaction within {bound:?}; the connection is discarded"
                        ),
                    ));
                }
            }
            self.needs_rollback = false;
            // The rollback undid what the transaction set, quotes included.
            self.note_tx_end();
            if self.strings_unsure {
                // A `client_encoding` left by the transaction is put back; the rollback stands.
                let _ = Box::pin(self.reread_strings()).await;
            }
        }
        Ok(())
    }

    /// Repairs what an abandoned call or transaction left, before a statement runs.
    pub(super) async fn ready(&mut self) -> Result<()> {
        if self.needs_rollback || self.in_flight {
            self.repair().await?;
        }
        Ok(())
    }
}
