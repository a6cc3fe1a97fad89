//! Time limits on MySQL calls. The caller's limit is the bound: when it passes, the call fails
//! at once and the connection, whose statement may still run, is given up: detached from the
//! pool (its slot is free for a replacement at once) while, in the background, a second
//! connection sends `KILL QUERY <id>` (bounded by the pool's recycle timeout), which stops the
//! statement on the server, before the connection is closed. A connection is never reused while
//! a statement of it may still run. The next call checks out a replacement within its own
//! limit.

use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;

use super::config::MyClient;
use crate::error::Result;

/// A pooled MySQL connection as deadpool hands it out.
type Obj = deadpool::managed::Object<super::config::MyManager>;

pub(super) use crate::pooling::within;

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

/// Checks out a connection from `pool` within `deadline` (see `pooling::checkout_within`).
pub(super) async fn checkout(pool: &super::Pool, deadline: Option<Instant>) -> Result<Obj> {
    crate::pooling::checkout_within(pool, deadline).await
}
