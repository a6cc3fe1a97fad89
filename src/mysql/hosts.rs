//! Multi-host MySQL URLs with the meanings libpq gives Postgres ones: the hosts of
//! `mysql://user@h1:3306,h2:3307/db` tried one at a time, in order or shuffled
//! (`load_balance_hosts=random`), each within its own bound (`connect_timeout`, covering the
//! connect, the handshake and the node check), for a node of the kind asked for
//! (`target_session_attrs=any|read-write`; see `health.rs`). The pool's [`HostBook`] puts the
//! hosts that failed lately last, and leaves a host marked down for its pooled connections as
//! well as new ones: each connection remembers its host's generation when it opens, and a
//! checkout drops one whose host was marked down since (an atomic compare, no I/O).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use super::config::Endpoint;
use super::health::{Attrs, Verdict};
use crate::deadline::{nanos, now_nanos};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// How long a host that failed (unreachable, too slow, or not usable) is tried after the others.
const HOST_RETRY_AFTER: Duration = Duration::from_secs(5);

/// The bound of one host's connect and check when the URL sets no `connect_timeout`, for the
/// probe of a suspected host.
const PROBE_BOUND: Duration = Duration::from_secs(2);

/// How often a host's node state is checked again on one of its pooled connections, at
/// checkout (one checkout per host per period pays the round trip; see [`HostBook::due`]).
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(2);

/// The bound of network work on a pooled connection of `ep` at checkout (a session reset, a
/// ping, the node check): the pool's recycle timeout, or, when the URL sets a shorter
/// `connect_timeout`, that: a host gets no longer to answer on a pooled connection than on a new
/// one. A frozen node then costs a checkout `connect_timeout`, not the recycle timeout.
pub(crate) fn checkout_bound(ep: &Endpoint, recycle: Duration) -> Duration {
    ep.hosts
        .connect_timeout
        .map_or(recycle, |limit| limit.min(recycle))
}

/// Hosts and ports, in a URL's order.
pub(crate) type HostList = Vec<(String, u16)>;

/// The hosts of a MySQL URL and how to pick one.
#[derive(Debug, Clone, Default)]
pub(crate) struct Hosts {
    /// Host and port, in the URL's order (empty: the one host of mysql_async's options).
    pub(crate) list: HostList,
    /// `load_balance_hosts=random`.
    pub(crate) random: bool,
    /// `target_session_attrs`: what a node must be to be used.
    pub(crate) attrs: Attrs,
    /// `connect_timeout`: the bound of one host's connect and check.
    pub(crate) connect_timeout: Option<Duration>,
    /// Whether a node is checked when a connection opens (several hosts, or
    /// `target_session_attrs=read-write` asked for).
    pub(crate) check: bool,
}

/// What a pool remembers of one host.
#[derive(Debug, Default)]
struct HostState {
    /// Until when it is tried after the others (on the `now_nanos` clock; 0 = not).
    until: AtomicU64,
    /// Bumped when the host is marked down: its older connections are dropped at checkout.
    generation: AtomicU64,
    /// A probe of this host runs.
    probing: AtomicBool,
    /// When its node state was last checked (on the `now_nanos` clock).
    checked_at: AtomicU64,
}

/// What a pool remembers of its hosts.
#[derive(Debug, Default)]
pub(crate) struct HostBook {
    hosts: Vec<HostState>,
}

impl HostBook {
    pub(crate) fn new(hosts: usize) -> Self {
        Self {
            hosts: (0..hosts.max(1)).map(|_| HostState::default()).collect(),
        }
    }

    /// Host `i`'s current generation.
    #[inline]
    pub(crate) fn generation(&self, i: usize) -> u64 {
        self.hosts
            .get(i)
            .map_or(0, |h| h.generation.load(Ordering::Acquire))
    }

    /// Host `i` is not usable: tried after the others for a while, and its connections opened
    /// before now are dropped when next checked out.
    pub(crate) fn mark_down(&self, i: usize) {
        if let Some(h) = self.hosts.get(i) {
            h.until.store(
                now_nanos().saturating_add(nanos(HOST_RETRY_AFTER)),
                Ordering::Relaxed,
            );
            h.generation.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Host `i` failed a connect: tried after the others for a while (its connections are
    /// left alone: a refused connect says nothing of them).
    fn mark_failed(&self, i: usize) {
        if let Some(h) = self.hosts.get(i) {
            h.until.store(
                now_nanos().saturating_add(nanos(HOST_RETRY_AFTER)),
                Ordering::Relaxed,
            );
        }
    }

    fn mark_fine(&self, i: usize) {
        if let Some(h) = self.hosts.get(i) {
            h.until.store(0, Ordering::Relaxed);
            h.checked_at.store(now_nanos(), Ordering::Relaxed);
        }
    }

    /// Whether host `i`'s node state is due for a check (last checked [`CHECK_EVERY`] ago or
    /// more); true for one caller per period.
    pub(crate) fn due(&self, i: usize) -> bool {
        let Some(h) = self.hosts.get(i) else {
            return false;
        };
        let now = now_nanos();
        let last = h.checked_at.load(Ordering::Relaxed);
        now.saturating_sub(last) >= nanos(CHECK_EVERY)
            && h.checked_at
                .compare_exchange(last, now, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
    }

    /// The order to try `n` hosts in: the configuration's (or shuffled when `random`), then
    /// those that failed lately.
    pub(crate) fn order(&self, n: usize, random: bool) -> Vec<usize> {
        let mut order = crate::server::order::host_order(n, random);
        let now = now_nanos();
        // Stable: hosts of one rank keep their relative order.
        order.sort_by_key(|i| {
            self.hosts
                .get(*i)
                .is_some_and(|h| h.until.load(Ordering::Relaxed) > now)
        });
        order
    }
}

/// A connection opened by [`connect`], the host it reached (its number in the URL) and that
/// host's generation when it opened.
pub(crate) struct Opened {
    pub(crate) conn: mysql_async::Conn,
    pub(crate) host: usize,
    pub(crate) generation: u64,
}

/// `opts` pointed at host `i` of `hosts`.
pub(crate) fn one_host(opts: &mysql_async::Opts, hosts: &Hosts, i: usize) -> mysql_async::Opts {
    match hosts.list.get(i) {
        Some((h, p)) => mysql_async::OptsBuilder::from_opts(opts.clone())
            .ip_or_hostname(h.clone())
            .tcp_port(*p)
            .into(),
        None => opts.clone(),
    }
}

/// The host's name for messages (`host:port`).
fn host_name(opts: &mysql_async::Opts) -> String {
    format!("{}:{}", opts.ip_or_hostname(), opts.tcp_port())
}

/// Connects to the first host of `ep` that is usable for its `target_session_attrs`, each
/// host within `connect_timeout`. The error lists every host's reason; with one host, its own
/// error.
pub(crate) async fn connect(ep: &Endpoint) -> Result<Opened> {
    let hosts = &ep.hosts;
    let n = hosts.list.len().max(1);
    let mut reasons = Vec::new();
    let mut last = None;
    let mut kind = None;
    for i in ep.book.order(n, hosts.random) {
        let opts = one_host(&ep.opts, hosts, i);
        let generation = ep.book.generation(i);
        let r = match hosts.connect_timeout {
            Some(limit) => tokio::time::timeout(limit, attempt(ep, &opts))
                .await
                .unwrap_or_else(|_| {
                    Err(SqlMiddlewareDbError::new(
                        ErrorKind::ConnectionLost,
                        format!(
                            "no answer within connect_timeout ({limit:?}) for connect and check"
                        ),
                    ))
                }),
            None => attempt(ep, &opts).await,
        };
        match r {
            Ok(conn) => {
                ep.book.mark_fine(i);
                return Ok(Opened {
                    conn,
                    host: i,
                    generation,
                });
            }
            Err(e) => {
                ep.book.mark_failed(i);
                if e.kind() == ErrorKind::ConnectionLost || kind.is_none() {
                    kind = Some(e.kind());
                }
                reasons.push(format!("host {}: {e}", host_name(&opts)));
                last = Some(e);
            }
        }
    }
    if let (1, Some(e)) = (reasons.len(), last) {
        return Err(e);
    }
    Err(SqlMiddlewareDbError::new(
        kind.unwrap_or(ErrorKind::ConnectionLost),
        format!(
            "no host gave a usable session with target_session_attrs={}: {}",
            hosts.attrs.as_str(),
            reasons.join("; ")
        ),
    ))
}

/// Connects to the one host of `opts` and checks the node when the pool asks for it.
async fn attempt(ep: &Endpoint, opts: &mysql_async::Opts) -> Result<mysql_async::Conn> {
    let mut conn = ep.connect_to(opts).await?;
    if ep.hosts.check {
        match super::health::check(&mut conn, ep.hosts.attrs).await {
            Ok(Verdict::Usable) => {}
            Ok(Verdict::Not(why)) => {
                let _ = conn.disconnect().await;
                return Err(SqlMiddlewareDbError::new(ErrorKind::ConnectionLost, why));
            }
            Err(e) => return Err(e),
        }
    }
    Ok(conn)
}

/// Whether a checkout must check the node of pooled connection `c` now: its pool checks nodes
/// and its host is due for it (see [`HostBook::due`]). No I/O.
#[inline]
pub(crate) fn check_due(c: &super::config::MyClient) -> bool {
    c.endpoint.hosts.check && c.endpoint.book.due(c.node.0)
}

/// Checks the node of a pooled connection `c` (when [`check_due`] says so), within `bound`;
/// false when the node is not usable (the host is then marked down) or did not answer.
pub(crate) async fn still_usable(c: &mut super::config::MyClient, bound: Duration) -> bool {
    let (host, _) = c.node;
    let attrs = c.endpoint.hosts.attrs;
    match tokio::time::timeout(bound, super::health::check(&mut c.conn, attrs)).await {
        Ok(Ok(Verdict::Usable)) => true,
        Ok(Ok(Verdict::Not(_))) => {
            c.endpoint.book.mark_down(host);
            false
        }
        // No answer, or a failed check: the host is suspect (see `after_error`).
        Ok(Err(e)) => {
            if !after_error(&c.endpoint, host, &e) {
                c.endpoint.book.mark_down(host);
            }
            false
        }
        Err(_) => {
            let e = SqlMiddlewareDbError::new(
                ErrorKind::Timeout,
                format!("the node check on a pooled connection took longer than {bound:?}"),
            );
            after_error(&c.endpoint, host, &e);
            false
        }
    }
}

/// A connection to host `host` (of generation `generation`) met `e`. A node that says it is
/// not usable (`1047`) is marked down at once. A lost connection or a statement stopped at its
/// limit makes the host suspect: its pooled connections are dropped at their next checkout
/// (they are likely stuck the same way: a frozen node holds every one of them until its
/// limit), new connections try the other hosts first, and the host is probed in the
/// background (a connect and the node check, within `connect_timeout`): marked down when the
/// probe fails, tried in its turn again when it succeeds. A statement that was only slow costs
/// its host's pooled connections one reconnect. Returns whether the connection must be
/// discarded.
pub(crate) fn after_error(
    ep: &std::sync::Arc<Endpoint>,
    host: usize,
    e: &SqlMiddlewareDbError,
) -> bool {
    if !ep.hosts.check {
        return super::health::node_unusable(e);
    }
    if super::health::node_unusable(e) {
        ep.book.mark_down(host);
        return true;
    }
    if matches!(
        e.kind(),
        ErrorKind::ConnectionLost | ErrorKind::Timeout | ErrorKind::OutcomeUnknown
    ) {
        ep.book.mark_down(host);
        probe(ep, host);
        return true;
    }
    false
}

/// Probes host `host` in the background (once at a time) and marks it down when it cannot be
/// reached or is not usable.
fn probe(ep: &std::sync::Arc<Endpoint>, host: usize) {
    let Some(h) = ep.book.hosts.get(host) else {
        return;
    };
    if h.probing.swap(true, Ordering::AcqRel) {
        return;
    }
    let Ok(rt) = tokio::runtime::Handle::try_current() else {
        h.probing.store(false, Ordering::Release);
        return;
    };
    let ep = std::sync::Arc::clone(ep);
    rt.spawn(async move {
        let opts = one_host(&ep.opts, &ep.hosts, host);
        let bound = ep.hosts.connect_timeout.unwrap_or(PROBE_BOUND);
        let ok = match tokio::time::timeout(bound, attempt(&ep, &opts)).await {
            Ok(Ok(c)) => {
                let _ = c.disconnect().await;
                true
            }
            _ => false,
        };
        if ok {
            // Usable after all: tried in its turn again (its old connections stay dropped).
            ep.book.mark_fine(host);
        } else {
            ep.book.mark_down(host);
        }
        if let Some(h) = ep.book.hosts.get(host) {
            h.probing.store(false, Ordering::Release);
        }
    });
}

impl super::conn::MyConnection {
    /// A call on this connection failed with `e`: a node that is not usable is left (see
    /// [`after_error`]), and this connection is discarded when it goes back.
    pub(super) fn node_error(&mut self, e: &SqlMiddlewareDbError) {
        if let Some(c) = self.obj_mut()
            && after_error(&c.endpoint, c.node.0, e)
        {
            c.broken = true;
        }
    }
}

/// Splits a URL's authority (`user:password@h1:p1,h2:p2`) into the user part and its hosts;
/// a single host gives an empty list (mysql_async reads it).
pub(crate) fn split_hosts(authority: &str) -> Result<(Option<&str>, HostList)> {
    let (user, hosts) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if !hosts.contains(',') {
        return Ok((user, Vec::new()));
    }
    let mut list = Vec::new();
    for h in hosts.split(',') {
        let (name, port) = if let Some(rest) = h.strip_prefix('[') {
            // [v6]:port
            let (addr, tail) = rest.split_once(']').ok_or_else(|| bad_host(h))?;
            let port = match tail.strip_prefix(':') {
                Some(p) => p.parse().map_err(|_| bad_host(h))?,
                None if tail.is_empty() => 3306,
                None => return Err(bad_host(h)),
            };
            (addr.to_owned(), port)
        } else {
            match h.rsplit_once(':') {
                Some((n, p)) => (n.to_owned(), p.parse().map_err(|_| bad_host(h))?),
                None => (h.to_owned(), 3306),
            }
        };
        if name.is_empty() {
            return Err(bad_host(h));
        }
        list.push((crate::url_text::percent_decode(&name)?, port));
    }
    Ok((user, list))
}

fn bad_host(h: &str) -> SqlMiddlewareDbError {
    crate::url_text::config_error(format!(
        "the MySQL URL's host list has an invalid entry `{h}` (each is host or host:port)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_marked_down_go_last_and_their_generation_moves() {
        let book = HostBook::new(3);
        assert_eq!(book.order(3, false), vec![0, 1, 2]);
        let g = book.generation(0);
        book.mark_down(0);
        assert_eq!(book.generation(0), g + 1);
        assert_eq!(book.order(3, false), vec![1, 2, 0]);
        book.mark_failed(1);
        assert_eq!(book.order(3, false), vec![2, 0, 1]);
        assert_eq!(
            book.generation(1),
            0,
            "a failed connect leaves connections alone"
        );
        book.mark_fine(0);
        book.mark_fine(1);
        assert_eq!(book.order(3, false), vec![0, 1, 2]);
        let mut firsts = [0u32; 3];
        for _ in 0..300 {
            firsts[book.order(3, true)[0]] += 1;
        }
        assert!(firsts.iter().all(|&n| n > 50), "{firsts:?}");
    }

    #[test]
    fn host_lists_are_split() {
        let (u, l) = split_hosts("app:pw@h1:3307,[::1]:3308,h3").unwrap();
        assert_eq!(u, Some("app:pw"));
        assert_eq!(
            l,
            vec![
                ("h1".to_owned(), 3307),
                ("::1".to_owned(), 3308),
                ("h3".to_owned(), 3306)
            ]
        );
        assert!(split_hosts("h1:3306").unwrap().1.is_empty());
        for bad in ["h1:x,h2", "h1,:3306", "h1,[::1", "h1,h2:99999"] {
            let e = split_hosts(bad).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Config, "{bad}");
        }
    }
}
