//! A pool's password provider over TLS: the login the provider's password makes goes through
//! the TLS connect path (`require`, and the chain-only check of `verify-ca`), and a password
//! the server refuses there is `Config` without the password in any output.

use std::time::Duration;

use sql_middleware::prelude::*;
use sql_middleware::{Password, SslMode};

use super::server::{PW_USER, Setup, start};
use crate::common::groups;

/// A pool for [`PW_USER`] without a password in its URL, whose provider returns `password`.
fn pool(url: &str, mode: SslMode, password: &str) -> PoolBuilder {
    let password = password.to_owned();
    ConfigAndPool::mysql(url)
        .ssl_mode(mode)
        .max_size(1)
        .create_timeout(Duration::from_secs(10))
        .password_provider(move |_| {
            let p = password.clone();
            async move { Ok(Password::new(p)) }
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provided_password_logs_in_over_tls_and_a_wrong_one_is_config() {
    let _group = groups::enter("mysql");
    let s = start(Setup {
        tls: true,
        ip_san: false,
    })
    .await;
    let url = s.url_as(PW_USER, "127.0.0.1", "");
    let ca = s.ca.display().to_string();
    let mut shown = String::new();
    let mut encrypted = 0;
    for (mode, root) in [(SslMode::Require, None), (SslMode::VerifyCa, Some(&ca))] {
        let mut b = pool(&url, mode, &s.password);
        if let Some(root) = root {
            b = b.ssl_root_cert(root);
        }
        shown.push_str(&format!("{b:?}\n"));
        let db = b.build().await.expect("build");
        let mut c = db
            .get_connection()
            .await
            .expect("the provided password logs in");
        let rs = c
            .query("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
            .select()
            .await
            .expect("Ssl_cipher");
        let cipher: String = rs.results[0].try_get(1).expect("a cipher");
        encrypted += usize::from(!cipher.is_empty());
        drop(c);
        shown.push_str(&format!("{db:?}\n{:?}\n", db.stats()));
    }
    let wrong = format!("{}-wrong", s.password);
    let db = pool(&url, SslMode::Require, &wrong)
        .build()
        .await
        .expect("build");
    let e = db.get_connection().await.expect_err("a wrong password");
    shown.push_str(&format!("{e}\n{e:?}\n"));
    println!(
        "mysql_tls_credentials encrypted={encrypted} wrong={:?}",
        e.kind()
    );
    assert_eq!(encrypted, 2, "every session is encrypted");
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    assert!(
        !shown.contains(&s.password),
        "the password appears in: {shown}"
    );
}
