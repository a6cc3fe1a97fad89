//! TLS to Postgres (feature `postgres-tls`), against a throwaway cluster that is `hostssl` only
//! over TCP and presents a certificate for `localhost` signed by a test CA (`common::pg::tls`):
//! each `sslmode` does what libpq's does, a wrong root or a wrong host name is refused with
//! [`ErrorKind::Tls`], plain text is refused by the server, client certificates authenticate, and
//! the `Listener` and cancel requests use the pool's TLS too. `matrix` runs libpq's mode matrix
//! (`common::tls_matrix`), by name and by address.
//!
//! These tests need the PostgreSQL server binaries (`initdb`, `pg_ctl`); without them they fail
//! saying how to install them.
#![cfg(feature = "postgres-tls")]

mod matrix;

use std::time::{Duration, Instant};

use sql_middleware::SslMode;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::pg;
use crate::common::pg::tls::{self, CERT_USER, TlsServer};

fn server() -> &'static TlsServer {
    tls::shared()
}

fn enc(p: &std::path::Path) -> String {
    p.display()
        .to_string()
        .replace('%', "%25")
        .replace('/', "%2F")
}

/// A pool of one from `url`, and the error of its first checkout (if any).
async fn first_checkout(url: &str) -> Result<MiddlewarePoolConnection, SqlMiddlewareDbError> {
    let db = ConfigAndPool::postgres(url)
        .max_size(1)
        .wait_timeout(Duration::from_secs(10))
        .build()
        .await?;
    db.get_connection().await
}

/// Whether the session of `conn` is encrypted, and its TLS version, as the server sees it.
async fn ssl_of(conn: &mut MiddlewarePoolConnection) -> (bool, String) {
    conn.query("SELECT ssl, coalesce(version, '') FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .one()
        .await
        .expect("pg_stat_ssl")
}

fn expect_err(r: Result<MiddlewarePoolConnection, SqlMiddlewareDbError>) -> SqlMiddlewareDbError {
    match r {
        Ok(_) => panic!("expected the connection to be refused"),
        Err(e) => e,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn require_and_prefer_encrypt_the_session() {
    let _group = groups::enter("postgres_tls");
    let s = server();
    for mode in ["require", "prefer"] {
        let url = s.url("postgres", "127.0.0.1", &format!("sslmode={mode}"));
        let mut c = first_checkout(&url)
            .await
            .unwrap_or_else(|e| panic!("sslmode={mode}: {e:?}"));
        let (ssl, version) = ssl_of(&mut c).await;
        assert!(
            ssl,
            "sslmode={mode}: pg_stat_ssl says the session is not encrypted"
        );
        assert!(version.starts_with("TLSv1."), "sslmode={mode}: {version}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_full_with_the_right_ca_and_host_connects() {
    let _group = groups::enter("postgres_tls");
    let s = server();
    let mut c = first_checkout(&s.verify_full_url())
        .await
        .expect("verify-full");
    assert!(ssl_of(&mut c).await.0);
    let (n,): (i64,) = c
        .query("SELECT 41 + $1")
        .params(&[1.into()])
        .one()
        .await
        .unwrap();
    assert_eq!(n, 42);

    // The same through the builder.
    let cfg: tokio_postgres::Config = s.url("postgres", "localhost", "").parse().unwrap();
    let db = ConfigAndPool::postgres_config(cfg)
        .ssl_mode(SslMode::VerifyFull)
        .ssl_root_cert(&s.ca)
        .max_size(1)
        .build()
        .await
        .expect("builder");
    let mut c = db.get_connection().await.expect("builder checkout");
    assert!(ssl_of(&mut c).await.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_ca_is_refused() {
    let _group = groups::enter("postgres_tls");
    let s = server();
    // verify-*, and require with a root file (which then checks the chain, as libpq does).
    for mode in ["verify-full", "verify-ca", "require"] {
        let url = s.url(
            "postgres",
            "localhost",
            &format!("sslmode={mode}&sslrootcert={}", enc(&s.other_ca)),
        );
        let e = expect_err(first_checkout(&url).await);
        assert_eq!(e.kind(), ErrorKind::Tls, "sslmode={mode}: {e:?}");
        let msg = e.to_string();
        assert!(
            msg.contains("TLS handshake") && msg.contains("UnknownIssuer"),
            "sslmode={mode}: the message should carry the reason: {msg}"
        );
    }
    // verify-full without a root file trusts only the public roots, not the test CA.
    let e =
        expect_err(first_checkout(&s.url("postgres", "localhost", "sslmode=verify-full")).await);
    assert_eq!(e.kind(), ErrorKind::Tls, "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_host_name_is_refused_by_verify_full_only() {
    let _group = groups::enter("postgres_tls");
    let s = server();
    // The certificate names `localhost` only; 127.0.0.1 is the same server under another name.
    let ca = enc(&s.ca);
    let url = s.url(
        "postgres",
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={ca}"),
    );
    let e = expect_err(first_checkout(&url).await);
    assert_eq!(e.kind(), ErrorKind::Tls, "{e:?}");
    assert!(
        e.to_string().contains("not valid for name"),
        "the message should say the name does not match: {e}"
    );
    // verify-ca checks the chain, not the name.
    let url = s.url(
        "postgres",
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={ca}"),
    );
    let mut c = first_checkout(&url).await.expect("verify-ca to 127.0.0.1");
    assert!(ssl_of(&mut c).await.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_text_is_refused_by_a_hostssl_only_server() {
    let _group = groups::enter("postgres_tls");
    let s = server();
    let e = expect_err(first_checkout(&s.url("postgres", "127.0.0.1", "sslmode=disable")).await);
    assert_eq!(e.kind(), ErrorKind::Config, "{e:?}");
    let msg = e.to_string();
    assert!(
        msg.contains("pg_hba.conf") && msg.contains("no encryption"),
        "the server's reason should reach the caller: {msg}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_certificate_authenticates() {
    let _group = groups::enter("postgres_tls");
    let s = server();
    let query = format!(
        "sslmode=verify-full&sslrootcert={}&sslcert={}&sslkey={}",
        enc(&s.ca),
        enc(&s.client_cert),
        enc(&s.client_key)
    );
    let mut c = first_checkout(&s.url(CERT_USER, "localhost", &query))
        .await
        .expect("cert authentication");
    let (user,): (String,) = c.query("SELECT current_user::text").one().await.unwrap();
    assert_eq!(user, CERT_USER);
    let (client_dn,): (String,) = c
        .query("SELECT coalesce(client_dn, '') FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
        .one()
        .await
        .unwrap();
    assert!(client_dn.contains(CERT_USER), "{client_dn}");

    // Without the certificate, the `cert` line refuses the role.
    let bare = format!("sslmode=verify-full&sslrootcert={}", enc(&s.ca));
    let e = expect_err(first_checkout(&s.url(CERT_USER, "localhost", &bare)).await);
    assert_eq!(e.kind(), ErrorKind::Config, "{e:?}");
    assert!(e.to_string().contains("certificate"), "{e}");

    // A key that is not the certificate's is a configuration error before any connection.
    let e = ConfigAndPool::postgres(&s.url("postgres", "localhost", ""))
        .ssl_mode(SslMode::Require)
        .ssl_client_cert(&s.client_cert, &s.ca)
        .build()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Config, "{e:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listener_connects_over_tls() {
    let _group = groups::enter("postgres_tls");
    let s = server();
    // The server refuses plain TCP, so a listener that did not use the pool's TLS would fail.
    let db = ConfigAndPool::postgres(&s.verify_full_url())
        .max_size(1)
        .build()
        .await
        .unwrap();
    let mut listener = db.listener().await.expect("listener over TLS");
    let channel = format!("tls_{}", pg::random_hex());
    listener.listen(&channel).await.expect("listen");
    let mut c = db.get_connection().await.unwrap();
    c.execute_batch(&format!("NOTIFY {channel}, 'over tls'"))
        .await
        .unwrap();
    let n = tokio::time::timeout(Duration::from_secs(10), listener.recv())
        .await
        .expect("a notification within 10 s")
        .expect("the listener is running");
    assert_eq!(
        (n.channel.as_str(), n.payload.as_str()),
        (channel.as_str(), "over tls")
    );
    let admin = pg::raw_client(&s.cluster.socket_url).await;
    let row = admin
        .query_one(
            "SELECT ssl FROM pg_stat_ssl WHERE pid = $1",
            &[&listener.backend_pid()],
        )
        .await
        .unwrap();
    assert!(row.get::<_, bool>(0), "the listener's session is encrypted");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_statement_is_cancelled_over_tls() {
    let _group = groups::enter("postgres_tls");
    let s = server();
    let db = ConfigAndPool::postgres(&s.verify_full_url())
        .max_size(1)
        .build()
        .await
        .unwrap();
    let tag = pg::random_hex();
    let sql = format!("SELECT pg_sleep(60) /* tls_cancel_{tag} */");
    let mut c = db.get_connection().await.unwrap();
    let abandoned = tokio::time::timeout(Duration::from_millis(300), c.query(&sql).select()).await;
    assert!(abandoned.is_err(), "pg_sleep(60) finished early");
    // Dropping the connection sends a cancel request (a connection of its own, over the pool's
    // TLS: with the wrong connector it fails and the statement sleeps on for a minute).
    drop(c);
    let admin = pg::raw_client(&s.cluster.socket_url).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let active: i64 = admin
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE $1",
                &[&format!("%tls_cancel_{tag}%")],
            )
            .await
            .unwrap()
            .get(0);
        if active == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the abandoned statement still runs 10 s later: the cancel request did not arrive"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
