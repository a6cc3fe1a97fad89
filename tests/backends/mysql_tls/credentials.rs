//! A pool's password provider over TLS: the login the provider's password makes goes through
//! the TLS connect path (`require`, and the chain-only check of `verify-ca`), and a password
//! the server refuses there is `Config` without the password in any output. The provider is
//! told the login it is asked for: the URL's host, the server's port (`@@port`), the user and
//! the database the session then has.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use sql_middleware::prelude::*;
use sql_middleware::{Login, Password, SslMode};

use super::server::{PW_USER, Setup, start};
use crate::common::groups;

/// The logins a provider was asked for.
type Asked = Arc<Mutex<Vec<Login>>>;

/// A pool for [`PW_USER`] without a password in its URL, whose provider returns `password` and
/// records the logins it is asked for in `asked`.
fn pool(url: &str, mode: SslMode, password: &str, asked: &Asked) -> PoolBuilder {
    let (password, asked) = (password.to_owned(), Arc::clone(asked));
    ConfigAndPool::mysql(url)
        .ssl_mode(mode)
        .max_size(1)
        .create_timeout(Duration::from_secs(10))
        .password_provider(move |login: Login| {
            asked.lock().unwrap().push(login);
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
    let asked = Asked::default();
    let mut sessions = Vec::new();
    for (mode, root) in [(SslMode::Require, None), (SslMode::VerifyCa, Some(&ca))] {
        let mut b = pool(&url, mode, &s.password, &asked);
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
        let rs = c
            .query("SELECT @@port, SUBSTRING_INDEX(CURRENT_USER(), '@', 1), DATABASE()")
            .select()
            .await
            .expect("the session's facts");
        let r = &rs.results[0];
        let port: i64 = r.try_get(0).expect("@@port");
        let user: String = r.try_get(1).expect("user");
        let database: String = r.try_get(2).expect("database");
        sessions.push((port, user, database));
        drop(c);
        shown.push_str(&format!("{db:?}\n{:?}\n", db.stats()));
    }
    let wrong = format!("{}-wrong", s.password);
    let db = pool(&url, SslMode::Require, &wrong, &asked)
        .build()
        .await
        .expect("build");
    let e = db.get_connection().await.expect_err("a wrong password");
    shown.push_str(&format!("{e}\n{e:?}\n"));
    let asked: Vec<_> = asked
        .lock()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l.backend(),
                l.host().to_owned(),
                l.port(),
                l.user().to_owned(),
                l.database().map(str::to_owned),
                l.is_reader(),
            )
        })
        .collect();
    shown.push_str(&format!("{asked:?}\n"));
    println!(
        "mysql_tls_credentials encrypted={encrypted} wrong={:?} asked={asked:?} \
         sessions={sessions:?}",
        e.kind()
    );
    // Each pool opened a connection (the last one was refused): the provider was asked for
    // each, with the URL's host, the port the session is on, its user and its database.
    let expected = (
        sql_middleware::error::Backend::Mysql,
        "127.0.0.1".to_owned(),
        s.port,
        PW_USER.to_owned(),
        Some("mysql".to_owned()),
        false,
    );
    assert!(
        asked.len() >= 3 && asked.iter().all(|a| *a == expected),
        "{asked:?}"
    );
    for (port, user, db) in &sessions {
        assert_eq!(
            (*port, user.as_str(), db.as_str()),
            (i64::from(s.port), PW_USER, "mysql")
        );
    }
    assert_eq!(encrypted, 2, "every session is encrypted");
    assert_eq!(e.kind(), ErrorKind::Config, "{e}");
    assert!(
        !shown.contains(&s.password),
        "the password appears in: {shown}"
    );
}
