//! Multi-host connections as libpq makes them: the hosts of a URL tried one at a time, each
//! within its own bound (TCP, TLS, startup, authentication and the `target_session_attrs`
//! check, see `attrs.rs`), in the URL's order or shuffled (`load_balance_hosts=random`), and
//! every `target_session_attrs` value libpq knows. tokio-postgres bounds only the TCP connect
//! and knows only `any`, `read-write` and `read-only`, so the middleware does this itself.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::Duration;

use deadpool_postgres::ClientWrapper;

use super::attrs::{ServerFlags, SessionAttrs, Watch, satisfies};
use super::config::Endpoint;
use crate::deadline::{nanos, now_nanos};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

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
        let mut order = crate::server::order::host_order(n, random);
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
            let mut one = one_host(cfg, i);
            // The password provider's for this host, if the pool has one (bounded by the create
            // timeout, outside the host's bound); its error ends the connect.
            ep.login(&mut one, &name).await?;
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
        // Only a pool that wants a writable server reads the flags after the open (see
        // `PgManager::recycle`).
        live: want.wants_writable(),
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
    fn a_new_generation_starts_once() {
        let book = HostBook::new(1);
        let seen = book.epoch();
        book.server_changed(seen);
        book.server_changed(seen);
        assert_eq!(book.epoch(), seen + 1);
    }
}
