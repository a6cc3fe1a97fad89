//! A dead connection is never handed out to a caller's first statement.
//!
//! A pooled MySQL connection that sits idle can be closed by the server at any time (its
//! `wait_timeout`, a `KILL`, a restart), and mysql_async only learns of it when it next uses the
//! socket. So the first call of a checkout on a connection that came back from the pool (not one
//! just opened) is treated with care, and every later call costs nothing:
//! - a call that may write first sends `COM_PING` (one round trip, once per checkout): a
//!   connection that does not answer is discarded and another checked out, until one answers;
//! - any other call (a read, a prepare, `begin`) runs at once: if the server had closed the
//!   connection the call fails with `ConnectionLost` before anything ran, so it runs again on
//!   another connection. Running a read twice changes nothing, so this is safe even when the
//!   server went away part-way through it.
//!
//! A checkout that reads first therefore pays nothing for the check, and one that writes first
//! pays one round trip.

use std::time::Duration;

use mysql_async::prelude::Queryable;

use super::conn::MyConnection;
use super::error::map_err;
use crate::error::{ErrorKind, Result};

impl MyConnection {
    /// How many connections a first call may try: every one the pool holds, and a new one.
    pub(super) fn replay_limit(&self) -> usize {
        self.pool.status().max_size + 1
    }

    /// Drops a connection the server closed, without the background stop a connection with a
    /// statement still running gets: nothing runs on it.
    pub(super) fn discard(&mut self) {
        if let Some(mut obj) = self.obj.take() {
            obj.broken = true;
            drop(deadpool::managed::Object::take(obj));
        }
        self.in_flight = false;
    }

    /// Checks out a connection in place of the one given up or discarded, within `deadline`.
    pub(super) async fn replace(&mut self, deadline: Option<std::time::Instant>) -> Result<()> {
        self.needs_rollback = false;
        self.in_tx = false;
        let obj = super::deadline::checkout(&self.pool, deadline).await?;
        self.unverified = crate::server::held::reused(&obj);
        self.obj = Some(obj);
        self.in_flight = false;
        Ok(())
    }

    /// Before a first call that may write: pings the connection (bounded by `deadline` and the
    /// pool's recycle timeout), replacing it while it turns out closed.
    pub(super) async fn verify(&mut self, deadline: Option<std::time::Instant>) -> Result<()> {
        let mut tries = 0;
        while self.unverified {
            let bound = deadline
                .map(|d| d.saturating_duration_since(std::time::Instant::now()))
                .unwrap_or(Duration::MAX)
                .min(self.net_bound());
            self.in_flight = true;
            let c = self.client()?;
            let pinged = tokio::time::timeout(bound, c.conn.ping()).await;
            match pinged {
                Ok(Ok(())) => {
                    self.in_flight = false;
                    self.unverified = false;
                }
                Ok(Err(e)) => {
                    let e = map_err(e);
                    if e.kind() != ErrorKind::ConnectionLost || tries >= self.replay_limit() {
                        self.in_flight = false;
                        self.discard();
                        return Err(e);
                    }
                    tries += 1;
                    self.discard();
                    self.replace(deadline).await?;
                }
                // No answer within the bound: the connection is given up (it may be alive but
                // stuck), and the call fails as its limit says.
                Err(_) => {
                    self.give_up();
                    return Err(match deadline {
                        Some(d) if d <= std::time::Instant::now() + Duration::from_millis(1) => {
                            crate::deadline::error()
                        }
                        _ => crate::error::SqlMiddlewareDbError::new(
                            ErrorKind::ConnectionLost,
                            "the pooled connection did not answer a ping within the recycle timeout; it is discarded",
                        ),
                    });
                }
            }
        }
        Ok(())
    }
}
