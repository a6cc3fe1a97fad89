#![allow(dead_code)]
//! Test groups that never overlap inside one test binary.
//!
//! The merged binaries (`tests/reliability/`, `tests/backends/`) hold topics that used to be
//! test binaries of their own, which cargo ran one after another. Some of their tests measure
//! time (heartbeat lateness, lock waits, latencies of a timed-out statement's neighbour) or load
//! the machine on purpose (many writers, connections killed under load, proptest runs), and their
//! limits hold with only the tests of their own topic running beside them. [`enter`] keeps it
//! that way: tests of one group may run at the same time, as the tests of one binary did; tests
//! of different groups never do. Under `--test-threads=1` the guard never waits.
//!
//! Take the guard first, before creating a database, and keep it to the end of the test
//! (`backend_tests! { let _group = groups::enter("topic"); ... }` does that for each backend).
//! It blocks the calling thread, so it also works in plain `#[test]` functions; at the start of a
//! `#[tokio::test]` body nothing else runs on that thread yet. Test names sort by module, so
//! the tests of one group run one after another and little parallelism is lost.

use std::sync::{Condvar, Mutex, PoisonError};

struct State {
    /// The group whose tests are running, if any.
    group: Option<&'static str>,
    /// How many of its tests are running.
    running: usize,
}

static STATE: Mutex<State> = Mutex::new(State {
    group: None,
    running: 0,
});
static LEFT: Condvar = Condvar::new();

/// Membership of a group; the test leaves it when this is dropped (also when it panics).
#[must_use = "the test leaves its group when the guard is dropped"]
#[derive(Debug)]
pub struct GroupGuard(());

/// Waits until no test of another group runs, then joins `group`.
pub fn enter(group: &'static str) -> GroupGuard {
    let mut s = STATE.lock().unwrap_or_else(PoisonError::into_inner);
    while s.group.is_some_and(|g| g != group) {
        s = LEFT.wait(s).unwrap_or_else(PoisonError::into_inner);
    }
    s.group = Some(group);
    s.running += 1;
    GroupGuard(())
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        let mut s = STATE.lock().unwrap_or_else(PoisonError::into_inner);
        s.running -= 1;
        if s.running == 0 {
            s.group = None;
            LEFT.notify_all();
        }
    }
}
