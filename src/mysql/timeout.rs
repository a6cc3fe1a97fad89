//! Time limits on MySQL calls. The caller's limit is the bound: when it passes, the call fails
//! at once and the connection, whose statement may still run, is given up: detached from the
//! pool (its slot is free for a replacement at once) while, in the background, a second
//! connection sends `KILL QUERY <id>` (bounded by the pool's recycle timeout), which stops the
//! statement on the server, before the connection is closed. A connection is never reused while
//! a statement of it may still run. The next call checks out a replacement within its own
//! limit.

use std::future::Future;
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;

use super::config::MyClient;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// A pooled MySQL connection as deadpool hands it out.
type Obj = deadpool::managed::Object<super::config::MyManager>;

/// Runs `work` until `deadline`: `None` when the limit passed first (`work` is then dropped).
#[inline]
pub(super) async fn within<T>(deadline: Instant, work: impl Future<Output = T>) -> Option<T> {
    tokio::time::timeout_at(tokio::time::Instant::from_std(deadline), work)
        .await
        .ok()
}

/// Gives up `obj`, whose statement may still run: it leaves the pool now, and in the background
/// `KILL QUERY` stops its statement (bounded by `bound`) before the connection closes. Without a
/// runtime it closes at once (the server stops the statement when it next writes to the
/// closed socket).
pub(super) fn abandon(obj: Obj, bound: Duration) {
    let client: Box<MyClient> = deadpool::managed::Object::take(obj);
    if let Ok(handle) = tokio::runtime::Handle::try_current() {
        handle.spawn(async move {
            let _ = tokio::time::timeout(bound, kill_query(&client)).await;
            drop(client);
        });
    }
}

/// Stops the statement running on `client` from a connection of its own.
pub(super) async fn kill_query(client: &MyClient) -> Result<()> {
    let id = client.conn.id();
    let mut killer = client.endpoint.connect().await?;
    let r = killer
        .query_drop(format!("KILL QUERY {id}"))
        .await
        .map_err(super::error::map_err);
    let _ = killer.disconnect().await;
    r
}

/// Checks out a connection from `pool` within `deadline` (when given) and the pool's wait
/// timeout. A connection that has to be opened for it is opened in a task of its own: if the
/// caller gives up first, it joins the pool when it is ready, for a later checkout.
pub(super) async fn checkout(pool: &super::Pool, deadline: Option<Instant>) -> Result<Obj> {
    let wait = pool.timeouts().wait.unwrap_or(Duration::from_secs(10));
    let by_wait = Instant::now() + wait;
    let at = deadline.map_or(by_wait, |d| d.min(by_wait));
    let late = || match deadline {
        Some(d) if d <= by_wait => crate::deadline::error(),
        _ => SqlMiddlewareDbError::new(
            ErrorKind::PoolTimeout,
            "no connection could be checked out within the pool's wait timeout (the server did not answer in time); raise wait_timeout, or check the server",
        ),
    };
    if pool.status().available > 0 {
        return within(at, crate::pooling::get(pool))
            .await
            .unwrap_or_else(|| Err(late()));
    }
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return within(at, crate::pooling::get(pool))
            .await
            .unwrap_or_else(|| Err(late()));
    };
    let p = pool.clone();
    let task = handle.spawn(async move { crate::pooling::get(&p).await });
    match within(at, task).await {
        Some(Ok(r)) => r,
        Some(Err(e)) => Err(SqlMiddlewareDbError::new(
            ErrorKind::ConnectionLost,
            format!("opening a connection failed: {e}"),
        )),
        None => Err(late()),
    }
}
