//! Which failures a retrying transaction runs again. The engines' own codes are mapped to kinds
//! in each wing's `error.rs`; this file decides on kinds only, and on where in the attempt the
//! failure happened: before `COMMIT` was sent, nothing of the attempt can have been applied.

use crate::error::ErrorKind;

/// Where in an attempt a failure happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// The checkout, `BEGIN`, or a statement of the closure: `COMMIT` was not sent.
    BeforeCommit,
    /// `COMMIT` itself.
    Commit,
}

/// Whether a failure of `kind` in `phase` is transient: the engine refused the attempt as a
/// whole, nothing of it was applied, and running it again may succeed.
///
/// - serialization failures (Postgres `40001`, a stale SQLite or Turso snapshot, a Turso
///   write-write conflict), deadlocks (Postgres `40P01`, MySQL and Galera `1213`) and lock
///   waits past their limit (`Busy`: SQLite's and Turso's busy timeout at `BEGIN IMMEDIATE`,
///   MySQL `1205`, Postgres `55P03`), in either phase: the engine says the transaction did
///   not commit;
/// - a lost connection before `COMMIT` was sent: the server rolls back what it had. (Outside
///   this loop a lost connection is not reported as retryable, since the caller may not know
///   whether a commit was under way; at `COMMIT` the wings report
///   [`ErrorKind::OutcomeUnknown`].)
/// - an unknown outcome ([`ErrorKind::OutcomeUnknown`], or a connection lost at `COMMIT`) only
///   when the caller declared the work idempotent.
///
/// Never: a constraint violation, a timeout (the deadline or a statement's own limit), or any
/// other kind.
pub(crate) fn transient(kind: ErrorKind, phase: Phase, idempotent: bool) -> bool {
    match kind {
        ErrorKind::SerializationFailure | ErrorKind::Deadlock | ErrorKind::Busy => true,
        ErrorKind::ConnectionLost => phase == Phase::BeforeCommit || idempotent,
        ErrorKind::OutcomeUnknown => idempotent,
        _ => false,
    }
}

/// Whether the connection of a failure of `kind` is given up, and the next attempt checks out
/// another: it was lost, or a statement or commit of it may still be running.
pub(crate) fn needs_new_connection(kind: ErrorKind) -> bool {
    matches!(
        kind,
        ErrorKind::ConnectionLost
            | ErrorKind::OutcomeUnknown
            | ErrorKind::Timeout
            | ErrorKind::Interrupted
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_retried() {
        use ErrorKind as K;
        use Phase::*;
        for k in [K::SerializationFailure, K::Deadlock, K::Busy] {
            assert!(transient(k, BeforeCommit, false));
            assert!(transient(k, Commit, false));
        }
        assert!(transient(K::ConnectionLost, BeforeCommit, false));
        assert!(!transient(K::ConnectionLost, Commit, false));
        assert!(transient(K::ConnectionLost, Commit, true));
        assert!(!transient(K::OutcomeUnknown, Commit, false));
        assert!(transient(K::OutcomeUnknown, Commit, true));
        for k in [
            K::UniqueViolation,
            K::ForeignKeyViolation,
            K::CheckViolation,
            K::Timeout,
            K::TransactionAborted,
            K::Other,
            K::Syntax,
        ] {
            assert!(!transient(k, BeforeCommit, true), "{k:?}");
            assert!(!transient(k, Commit, true), "{k:?}");
        }
    }
}
