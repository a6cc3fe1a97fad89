//! SQLite lock waits: the busy handler installed on every pooled connection follows the SQLite
//! family's schedule, with an allowance set per thread, so that a lock wait never sleeps on an
//! async worker thread (inline calls fail fast and are retried on the blocking pool).

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use rusqlite::Connection;

use crate::error::Result;
use crate::sqlite_family::busy;

thread_local! {
    /// How long the busy handler may wait on this thread; 0 = fail at once.
    static BUSY_TIMEOUT_MS: Cell<u64> = const { Cell::new(0) };
    /// The busy handler gave up on this thread (waited its allowance, or had none) since the
    /// last [`gave_up`]: a `SQLITE_BUSY` then came after the wait, not at once.
    static GAVE_UP: Cell<bool> = const { Cell::new(false) };
    /// Set from another thread to end this thread's lock wait early (a dropped stream).
    static CANCEL: std::cell::RefCell<Option<Arc<AtomicBool>>> = const { std::cell::RefCell::new(None) };
}

/// Whether the busy handler gave up since the last call or [`BusyScope::set`] on this thread.
/// A plain `SQLITE_BUSY` without it was refused by SQLite at once, without calling the handler:
/// the connection holds a read transaction and wants to write while another connection holds
/// the write lock, where waiting cannot help.
pub(crate) fn gave_up() -> bool {
    GAVE_UP.with(|g| g.replace(false))
}

/// While it lives, the busy handler on this thread gives up as soon as `flag` is set (checked
/// between its sleeps).
pub(crate) struct CancelScope(Option<Arc<AtomicBool>>);

impl CancelScope {
    pub(crate) fn set(flag: Arc<AtomicBool>) -> Self {
        CancelScope(CANCEL.with(|c| c.replace(Some(flag))))
    }
}

impl Drop for CancelScope {
    fn drop(&mut self) {
        let prior = self.0.take();
        CANCEL.with(|c| *c.borrow_mut() = prior);
    }
}

/// Sets this thread's busy-wait allowance for the scope's lifetime.
pub(crate) struct BusyScope(u64);

impl BusyScope {
    #[inline]
    pub(crate) fn set(ms: u64) -> Self {
        GAVE_UP.with(|g| g.set(false));
        BusyScope(BUSY_TIMEOUT_MS.with(|c| c.replace(ms)))
    }
}

impl Drop for BusyScope {
    #[inline]
    fn drop(&mut self) {
        BUSY_TIMEOUT_MS.with(|c| c.set(self.0));
    }
}

/// SQLite's own back-off schedule, driven by this thread's allowance, so that a lock wait never
/// sleeps on an async worker thread: inline calls fail fast and are retried on the blocking pool.
fn busy_callback(count: i32) -> bool {
    if CANCEL.with(|c| {
        c.borrow()
            .as_ref()
            .is_some_and(|f| f.load(Ordering::Relaxed))
    }) {
        return false;
    }
    let timeout = Duration::from_millis(BUSY_TIMEOUT_MS.with(Cell::get));
    let count = usize::try_from(count).unwrap_or(0);
    let prior = busy::waited_before(count);
    if timeout.is_zero() || prior >= timeout {
        GAVE_UP.with(|g| g.set(true));
        return false;
    }
    std::thread::sleep(busy::delay(count).min(timeout - prior));
    true
}

pub(crate) fn install_busy_handler(conn: &Connection) -> Result<()> {
    conn.busy_handler(Some(busy_callback))
        .map_err(super::error::map_err)
}
