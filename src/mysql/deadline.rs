//! Time limits on MySQL calls. The caller's limit is the bound: when it passes, the call fails
//! at once and the connection, whose statement may still run, is given up: detached from the
//! pool (its slot is free for a replacement at once) while, in the background, a second
//! connection stops the statement with `KILL QUERY <id>` (bounded by the pool's recycle
//! timeout) before the connection is closed. A connection is never reused while a statement of
//! it may still run. The next call checks out a replacement within its own limit.
//!
//! A connection id names a session on one server only. Behind a proxy or a TCP load balancer
//! that spreads connections over several servers, the second connection may reach another
//! server, where the same id belongs to another client. So the killer kills only what it proved
//! to be this connection's own session: when a connection opens, the server's name for itself
//! and the session's own row of `information_schema.PROCESSLIST` are recorded (a [`Mark`]); the
//! killer reads the same on the server it reached, and sends `KILL QUERY` only when they are
//! equal. Otherwise it tries a new connection (a balancer sends the next one elsewhere), up to
//! [`KILL_TRIES`] times within the bound; failing that, the connection is closed and the
//! statement may run to its end on the server.

use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;

use super::config::MyClient;
use crate::error::Result;
use crate::server::held::{self, Task};

/// A pooled MySQL connection as deadpool hands it out.
type Obj = deadpool::managed::Object<super::config::MyManager>;

pub(super) use crate::pooling::within;

/// How many connections the killer opens, at most, to reach the server of the session it is to
/// stop. Each one it holds open until it is done, so a balancer that sends new connections to
/// the server with the fewest sends the next one elsewhere.
const KILL_TRIES: usize = 8;

/// What names a server: its host name and port, its `server_id` and its version.
const SERVER: &str = "@@hostname, @@port, @@server_id, @@version";

/// The unique id a server generates for itself: `server_uid` on MariaDB (10.3 and later; a hash
/// of a network interface's hardware address and the port), `server_uuid` on MySQL (5.6 and
/// later; made once per data directory). MariaDB reports versions from 10 on (the handshake's
/// `5.5.5-` prefix is dropped by the driver), MySQL below.
fn unique_id_of(version: (u16, u16, u16)) -> &'static str {
    if version.0 >= 10 {
        "@@server_uid"
    } else {
        "@@server_uuid"
    }
}

/// What a server said about itself and about one of its sessions: enough to tell that session
/// apart from a session with the same id on another server. Recorded once, when a connection
/// opens (one round trip), and never per call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mark {
    /// The select list that names the server: [`SERVER`], and the server's unique id where
    /// it has one.
    names: String,
    /// What the server answered to `names`.
    server: Vec<Option<String>>,
    /// The session's id (`CONNECTION_ID()`, the id `KILL` takes).
    id: u64,
    /// The user the session logged in as.
    user: String,
    /// The client as the server sees it: its address and, over TCP, its port. A proxy's or
    /// balancer's own address and port when there is one: either way one live TCP connection.
    host: String,
}

/// One row of a [`Mark`] query: the server's names, then the session's id, user and host.
type Seen = (Vec<Option<String>>, u64, String, String);

impl Mark {
    /// Records the mark of `conn`'s session, in one round trip (two on a server without a
    /// unique id). `None` when the server refuses the statement (one without
    /// `information_schema.PROCESSLIST`, or a proxy that answers in its place): that connection's
    /// statements are then never killed, only closed.
    pub(crate) async fn record(conn: &mut mysql_async::Conn) -> Result<Option<Mark>> {
        let with_id = format!("{SERVER}, {}", unique_id_of(conn.server_version()));
        for names in [with_id, SERVER.to_owned()] {
            let own = u64::from(conn.id());
            let sql = format!(
                "SELECT {names}, ID, USER, HOST FROM information_schema.PROCESSLIST \
                 WHERE ID = CONNECTION_ID()"
            );
            if let Some(rows) = read(conn, &sql).await? {
                return Ok(match <[Seen; 1]>::try_from(rows) {
                    Ok([(server, id, user, host)]) if id == own => Some(Mark {
                        names,
                        server,
                        id,
                        user,
                        host,
                    }),
                    _ => None,
                });
            }
        }
        Ok(None)
    }

    /// Whether `killer` reached the server this mark was recorded on, and the session with this
    /// mark's id there is the one recorded: the same server names, and a session with the same
    /// id, user and client address and port. That session is still open (the connection that
    /// holds it is not closed before the killer is done), so no other can have taken its id.
    async fn found_by(&self, killer: &mut mysql_async::Conn) -> Result<bool> {
        let sql = format!(
            "SELECT {}, ID, USER, HOST FROM information_schema.PROCESSLIST \
             WHERE ID = {} AND ID <> CONNECTION_ID()",
            self.names, self.id
        );
        Ok(read(killer, &sql)
            .await?
            .is_some_and(|rows| self.is_seen(&rows)))
    }

    /// Whether the rows a killer read (for this mark's id) prove it reached this mark's session.
    fn is_seen(&self, rows: &[Seen]) -> bool {
        matches!(rows, [(server, id, user, host)]
            if *server == self.server && *id == self.id && *user == self.user
                && *host == self.host)
    }
}

/// The rows of a [`Mark`] query; `None` when the server refuses it. Errors of the connection
/// itself are returned.
async fn read(conn: &mut mysql_async::Conn, sql: &str) -> Result<Option<Vec<Seen>>> {
    let rows: Vec<mysql_async::Row> = match conn.query(sql).await {
        Ok(rows) => rows,
        Err(mysql_async::Error::Server(_)) => return Ok(None),
        Err(e) => return Err(super::error::map_err(e)),
    };
    Ok(rows.into_iter().map(seen).collect())
}

/// A row of a [`Mark`] query as [`Seen`]; `None` for a row of another shape.
fn seen(mut row: mysql_async::Row) -> Option<Seen> {
    let n = row.len().checked_sub(3)?;
    let server = (0..n)
        .map(|i| row.take_opt::<Option<String>, _>(i)?.ok())
        .collect::<Option<Vec<_>>>()?;
    Some((
        server,
        row.take_opt(n)?.ok()?,
        row.take_opt(n + 1)?.ok()?,
        row.take_opt(n + 2)?.ok()?,
    ))
}

/// Gives up `obj`, whose statement may still run: it leaves the pool now, and in the background
/// `KILL QUERY` stops its statement (bounded by `bound`; see [`kill_query`]) before the
/// connection closes. Without a runtime it closes at once (the server stops the statement when
/// it next writes to the closed socket; see `server::held::abandon`).
pub(super) fn abandon(obj: Obj, bound: Duration) {
    held::abandon(obj, bound, Some(stop));
}

/// What stopping an abandoned statement means here: `KILL QUERY` (see [`kill_query`]).
fn stop(client: &MyClient) -> Task<'_, ()> {
    Box::pin(async move {
        let _ = kill_query(client).await;
    })
}

/// What [`kill_query`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Killed {
    /// `KILL QUERY` was sent to the session, on the server it was proved to be on.
    Sent,
    /// No connection reached a server where the session could be proved to be this one (or the
    /// connection has no [`Mark`]): nothing was killed.
    Unproven,
}

/// Stops the statement running on `client` from a connection of its own, once that connection
/// proved it reached `client`'s own session (see [`Mark`]); up to [`KILL_TRIES`] connections.
pub(super) async fn kill_query(client: &MyClient) -> Result<Killed> {
    let Some(mark) = client.mark.as_ref() else {
        return Ok(Killed::Unproven);
    };
    // Connections that reached another server, held open until the end (see `KILL_TRIES`).
    let mut missed = Vec::new();
    let mut outcome = Ok(Killed::Unproven);
    for _ in 0..KILL_TRIES {
        // A try that fails (a server of the balancer that is down) is followed by another.
        let Ok(mut killer) = client.endpoint.connect().await else {
            continue;
        };
        match mark.found_by(&mut killer).await {
            Ok(true) => {
                outcome = killer
                    .query_drop(format!("KILL QUERY {}", mark.id))
                    .await
                    .map(|()| Killed::Sent)
                    .map_err(super::error::map_err);
                let _ = killer.disconnect().await;
                break;
            }
            Ok(false) => missed.push(killer),
            Err(_) => {}
        }
    }
    for k in missed {
        let _ = k.disconnect().await;
    }
    outcome
}

/// Checks out a connection from `pool` within `deadline` (see `pooling::checkout_within`).
pub(super) async fn checkout(pool: &super::Pool, deadline: Option<Instant>) -> Result<Obj> {
    crate::pooling::checkout_within(pool, deadline).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> Vec<Option<String>> {
        [
            "db",
            "3306",
            "1",
            "10.11.6-MariaDB",
            "0dfuIzFBftiUR9RKF00wCn2cXPI=",
        ]
        .map(|v| Some(v.to_owned()))
        .to_vec()
    }

    fn mark() -> Mark {
        Mark {
            names: format!("{SERVER}, @@server_uid"),
            server: server(),
            id: 42,
            user: "app".into(),
            host: "10.0.0.5:51234".into(),
        }
    }

    fn row(server: Vec<Option<String>>, id: u64, user: &str, host: &str) -> Seen {
        (server, id, user.into(), host.into())
    }

    #[test]
    fn only_the_recorded_session_on_the_recorded_server_is_proved() {
        let m = mark();
        assert!(m.is_seen(&[row(server(), 42, "app", "10.0.0.5:51234")]));
        // The same id on a server that looks the same but for one name.
        for i in 0..server().len() {
            let mut other = server();
            other[i] = Some("other".into());
            assert!(
                !m.is_seen(&[row(other, 42, "app", "10.0.0.5:51234")]),
                "{i}"
            );
        }
        let mut unnamed = server();
        unnamed[4] = None;
        assert!(!m.is_seen(&[row(unnamed, 42, "app", "10.0.0.5:51234")]));
        // A server that names itself the same, where the id is another client's: another
        // client address or port, or another user.
        assert!(!m.is_seen(&[row(server(), 42, "app", "10.0.0.5:40000")]));
        assert!(!m.is_seen(&[row(server(), 42, "app", "10.0.0.6:51234")]));
        assert!(!m.is_seen(&[row(server(), 42, "other", "10.0.0.5:51234")]));
        assert!(!m.is_seen(&[row(server(), 43, "app", "10.0.0.5:51234")]));
        // No such session.
        assert!(!m.is_seen(&[]));
    }

    #[test]
    fn the_unique_id_follows_the_servers_flavour() {
        assert_eq!(unique_id_of((10, 11, 6)), "@@server_uid");
        assert_eq!(unique_id_of((11, 4, 2)), "@@server_uid");
        assert_eq!(unique_id_of((8, 0, 36)), "@@server_uuid");
        assert_eq!(unique_id_of((5, 7, 44)), "@@server_uuid");
    }
}
