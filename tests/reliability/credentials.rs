//! Reliability 28.6: credentials per connection (Postgres, MySQL). A pool's password provider
//! is asked for the password each time a connection opens, so a secret can rotate while the
//! pool runs. The promises:
//!
//! - **Rotation under load.** The server's password is changed while tasks check connections
//!   out and query in a loop, on a pool whose short `max_lifetime` keeps it opening
//!   connections; the provider returns the new password from that moment on. No checkout that
//!   started after the provider switched fails, the connections opened after it logged in with
//!   the new password (the server refuses the old one: a direct login and a pool on the URL
//!   alone, whose password is the old one, both fail with `Config`), and they are many.
//!   Postgres runs it over TLS (`verify-full`), with a multi-host URL whose first host is down,
//!   with readers on a replica, and opens a `Listener` after the rotation; MySQL runs it
//!   through the TLS connect path (`prefer`).
//! - **No password in any output.** Neither the old nor the new password appears in any
//!   error's `Display` or `Debug`, the builder's, the pool's, its status' or its statistics'
//!   `Debug`, or any span or event the pool emits (feature `tracing`, captured at `TRACE`),
//!   although the URL holds the old one.
//! - **Typed failures.** A password the server refuses fails the checkout with `Config`, a
//!   provider's error with `Config` (its text, which may quote the secret, only behind
//!   `driver_error()`), a provider slower than the create timeout with `PoolTimeout` within it;
//!   none of them shows the secret, and the pool works again once the provider does.
//! - **The provider knows the login.** Each call gets the `Login` being made, and it names the
//!   server the connection then reaches: with a multi-host URL whose first host is down, that
//!   host and then the next one (the session's `inet_server_port()`), a replica's host and
//!   database with `is_reader()`, a `Listener`'s hosts in the URL's order; on MySQL the URL's
//!   host, port (`@@port`), user and database, the connection that stops a statement past its
//!   limit included.
//! - **Embedded engines refuse it.** SQLite and Turso have no login: `build()` fails with
//!   `Config`.
//!
//! The Postgres tests start a throwaway cluster with `scram-sha-256` over TCP (feature
//! `postgres-tls`); the MySQL tests create a user with a password on the suite's server and
//! drop it afterwards.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sql_middleware::prelude::*;
use sql_middleware::{Login, Password};

use crate::common;

/// Pool size and load of the rotation tests.
const MAX_SIZE: usize = 3;
const TASKS: usize = 6;
/// How long connections live: short, so that the pool keeps opening them.
const LIFETIME: Duration = Duration::from_millis(150);

/// The secret the provider hands out (its generation and text), and how often it was asked
/// per generation.
struct Secret {
    current: tokio::sync::RwLock<(usize, String)>,
    calls: [AtomicU64; 2],
}

impl Secret {
    fn new(first: &str) -> Arc<Self> {
        Arc::new(Self {
            current: tokio::sync::RwLock::new((0, first.to_owned())),
            calls: [AtomicU64::new(0), AtomicU64::new(0)],
        })
    }
}

/// A pool builder with a provider that reads `secret`.
fn with_provider(b: PoolBuilder, secret: &Arc<Secret>) -> PoolBuilder {
    let secret = Arc::clone(secret);
    b.password_provider(move |_| {
        let secret = Arc::clone(&secret);
        async move {
            let g = secret.current.read().await;
            secret.calls[g.0].fetch_add(1, Ordering::Relaxed);
            Ok(Password::new(g.1.clone()))
        }
    })
}

/// A provider that returns `password` and records each `Login` it was asked for.
fn recording(b: PoolBuilder, password: &str) -> (PoolBuilder, Arc<Mutex<Vec<Login>>>) {
    let asked: Arc<Mutex<Vec<Login>>> = Arc::default();
    let (a, p) = (Arc::clone(&asked), password.to_owned());
    let b = b.password_provider(move |login: Login| {
        a.lock().unwrap().push(login);
        let p = p.clone();
        async move { Ok(Password::new(p)) }
    });
    (b, asked)
}

/// The logins recorded since `from`: (host, port, user, database, reader).
fn logins(asked: &Mutex<Vec<Login>>, from: usize) -> Vec<(String, u16, String, String, bool)> {
    asked.lock().unwrap()[from..]
        .iter()
        .map(|l| {
            (
                l.host().to_owned(),
                l.port(),
                l.user().to_owned(),
                l.database().unwrap_or_default().to_owned(),
                l.is_reader(),
            )
        })
        .collect()
}

/// Everything the pool and its errors printed, and the tracing output.
#[derive(Clone, Default)]
struct Sink(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Sink {
    type Writer = Sink;
    fn make_writer(&'a self) -> Sink {
        self.clone()
    }
}

impl Sink {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
    fn push(&self, s: &str) {
        let mut v = self.0.lock().unwrap();
        v.extend_from_slice(s.as_bytes());
        v.push(b'\n');
    }
}

/// Captures every span and event of this thread (the test's current-thread runtime) at `TRACE`,
/// with the spans' fields as they open and close.
///
/// With the crate's spans built in, a second, idle dispatch lives as long as the capture. While exactly one dispatch is
/// registered in the process, tracing-core 0.1 computes a callsite's interest from the default
/// of whichever thread reaches it first (tokio-rs/tracing#3611): a test on another thread, with
/// no subscriber, running a statement first would cache the statement span as never enabled,
/// for this capture too. With two registered, every callsite asks both.
fn capture() -> (impl Sized, Sink) {
    use tracing_subscriber::util::SubscriberInitExt;
    #[cfg(feature = "tracing")]
    let second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
    #[cfg(not(feature = "tracing"))]
    let second = ();
    let sink = Sink::default();
    let sub = tracing_subscriber::fmt()
        .with_writer(sink.clone())
        .with_max_level(tracing_subscriber::filter::LevelFilter::TRACE)
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::FULL)
        .with_ansi(false)
        .finish();
    ((sub.set_default(), second), sink)
}

/// The fewest calls the load must complete after the rotation for the test to say anything.
const MIN_AFTER: u64 = 20;

/// What the load around a rotation saw.
#[derive(Debug, Default)]
struct Load {
    ok: u64,
    failed_before: u64,
    failed_after: u64,
    ok_after: u64,
}

/// Runs `TASKS` tasks that check out (a reader every other time with `readers`) and query in a
/// loop; after a while takes the secret's write lock, runs `rotate` (the server's change),
/// makes the provider return `new`, and lets the load run on. Every error's `Display` and
/// `Debug` go to `out`.
async fn load_around_rotation<R>(
    db: &ConfigAndPool,
    readers: bool,
    secret: &Arc<Secret>,
    new: &str,
    rotate: R,
    out: &Sink,
) -> Load
where
    R: std::future::Future<Output = ()>,
{
    let stop = Arc::new(AtomicBool::new(false));
    let switched: Arc<Mutex<Option<Instant>>> = Arc::default();
    // Calls begun after the switch that have ended, ok or not: the load runs on until there
    // are enough of them, however slow a loaded machine makes each one.
    let ended_after = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = Vec::new();
    for t in 0..TASKS {
        let (db, stop, switched, out) = (db.clone(), stop.clone(), switched.clone(), out.clone());
        let ended_after = ended_after.clone();
        tasks.push(tokio::spawn(async move {
            let mut load = Load::default();
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let start = Instant::now();
                let reader = readers && (t + n) % 2 == 1;
                n += 1;
                let r = async {
                    let mut c = if reader {
                        db.reader().await?
                    } else {
                        db.get_connection().await?
                    };
                    c.query("SELECT 1").select().await.map(drop)
                }
                .await;
                let after = switched.lock().unwrap().is_some_and(|s| start >= s);
                ended_after.fetch_add(u64::from(after), Ordering::Relaxed);
                match r {
                    Ok(()) => {
                        load.ok += 1;
                        load.ok_after += u64::from(after);
                    }
                    Err(e) => {
                        out.push(&format!("{e}\n{e:?}"));
                        if after {
                            load.failed_after += 1;
                        } else {
                            load.failed_before += 1;
                        }
                    }
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            load
        }));
    }
    tokio::time::sleep(Duration::from_millis(800)).await;
    {
        let mut g = secret.current.write().await;
        rotate.await;
        *g = (1, new.to_owned());
        *switched.lock().unwrap() = Some(Instant::now());
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let until = Instant::now() + Duration::from_secs(20);
    while ended_after.load(Ordering::Relaxed) < 2 * MIN_AFTER && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let mut total = Load::default();
    for t in tasks {
        let l = t.await.expect("a load task panicked");
        total.ok += l.ok;
        total.ok_after += l.ok_after;
        total.failed_before += l.failed_before;
        total.failed_after += l.failed_after;
    }
    total
}

/// Fails the test if `old` or `new` appears in `out`; returns how many bytes were checked.
fn assert_no_secret(out: &str, old: &str, new: &str) -> usize {
    for (which, secret) in [("old", old), ("new", new)] {
        if let Some(at) = out.find(secret) {
            // The line around it, the secret itself masked.
            let start = out[..at].rfind('\n').map_or(0, |i| i + 1);
            let end = out[at..].find('\n').map_or(out.len(), |i| at + i);
            let line = out[start..end].replace(secret, "<SECRET>");
            panic!("the {which} password appears in the output: {line}");
        }
    }
    out.len()
}

/// A unique lowercase name: `prefix` and 16 hex digits.
fn unique(prefix: &str) -> String {
    format!("{prefix}{}", common::backends::unique_hex())
}

/// The figures of a rotation test, and its assertions.
fn report(engine: &str, load: &Load, secret: &Secret, checked: usize, extra: &str) {
    let (old_calls, new_calls) = (
        secret.calls[0].load(Ordering::Relaxed),
        secret.calls[1].load(Ordering::Relaxed),
    );
    println!(
        "credentials_rotation engine={engine} checkouts={} ok_after={} failed_before={} \
         failed_after={} opens_old={old_calls} opens_new={new_calls} output_bytes={checked}{extra}",
        load.ok + load.failed_before + load.failed_after,
        load.ok_after,
        load.failed_before,
        load.failed_after,
    );
    assert_eq!(
        load.failed_after, 0,
        "checkouts failed after the provider switched"
    );
    assert!(
        load.ok_after >= MIN_AFTER,
        "too little load after the switch: {load:?}"
    );
    assert!(
        old_calls >= 1,
        "the provider was never asked before the switch"
    );
    assert!(
        new_calls >= 2 * MAX_SIZE as u64,
        "only {new_calls} connections opened with the new password"
    );
}

/// The failures every engine types the same way: a refused password, a provider's error, a
/// provider past the create timeout; and the pool working again afterwards. `url` names the
/// server with the user whose password is `right` (and no password).
async fn typed_failures(engine: &str, url: &str, right: &str) {
    let build = |b: PoolBuilder| {
        b.max_size(2)
            .create_timeout(Duration::from_millis(400))
            .wait_timeout(Duration::from_secs(3))
    };
    let pool_of = |url: &str| match engine {
        "postgres" => ConfigAndPool::postgres(url),
        _ => ConfigAndPool::mysql(url),
    };
    let mut shown = String::new();
    let mut show = |e: &SqlMiddlewareDbError| shown.push_str(&format!("{e}\n{e:?}\n"));

    let wrong = unique("sqlmw-wrong-");
    let w = wrong.clone();
    let db = build(pool_of(url))
        .password_provider(move |_| {
            let w = w.clone();
            async move { Ok(Password::new(w)) }
        })
        .build()
        .await
        .expect("build");
    let e = db.get_connection().await.expect_err("a refused password");
    show(&e);
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");

    let leaked = unique("sqlmw-in-error-");
    let l = leaked.clone();
    let db = build(pool_of(url))
        .password_provider(move |_| {
            let l = l.clone();
            async move { Err(format!("the vault refused: {l}").into()) }
        })
        .build()
        .await
        .expect("build");
    let e = db.get_connection().await.expect_err("a provider's error");
    show(&e);
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    let raw = e
        .driver_error()
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(
        raw.contains(&leaked),
        "driver_error() keeps the provider's error"
    );

    let db = build(pool_of(url))
        .password_provider(|_| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(Password::new("never"))
        })
        .build()
        .await
        .expect("build");
    let started = Instant::now();
    let e = db.get_connection().await.expect_err("a slow provider");
    let slow = started.elapsed();
    show(&e);
    assert_eq!(e.kind(), ErrorKind::PoolTimeout, "{e}");
    assert!(slow < Duration::from_millis(1500), "{slow:?}");

    let asked = Arc::new(AtomicU64::new(0));
    let (a, r) = (Arc::clone(&asked), right.to_owned());
    let db = build(pool_of(url))
        .password_provider(move |_| {
            let first = a.fetch_add(1, Ordering::Relaxed) == 0;
            let r = r.clone();
            async move {
                if first {
                    Err("the vault is starting".into())
                } else {
                    Ok(Password::new(r))
                }
            }
        })
        .build()
        .await
        .expect("build");
    let first = db.get_connection().await.expect_err("the first try fails");
    show(&first);
    let mut c = db.get_connection().await.expect("the pool works again");
    c.query("SELECT 1").select().await.expect("a query");
    drop(c);
    show_debug(&mut shown, &db);

    for secret in [wrong.as_str(), leaked.as_str(), right] {
        assert!(!shown.contains(secret), "a secret appears in: {shown}");
    }
    println!(
        "credentials_errors engine={engine} refused=Config provider_error=Config \
         slow=PoolTimeout slow_ms={} asked_after_error={} leaks=0",
        slow.as_millis(),
        asked.load(Ordering::Relaxed)
    );
}

/// The control: a pool on the same URL without the provider (so with the URL's old password)
/// cannot log in after the rotation. Its error goes to `out`.
async fn url_alone_is_refused(builder: PoolBuilder, out: &Sink) {
    let db = builder.build().await.expect("build");
    let e = db
        .get_connection()
        .await
        .expect_err("the URL's old password is refused after the rotation");
    out.push(&format!("{e}\n{e:?}"));
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
}

/// The pool's, its status' and its statistics' `Debug`.
fn show_debug(out: &mut String, db: &ConfigAndPool) {
    out.push_str(&format!("{db:?}\n{:?}\n{:?}\n", db.status(), db.stats()));
}

#[cfg(feature = "postgres-tls")]
mod postgres {
    use super::*;

    /// The process's password-auth cluster (see `common::pg::tls::start_password_auth`).
    fn server() -> &'static common::pg::tls::TlsServer {
        static S: std::sync::OnceLock<Result<common::pg::tls::TlsServer, String>> =
            std::sync::OnceLock::new();
        match S.get_or_init(common::pg::tls::start_password_auth) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        }
    }

    /// Whether `password` logs `role` in over plain TCP.
    async fn logs_in(role: &str, password: &str) -> bool {
        let url = format!(
            "postgres://{role}:{password}@127.0.0.1:{}/postgres?sslmode=disable",
            server().cluster.port
        );
        tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn rotation_under_load() {
        let _group = common::groups::enter("credentials");
        let server = server();
        let admin = common::pg::raw_client(&server.cluster.socket_url).await;
        let role = unique("sqlmw_rot_");
        let (old, new) = (unique("sqlmw-old-"), unique("sqlmw-new-"));
        admin
            .batch_execute(&format!("CREATE ROLE {role} LOGIN PASSWORD '{old}'"))
            .await
            .expect("create role");
        let dead = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let ca = common::pg::percent_encode(&server.ca.display().to_string());
        let port = server.cluster.port;
        let tls = format!("sslmode=verify-full&sslrootcert={ca}&application_name={role}");
        let (_trace, out) = capture();
        let secret = Secret::new(&old);
        let builder = with_provider(
            ConfigAndPool::postgres(&format!(
                "postgres://{role}:{old}@localhost:{dead},localhost:{port}/postgres?{tls}"
            ))
            .replica(&format!(
                "postgres://{role}:{old}@localhost:{port}/postgres?{tls}"
            )),
            &secret,
        )
        .max_size(MAX_SIZE)
        .max_lifetime(LIFETIME)
        .create_timeout(Duration::from_secs(5));
        out.push(&format!("{builder:?}"));
        let db = builder.build().await.expect("build");
        out.push(&format!("{db:?}"));
        // On a thread of its own, outside the capture: the driver logs the statement's text.
        let (socket, alter) = (
            server.cluster.socket_url.clone(),
            format!("ALTER ROLE {role} PASSWORD '{new}'"),
        );
        let rotate = async move {
            tokio::task::spawn_blocking(move || common::pg::tls::admin(&socket, &alter))
                .await
                .expect("the admin thread")
                .expect("alter role");
        };
        let load = load_around_rotation(&db, true, &secret, &new, rotate, &out).await;
        // A `Listener` logs in through the provider too (the URL's password is the old one).
        let mut listener = db.listener().await.expect("a listener after the rotation");
        listener.listen("sqlmw_credentials").await.expect("listen");
        out.push(&format!("{listener:?}"));
        let tls_sessions: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
                 WHERE a.usename = $1 AND s.ssl",
                &[&role],
            )
            .await
            .expect("pg_stat_ssl")
            .get(0);
        let mut shown = String::new();
        show_debug(&mut shown, &db);
        out.push(&shown);
        drop(listener);
        db.close();
        url_alone_is_refused(
            ConfigAndPool::postgres(&format!(
                "postgres://{role}:{old}@localhost:{port}/postgres?{tls}"
            )),
            &out,
        )
        .await;
        let (old_ok, new_ok) = (logs_in(&role, &old).await, logs_in(&role, &new).await);
        let _ = admin
            .batch_execute(&format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"
            ))
            .await;
        let trace = out.text();
        let checked = assert_no_secret(&trace, &old, &new);
        report(
            "postgres",
            &load,
            &secret,
            checked,
            &format!(
                " tls_sessions={tls_sessions} listener=ok url_alone=Config old_login={old_ok} \
             new_login={new_ok}"
            ),
        );
        assert!(
            !old_ok && new_ok,
            "the server must refuse the old password only"
        );
        assert!(tls_sessions >= 1, "no TLS session seen");
        #[cfg(feature = "tracing")]
        assert!(
            trace.contains("SELECT 1"),
            "the capture saw no statement span"
        );
        // The role may still own a session that is ending; a leftover role dies with the cluster.
        let _ = admin.batch_execute(&format!("DROP ROLE {role}")).await;
    }

    /// What a session says of itself: its port, user, database, whether it is read-only, and
    /// its backend's process id.
    async fn session(c: &mut MiddlewarePoolConnection) -> (u16, String, String, bool, i64) {
        let rs = c
            .query(
                "SELECT inet_server_port()::bigint, current_user::text, current_database()::text, \
                 current_setting('transaction_read_only') = 'on', pg_backend_pid()::bigint",
            )
            .select()
            .await
            .expect("the session's facts");
        let r = &rs.results[0];
        let port: i64 = r.try_get(0).expect("port");
        (
            u16::try_from(port).expect("a port"),
            r.try_get(1).expect("user"),
            r.try_get(2).expect("database"),
            r.try_get(3).expect("read-only"),
            r.try_get(4).expect("pid"),
        )
    }

    #[tokio::test]
    async fn the_provider_is_told_each_login() {
        let _group = common::groups::enter("credentials");
        let server = server();
        let admin = common::pg::raw_client(&server.cluster.socket_url).await;
        let role = unique("sqlmw_login_");
        let replica_db = unique("sqlmw_login_db_");
        let right = unique("sqlmw-right-");
        admin
            .batch_execute(&format!("CREATE ROLE {role} LOGIN PASSWORD '{right}'"))
            .await
            .expect("create role");
        // On its own: `CREATE DATABASE` runs outside a transaction block only.
        admin
            .batch_execute(&format!("CREATE DATABASE {replica_db}"))
            .await
            .expect("create database");
        let dead = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let port = server.cluster.port;
        // The primary's hosts and the replica's are named apart, and the replica has a database
        // of its own: each login tells which pool asked.
        let (builder, asked) = recording(
            ConfigAndPool::postgres(&format!(
                "postgres://{role}@127.0.0.1:{dead},localhost:{port}/postgres?sslmode=disable"
            ))
            .replica(&format!(
                "postgres://{role}@127.0.0.1:{port}/{replica_db}?sslmode=disable"
            )),
            &right,
        );
        let db = builder
            .max_size(2)
            .create_timeout(Duration::from_secs(5))
            .build()
            .await
            .expect("build");
        let primary = |p| {
            (
                "localhost".to_owned(),
                p,
                role.clone(),
                "postgres".to_owned(),
                false,
            )
        };
        let dead_host = (
            "127.0.0.1".to_owned(),
            dead,
            role.clone(),
            "postgres".to_owned(),
            false,
        );

        // Two writers at once: two connections opened, the first after the dead host failed.
        let (mut w1, mut w2) = (
            db.get_connection().await.expect("a writer"),
            db.get_connection().await.expect("a second writer"),
        );
        let writers = [session(&mut w1).await, session(&mut w2).await];
        let asked_writers = logins(&asked, 0);
        // Two readers at once, on the replica.
        let (mut r1, mut r2) = (
            db.reader().await.expect("a reader"),
            db.reader().await.expect("a second reader"),
        );
        let readers = [session(&mut r1).await, session(&mut r2).await];
        let n = asked_writers.len();
        let asked_readers = logins(&asked, n);
        // A `Listener` walks the URL's hosts in order: the dead one, then the live one.
        let before = asked.lock().unwrap().len();
        let listener = db.listener().await.expect("a listener");
        let asked_listener = logins(&asked, before);
        let shown = format!("{:?}", asked.lock().unwrap());
        drop((w1, w2, r1, r2, listener));
        db.close();
        let _ = admin
            .batch_execute(&format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"
            ))
            .await;
        println!(
            "credentials_logins engine=postgres writers={asked_writers:?} \
             readers={asked_readers:?} listener={asked_listener:?} sessions={writers:?} \
             reader_sessions={readers:?}"
        );

        // The writers: asked for the dead host first (the URL's order), then for the live host
        // once per connection opened, and the sessions are on that host's port.
        assert_eq!(asked_writers.first(), Some(&dead_host), "{asked_writers:?}");
        let live: Vec<_> = asked_writers.iter().filter(|l| **l != dead_host).collect();
        assert_eq!(live, vec![&primary(port); 2], "{asked_writers:?}");
        assert_ne!(writers[0].4, writers[1].4, "two connections");
        for w in &writers {
            assert_eq!(
                (w.0, w.1.as_str(), w.2.as_str(), w.3),
                (port, role.as_str(), "postgres", false)
            );
        }
        // The readers: the replica's host and database, read-only sessions there.
        let replica = (
            "127.0.0.1".to_owned(),
            port,
            role.clone(),
            replica_db.clone(),
            true,
        );
        assert_eq!(asked_readers, vec![replica; 2], "{asked_readers:?}");
        assert_ne!(readers[0].4, readers[1].4, "two reader connections");
        for r in &readers {
            assert_eq!(
                (r.0, r.1.as_str(), r.2.as_str(), r.3),
                (port, role.as_str(), replica_db.as_str(), true)
            );
        }
        assert_eq!(asked_listener, vec![dead_host, primary(port)]);
        assert!(
            !shown.contains(&right),
            "a Login shows the password: {shown}"
        );
        let _ = admin
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS {replica_db} WITH (FORCE)"
            ))
            .await;
        let _ = admin.batch_execute(&format!("DROP ROLE {role}")).await;
    }

    #[tokio::test]
    async fn typed_failures() {
        let _group = common::groups::enter("credentials");
        let server = server();
        let admin = common::pg::raw_client(&server.cluster.socket_url).await;
        let role = unique("sqlmw_err_");
        let right = unique("sqlmw-right-");
        admin
            .batch_execute(&format!("CREATE ROLE {role} LOGIN PASSWORD '{right}'"))
            .await
            .expect("create role");
        let url = format!(
            "postgres://{role}@127.0.0.1:{}/postgres?sslmode=disable",
            server.cluster.port
        );
        super::typed_failures("postgres", &url, &right).await;
        let _ = admin
            .batch_execute(&format!(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = '{role}'"
            ))
            .await;
        let _ = admin.batch_execute(&format!("DROP ROLE {role}")).await;
    }
}

#[cfg(feature = "mysql")]
mod mysql {
    use mysql_async::prelude::Queryable;

    use super::*;

    /// The suite's server: its host and port, and an admin connection.
    async fn server() -> (String, u16, mysql_async::Conn) {
        let base = common::mysql::driver_url(&common::mysql::base_url());
        let opts = mysql_async::Opts::from_url(&base).expect("the suite's MySQL URL");
        let host = opts.ip_or_hostname().to_owned();
        (host, opts.tcp_port(), common::mysql::raw_conn(&base).await)
    }

    /// Creates `user` (from any host) with `password`.
    async fn create_user(admin: &mut mysql_async::Conn, user: &str, password: &str) {
        for host in ["%", "localhost"] {
            admin
                .query_drop(format!(
                    "CREATE USER '{user}'@'{host}' IDENTIFIED BY '{password}'"
                ))
                .await
                .expect("create user");
        }
    }

    async fn drop_user(admin: &mut mysql_async::Conn, user: &str) {
        for host in ["%", "localhost"] {
            let _ = admin
                .query_drop(format!("DROP USER IF EXISTS '{user}'@'{host}'"))
                .await;
        }
    }

    /// Whether `password` logs `user` in.
    async fn logs_in(host: &str, port: u16, user: &str, password: &str) -> bool {
        let url = format!("mysql://{user}:{password}@{host}:{port}/");
        match mysql_async::Conn::from_url(url).await {
            Ok(c) => {
                let _ = c.disconnect().await;
                true
            }
            Err(_) => false,
        }
    }

    #[tokio::test]
    async fn rotation_under_load() {
        let _group = common::groups::enter("credentials");
        let (host, port, mut admin) = server().await;
        let user = unique("sqlmw_rot_");
        let (old, new) = (unique("sqlmw-old-"), unique("sqlmw-new-"));
        create_user(&mut admin, &user, &old).await;
        let (_trace, out) = capture();
        let secret = Secret::new(&old);
        let builder = with_provider(
            ConfigAndPool::mysql(&format!("mysql://{user}:{old}@{host}:{port}/")),
            &secret,
        )
        .ssl_mode(sql_middleware::SslMode::Prefer)
        .max_size(MAX_SIZE)
        .max_lifetime(LIFETIME)
        .create_timeout(Duration::from_secs(5));
        out.push(&format!("{builder:?}"));
        let db = builder.build().await.expect("build");
        out.push(&format!("{db:?}"));
        let (u, n) = (user.clone(), new.clone());
        let admin = tokio::sync::Mutex::new(admin);
        let rotate = async {
            let mut a = admin.lock().await;
            for h in ["%", "localhost"] {
                a.query_drop(format!("ALTER USER '{u}'@'{h}' IDENTIFIED BY '{n}'"))
                    .await
                    .expect("alter user");
            }
        };
        let load = load_around_rotation(&db, false, &secret, &new, rotate, &out).await;
        let mut c = db.get_connection().await.expect("a checkout");
        let cipher = c
            .query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            .select()
            .await
            .map(|rs| format!("{:?}", rs.results.first().and_then(|r| r.get_by_index(1))))
            .unwrap_or_default();
        drop(c);
        let mut shown = String::new();
        show_debug(&mut shown, &db);
        out.push(&shown);
        db.close();
        url_alone_is_refused(
            ConfigAndPool::mysql(&format!("mysql://{user}:{old}@{host}:{port}/")),
            &out,
        )
        .await;
        let (old_ok, new_ok) = (
            logs_in(&host, port, &user, &old).await,
            logs_in(&host, port, &user, &new).await,
        );
        drop_user(&mut *admin.lock().await, &user).await;
        let trace = out.text();
        let checked = assert_no_secret(&trace, &old, &new);
        let tls = !cipher.is_empty() && !cipher.contains("Text(\"\")");
        report(
            "mysql",
            &load,
            &secret,
            checked,
            &format!(" tls={tls} url_alone=Config old_login={old_ok} new_login={new_ok}"),
        );
        assert!(
            !old_ok && new_ok,
            "the server must refuse the old password only"
        );
        #[cfg(feature = "tracing")]
        assert!(
            trace.contains("SELECT 1"),
            "the capture saw no statement span"
        );
    }

    #[tokio::test]
    async fn the_provider_is_told_each_login() {
        let _group = common::groups::enter("credentials");
        let (host, port, mut admin) = server().await;
        let user = unique("sqlmw_login_");
        let database = unique("sqlmw_login_db_");
        let right = unique("sqlmw-right-");
        create_user(&mut admin, &user, &right).await;
        admin
            .query_drop(format!("CREATE DATABASE {database}"))
            .await
            .expect("create database");
        for h in ["%", "localhost"] {
            admin
                .query_drop(format!("GRANT ALL ON {database}.* TO '{user}'@'{h}'"))
                .await
                .expect("grant");
        }
        let (builder, asked) = recording(
            ConfigAndPool::mysql(&format!("mysql://{user}@{host}:{port}/{database}")),
            &right,
        );
        let db = builder
            .max_size(2)
            .create_timeout(Duration::from_secs(5))
            .statement_timeout(Duration::from_millis(300))
            .build()
            .await
            .expect("build");
        let (mut c1, mut c2) = (
            db.get_connection().await.expect("a connection"),
            db.get_connection().await.expect("a second connection"),
        );
        let mut sessions = Vec::new();
        for c in [&mut c1, &mut c2] {
            let rs = c
                .query(
                    "SELECT CONNECTION_ID(), SUBSTRING_INDEX(CURRENT_USER(), '@', 1), DATABASE()",
                )
                .select()
                .await
                .expect("the session's facts");
            let r = &rs.results[0];
            let (id, u, d): (i64, String, String) = (
                r.try_get(0).expect("id"),
                r.try_get(1).expect("user"),
                r.try_get(2).expect("database"),
            );
            sessions.push((id, u, d));
        }
        let opened = logins(&asked, 0);
        // A statement past its limit is stopped from a connection of its own, in the
        // background once the connection is given up: the provider is asked for that login too.
        let e = c1
            .query("SELECT SLEEP(5)")
            .select()
            .await
            .expect_err("past the statement timeout");
        drop(c1);
        let waited = Instant::now();
        while asked.lock().unwrap().len() == opened.len()
            && waited.elapsed() < Duration::from_secs(4)
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let killer = logins(&asked, opened.len());
        let shown = format!("{:?}", asked.lock().unwrap());
        drop(c2);
        db.close();
        let _ = admin
            .query_drop(format!("DROP DATABASE IF EXISTS {database}"))
            .await;
        drop_user(&mut admin, &user).await;
        println!(
            "credentials_logins engine=mysql opened={opened:?} killer={killer:?} \
             sessions={sessions:?} timeout={:?}",
            e.kind()
        );
        let expected = (host.clone(), port, user.clone(), database.clone(), false);
        assert_eq!(opened, vec![expected.clone(); 2], "{opened:?}");
        assert_ne!(sessions[0].0, sessions[1].0, "two connections");
        for (_, u, d) in &sessions {
            assert_eq!((u.as_str(), d.as_str()), (user.as_str(), database.as_str()));
        }
        assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
        assert!(
            !killer.is_empty() && killer.iter().all(|l| *l == expected),
            "{killer:?}"
        );
        assert!(
            !shown.contains(&right),
            "a Login shows the password: {shown}"
        );
    }

    #[tokio::test]
    async fn typed_failures() {
        let _group = common::groups::enter("credentials");
        let (host, port, mut admin) = server().await;
        let user = unique("sqlmw_err_");
        let right = unique("sqlmw-right-");
        create_user(&mut admin, &user, &right).await;
        let url = format!("mysql://{user}@{host}:{port}/");
        super::typed_failures("mysql", &url, &right).await;
        drop_user(&mut admin, &user).await;
    }
}

#[cfg(any(feature = "sqlite", feature = "turso"))]
#[tokio::test]
#[allow(
    clippy::vec_init_then_push,
    reason = "one push per embedded engine the build has"
)]
async fn embedded_engines_refuse_a_password_provider() {
    let _group = common::groups::enter("credentials");
    let mut refused = 0;
    #[allow(unused_mut, reason = "a build with one embedded engine pushes once")]
    let mut builders: Vec<PoolBuilder> = Vec::new();
    #[cfg(feature = "sqlite")]
    builders.push(ConfigAndPool::sqlite_memory());
    #[cfg(feature = "turso")]
    builders.push(ConfigAndPool::turso_memory());
    let n = builders.len();
    for b in builders {
        let e = b
            .password_provider(|_| async { Ok(Password::new("unused")) })
            .build()
            .await
            .expect_err("an embedded engine has no login");
        assert_eq!(e.kind(), ErrorKind::Config, "{e}");
        assert!(e.message().contains("password_provider"), "{e}");
        refused += 1;
    }
    println!("credentials_embedded engines={n} refused={refused}");
    assert_eq!(refused, n);
}
