//! Multi-host connections as libpq makes them: the hosts of a URL tried one at a time, each
//! within its own bound (TCP, TLS, startup, authentication and the `target_session_attrs`
//! check), in the URL's order or shuffled (`load_balance_hosts=random`), and every
//! `target_session_attrs` value libpq knows. tokio-postgres bounds only the TCP connect and
//! knows only `any`, `read-write` and `read-only`, so the middleware does this itself.
//!
//! The server's state as it reports it without a query (`in_hot_standby` and
//! `default_transaction_read_only`, sent as `ParameterStatus` by PostgreSQL 14 and later, at
//! connect time and whenever they change) is watched by each connection's driver task, so a
//! pool that wants a writable server notices one that stopped being writable without a round
//! trip (see `PgManager::recycle`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

use deadpool_postgres::ClientWrapper;

use super::config::Endpoint;
use crate::deadline::{nanos, now_nanos};
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
#[derive(Debug, Default)]
pub(crate) struct ServerFlags(AtomicU8);

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
        if self.0.load(Ordering::Relaxed) != bits {
            self.0.store(bits, Ordering::Relaxed);
        }
    }

    fn get(&self, known: u8, on: u8) -> Option<bool> {
        let bits = self.0.load(Ordering::Relaxed);
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
        let bits = self.0.load(Ordering::Relaxed);
        match attrs {
            SessionAttrs::Primary => bits & HOT_STANDBY != 0,
            SessionAttrs::ReadWrite => bits & (HOT_STANDBY | READ_ONLY) != 0,
            _ => false,
        }
    }
}

/// Drives a pooled connection's I/O in a task of its own, whose handle it keeps, and keeps
/// the connection's [`ServerFlags`] up to date (two map lookups per wake-up of the task).
pub(crate) struct Watch<'a> {
    task: &'a mut Option<tokio::task::JoinHandle<()>>,
    flags: Arc<ServerFlags>,
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
        *self.task = Some(tokio::spawn(async move {
            let mut conn = std::pin::pin!(conn);
            let _ = std::future::poll_fn(|cx| {
                let r = std::future::Future::poll(conn.as_mut(), cx);
                flags.observe(
                    conn.parameter("in_hot_standby"),
                    conn.parameter("default_transaction_read_only"),
                );
                r
            })
            .await;
        }));
    }
}

/// A connection opened by [`connect`]: the client, the server state it watches, and the host
/// it reached.
pub(crate) struct Opened {
    pub(crate) client: ClientWrapper,
    pub(crate) flags: Arc<ServerFlags>,
    pub(crate) host: HostName,
}

/// A host as the configuration names it, for spans, status reports and errors.
#[derive(Debug, Clone)]
pub(crate) struct HostName {
    /// The host name, address or socket directory.
    pub(crate) address: Arc<str>,
    pub(crate) port: u16,
}

impl std::fmt::Display for HostName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.address, self.port)
    }
}

/// The host number `i` of a configuration.
pub(crate) fn host_name(cfg: &tokio_postgres::Config, i: usize) -> HostName {
    let address: Arc<str> = match cfg.get_hosts().get(i) {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.as_str().into(),
        #[cfg(unix)]
        Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string().into(),
        None => cfg
            .get_hostaddrs()
            .get(i)
            .map_or_else(|| "".into(), |a| a.to_string().into()),
    };
    let ports = cfg.get_ports();
    let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
    HostName { address, port }
}

/// How long a host that failed (unreachable, too slow, or of the wrong kind) is tried after
/// the others.
const HOST_RETRY_AFTER: Duration = Duration::from_secs(5);

/// What a pool remembers of one host.
#[derive(Debug, Default)]
struct HostState {
    /// Until when it is tried after the others (on the `now_nanos` clock; 0 = not).
    until: AtomicU64,
    /// 1: it was of the wrong kind (a standby may be promoted: tried before the unreachable
    /// ones); 2: unreachable or too slow.
    how: AtomicU8,
}

/// What a pool remembers of its hosts, and the generation of its connections.
#[derive(Debug, Default)]
pub(crate) struct HostBook {
    hosts: Vec<HostState>,
    /// Bumped when a connection finds its server no longer writable: every connection opened
    /// before is discarded when next checked out.
    epoch: AtomicU64,
}

/// How an attempt on a host ended, for the order of the next connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Fine = 0,
    WrongKind = 1,
    Unreachable = 2,
}

impl HostBook {
    pub(crate) fn new(hosts: usize) -> Self {
        Self {
            hosts: (0..hosts).map(|_| HostState::default()).collect(),
            epoch: AtomicU64::new(0),
        }
    }

    /// The current generation.
    #[inline]
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Relaxed)
    }

    /// A connection of generation `seen` found its server no longer writable: starts the next
    /// generation (once per generation, however many connections find it).
    pub(crate) fn server_changed(&self, seen: u64) {
        let _ = self.epoch.compare_exchange(
            seen,
            seen.wrapping_add(1),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    fn mark(&self, i: usize, outcome: Outcome) {
        if let Some(h) = self.hosts.get(i) {
            let until = match outcome {
                Outcome::Fine => 0,
                _ => now_nanos().saturating_add(nanos(HOST_RETRY_AFTER)),
            };
            h.how.store(outcome as u8, Ordering::Relaxed);
            h.until.store(until, Ordering::Relaxed);
        }
    }

    /// The order to try `n` hosts in: the configuration's (or shuffled when `random`), then
    /// the hosts of the wrong kind lately, then those unreachable lately.
    fn order(&self, n: usize, random: bool) -> Vec<usize> {
        let mut order: Vec<usize> = (0..n).collect();
        if random {
            // Fisher-Yates on a xorshift seeded by the clock and a counter.
            static SEED: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
            let mut x = SEED.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) ^ now_nanos();
            for i in (1..n).rev() {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let j = usize::try_from(x % (i as u64 + 1)).unwrap_or(0);
                order.swap(i, j);
            }
        }
        let now = now_nanos();
        let rank = |i: &usize| {
            self.hosts.get(*i).map_or(0, |h| {
                if h.until.load(Ordering::Relaxed) > now {
                    h.how.load(Ordering::Relaxed)
                } else {
                    0
                }
            })
        };
        // Stable: hosts of one rank keep their relative order.
        order.sort_by_key(rank);
        order
    }
}

/// What one attempt on one host found.
enum Attempt {
    Opened(Opened),
    /// Reached, but not the kind of server asked for.
    WrongKind(String),
    Failed(SqlMiddlewareDbError),
}

/// Connects to the first host of `ep` that satisfies `attrs`, each host within `limit`
/// (connect, startup, authentication and the check). `prefer-standby` tries every host for a
/// standby, then the reachable ones again for any server. The error lists every host's reason.
pub(crate) async fn connect(
    ep: &Endpoint,
    attrs: SessionAttrs,
    book: &HostBook,
    limit: Option<Duration>,
) -> Result<Opened> {
    let cfg = &ep.config;
    let n = cfg.get_hosts().len().max(cfg.get_hostaddrs().len());
    let random = cfg.get_load_balance_hosts() == tokio_postgres::config::LoadBalanceHosts::Random;
    let order = book.order(n, random);
    let passes: &[SessionAttrs] = match attrs {
        SessionAttrs::PreferStandby => &[SessionAttrs::Standby, SessionAttrs::Any],
        other => &[other][..],
    };
    let passes: Vec<SessionAttrs> = passes.to_vec();
    let mut reasons = Vec::new();
    let mut kind = None;
    let mut last_failure = None;
    let mut reachable: Vec<usize> = order.clone();
    for (p, want) in passes.iter().enumerate() {
        let hosts = if p == 0 {
            order.clone()
        } else {
            reachable.clone()
        };
        reachable.clear();
        for i in hosts {
            let name = host_name(cfg, i);
            let one = one_host(cfg, i);
            let attempt = attempt(ep, &one, *want, name.clone());
            let r = match limit {
                Some(limit) => tokio::time::timeout(limit, attempt)
                    .await
                    .unwrap_or_else(|_| {
                        Attempt::Failed(SqlMiddlewareDbError::new(
                            ErrorKind::ConnectionLost,
                            format!(
                                "no answer within connect_timeout ({limit:?}) for connect, startup and check"
                            ),
                        ))
                    }),
                None => attempt.await,
            };
            match r {
                Attempt::Opened(o) => {
                    book.mark(i, Outcome::Fine);
                    return Ok(o);
                }
                Attempt::WrongKind(why) => {
                    // A wrong kind counts as a failure only for the kind the pool wants
                    // in the end (a primary skipped in a search for standbys is not down).
                    if p + 1 == passes.len() {
                        book.mark(i, Outcome::WrongKind);
                    }
                    reachable.push(i);
                    kind.get_or_insert(ErrorKind::ConnectionLost);
                    reasons.push(format!("host {name}: {why}"));
                }
                Attempt::Failed(e) => {
                    book.mark(i, Outcome::Unreachable);
                    if e.kind() == ErrorKind::ConnectionLost || kind.is_none() {
                        kind = Some(e.kind());
                    }
                    reasons.push(format!("host {name}: {e}"));
                    last_failure = Some(e);
                }
            }
        }
    }
    if let (1, Some(e)) = (reasons.len(), last_failure) {
        // One host tried, once: its own error, with its code and source chain.
        return Err(e);
    }
    Err(SqlMiddlewareDbError::new(
        kind.unwrap_or(ErrorKind::Config),
        if reasons.is_empty() {
            "the Postgres configuration names no host".to_owned()
        } else {
            format!(
                "no host gave a session with target_session_attrs={}: {}",
                attrs.as_str(),
                reasons.join("; ")
            )
        },
    ))
}

/// Connects to the one host of `one` and checks that it is what `want` asks for.
async fn attempt(
    ep: &Endpoint,
    one: &tokio_postgres::Config,
    want: SessionAttrs,
    host: HostName,
) -> Attempt {
    let flags = Arc::new(ServerFlags::default());
    let mut task = None;
    let watch = Watch {
        task: &mut task,
        flags: Arc::clone(&flags),
    };
    let client = match ep.connector.connect(one, watch).await {
        Ok(c) => c,
        Err(e) => return Attempt::Failed(e.into()),
    };
    let Some(task) = task else {
        return Attempt::Failed(SqlMiddlewareDbError::new(
            ErrorKind::ConnectionLost,
            "the connection was not driven",
        ));
    };
    let client = ClientWrapper::new(client, task);
    match satisfies(&client, &flags, want).await {
        Ok(None) => Attempt::Opened(Opened {
            client,
            flags,
            host,
        }),
        Ok(Some(why)) => Attempt::WrongKind(why),
        Err(e) => Attempt::Failed(e.into()),
    }
}

/// `None` when the session is what `want` asks for, else why not. As libpq: the state the
/// server reported when the session opened when it reported it (PostgreSQL 14 and later), else
/// `SHOW transaction_read_only` or `pg_is_in_recovery()`.
async fn satisfies(
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

/// `cfg` with only its host number `i` (and that host's address and port), and no
/// `target_session_attrs` (checked here, not by the driver).
pub(crate) fn one_host(cfg: &tokio_postgres::Config, i: usize) -> tokio_postgres::Config {
    use tokio_postgres::config::Host;
    let mut one = tokio_postgres::Config::new();
    match cfg.get_hosts().get(i) {
        Some(Host::Tcp(h)) => {
            one.host(h);
        }
        #[cfg(unix)]
        Some(Host::Unix(p)) => {
            one.host_path(p);
        }
        None => {}
    }
    if let Some(a) = cfg.get_hostaddrs().get(i) {
        one.hostaddr(*a);
    }
    let ports = cfg.get_ports();
    one.port(ports.get(i).or(ports.first()).copied().unwrap_or(5432));
    if let Some(u) = cfg.get_user() {
        one.user(u);
    }
    if let Some(p) = cfg.get_password() {
        one.password(p);
    }
    if let Some(d) = cfg.get_dbname() {
        one.dbname(d);
    }
    if let Some(o) = cfg.get_options() {
        one.options(o);
    }
    if let Some(a) = cfg.get_application_name() {
        one.application_name(a);
    }
    if let Some(t) = cfg.get_connect_timeout() {
        one.connect_timeout(*t);
    }
    if let Some(t) = cfg.get_tcp_user_timeout() {
        one.tcp_user_timeout(*t);
    }
    one.ssl_mode(cfg.get_ssl_mode())
        .ssl_negotiation(cfg.get_ssl_negotiation())
        .keepalives(cfg.get_keepalives())
        .keepalives_idle(cfg.get_keepalives_idle())
        .channel_binding(cfg.get_channel_binding());
    if let Some(t) = cfg.get_keepalives_interval() {
        one.keepalives_interval(t);
    }
    if let Some(n) = cfg.get_keepalives_retries() {
        one.keepalives_retries(n);
    }
    one
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
    fn hosts_that_failed_lately_go_last_and_random_covers_every_order() {
        let book = HostBook::new(3);
        assert_eq!(book.order(3, false), vec![0, 1, 2]);
        book.mark(0, Outcome::Unreachable);
        assert_eq!(book.order(3, false), vec![1, 2, 0]);
        book.mark(2, Outcome::WrongKind);
        assert_eq!(book.order(3, false), vec![1, 2, 0]);
        book.mark(1, Outcome::WrongKind);
        assert_eq!(book.order(3, false), vec![1, 2, 0]);
        book.mark(0, Outcome::Fine);
        assert_eq!(book.order(3, false), vec![0, 1, 2]);
        book.mark(1, Outcome::Fine);
        book.mark(2, Outcome::Fine);
        let mut firsts = [0u32; 3];
        for _ in 0..300 {
            let o = book.order(3, true);
            let mut sorted = o.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, vec![0, 1, 2]);
            firsts[o[0]] += 1;
        }
        assert!(firsts.iter().all(|&n| n > 50), "{firsts:?}");
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

    #[test]
    fn a_new_generation_starts_once() {
        let book = HostBook::new(1);
        let seen = book.epoch();
        book.server_changed(seen);
        book.server_changed(seen);
        assert_eq!(book.epoch(), seen + 1);
    }
}
