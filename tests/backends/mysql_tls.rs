//! MySQL/MariaDB TLS (feature `mysql-tls`): each `sslmode` against throwaway MariaDB servers
//! that speak TLS with certificates made here with `rcgen` (`server`), and against one that
//! does not; `matrix` runs libpq's mode matrix (`common::tls_matrix`), and `probe` counts the
//! handshakes of the chain-only check, `credentials` a pool's password provider over TLS.
//!
//! Whether a session is encrypted is the server's word (`Ssl_cipher` in its session status).
//! The servers need the MariaDB server binaries (`mariadb-install-db`, `mariadbd`); the tests
//! fail saying so without them.
#![cfg(feature = "mysql-tls")]

mod credentials;
mod matrix;
mod probe;
mod server;

use std::path::Path;
use std::time::Duration;

use sql_middleware::SslMode;
use sql_middleware::prelude::*;

use crate::common::groups;
use server::{Setup, X509_USER, start};

/// Whether the server says this checkout's session is encrypted, or the error that stopped it.
async fn encrypted(b: sql_middleware::PoolBuilder) -> Result<bool, SqlMiddlewareDbError> {
    let db = b
        .max_size(1)
        .create_timeout(Duration::from_secs(10))
        .wait_timeout(Duration::from_secs(10))
        .build()
        .await?;
    let mut c = db.get_connection().await?;
    let rs = c
        .query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        .select()
        .await?;
    let cipher: String = rs.results[0].try_get(1)?;
    Ok(!cipher.is_empty())
}

/// Runs `cases` (label, builder, expected: `Some(encrypted)`, or `None` for no connection).
async fn check(
    cases: Vec<(&str, sql_middleware::PoolBuilder, Option<bool>)>,
    problems: &mut Vec<String>,
) -> usize {
    let n = cases.len();
    for (label, b, want) in cases {
        let got = encrypted(b).await;
        match (&got, want) {
            (Ok(e), Some(w)) if *e == w => {}
            (Err(_), None) => {}
            _ => problems.push(format!("{label}: expected {want:?}, got {got:?}")),
        }
    }
    n
}

fn path_text(p: &Path) -> String {
    p.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_ssl_mode_against_a_tls_server_and_a_plain_one() {
    let _group = groups::enter("mysql");
    let s = start(Setup {
        tls: true,
        ip_san: false,
    })
    .await;
    let my = |host: &str| ConfigAndPool::mysql(&s.url(host, ""));
    let (ca, other) = (path_text(&s.ca), path_text(&s.other_ca));
    let mut problems = Vec::new();
    let mut cases = check(
        vec![
            (
                "disable",
                my("127.0.0.1").ssl_mode(SslMode::Disable),
                Some(false),
            ),
            ("prefer (the default)", my("127.0.0.1"), Some(true)),
            (
                "require, no root file",
                my("127.0.0.1").ssl_mode(SslMode::Require),
                Some(true),
            ),
            (
                "require, the wrong root file",
                my("127.0.0.1")
                    .ssl_mode(SslMode::Require)
                    .ssl_root_cert(&other),
                None,
            ),
            (
                // libpq's verify-ca: the chain is checked, the name never is.
                "verify-ca, the right root, a host name the certificate does not name",
                my("127.0.0.1")
                    .ssl_mode(SslMode::VerifyCa)
                    .ssl_root_cert(&ca),
                Some(true),
            ),
            (
                "require, the right root file, a host name the certificate does not name",
                my("127.0.0.1")
                    .ssl_mode(SslMode::Require)
                    .ssl_root_cert(&ca),
                Some(true),
            ),
            (
                "verify-ca, the right root, the certificate's host name",
                my("localhost")
                    .ssl_mode(SslMode::VerifyCa)
                    .ssl_root_cert(&ca),
                Some(true),
            ),
            (
                "verify-ca, the wrong root",
                my("localhost")
                    .ssl_mode(SslMode::VerifyCa)
                    .ssl_root_cert(&other),
                None,
            ),
            (
                "verify-ca, no root file (not in the built-in roots)",
                my("localhost").ssl_mode(SslMode::VerifyCa),
                None,
            ),
            (
                "verify-full, the right root and name",
                my("localhost")
                    .ssl_mode(SslMode::VerifyFull)
                    .ssl_root_cert(&ca),
                Some(true),
            ),
            (
                "verify-full, a name the certificate does not hold",
                my("127.0.0.1")
                    .ssl_mode(SslMode::VerifyFull)
                    .ssl_root_cert(&ca),
                None,
            ),
        ],
        &mut problems,
    )
    .await;
    // A user created `REQUIRE X509`: only a client certificate the server's CA signed logs in.
    let x509 = |host: &str| ConfigAndPool::mysql(&s.url_as(X509_USER, host, ""));
    let (client, rogue) = (&s.client, &s.rogue);
    cases += check(
        vec![
            (
                "client certificate the CA signed, verify-full",
                x509("localhost")
                    .ssl_mode(SslMode::VerifyFull)
                    .ssl_root_cert(&ca)
                    .ssl_client_cert(&client.0, &client.1),
                Some(true),
            ),
            (
                "client certificate the CA signed, verify-ca to an address the certificate lacks",
                x509("127.0.0.1")
                    .ssl_mode(SslMode::VerifyCa)
                    .ssl_root_cert(&ca)
                    .ssl_client_cert(&client.0, &client.1),
                Some(true),
            ),
            (
                "client certificate the CA signed, require",
                x509("127.0.0.1")
                    .ssl_mode(SslMode::Require)
                    .ssl_client_cert(&client.0, &client.1),
                Some(true),
            ),
            (
                "REQUIRE X509 user, no client certificate",
                x509("localhost")
                    .ssl_mode(SslMode::VerifyFull)
                    .ssl_root_cert(&ca),
                None,
            ),
            (
                "client certificate the unrelated CA signed",
                x509("localhost")
                    .ssl_mode(SslMode::VerifyFull)
                    .ssl_root_cert(&ca)
                    .ssl_client_cert(&rogue.0, &rogue.1),
                None,
            ),
            (
                "URL ssl-cert and ssl-key, MySQL's spelling",
                ConfigAndPool::from_url(&s.url_as(
                    X509_USER,
                    "localhost",
                    &format!(
                        "ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}&ssl-cert={}&ssl-key={}",
                        path_text(&client.0),
                        path_text(&client.1)
                    ),
                ))
                .expect("URL"),
                Some(true),
            ),
            (
                "URL sslcert and sslkey, libpq's spelling",
                ConfigAndPool::from_url(&s.url_as(
                    X509_USER,
                    "127.0.0.1",
                    &format!(
                        "sslmode=require&sslcert={}&sslkey={}",
                        path_text(&client.0),
                        path_text(&client.1)
                    ),
                ))
                .expect("URL"),
                Some(true),
            ),
        ],
        &mut problems,
    )
    .await;
    // The same through URLs, in MySQL's spelling and in libpq's.
    let from = |u: String| ConfigAndPool::from_url(&u).expect("URL");
    cases += check(
        vec![
            (
                "URL ssl-mode=VERIFY_IDENTITY&ssl-ca",
                from(s.url(
                    "localhost",
                    &format!("ssl-mode=VERIFY_IDENTITY&ssl-ca={ca}"),
                )),
                Some(true),
            ),
            (
                "URL sslmode=verify-full&sslrootcert, wrong name",
                from(s.url(
                    "127.0.0.1",
                    &format!("sslmode=verify-full&sslrootcert={ca}"),
                )),
                None,
            ),
            (
                "URL ssl-mode=DISABLED",
                from(s.url("127.0.0.1", "ssl-mode=DISABLED")),
                Some(false),
            ),
            (
                "URL ssl-mode=REQUIRED",
                from(s.url("127.0.0.1", "ssl-mode=REQUIRED")),
                Some(true),
            ),
        ],
        &mut problems,
    )
    .await;
    drop(s);

    // A server without TLS: `prefer` connects in plain text, the stricter modes never do.
    let p = start(Setup {
        tls: false,
        ip_san: false,
    })
    .await;
    let my = |host: &str| ConfigAndPool::mysql(&p.url(host, ""));
    let ca = path_text(&p.ca);
    cases += check(
        vec![
            ("plain server, prefer", my("127.0.0.1"), Some(false)),
            (
                "plain server, disable",
                my("127.0.0.1").ssl_mode(SslMode::Disable),
                Some(false),
            ),
            (
                "plain server, require",
                my("127.0.0.1").ssl_mode(SslMode::Require),
                None,
            ),
            (
                "plain server, prefer with a root file",
                my("127.0.0.1").ssl_root_cert(&ca),
                Some(false),
            ),
            (
                "plain server, require with a root file",
                my("127.0.0.1")
                    .ssl_mode(SslMode::Require)
                    .ssl_root_cert(&ca),
                None,
            ),
            (
                "plain server, verify-ca",
                my("127.0.0.1")
                    .ssl_mode(SslMode::VerifyCa)
                    .ssl_root_cert(&ca),
                None,
            ),
            (
                "plain server, verify-full",
                my("localhost")
                    .ssl_mode(SslMode::VerifyFull)
                    .ssl_root_cert(&ca),
                None,
            ),
        ],
        &mut problems,
    )
    .await;
    drop(p);
    println!("mysql_tls_modes cases={cases} wrong={}", problems.len());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
