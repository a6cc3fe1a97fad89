//! libpq's `target_session_attrs` (which server a connection must reach, taken out of the
//! connection string since tokio-postgres knows only some of its values), and the check of a
//! session against it.
//!
//! The server's state as it reports it without a query (`in_hot_standby` and
//! `default_transaction_read_only`, sent as `ParameterStatus` by PostgreSQL 14 and later, at
//! connect time and whenever they change) is watched by each connection's driver task, so a
//! pool that wants a writable server notices one that stopped being writable without a round
//! trip (see `PgManager::recycle`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use super::liveness::DriverEnd;

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// libpq's `target_session_attrs`: which server a connection must reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum SessionAttrs {
    /// Any server.
    #[default]
    Any,
    /// A session that can write: `transaction_read_only` is off.
    ReadWrite,
    /// A session that cannot write: `transaction_read_only` is on.
    ReadOnly,
    /// A server not in recovery.
    Primary,
    /// A server in recovery (a hot standby).
    Standby,
    /// A standby when one is reachable, else any server.
    PreferStandby,
}

impl SessionAttrs {
    /// Parses a `target_session_attrs` value.
    pub(crate) fn parse(value: &str) -> Result<Self> {
        Ok(match value {
            "any" => Self::Any,
            "read-write" => Self::ReadWrite,
            "read-only" => Self::ReadOnly,
            "primary" => Self::Primary,
            "standby" => Self::Standby,
            "prefer-standby" => Self::PreferStandby,
            _ => {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::Config,
                    "target_session_attrs must be any, read-write, read-only, primary, standby or prefer-standby",
                ));
            }
        })
    }

    /// The value as libpq spells it.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Any => "any",
            Self::ReadWrite => "read-write",
            Self::ReadOnly => "read-only",
            Self::Primary => "primary",
            Self::Standby => "standby",
            Self::PreferStandby => "prefer-standby",
        }
    }

    /// The value tokio-postgres holds in a configuration built by the caller.
    pub(crate) fn of_driver(cfg: &tokio_postgres::Config) -> Self {
        match cfg.get_target_session_attrs() {
            tokio_postgres::config::TargetSessionAttrs::ReadWrite => Self::ReadWrite,
            tokio_postgres::config::TargetSessionAttrs::ReadOnly => Self::ReadOnly,
            _ => Self::Any,
        }
    }

    /// Whether the pool must be on a server that accepts writes: a connection whose server
    /// stops accepting them is discarded.
    pub(crate) fn wants_writable(self) -> bool {
        matches!(self, Self::ReadWrite | Self::Primary)
    }

    /// The attributes of a reader pool, whose sessions are read-only by setting: `read-write`
    /// asks for the primary, `read-only` holds of every reader session.
    pub(crate) fn for_readers(self) -> Self {
        match self {
            Self::ReadWrite => Self::Primary,
            Self::ReadOnly => Self::Any,
            other => other,
        }
    }
}

/// Takes `target_session_attrs` out of a connection string (a URL, or libpq's `key=value`
/// form), since tokio-postgres refuses the values it does not know. Returns the rest of the
/// string and the value, when given.
pub(crate) fn split_attrs(conn: &str) -> Result<(String, Option<SessionAttrs>)> {
    const KEY: &str = "target_session_attrs";
    let mut attrs = None;
    if conn.contains("://") {
        let Some((head, query)) = conn.split_once('?') else {
            return Ok((conn.to_owned(), None));
        };
        let mut kept = Vec::new();
        for p in query.split('&') {
            match p.split_once('=') {
                Some((KEY, v)) => attrs = Some(SessionAttrs::parse(v)?),
                _ => kept.push(p),
            }
        }
        let rest = if kept.is_empty() {
            head.to_owned()
        } else {
            format!("{head}?{}", kept.join("&"))
        };
        return Ok((rest, attrs));
    }
    let mut kept = Vec::new();
    for p in conn.split_whitespace() {
        match p.split_once('=') {
            Some((KEY, v)) => attrs = Some(SessionAttrs::parse(v.trim_matches('\''))?),
            _ => kept.push(p),
        }
    }
    Ok((kept.join(" "), attrs))
}

const HOT_STANDBY_KNOWN: u8 = 1;
const HOT_STANDBY: u8 = 2;
const READ_ONLY_KNOWN: u8 = 4;
const READ_ONLY: u8 = 8;

/// What a server reported of its state without a query: `in_hot_standby` and
/// `default_transaction_read_only` (PostgreSQL 14 and later report both at connect time and
/// whenever they change; earlier servers and most poolers report neither).
///
/// It also holds how the connection's driver task ended ([`DriverEnd`]), which the client reads
/// after a failed first call (see `liveness.rs`).
#[derive(Debug, Default)]
pub(crate) struct ServerFlags {
    bits: AtomicU8,
    /// How the connection's driver task ended.
    pub(crate) end: DriverEnd,
}

impl ServerFlags {
    /// Notes the values the connection holds now.
    #[inline]
    fn observe(&self, hot_standby: Option<&str>, read_only: Option<&str>) {
        let mut bits = 0;
        if let Some(v) = hot_standby {
            bits |= HOT_STANDBY_KNOWN | if v == "on" { HOT_STANDBY } else { 0 };
        }
        if let Some(v) = read_only {
            bits |= READ_ONLY_KNOWN | if v == "on" { READ_ONLY } else { 0 };
        }
        if self.bits.load(Ordering::Relaxed) != bits {
            self.bits.store(bits, Ordering::Relaxed);
        }
    }

    fn get(&self, known: u8, on: u8) -> Option<bool> {
        let bits = self.bits.load(Ordering::Relaxed);
        (bits & known != 0).then_some(bits & on != 0)
    }

    /// The server is in recovery, as last reported (`None`: not reported).
    pub(crate) fn in_hot_standby(&self) -> Option<bool> {
        self.get(HOT_STANDBY_KNOWN, HOT_STANDBY)
    }

    /// The session's `default_transaction_read_only`, as last reported.
    pub(crate) fn default_read_only(&self) -> Option<bool> {
        self.get(READ_ONLY_KNOWN, READ_ONLY)
    }

    /// Whether the server reported that it no longer accepts what `attrs` asks for: in
    /// recovery (`primary`, `read-write`), or read-only by default (`read-write`).
    #[inline]
    pub(crate) fn stopped_writing(&self, attrs: SessionAttrs) -> bool {
        let bits = self.bits.load(Ordering::Relaxed);
        match attrs {
            SessionAttrs::Primary => bits & HOT_STANDBY != 0,
            SessionAttrs::ReadWrite => bits & (HOT_STANDBY | READ_ONLY) != 0,
            _ => false,
        }
    }
}

/// Drives a pooled connection's I/O in a task of its own, whose handle it keeps. The
/// connection's [`ServerFlags`] hold what the server reported when the session opened; when
/// `live`, they are kept up to date after that too (two map lookups per wake-up of the task),
/// for a pool that must notice a server stop taking writes (`target_session_attrs` `primary`
/// or `read-write`). Other pools never read them again, and their driver task polls the bare
/// connection future, as a raw tokio-postgres client's does. Either task records how the
/// connection ended ([`DriverEnd`]), once, when it ends.
pub(crate) struct Watch<'a> {
    pub(super) task: &'a mut Option<tokio::task::JoinHandle<()>>,
    pub(super) flags: Arc<ServerFlags>,
    pub(super) live: bool,
}

impl super::tls::Driver for Watch<'_> {
    fn drive<S, T>(self, conn: tokio_postgres::Connection<S, T>)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let flags = self.flags;
        flags.observe(
            conn.parameter("in_hot_standby"),
            conn.parameter("default_transaction_read_only"),
        );
        if !self.live {
            *self.task = Some(tokio::spawn(async move {
                let r = conn.await;
                flags.end.record(&r);
            }));
            return;
        }
        *self.task = Some(tokio::spawn(async move {
            let mut conn = std::pin::pin!(conn);
            let r = std::future::poll_fn(|cx| {
                let r = std::future::Future::poll(conn.as_mut(), cx);
                flags.observe(
                    conn.parameter("in_hot_standby"),
                    conn.parameter("default_transaction_read_only"),
                );
                r
            })
            .await;
            flags.end.record(&r);
        }));
    }
}

/// `None` when the session is what `want` asks for, else why not. As libpq: the state the
/// server reported when the session opened when it reported it (PostgreSQL 14 and later), else
/// `SHOW transaction_read_only` or `pg_is_in_recovery()`.
pub(super) async fn satisfies(
    client: &tokio_postgres::Client,
    flags: &ServerFlags,
    want: SessionAttrs,
) -> std::result::Result<Option<String>, tokio_postgres::Error> {
    async fn one_value(
        client: &tokio_postgres::Client,
        sql: &str,
    ) -> std::result::Result<String, tokio_postgres::Error> {
        let msgs = client.simple_query(sql).await?;
        Ok(msgs
            .iter()
            .find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                _ => None,
            })
            .unwrap_or_default())
    }
    Ok(match want {
        SessionAttrs::Any | SessionAttrs::PreferStandby => None,
        SessionAttrs::ReadWrite | SessionAttrs::ReadOnly => {
            let read_only = match (flags.in_hot_standby(), flags.default_read_only()) {
                (Some(hs), Some(ro)) => hs || ro,
                _ => one_value(client, "SHOW transaction_read_only").await? == "on",
            };
            match (want, read_only) {
                (SessionAttrs::ReadWrite, true) => Some("the session is read-only".to_owned()),
                (SessionAttrs::ReadOnly, false) => Some("the session is not read-only".to_owned()),
                _ => None,
            }
        }
        SessionAttrs::Primary | SessionAttrs::Standby => {
            let in_recovery = match flags.in_hot_standby() {
                Some(hs) => hs,
                None => one_value(client, "SELECT pg_catalog.pg_is_in_recovery()").await? == "t",
            };
            match (want, in_recovery) {
                (SessionAttrs::Primary, true) => Some("the server is in hot standby".to_owned()),
                (SessionAttrs::Standby, false) => {
                    Some("the server is not in hot standby".to_owned())
                }
                _ => None,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_libpq_value_parses_and_is_taken_out_of_the_url() {
        for v in [
            "any",
            "read-write",
            "read-only",
            "primary",
            "standby",
            "prefer-standby",
        ] {
            let (rest, a) = split_attrs(&format!(
                "postgres://u@h1:1,h2:2/db?x=1&target_session_attrs={v}"
            ))
            .unwrap();
            assert_eq!(rest, "postgres://u@h1:1,h2:2/db?x=1");
            assert_eq!(a.unwrap().as_str(), v);
        }
        let (rest, a) = split_attrs("host=h1,h2 target_session_attrs=standby dbname=d").unwrap();
        assert_eq!(rest, "host=h1,h2 dbname=d");
        assert_eq!(a, Some(SessionAttrs::Standby));
        assert!(split_attrs("postgres://h/db?target_session_attrs=sometimes").is_err());
        assert_eq!(split_attrs("postgres://h/db").unwrap().1, None);
    }

    #[test]
    fn reported_state_says_when_a_server_stopped_writing() {
        let f = ServerFlags::default();
        assert!(!f.stopped_writing(SessionAttrs::ReadWrite));
        assert_eq!(f.in_hot_standby(), None);
        f.observe(Some("off"), Some("on"));
        assert!(f.stopped_writing(SessionAttrs::ReadWrite));
        assert!(!f.stopped_writing(SessionAttrs::Primary));
        f.observe(Some("on"), Some("off"));
        assert!(f.stopped_writing(SessionAttrs::Primary));
        assert!(!f.stopped_writing(SessionAttrs::Any));
        assert_eq!(f.in_hot_standby(), Some(true));
        assert_eq!(f.default_read_only(), Some(false));
    }
}
