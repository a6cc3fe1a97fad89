//! Time limits on SQLite calls: the call's limit, armed on the connection's progress handler
//! (`offload.rs`), interrupts a statement still running when it passes, and cuts lock waits
//! (`busy.rs`) short; a statement stopped for it is reported as `Timeout`.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::conn::SqliteConn;
use super::offload::ProgressState;
use crate::deadline::{nanos, now_nanos};
use crate::error::{ErrorKind, Result};

impl ProgressState {
    /// Arms the call's time limit: every statement of the call is interrupted once it passes.
    pub(super) fn arm_stop(&self, at: Instant) {
        let left = nanos(at.saturating_duration_since(Instant::now()));
        self.stopped.store(false, Ordering::Relaxed);
        self.stop
            .store(now_nanos().saturating_add(left).max(1), Ordering::Relaxed);
    }

    /// Disarms the call's time limit; returns whether a statement was interrupted for it.
    pub(super) fn disarm_stop(&self) -> bool {
        self.stop.store(0, Ordering::Relaxed);
        self.stopped.swap(false, Ordering::Relaxed)
    }
}

impl SqliteConn {
    /// How long a lock wait may last: the busy timeout, cut to what is left of the call's limit.
    pub(super) fn busy_ms(&self) -> u64 {
        let busy = match self.stop_at {
            Some(at) => self
                .opts
                .busy_timeout
                .min(at.saturating_duration_since(Instant::now())),
            None => self.opts.busy_timeout,
        };
        u64::try_from(busy.as_millis()).unwrap_or(u64::MAX)
    }

    /// Arms the call's time limit: the progress handler interrupts any statement still
    /// running when it passes, and lock waits end by then (see [`Self::busy_ms`]).
    pub(super) fn start_limit(&mut self, deadline: Option<Instant>) -> Result<()> {
        let Some(at) = deadline else {
            return Ok(());
        };
        crate::deadline::check(Some(at))?;
        self.stop_at = Some(at);
        self.progress.arm_stop(at);
        Ok(())
    }

    /// Disarms the limit (panic or not: the next borrower's statements must never see it) and
    /// reports a statement interrupted for it, or a lock wait cut short by it, as `Timeout`.
    /// SQLite undoes the interrupted statement, so the connection stays usable; inside a
    /// transaction the hall treats the failure as aborting it.
    pub(super) fn end_limit<R>(&mut self, deadline: Option<Instant>, r: Result<R>) -> Result<R> {
        let Some(at) = deadline else {
            return r;
        };
        self.stop_at = None;
        let fired = self.progress.disarm_stop();
        match r {
            Err(e) if fired && e.kind() == ErrorKind::Interrupted => Err(crate::deadline::error()),
            Err(e) if e.kind() == ErrorKind::Busy && crate::deadline::passed(at) => {
                Err(crate::deadline::error())
            }
            r => r,
        }
    }
}
