//! Running a test body so that what it set up can be torn down even when it panics.

use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::Poll;

/// Runs `body(arg)` to its end, catching a panic (in the call that builds the future, in any
/// poll, or in dropping it): the body's future is dropped (closing its connections) before
/// this returns, so the caller can tear down and then resume the panic.
pub async fn run_catching<A, F, Fut>(body: F, arg: A) -> std::thread::Result<()>
where
    F: FnOnce(A) -> Fut,
    Fut: Future<Output = ()>,
{
    match catch_unwind(AssertUnwindSafe(move || body(arg))) {
        Ok(future) => {
            let mut future = Box::pin(future);
            let outcome = std::future::poll_fn(|cx| {
                match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
                    Ok(Poll::Pending) => Poll::Pending,
                    Ok(Poll::Ready(())) => Poll::Ready(Ok(())),
                    Err(panic) => Poll::Ready(Err(panic)),
                }
            })
            .await;
            let dropped = catch_unwind(AssertUnwindSafe(move || drop(future)));
            outcome.and(dropped)
        }
        Err(panic) => Err(panic),
    }
}
