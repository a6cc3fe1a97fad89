//! `LISTEN`/`NOTIFY`: a [`Listener`] on a dedicated connection outside the pool, delivering
//! notifications as a stream, and reconnecting (re-issuing every `LISTEN`) when the connection
//! is lost.

use std::collections::BTreeSet;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use futures_util::Stream;
use tokio::sync::{mpsc, oneshot};
use tokio_postgres::AsyncMessage;

use super::config::Endpoint;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// One notification: the channel, the payload and the sending backend's process id.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Notification {
    /// The channel it was sent on.
    pub channel: String,
    /// The payload (empty when none was given).
    pub payload: String,
    /// The process id of the backend that sent it.
    pub process_id: i32,
}

enum Command {
    Listen(String, oneshot::Sender<Result<()>>),
    Unlisten(String, oneshot::Sender<Result<()>>),
}

/// What the listener's task shares with its handle.
#[derive(Debug, Default)]
struct Shared {
    reconnects: AtomicU64,
    backend_pid: AtomicI32,
    /// The pool was closed, and the listener with it.
    closed: std::sync::atomic::AtomicBool,
}

/// Notifications from `LISTEN`, on a connection of its own (not one of the pool's).
///
/// It is a [`Stream`] of [`Notification`]s (or call [`Listener::recv`]). When the connection
/// is lost, the listener reconnects in the background, with backoff, and issues every `LISTEN`
/// again before it counts the reconnection ([`Listener::reconnects`]): every notification sent
/// after that is delivered. Notifications sent while it was disconnected are lost, as they are
/// for any Postgres listener. Dropping the listener closes its connection.
///
/// ```no_run
/// # async fn demo(db: &sql_middleware::ConfigAndPool) -> Result<(), sql_middleware::SqlMiddlewareDbError> {
/// let mut listener = db.listener().await?;
/// listener.listen("jobs").await?;
/// while let Some(n) = listener.recv().await {
///     println!("{}: {}", n.channel, n.payload);
/// }
/// # Ok(()) }
/// ```
pub struct Listener {
    notifications: mpsc::UnboundedReceiver<Notification>,
    commands: mpsc::UnboundedSender<Command>,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("reconnects", &self.reconnects())
            .field("backend_pid", &self.backend_pid())
            .finish_non_exhaustive()
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// `"name"` with inner quotes doubled.
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn gone(shared: &Shared) -> SqlMiddlewareDbError {
    if shared.closed.load(Ordering::Acquire) {
        return SqlMiddlewareDbError::new(
            ErrorKind::PoolClosed,
            "the pool was closed, and its listeners with it",
        );
    }
    SqlMiddlewareDbError::new(ErrorKind::ConnectionLost, "the listener has stopped")
}

impl Listener {
    /// A listener made with `pool`'s settings; it stops when the pool is closed (and cannot
    /// start on a closed pool).
    pub(crate) async fn for_pool(pool: &super::Pool) -> Result<Listener> {
        let m = pool.manager();
        if *m.closing.borrow() {
            return Err(crate::pooling::pool_error(
                deadpool::managed::PoolError::<tokio_postgres::Error>::Closed,
            ));
        }
        Self::start(m.config.clone(), m.closing.subscribe()).await
    }

    /// Connects to `config` (with the pool's TLS) and starts the background task.
    /// It stops when `closing` turns true (the pool was closed).
    pub(crate) async fn start(
        config: Endpoint,
        closing: tokio::sync::watch::Receiver<bool>,
    ) -> Result<Listener> {
        let (notes_tx, notifications) = mpsc::unbounded_channel();
        let (commands, cmd_rx) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared::default());
        // The first connection is made here, so a bad configuration fails the call.
        let first = connect(&config, &shared, &notes_tx).await?;
        let task = tokio::spawn(run(
            config,
            first,
            (cmd_rx, closing),
            notes_tx,
            Arc::clone(&shared),
        ));
        Ok(Listener {
            notifications,
            commands,
            shared,
            task,
        })
    }

    /// Starts listening on `channel` (kept across reconnections).
    pub async fn listen(&mut self, channel: &str) -> Result<()> {
        let (ack, done) = oneshot::channel();
        self.commands
            .send(Command::Listen(channel.to_owned(), ack))
            .map_err(|_| gone(&self.shared))?;
        done.await.map_err(|_| gone(&self.shared))?
    }

    /// Stops listening on `channel`.
    pub async fn unlisten(&mut self, channel: &str) -> Result<()> {
        let (ack, done) = oneshot::channel();
        self.commands
            .send(Command::Unlisten(channel.to_owned(), ack))
            .map_err(|_| gone(&self.shared))?;
        done.await.map_err(|_| gone(&self.shared))?
    }

    /// The next notification (`None` once the listener has stopped).
    pub async fn recv(&mut self) -> Option<Notification> {
        self.notifications.recv().await
    }

    /// How many times the connection was lost and made again (with every `LISTEN` reissued).
    pub fn reconnects(&self) -> u64 {
        self.shared.reconnects.load(Ordering::Acquire)
    }

    /// The server process id of the listener's current connection.
    pub fn backend_pid(&self) -> i32 {
        self.shared.backend_pid.load(Ordering::Acquire)
    }
}

impl Stream for Listener {
    type Item = Notification;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Notification>> {
        self.notifications.poll_recv(cx)
    }
}

/// A live connection: its client, and a signal that fires when it ends.
struct Live {
    client: tokio_postgres::Client,
    ended: oneshot::Receiver<()>,
}

/// Drives a listener's connection on a task of its own, forwarding its notifications, and
/// fires `end` when it ends.
struct Pump {
    notes: mpsc::UnboundedSender<Notification>,
    end: oneshot::Sender<()>,
}

impl super::tls::Driver for Pump {
    fn drive<S, T>(self, mut connection: tokio_postgres::Connection<S, T>)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let Pump { notes, end } = self;
        tokio::spawn(async move {
            let mut messages = futures_util::stream::poll_fn(move |cx| connection.poll_message(cx));
            while let Some(Ok(m)) = futures_util::StreamExt::next(&mut messages).await {
                if let AsyncMessage::Notification(n) = m {
                    let _ = notes.send(Notification {
                        channel: n.channel().to_owned(),
                        payload: n.payload().to_owned(),
                        process_id: n.process_id(),
                    });
                }
            }
            let _ = end.send(());
        });
    }
}

/// Connects (with the pool's TLS), drives the connection on a task of its own (forwarding
/// notifications), and records the backend's process id.
async fn connect(
    config: &Endpoint,
    shared: &Shared,
    notes: &mpsc::UnboundedSender<Notification>,
) -> Result<Live> {
    let pump = |end| Pump {
        notes: notes.clone(),
        end,
    };
    let (client, ended) = if config.password.is_set() {
        // The provider is asked for each host as it is tried: the driver's own walk over a
        // multi-host URL would log in to every host with one password.
        let cfg = &config.config;
        let n = cfg.get_hosts().len().max(cfg.get_hostaddrs().len());
        let mut last = None;
        let mut opened = None;
        for i in 0..n {
            let name = super::hosts::host_name(cfg, i);
            let mut one = super::hosts::one_host(cfg, i);
            one.target_session_attrs(cfg.get_target_session_attrs());
            config.login(&mut one, &name).await?;
            let (end, ended) = oneshot::channel();
            match config.connector.connect(&one, pump(end)).await {
                Ok(c) => {
                    opened = Some((c, ended));
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        match (opened, last) {
            (Some(o), _) => o,
            (None, Some(e)) => return Err(super::error::map_err(e)),
            (None, None) => {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::Config,
                    "the Postgres configuration names no host",
                ));
            }
        }
    } else {
        let (end, ended) = oneshot::channel();
        let c = config
            .connector
            .connect(&config.config, pump(end))
            .await
            .map_err(super::error::map_err)?;
        (c, ended)
    };
    super::open::PgSetup(&client)
        .run(&config.after_connect)
        .await?;
    let row = client
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .map_err(super::error::map_err)?;
    shared.backend_pid.store(row.get(0), Ordering::Release);
    Ok(Live { client, ended })
}

/// Returns once the pool is closed; never if the pool is dropped without being closed (the
/// listener outlives it, as before).
async fn closed(closing: &mut tokio::sync::watch::Receiver<bool>) {
    loop {
        let now = *closing.borrow_and_update();
        if now {
            return;
        }
        if closing.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The listener's task: runs commands, and reconnects (re-listening) when the connection ends.
async fn run(
    config: Endpoint,
    first: Live,
    (mut commands, mut closing): (
        mpsc::UnboundedReceiver<Command>,
        tokio::sync::watch::Receiver<bool>,
    ),
    notes: mpsc::UnboundedSender<Notification>,
    shared: Arc<Shared>,
) {
    let mut channels: BTreeSet<String> = BTreeSet::new();
    let mut live = first;
    loop {
        tokio::select! {
            // The pool was closed: the connection closes with the task.
            () = closed(&mut closing) => {
                shared.closed.store(true, Ordering::Release);
                return;
            }
            cmd = commands.recv() => {
                let Some(cmd) = cmd else { return };
                let (sql, ack, add, name) = match cmd {
                    Command::Listen(c, ack) => (format!("LISTEN {}", quote_ident(&c)), ack, true, c),
                    Command::Unlisten(c, ack) => (format!("UNLISTEN {}", quote_ident(&c)), ack, false, c),
                };
                let r = live.client.batch_execute(&sql).await.map_err(super::error::map_err);
                if r.is_ok() {
                    if add {
                        channels.insert(name);
                    } else {
                        channels.remove(&name);
                    }
                }
                let _ = ack.send(r);
            }
            _ = &mut live.ended => {
                let mut pause = Duration::from_millis(50);
                live = loop {
                    if notes.is_closed() {
                        return;
                    }
                    if let Ok(l) = connect(&config, &shared, &notes).await {
                        let sql: String = channels
                            .iter()
                            .map(|c| format!("LISTEN {};", quote_ident(c)))
                            .collect();
                        if sql.is_empty() || l.client.batch_execute(&sql).await.is_ok() {
                            break l;
                        }
                    }
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(2));
                };
                shared.reconnects.fetch_add(1, Ordering::AcqRel);
            }
        }
    }
}
