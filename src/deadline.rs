//! Statement time limits, shared by the wings: when a limit has passed, the error a call that
//! ran past its limit returns, and the process-wide nanosecond clock that instants shared
//! through atomics are kept on.

use std::time::{Duration, Instant};

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// When an operation must end (`None`: it has no limit): the `at` argument each limited
/// operation of the contract takes (see `contract.rs`), as the wings name it.
pub(crate) type At = Option<Instant>;

/// Nanoseconds since the first use of this clock in the process, plus one (so 0 can mean
/// "never" or "unset" in an atomic). Used by the wings that keep instants in atomics.
#[allow(
    dead_code,
    reason = "a build whose engines keep no instants in atomics does not use it"
)]
pub(crate) fn now_nanos() -> u64 {
    static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    let base = *BASE.get_or_init(Instant::now);
    nanos(base.elapsed()).saturating_add(1)
}

/// `d` in nanoseconds, saturating.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Whether `deadline` has passed.
#[inline]
pub(crate) fn passed(deadline: Instant) -> bool {
    Instant::now() >= deadline
}

/// The error of a call stopped at its time limit.
pub(crate) fn error() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::Timeout,
        "the statement ran past its time limit (statement_timeout or .timeout) and was stopped",
    )
}

/// The error of a call whose limit passed while its commit may have been under way (a write
/// in autocommit mode, or a `COMMIT`): whether it took effect is unknown.
#[cfg(feature = "_server")]
pub(crate) fn unknown_outcome() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::OutcomeUnknown,
        "the time limit passed while the write (or its commit) was under way; it was stopped, but it may have committed first: check before retrying",
    )
}

/// The error of a call stopped at its limit: [`unknown_outcome`] when it `writes` outside a
/// transaction (the statement may have committed by itself before it was stopped), else
/// [`error`].
#[cfg(feature = "_server")]
pub(crate) fn stopped(writes: bool, in_tx: bool) -> SqlMiddlewareDbError {
    if writes && !in_tx {
        unknown_outcome()
    } else {
        error()
    }
}

/// The error of a script stopped at its limit after a part of it may have committed (SQLite
/// and Turso: a statement that cannot run inside a transaction split it into parts that commit
/// one by one, or the script has transaction control of its own).
#[cfg(feature = "_embedded")]
pub(crate) fn partly_applied() -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::OutcomeUnknown,
        "the time limit passed part-way through the script and stopped it, after some of its statements may have committed: check before running it again",
    )
}

/// Fails at once when the limit passed before the call could start.
#[inline]
pub(crate) fn check(deadline: Option<Instant>) -> Result<()> {
    match deadline {
        Some(d) if passed(d) => Err(error()),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_passed_limit_fails_with_timeout_and_a_future_one_does_not() {
        let past = Instant::now() - Duration::from_millis(1);
        let future = Instant::now() + Duration::from_secs(60);
        assert_eq!(check(Some(past)).unwrap_err().kind(), ErrorKind::Timeout);
        assert!(check(Some(future)).is_ok());
        assert!(check(None).is_ok());
    }
}
