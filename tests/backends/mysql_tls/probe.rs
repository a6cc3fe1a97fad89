//! The chain-only check's probe, as the server sees it: a handshake that never logs in, so
//! the server counts it in `Aborted_connects`. It runs once for a pool's endpoint, however many
//! connections the pool opens, and once more when the server's certificate stops carrying the
//! name it found.

use std::time::{Duration, Instant};

use sql_middleware::SslMode;
use sql_middleware::prelude::*;

use super::server::{Server, Setup, start};
use crate::common::groups;

async fn cipher(c: &mut MiddlewarePoolConnection) -> String {
    let rs = c
        .query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        .select()
        .await
        .expect("Ssl_cipher");
    rs.results[0].try_get(1).expect("a text value")
}

/// The handshakes the server has counted as aborted since `base`, once it has caught up. The
/// server counts one when its thread sees the connection close, which may be after the client's
/// call has returned: this waits (up to 10 s) for at least `expected`, then a moment more, so a
/// count beyond it shows too.
async fn aborted_since(s: &Server, base: u64, expected: u64) -> u64 {
    let until = Instant::now() + Duration::from_secs(10);
    while s.global_status("Aborted_connects").await - base < expected && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    s.global_status("Aborted_connects").await - base
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_probe_per_endpoint_and_one_more_when_the_certificate_changes() {
    let _group = groups::enter("mysql");
    let s = start(Setup {
        tls: true,
        ip_san: false,
    })
    .await;
    // Modes that check the name, or nothing, never probe.
    let quiet = s.global_status("Aborted_connects").await;
    let mut others = Vec::new();
    for (host, mode, root) in [
        ("localhost", SslMode::VerifyFull, true),
        ("127.0.0.1", SslMode::Require, false),
        ("127.0.0.1", SslMode::Prefer, false),
    ] {
        let mut b = ConfigAndPool::mysql(&s.url(host, ""))
            .ssl_mode(mode)
            .max_size(2);
        if root {
            b = b.ssl_root_cert(&s.ca);
        }
        let db = b.build().await.expect("pool");
        for _ in 0..2 {
            let mut c = db.get_connection().await.expect("connect");
            assert!(!cipher(&mut c).await.is_empty(), "{mode}: encrypted");
            others.push(c);
        }
    }
    let unprobed = aborted_since(&s, quiet, 0).await;
    drop(others);

    // By address, to a certificate that names `localhost` only: verify-ca must not care.
    let db = ConfigAndPool::mysql(&s.url("127.0.0.1", ""))
        .ssl_mode(SslMode::VerifyCa)
        .ssl_root_cert(&s.ca)
        .max_size(5)
        .create_timeout(Duration::from_secs(10))
        .wait_timeout(Duration::from_secs(10))
        .build()
        .await
        .expect("pool");
    let before = s.global_status("Aborted_connects").await;
    let mut held = Vec::new();
    for _ in 0..3 {
        let mut c = db.get_connection().await.expect("verify-ca by address");
        assert!(!cipher(&mut c).await.is_empty(), "the session is encrypted");
        held.push(c);
    }
    let first = aborted_since(&s, before, 1).await;

    // A new certificate from the same CA that names neither `localhost` nor the address: the
    // name found before no longer fits, so the next connection probes again, once.
    s.reissue(&["db.internal"]).await;
    let pre = s.global_status("Aborted_connects").await;
    let full = ConfigAndPool::mysql(&s.url("localhost", ""))
        .ssl_mode(SslMode::VerifyFull)
        .ssl_root_cert(&s.ca)
        .max_size(1)
        .build()
        .await
        .expect("pool");
    let e = match full.get_connection().await {
        Ok(_) => panic!("verify-full to localhost must fail now: the certificate changed"),
        Err(e) => e,
    };
    assert_eq!(e.kind(), ErrorKind::Tls, "{e}");
    // The refused handshake is counted before the next connections are.
    let refused = aborted_since(&s, pre, 1).await;
    let mid = pre + refused;
    for _ in 0..2 {
        let mut c = db
            .get_connection()
            .await
            .expect("verify-ca after the certificate changed");
        assert!(!cipher(&mut c).await.is_empty(), "the session is encrypted");
        held.push(c);
    }
    let second = aborted_since(&s, mid, 2).await;
    println!(
        "mysql_tls_probe connections={} aborted_handshakes_first={first} \
         aborted_handshakes_after_change={second} aborted_handshakes_other_modes={unprobed}",
        held.len()
    );
    assert_eq!(
        unprobed, 0,
        "verify-full, require and prefer without a root file probed"
    );
    // One probe for three connections; after the change, the refused connection with the old
    // name and one new probe for two connections.
    assert_eq!(first, 1, "probes for the first three connections");
    assert_eq!(
        refused, 1,
        "the verify-full handshake the new certificate refused"
    );
    assert_eq!(
        second, 2,
        "aborted handshakes after the certificate changed"
    );
}
