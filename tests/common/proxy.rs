//! A TCP relay in front of a server that can be told to stop answering: a network that drops
//! packets (or a server that hangs) without closing connections. Existing connections stop
//! relaying; the relay stops accepting, and once its small accept queue is full (see
//! [`Relay::fill_backlog`]) new connection attempts hang as they do towards an unreachable host.
//!
//! In front of several servers ([`Relay::spread`]) it is a TCP load balancer: each new
//! connection goes to the next server in turn (round robin), or to one chosen server
//! ([`Relay::pin_new_connections`]), and it counts how many went to each.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Where the relay forwards to.
#[derive(Debug, Clone)]
pub enum Target {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A unix socket path.
    Unix(PathBuf),
}

/// The server end of one relayed connection.
type Halves = (
    Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
);

async fn connect(target: &Target) -> Option<Halves> {
    match target {
        Target::Tcp(a) => {
            let (r, w) = TcpStream::connect(a).await.ok()?.into_split();
            Some((Box::new(r), Box::new(w)))
        }
        Target::Unix(p) => {
            let (r, w) = tokio::net::UnixStream::connect(p).await.ok()?.into_split();
            Some((Box::new(r), Box::new(w)))
        }
    }
}

/// Rewrites the first bytes a client sends on a new connection, given the index of the server
/// the connection goes to (see [`Relay::rewrite_first_packet`]).
pub type Rewrite = Arc<dyn Fn(usize, &mut Vec<u8>) + Send + Sync>;

/// How a relay in front of several servers chooses one for each new connection.
#[derive(Default)]
struct Spread {
    /// The next server in turn.
    next: AtomicUsize,
    /// 1 + the index of the server every new connection goes to; 0: round robin.
    pinned: AtomicUsize,
    /// How many connections went to each server.
    counts: Vec<std::sync::atomic::AtomicU64>,
    rewrite: Mutex<Option<Rewrite>>,
}

impl Spread {
    /// The server for a new connection, counted.
    fn choose(&self) -> usize {
        let n = self.counts.len();
        let i = match self.pinned.load(Ordering::SeqCst) {
            0 => self.next.fetch_add(1, Ordering::SeqCst) % n,
            p => (p - 1) % n,
        };
        self.counts[i].fetch_add(1, Ordering::SeqCst);
        i
    }
}

/// The relay; it stops when dropped (with the runtime's tasks).
pub struct Relay {
    /// Where clients connect.
    pub addr: SocketAddr,
    spread: Arc<Spread>,
    silent: Arc<AtomicBool>,
    /// Connections accepted before the last [`Relay::cut_existing`] are cut.
    generation: Arc<std::sync::atomic::AtomicU64>,
    /// Connections accepted before the last [`Relay::hang_up_existing`] close at their
    /// client's next bytes.
    hangups: Arc<std::sync::atomic::AtomicU64>,
    /// How long a new connection waits before it is relayed, in milliseconds.
    delay_ms: Arc<std::sync::atomic::AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Relay {
    /// Starts relaying a loopback port to `target`.
    pub async fn start(target: Target) -> Relay {
        Self::start_on(0, target).await
    }

    /// Starts relaying loopback port `port` (0: any free one) to `target`.
    pub async fn start_on(port: u16, target: Target) -> Relay {
        Self::start_spread(port, vec![target]).await
    }

    /// Starts a TCP load balancer on a free loopback port in front of `targets`: each new
    /// connection goes to the next one in turn, starting with the first.
    pub async fn spread(targets: Vec<Target>) -> Relay {
        assert!(!targets.is_empty(), "a relay needs a target");
        Self::start_spread(0, targets).await
    }

    /// Starts relaying loopback port `port` (0: any free one) to `targets` in turn.
    async fn start_spread(port: u16, targets: Vec<Target>) -> Relay {
        let spread = Arc::new(Spread {
            counts: targets.iter().map(|_| Default::default()).collect(),
            ..Default::default()
        });
        let chooser = Arc::clone(&spread);
        let socket = tokio::net::TcpSocket::new_v4().expect("relay socket");
        socket.set_reuseaddr(true).expect("reuseaddr");
        socket
            .bind(std::net::SocketAddr::from(([127, 0, 0, 1], port)))
            .expect("bind relay");
        let listener: TcpListener = socket.listen(1).expect("listen");
        let addr = listener.local_addr().expect("relay address");
        let silent = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&silent);
        let generation = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let gen_all = Arc::clone(&generation);
        let hangups = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let hangups_all = Arc::clone(&hangups);
        let delay_ms = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let delays = Arc::clone(&delay_ms);
        let task = tokio::spawn(async move {
            loop {
                if flag.load(Ordering::SeqCst) {
                    // Silent: accept nothing more; the queue fills and connects hang.
                    let _held = listener;
                    std::future::pending::<()>().await;
                    return;
                }
                let Ok((client, _)) = listener.accept().await else {
                    return;
                };
                let flag = Arc::clone(&flag);
                let index = chooser.choose();
                let target = targets[index].clone();
                let rewrite = chooser
                    .rewrite
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone()
                    .map(|f| (index, f));
                let gens = Arc::clone(&gen_all);
                let born = gen_all.load(Ordering::SeqCst);
                let hangs = Arc::clone(&hangups_all);
                let born_hangups = hangs.load(Ordering::SeqCst);
                let delay = delays.load(Ordering::SeqCst);
                tokio::spawn(async move {
                    if delay > 0 {
                        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
                    }
                    if flag.load(Ordering::SeqCst) {
                        // Accept and never answer.
                        let _held = client;
                        std::future::pending::<()>().await;
                        return;
                    }
                    let Some((sr, sw)) = connect(&target).await else {
                        return;
                    };
                    let (cr, cw) = client.into_split();
                    let cut = Cut {
                        silent: Arc::clone(&flag),
                        generation: gens,
                        born,
                        hangups: hangs,
                        born_hangups,
                    };
                    tokio::join!(
                        pump(cr, sw, cut.clone(), rewrite, true),
                        pump(sr, cw, cut, None, false)
                    );
                });
            }
        });
        Relay {
            addr,
            spread,
            silent,
            generation,
            hangups,
            delay_ms,
            task,
        }
    }

    /// How many connections went to target `index` so far.
    pub fn relayed(&self, index: usize) -> u64 {
        self.spread.counts[index].load(Ordering::SeqCst)
    }

    /// From now on every new connection goes to target `index`; `None`: round robin again.
    pub fn pin_new_connections(&self, index: Option<usize>) {
        self.spread
            .pinned
            .store(index.map_or(0, |i| i + 1), Ordering::SeqCst);
    }

    /// New connections pass the first bytes their client sends (one read, as it arrived)
    /// through `f`, with the index of the target they go to, before relaying them.
    pub fn rewrite_first_packet(&self, f: Rewrite) {
        *self
            .spread
            .rewrite
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(f);
    }

    /// New connections wait `d` before they are relayed (a slow network or server to connect
    /// to); existing ones are not affected.
    pub fn delay_new_connections(&self, d: std::time::Duration) {
        self.delay_ms.store(
            u64::try_from(d.as_millis()).unwrap_or(u64::MAX),
            Ordering::SeqCst,
        );
    }

    /// From now on nothing is relayed, on old or new connections; nothing is closed either.
    pub fn go_silent(&self) {
        self.silent.store(true, Ordering::SeqCst);
    }

    /// Existing connections stop relaying (silently, as a NAT that forgot them would); new
    /// connections are relayed as before.
    pub fn cut_existing(&self) {
        self.generation.fetch_add(1, Ordering::SeqCst);
    }

    /// Existing connections close as soon as their client sends anything, which is not relayed:
    /// a server that closed the session while it sat idle, before the client read the close.
    /// The client learns of it only when it uses the connection. New connections are relayed
    /// as before.
    pub fn hang_up_existing(&self) {
        self.hangups.fetch_add(1, Ordering::SeqCst);
    }

    /// After [`Self::go_silent`]: fills the accept queue with idle connections (returned; keep
    /// them) so that every later connection attempt hangs in the handshake.
    pub fn fill_backlog(&self) -> Vec<std::net::TcpStream> {
        (0..6)
            .filter_map(|_| {
                std::net::TcpStream::connect_timeout(
                    &self.addr,
                    std::time::Duration::from_millis(200),
                )
                .ok()
            })
            .collect()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// When a relayed connection stops relaying.
#[derive(Clone)]
struct Cut {
    silent: Arc<AtomicBool>,
    generation: Arc<std::sync::atomic::AtomicU64>,
    born: u64,
    hangups: Arc<std::sync::atomic::AtomicU64>,
    born_hangups: u64,
}

impl Cut {
    fn now(&self) -> bool {
        self.silent.load(Ordering::SeqCst) || self.generation.load(Ordering::SeqCst) != self.born
    }

    fn hung_up(&self) -> bool {
        self.hangups.load(Ordering::SeqCst) != self.born_hangups
    }
}

/// Copies bytes until EOF or until the connection is cut; then holds both ends open. The first
/// bytes read pass through `rewrite` (with its target's index), if any. On the client's side
/// (`from_client`), bytes read after a hang-up are dropped, and so are both ends: the server
/// reads the end of its session, and the other direction's end then closes the client's.
async fn pump<R, W>(
    mut from: R,
    mut to: W,
    cut: Cut,
    mut rewrite: Option<(usize, Rewrite)>,
    from_client: bool,
) where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if from_client && cut.hung_up() {
            return;
        }
        if cut.now() {
            let _held = (from, to);
            std::future::pending::<()>().await;
            return;
        }
        let sent = match rewrite.take() {
            Some((index, f)) => {
                let mut first = buf[..n].to_vec();
                f(index, &mut first);
                to.write_all(&first).await
            }
            None => to.write_all(&buf[..n]).await,
        };
        if sent.is_err() {
            return;
        }
    }
}

/// The first host of the test server's URL, as a relay target.
#[cfg(feature = "postgres")]
pub fn target_of(cfg: &tokio_postgres::Config) -> Target {
    let port = cfg.get_ports().first().copied().unwrap_or(5432);
    match cfg.get_hosts().first().expect("the test URL names a host") {
        tokio_postgres::config::Host::Tcp(h) => {
            let addr = std::net::ToSocketAddrs::to_socket_addrs(&(h.as_str(), port))
                .expect("resolve the test server")
                .next()
                .expect("an address");
            Target::Tcp(addr)
        }
        tokio_postgres::config::Host::Unix(dir) => {
            Target::Unix(dir.join(format!(".s.PGSQL.{port}")))
        }
    }
}

/// The test server's user, database and password, at `127.0.0.1:port`.
#[cfg(feature = "postgres")]
pub fn config_at(base: &tokio_postgres::Config, port: u16) -> tokio_postgres::Config {
    let mut cfg = tokio_postgres::Config::new();
    cfg.host("127.0.0.1").port(port);
    if let Some(u) = base.get_user() {
        cfg.user(u);
    }
    if let Some(d) = base.get_dbname() {
        cfg.dbname(d);
    }
    if let Some(p) = base.get_password() {
        cfg.password(p);
    }
    cfg
}

/// Builds a pool of one connection from `builder` (which reaches its server through `relay`)
/// with the recycle timeout `bound`, runs `dirty` on the connection, silences the relay, gives
/// the connection back, and checks that the pool gives it up (its slot freed) within `bound`
/// (with room for a loaded machine): the background cleaning of a connection whose server
/// stopped answering never outlives the bound.
pub async fn assert_given_up_within(
    builder: sql_middleware::PoolBuilder,
    relay: &Relay,
    dirty: &str,
    bound: std::time::Duration,
) {
    use std::time::{Duration, Instant};
    let pool = builder
        .max_size(1)
        .recycle_timeout(bound)
        .build()
        .await
        .expect("pool through the relay");
    let mut c = pool.get_connection().await.expect("checkout");
    c.execute_batch(dirty).await.expect(dirty);
    relay.go_silent();
    let _queue = relay.fill_backlog();
    drop(c);
    let t = Instant::now();
    while pool.status().size > 0 && t.elapsed() < Duration::from_secs(20) {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let took = t.elapsed();
    println!(
        "{:?} background cleaning after {dirty:?}: bound_ms={} given_up_after_ms={}",
        pool.database_type(),
        bound.as_millis(),
        took.as_millis()
    );
    assert_eq!(
        pool.status().size,
        0,
        "after {dirty:?}: the connection to a silent server still holds its slot"
    );
    assert!(
        took < bound * 6,
        "after {dirty:?}: given up after {took:?}, past the recycle timeout of {bound:?}"
    );
}
