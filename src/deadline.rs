//! Statement time limits, shared by the wings: when a limit has passed, and the error a call
//! that ran past its limit returns.

use std::time::Instant;

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

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
    use std::time::Duration;

    #[test]
    fn a_passed_limit_fails_with_timeout_and_a_future_one_does_not() {
        let past = Instant::now() - Duration::from_millis(1);
        let future = Instant::now() + Duration::from_secs(60);
        assert_eq!(check(Some(past)).unwrap_err().kind(), ErrorKind::Timeout);
        assert!(check(Some(future)).is_ok());
        assert!(check(None).is_ok());
    }
}
