//! Time limits on a Turso connection: the limit of the operation running now, and what it
//! allows (Turso cannot interrupt a step, so limits are kept between rows and statements).

use super::conn::TursoConn;
use super::stmt::TursoStmt;
use crate::deadline::At;
use crate::error::Result;

impl TursoConn {
    /// Starts a limited operation: keeps its time limit `at` while it runs, and fails at once
    /// when it has already passed.
    #[inline]
    pub(super) fn start_limit(&mut self, at: At) -> Result<()> {
        self.stop_at = at;
        crate::deadline::check(self.stop_at)
    }

    /// Whether the limit of the operation running now has passed.
    pub(super) fn stop_at_passed(&self) -> bool {
        self.stop_at.is_some_and(crate::deadline::passed)
    }

    /// How long a lock wait may last: the busy timeout, cut to what is left of the limit.
    pub(super) fn busy_allowance(&self) -> std::time::Duration {
        match self.stop_at {
            Some(at) => self
                .opts
                .busy_timeout
                .min(at.saturating_duration_since(std::time::Instant::now())),
            None => self.opts.busy_timeout,
        }
    }

    /// Whether a read must stop before its next row: Turso cannot interrupt a step, so a limit
    /// is kept between rows (and between the statements of a script). A write is never cut
    /// short part-way: its rows are all produced, so it either applies whole or fails.
    #[inline]
    pub(super) fn must_stop(&self, s: &TursoStmt) -> bool {
        !s.effects.writes && self.stop_at.is_some_and(crate::deadline::passed)
    }
}
