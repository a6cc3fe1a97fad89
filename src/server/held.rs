//! The bookkeeping of a server connection held past its use, the same for every server engine:
//! whether it served an earlier checkout ([`reused`]), the bound on the network work done for
//! it in the background ([`net_bound`]), giving up a connection whose statement may still run
//! ([`abandon`]), and cleaning one before it goes back to the pool ([`clean_in_background`],
//! held by a [`Cleaning`] guard). What stopping a statement and cleaning a connection mean is
//! each engine's own, passed in.
//!
//! deadpool is one release in the lockfile (the Postgres pool re-exports the same
//! `deadpool::managed` types), so everything here is generic over the manager. The futures of
//! these paths are boxed: they run when a connection is given up or returned, never per call.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use deadpool::managed::{Manager, Object, Pool};

/// A future of the background paths, borrowing the connection it works on.
pub(crate) type Task<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A server engine's pool manager, which knows the bound on the network work done for its
/// connections in the background.
pub(crate) trait NetBound {
    /// The pool's `recycle_timeout` as configured. deadpool's own recycle timer is armed only
    /// for checks that can wait, so it is not read from there.
    fn recycle_timeout(&self) -> Duration;
}

/// Whether `obj` served an earlier checkout (deadpool recycled it), as opposed to being opened
/// for this one: the server may have closed it while it sat idle in the pool.
#[inline]
pub(crate) fn reused<M: Manager>(obj: &Object<M>) -> bool {
    Object::metrics(obj).recycle_count > 0
}

/// How long stopping a statement or cleaning a connection may take: the pool's recycle timeout.
/// Past it the connection is given up (detached and closed), never waited for.
pub(crate) fn net_bound<M: Manager + NetBound>(pool: &Pool<M>) -> Duration {
    pool.manager().recycle_timeout()
}

/// Gives up `obj`, whose statement may still run: it leaves the pool now (its slot is free for
/// a replacement at once), and when there is a `stop`, it runs in the background on the
/// detached connection, bounded by `bound`, before the connection closes. Without a runtime, or
/// without `stop`, the connection closes at once.
pub(crate) fn abandon<M, T, F>(obj: Object<M>, bound: Duration, stop: Option<F>)
where
    M: Manager<Type = Box<T>>,
    T: Send + 'static,
    F: for<'a> FnOnce(&'a T) -> Task<'a, ()> + Send + 'static,
{
    let client: Box<T> = Object::take(obj);
    if let (Some(stop), Ok(handle)) = (stop, tokio::runtime::Handle::try_current()) {
        handle.spawn(async move {
            let _ = tokio::time::timeout(bound, stop(&client)).await;
            drop(client);
        });
    }
}

/// Holds a connection while a task of its own cleans it; if cleaning does not finish (an
/// error, the bound, a cancelled task, the runtime shutting down), the connection is detached
/// from the pool and closed instead of returned, after `on_detach` marks it (an engine whose
/// manager must know the connection is not to be reused).
pub(crate) struct Cleaning<M: Manager<Type = Box<T>>, T> {
    obj: Option<Object<M>>,
    on_detach: fn(&mut T),
}

impl<M: Manager<Type = Box<T>>, T> Cleaning<M, T> {
    /// Cleaning finished: the connection goes back to the pool.
    fn cleaned(&mut self) {
        drop(self.obj.take());
    }
}

impl<M: Manager<Type = Box<T>>, T> Drop for Cleaning<M, T> {
    fn drop(&mut self) {
        if let Some(mut obj) = self.obj.take() {
            (self.on_detach)(&mut obj);
            drop(Object::take(obj));
        }
    }
}

/// Cleans `obj` as it goes back to the pool, in a task of its own bounded by `bound`: `clean`
/// runs on the connection and says whether it left it clean; a connection whose cleaning does
/// not finish is detached and closed (see [`Cleaning`]). Without a runtime the connection is
/// detached and closed at once.
pub(crate) fn clean_in_background<M, T, C>(
    obj: Object<M>,
    bound: Duration,
    on_detach: fn(&mut T),
    clean: C,
) where
    M: Manager<Type = Box<T>> + 'static,
    T: Send + 'static,
    Object<M>: Send,
    C: for<'a> FnOnce(&'a mut T) -> Task<'a, bool> + Send + 'static,
{
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        drop(Object::take(obj));
        return;
    };
    let mut guard = Cleaning {
        obj: Some(obj),
        on_detach,
    };
    handle.spawn(async move {
        let Some(obj) = guard.obj.as_mut() else {
            return;
        };
        // Past the bound the connection is detached (the guard's drop), so a server that
        // stopped answering never holds a pool slot.
        if tokio::time::timeout(bound, clean(obj))
            .await
            .unwrap_or(false)
        {
            guard.cleaned();
        }
    });
}
