//! libpq's TLS mode matrix (`common::tls_matrix`) on MariaDB: two throwaway servers that speak
//! TLS and accept plain text, one whose certificate names `localhost` only and one whose
//! certificate also names `127.0.0.1`. Each case logs in with a password, which no error may
//! show.

use std::time::Duration;

use sql_middleware::prelude::*;

use super::server::{Server, Setup, start};
use crate::common::groups;
use crate::common::tls_matrix::{self, Case, Cert, Got, Root};

/// Connects as `case` says and asks the server whether the session is encrypted.
async fn attempt(s: &Server, case: &Case) -> Got {
    let mut b = ConfigAndPool::mysql(&s.url_with_password(case.host.text(), ""))
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
        let rs = c
            .query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            .select()
            .await?;
        let cipher: String = rs.results[0].try_get(1)?;
        Ok::<bool, SqlMiddlewareDbError>(!cipher.is_empty())
    }
    .await;
    r.map_err(|e| (e.kind(), format!("{e} | {e:?}")))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_means_what_it_means_in_libpq() {
    let _group = groups::enter("mysql");
    let name_only = start(Setup {
        tls: true,
        ip_san: false,
    })
    .await;
    let with_ip = start(Setup {
        tls: true,
        ip_san: true,
    })
    .await;
    let cases = tls_matrix::cases();
    let mut wrong = Vec::new();
    for case in &cases {
        let s = match case.cert {
            Cert::NameOnly => &name_only,
            Cert::NameAndIp => &with_ip,
        };
        let got = attempt(s, case).await;
        wrong.extend(tls_matrix::judge(case, &got, &s.password));
    }
    println!(
        "mysql_tls_matrix cases={} wrong={}",
        cases.len(),
        wrong.len()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
