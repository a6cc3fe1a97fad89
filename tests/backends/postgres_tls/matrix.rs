//! libpq's TLS mode matrix (`common::tls_matrix`) on Postgres: two throwaway clusters that
//! speak TLS and accept plain text over TCP, one whose certificate names `localhost` only and
//! one whose certificate also names `127.0.0.1`. Each case gives a password in its URL, which no
//! error may show.

use std::time::Duration;

use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::pg::tls::{self, TlsServer};
use crate::common::tls_matrix::{self, Case, Cert, Got, Root};

/// Connects as `case` says and asks the server whether the session is encrypted.
async fn attempt(s: &TlsServer, case: &Case, password: &str) -> Got {
    let url = format!(
        "postgres://postgres:{password}@{}:{}/postgres",
        case.host.text(),
        s.cluster.port
    );
    let mut b = ConfigAndPool::postgres(&url)
        .ssl_mode(case.mode)
        .max_size(1)
        .create_timeout(Duration::from_secs(10))
        .wait_timeout(Duration::from_secs(10));
    match case.root {
        Root::None => {}
        Root::Right => b = b.ssl_root_cert(&s.ca),
        Root::Wrong => b = b.ssl_root_cert(&s.other_ca),
    }
    let r = async {
        let db = b.build().await?;
        let mut c = db.get_connection().await?;
        let (ssl,): (bool,) = c
            .query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()")
            .one()
            .await?;
        Ok::<bool, SqlMiddlewareDbError>(ssl)
    }
    .await;
    r.map_err(|e| (e.kind(), format!("{e} | {e:?}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_means_what_it_means_in_libpq() {
    let _group = groups::enter("postgres_tls");
    let started = tokio::task::spawn_blocking(|| {
        Ok::<_, String>((
            tls::start_named(true, false)?,
            tls::start_named(true, true)?,
        ))
    })
    .await
    .expect("the cluster thread");
    let (name_only, with_ip) = started.unwrap_or_else(|e| panic!("{e}"));
    // The clusters trust every login, so the password is never checked: it is here to be
    // looked for in the errors.
    let password = format!("pw-{}", crate::common::pg::random_hex());
    let cases = tls_matrix::cases();
    let mut wrong = Vec::new();
    for case in &cases {
        let s = match case.cert {
            Cert::NameOnly => &name_only,
            Cert::NameAndIp => &with_ip,
        };
        let got = attempt(s, case, &password).await;
        wrong.extend(tls_matrix::judge(case, &got, &password));
    }
    println!(
        "postgres_tls_matrix cases={} wrong={}",
        cases.len(),
        wrong.len()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
