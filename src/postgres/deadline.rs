//! Time limits on Postgres calls. The caller's limit is the bound: when it passes, the call
//! fails at once. The connection, whose statement may still run, is given up: detached from
//! the pool (its slot is free for a replacement at once), and in the background a cancel
//! request (as `psql` sends on Ctrl-C, bounded by the pool's recycle timeout) stops the
//! statement before the connection is closed. A connection is never reused while a statement
//! of it may still run, or while a late cancel request could reach its next statement. The
//! next call checks out a replacement within its own limit.
//!
//! A cancel request travels on a connection of its own, which a proxy or TCP load balancer may
//! send to another server than the statement's. It names the session by its process id and a
//! secret key the server chose for it, so on another server it stops nothing, even where the
//! same process id is another client's. Nothing answers a cancel request, so the connection
//! itself tells when its statement ended: a query queued behind the statement is answered then.
//! Until it is, another cancel request goes out every [`CANCEL_WAIT`], up to [`CANCEL_TRIES`]
//! in all, within the bound.
//!
//! Checkouts and connects are bounded the same way: a checkout by the pool's wait timeout
//! (a connection being opened for it goes on in the background and joins the pool when it
//! succeeds), and each host's connect (TCP, startup and authentication) by the URL's
//! `connect_timeout`.

use std::time::{Duration, Instant};

use super::config::PgClient;
use crate::error::Result;
use crate::server::held::{self, Task};

/// A pooled Postgres connection as deadpool hands it out.
type Obj = deadpool::managed::Object<super::config::PgManager>;

pub(super) use crate::pooling::within;

/// How many cancel requests go out, at most, for one abandoned statement.
const CANCEL_TRIES: usize = 8;

/// How long the connection may take to answer after a cancel request before another goes out:
/// a server stops a statement within milliseconds of a cancel request that reached it.
const CANCEL_WAIT: Duration = Duration::from_millis(250);

/// Gives up `obj`, whose statement may still run: it leaves the pool now, and (when `cancel`)
/// cancel requests go out in the background (see [`cancel_until_answered`]), bounded by
/// `bound`, before the connection closes. Without a runtime, or without `cancel` (a pooler in
/// between), it closes at once (see `server::held::abandon`).
pub(super) fn abandon(obj: Obj, cancel: bool, bound: Duration) {
    held::abandon(obj, bound, cancel.then_some(stop));
}

/// What stopping an abandoned statement means here: cancel requests until the connection
/// answers (see [`cancel_until_answered`]).
fn stop(client: &PgClient) -> Task<'_, ()> {
    Box::pin(async move {
        cancel_until_answered(client).await;
    })
}

/// Sends cancel requests for the statement running on `client` until the connection answers
/// an empty query queued behind it (the statement ended: stopped, finished, or the connection
/// closed), [`CANCEL_WAIT`] apart and at most [`CANCEL_TRIES`]. Returns how many went out.
pub(super) async fn cancel_until_answered(client: &PgClient) -> usize {
    let answered = client.client.simple_query("");
    tokio::pin!(answered);
    for sent in 1..=CANCEL_TRIES {
        // Best effort: a request that cannot be sent is followed by another.
        let _ = client.cancel_request().send().await;
        if tokio::time::timeout(CANCEL_WAIT, &mut answered)
            .await
            .is_ok()
        {
            return sent;
        }
    }
    CANCEL_TRIES
}

/// Checks out a connection from `pool` within `deadline` (see `pooling::checkout_within`).
pub(super) async fn checkout(pool: &super::Pool, deadline: Option<Instant>) -> Result<Obj> {
    crate::pooling::checkout_within(pool, deadline).await
}

/// Whether a script may commit a change: it holds a statement that is not a query (`SELECT`,
/// `VALUES`, `TABLE`, `SHOW`, or a `WITH` without a data-changing part), or a query that is not
/// provably plain (it calls a function that may write; see `sql::pg_effects`), as prepared
/// statements count their writes. Read only when a script's limit has passed.
pub(super) fn script_writes(sql: &str, pg: crate::sql::Dialect) -> bool {
    crate::sql::script::statements(sql, pg)
        .filter(|st| !crate::sql::is_blank(st, pg))
        .any(|st| {
            crate::sql::is_dml(st, pg)
                || super::effects::session_change(st, pg) != super::effects::Session::Untouched
                || !crate::sql::scanner::tokens(st, pg)
                    .find(|t| !t.kind.is_blank())
                    .filter(|t| t.kind == crate::sql::scanner::Kind::Word)
                    .is_some_and(|t| {
                        let w = &st[t.start..t.end];
                        ["SELECT", "VALUES", "TABLE", "WITH", "SHOW"]
                            .iter()
                            .any(|k| w.eq_ignore_ascii_case(k))
                    })
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    const D: crate::sql::Dialect = super::super::dialect::DIALECT;

    #[tokio::test]
    async fn within_returns_the_result_in_time_and_none_past_the_limit() {
        let soon = Instant::now() + Duration::from_millis(20);
        assert_eq!(within(soon, async { 7 }).await, Some(7));
        let t = Instant::now();
        let never = within(soon, std::future::pending::<()>()).await;
        assert!(never.is_none());
        assert!(t.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn only_scripts_of_queries_count_as_reads() {
        assert!(!script_writes(
            "SELECT 1; /* c */ SELECT count(*) FROM t; VALUES (1)",
            D
        ));
        assert!(!script_writes("WITH a AS (SELECT 1) SELECT * FROM a", D));
        assert!(script_writes("SELECT 1; INSERT INTO t VALUES (1)", D));
        assert!(script_writes(
            "WITH d AS (DELETE FROM t RETURNING *) SELECT * FROM d",
            D
        ));
        assert!(script_writes("CREATE TABLE t (x int)", D));
        assert!(script_writes("CALL p()", D));
        // A query that calls a function the middleware cannot prove harmless may write.
        assert!(script_writes("SELECT 1; SELECT archive_old_rows()", D));
        assert!(!script_writes("SELECT pg_sleep(0.1), now()", D));
    }
}
