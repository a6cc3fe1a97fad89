//! A dead connection is never handed out to a caller's first statement.
//!
//! A pooled Postgres connection that sits idle can be closed by the server at any time (its
//! `idle_session_timeout`, `pg_terminate_backend`, a restart). The server says so (a `FATAL`
//! message) and closes the socket, but tokio-postgres learns of it only when the connection's
//! driver task next reads the socket, which may be after the pool's check (`Client::is_closed`)
//! passed. So the first call of a checkout on a connection that came back from the pool (not
//! one just opened, nor one the pool checked with a query, `test_before_acquire`) is treated
//! with care when it fails with `ConnectionLost`; a call that succeeds pays nothing, and no
//! round trip is added (an autocommit statement stays one round trip):
//! - a call that does not write (a read, a prepare, `begin`) runs again on another connection.
//!   Running a read twice changes nothing, so this is safe even when the server went away
//!   part-way through it;
//! - a call that may write runs again only when the driver proves that nothing of it reached
//!   the server: its task ended on a server error that came while no request was under way
//!   ([`DriverEnd`]). The driver writes requests only after reading what the socket holds, so
//!   a request still queued then was never sent. Otherwise (the server, or the network, went
//!   away without a word after the write may have been sent) the call fails with
//!   `ConnectionLost`, as its outcome cannot be known.
//!
//! The MySQL wing does the same for reads, and pings before a first write
//! (`mysql/liveness.rs`), where the driver gives no such proof.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use super::conn::{Obj, PgConnection};
use crate::error::{ErrorKind, SqlMiddlewareDbError};

/// Evaluates `$call` (an expression that awaits one call and gives its result) and, while it is
/// the first call on a connection the server may have closed while it sat idle and it failed
/// for that, again on another connection when [`PgConnection::replays`] allows (`$writes`: the
/// call may write). A call that returns otherwise leaves the connection checked for the rest of
/// the checkout when `$answers` (a prepare does not: the statement cache may answer it).
macro_rules! first_call {
    ($self:ident, $writes:expr, $answers:expr, $call:expr) => {{
        let mut replays = 0usize;
        loop {
            let r = $call;
            if !$self.unverified {
                break r;
            }
            match r {
                Err(e)
                    if replays < $self.replay_limit()
                        && Box::pin($self.replays(&e, $writes)).await =>
                {
                    replays += 1;
                    $self.discard();
                }
                r => {
                    if $answers {
                        $self.unverified = false;
                    }
                    break r;
                }
            }
        }
    }};
}

pub(super) use first_call;

/// Whether the first call on `obj` must allow for a server that closed it while it sat idle: it
/// served an earlier checkout, and the pool did not run a query on it at this checkout
/// (`test_before_acquire`).
#[inline]
pub(super) fn unverified(obj: &Obj) -> bool {
    crate::server::held::reused(obj) && !obj.opts.test_before_acquire
}

const RUNNING: u8 = 0;
/// The driver ended on an `ErrorResponse` that answered no request: tokio-postgres (0.7) ends
/// the connection with that error only when no request is under way (one under way receives
/// the message as its answer).
const SERVER_SAID_GOODBYE: u8 = 1;
const ENDED: u8 = 2;

/// How a connection's driver task ended, for the client that outlives it.
#[derive(Debug, Default)]
pub(crate) struct DriverEnd {
    state: AtomicU8,
    done: tokio::sync::Notify,
}

impl DriverEnd {
    /// Records the driver's result (once, when its task ends).
    pub(crate) fn record(&self, r: &Result<(), tokio_postgres::Error>) {
        let state = match r {
            Err(e) if e.as_db_error().is_some() => SERVER_SAID_GOODBYE,
            _ => ENDED,
        };
        self.state.store(state, Ordering::Release);
        self.done.notify_waiters();
    }

    /// Whether the server ended the session by itself while no request was under way. A call
    /// fails with the connection closed a moment before the driver's task records its end, so
    /// this waits for that end, up to `bound`.
    async fn server_said_goodbye(&self, bound: Duration) -> bool {
        let done = self.done.notified();
        let mut done = std::pin::pin!(done);
        done.as_mut().enable();
        if self.state.load(Ordering::Acquire) == RUNNING {
            let _ = tokio::time::timeout(bound, done).await;
        }
        self.state.load(Ordering::Acquire) == SERVER_SAID_GOODBYE
    }
}

impl PgConnection {
    /// How many connections a first call may try: every one the pool holds, and a new one.
    pub(super) fn replay_limit(&self) -> usize {
        self.pool.status().max_size + 1
    }

    /// Whether a first call that failed with `e`, on a connection that had not answered yet in
    /// this checkout (`first_call!` checks that), runs again on another connection (see the
    /// module's docs): no transaction is open, the connection is lost, and the call either does
    /// not write or provably never reached the server.
    pub(super) async fn replays(&self, e: &SqlMiddlewareDbError, writes: bool) -> bool {
        // `unknown`: raw access or transaction control ran, so the call may belong to a
        // transaction the middleware does not track, which another connection would not have.
        if self.in_tx || self.unknown || e.kind() != ErrorKind::ConnectionLost {
            return false;
        }
        if !writes {
            return true;
        }
        // The driver's end is waited for only once its channel is closed (it is ending then).
        match &self.obj {
            Some(obj) if obj.client.is_closed() => {
                obj.flags.end.server_said_goodbye(self.net_bound()).await
            }
            _ => false,
        }
    }

    /// Drops a connection the server closed, without the cancel a connection with a statement
    /// still running gets: nothing runs on it. Marked as given up, so that whatever runs next
    /// checks out another first (see `recover.rs`).
    pub(super) fn discard(&mut self) {
        if let Some(obj) = self.obj.take() {
            drop(deadpool::managed::Object::take(obj));
        }
        self.in_flight = true;
    }
}
