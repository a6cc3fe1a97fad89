//! What a pool with replicas knows of each replica's health, for either engine's readers: a
//! replica that could not be reached is skipped for a while, then tried again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::deadline::{nanos, now_nanos};
use crate::error::{ErrorKind, SqlMiddlewareDbError};

/// A replica's health: skipped until a time on the `now_nanos` clock (0 = healthy).
#[derive(Debug, Default)]
pub(crate) struct Health {
    down_until: AtomicU64,
}

impl Health {
    /// Whether readers may try it now.
    pub(crate) fn available(&self) -> bool {
        let until = self.down_until.load(Ordering::Relaxed);
        until == 0 || now_nanos() >= until
    }

    /// It could not be reached: skipped for `retry_after`.
    pub(crate) fn mark_down(&self, retry_after: Duration) {
        let until = now_nanos().saturating_add(nanos(retry_after)).max(1);
        self.down_until.store(until, Ordering::Relaxed);
    }

    /// It answered.
    pub(crate) fn mark_up(&self) {
        self.down_until.store(0, Ordering::Relaxed);
    }
}

/// Whether a checkout error means the replica cannot be reached (so another is tried).
pub(crate) fn unreachable(e: &SqlMiddlewareDbError) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionLost | ErrorKind::PoolTimeout | ErrorKind::Other
    )
}
