//! Time limits on Postgres calls. When a call's limit passes, the middleware sends the server a
//! cancel request (as `psql` does on Ctrl-C) and waits, bounded by the pool's recycle timeout,
//! for the statement to end. A statement the server cancelled leaves the connection usable.
//! Without a cancel request (the unnamed, pooler mode), or when the server does not answer in
//! time, the statement is abandoned and the connection is replaced.

use std::future::Future;
use std::time::{Duration, Instant};

use super::tls::CancelRequest;
use crate::error::{ErrorKind, Result};

/// How a limited call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ended {
    /// Before its limit.
    InTime,
    /// The server cancelled the statement at the middleware's request: the connection is fine.
    Cancelled,
    /// A cancel request went out, but the statement ended some other way; the request may
    /// still reach the connection's next statement, so the connection is not reused.
    Unclear,
    /// The statement was left running (no cancel request, or no answer in time).
    Abandoned,
}

/// Runs `work` until `deadline`; then cancels it through `cancel` (when given) and waits at
/// most `bound` for it to end.
pub(super) async fn within<T>(
    deadline: Instant,
    cancel: Option<CancelRequest>,
    bound: Duration,
    work: impl Future<Output = Result<T>>,
) -> (Result<T>, Ended) {
    let mut work = std::pin::pin!(work);
    tokio::select! {
        biased;
        r = &mut work => return (r, Ended::InTime),
        () = tokio::time::sleep_until(tokio::time::Instant::from_std(deadline)) => {}
    }
    let Some(cancel) = cancel else {
        return (Err(crate::deadline::error()), Ended::Abandoned);
    };
    // The cancel request (over the pool's TLS settings) is best effort: a server that does not
    // answer is bounded too.
    let _ = tokio::time::timeout(bound, cancel.send()).await;
    match tokio::time::timeout(bound, work).await {
        Ok(Err(e)) if matches!(e.kind(), ErrorKind::Interrupted | ErrorKind::Timeout) => {
            (Err(crate::deadline::error()), Ended::Cancelled)
        }
        Ok(r) => (r, Ended::Unclear),
        Err(_) => (Err(crate::deadline::error()), Ended::Abandoned),
    }
}
