//! MySQL/MariaDB TLS (feature `mysql-tls`): each `sslmode` against a throwaway MariaDB that
//! speaks TLS with certificates made here with `rcgen`, and against one that does not.
//!
//! - a test CA, and a server certificate it signs for the DNS name `localhost` **only** (no IP
//!   address), so `verify-full` to `localhost` succeeds and to `127.0.0.1` fails on the name;
//! - a second, unrelated CA (the wrong root);
//! - client certificates for a user created `REQUIRE X509`: one the test CA signed, and one the
//!   unrelated CA signed (which the server must refuse).
//!
//! Whether a session is encrypted is the server's word (`Ssl_cipher` in its session status).
//! The servers need the MariaDB server binaries (`mariadb-install-db`, `mariadbd`); the tests
//! fail saying so without them.
#![cfg(feature = "mysql-tls")]

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};
use sql_middleware::SslMode;
use sql_middleware::prelude::*;

use crate::common::backends::unique_hex;
use crate::common::groups;

/// A throwaway server, stopped and removed when dropped.
struct Server {
    dir: PathBuf,
    child: Child,
    port: u16,
    /// The CA that signed the server's certificate, and one that signed nothing (PEM files).
    ca: PathBuf,
    other_ca: PathBuf,
    /// A client certificate and key the CA signed, and a pair the unrelated CA signed.
    client: (PathBuf, PathBuf),
    rogue: (PathBuf, PathBuf),
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

impl Server {
    fn url(&self, host: &str, query: &str) -> String {
        self.url_as("root", host, query)
    }

    fn url_as(&self, user: &str, host: &str, query: &str) -> String {
        let sep = if query.is_empty() { "" } else { "?" };
        format!("mysql://{user}@{host}:{}/mysql{sep}{query}", self.port)
    }
}

fn find_program(names: &[&str]) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map(PathBuf::from));
    names
        .iter()
        .find_map(|n| dirs.iter().map(|d| d.join(n)).find(|p| p.is_file()))
}

/// Uid and gid of a system user, from `/etc/passwd`.
fn lookup_user(name: &str) -> Option<(u32, u32)> {
    let passwd = fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|line| {
        let f: Vec<&str> = line.split(':').collect();
        (f.len() >= 4 && f[0] == name).then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))?
    })
}

fn ca_params(name: &str) -> Result<CertificateParams, rcgen::Error> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name.push(DnType::CommonName, name);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(p)
}

/// The user that must present a client certificate signed by the server's CA.
const X509_USER: &str = "sqlmw_x509";

/// A client certificate for [`X509_USER`] signed by `issuer`, and its key (PEM).
fn client_pair(issuer: &CertifiedIssuer<'_, KeyPair>) -> Result<[String; 2], rcgen::Error> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.distinguished_name.push(DnType::CommonName, X509_USER);
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate()?;
    let cert = p.signed_by(&key, issuer)?;
    Ok([cert.pem(), key.serialize_pem()])
}

/// The CA, the unrelated CA, the server certificate and its key, a client certificate and key
/// the CA signed, and a client certificate and key the unrelated CA signed (PEM).
fn material() -> Result<[String; 8], rcgen::Error> {
    let ca = CertifiedIssuer::self_signed(ca_params("sqlmw mysql test CA")?, KeyPair::generate()?)?;
    let other =
        CertifiedIssuer::self_signed(ca_params("sqlmw mysql unrelated CA")?, KeyPair::generate()?)?;
    // `localhost` only: an IP address in the SANs would let 127.0.0.1 pass verify-full.
    let mut server = CertificateParams::new(vec!["localhost".to_owned()])?;
    server
        .distinguished_name
        .push(DnType::CommonName, "localhost");
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate()?;
    let cert = server.signed_by(&key, &ca)?;
    let [client, client_key] = client_pair(&ca)?;
    let [rogue, rogue_key] = client_pair(&other)?;
    Ok([
        ca.pem(),
        other.pem(),
        cert.pem(),
        key.serialize_pem(),
        client,
        client_key,
        rogue,
        rogue_key,
    ])
}

/// Starts a throwaway server on a free loopback port: with TLS (the certificates above) or
/// with TLS switched off.
async fn start(tls: bool) -> Server {
    let install = find_program(&["mariadb-install-db", "mysql_install_db"])
        .expect("the TLS tests start a throwaway server and need mariadb-install-db");
    let server = find_program(&["mariadbd", "mysqld"])
        .expect("the TLS tests start a throwaway server and need mariadbd");
    let dir = std::env::temp_dir().join(format!(
        "sqlmw_mytls_{}_{}",
        std::process::id(),
        unique_hex()
    ));
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .expect("server directory");
    let [
        ca,
        other_ca,
        cert,
        key,
        client,
        client_key,
        rogue,
        rogue_key,
    ] = material().expect("test certificates");
    let write = |name: &str, text: &str| -> PathBuf {
        let p = dir.join(name);
        fs::write(&p, text).unwrap_or_else(|e| panic!("cannot write {}: {e}", p.display()));
        p
    };
    let files = [
        write("ca.crt", &ca),
        write("other-ca.crt", &other_ca),
        write("server.crt", &cert),
        write("server.key", &key),
        write("client.crt", &client),
        write("client.key", &client_key),
        write("rogue.crt", &rogue),
        write("rogue.key", &rogue_key),
    ];
    // As root, the server runs as the `mysql` user, which must own its files.
    let user = if fs::metadata(&dir).map(|m| m.uid()).unwrap_or(1) == 0 {
        let (uid, gid) = lookup_user("mysql").expect("running as root, but no `mysql` user");
        for p in std::iter::once(&dir).chain(files.iter()) {
            std::os::unix::fs::chown(p, Some(uid), Some(gid)).expect("chown to mysql");
        }
        Some("mysql")
    } else {
        None
    };
    let data = dir.join("data");
    let mut cmd = Command::new(&install);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .arg("--auth-root-authentication-method=normal")
        .arg("--skip-test-db")
        .arg("--skip-name-resolve");
    if let Some(u) = user {
        cmd.arg(format!("--user={u}"));
    }
    let out = cmd
        .current_dir(&dir)
        .stdin(Stdio::null())
        .output()
        .expect("run mariadb-install-db");
    assert!(
        out.status.success(),
        "{} failed: {}{}",
        install.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let log = fs::File::create(dir.join("server.log")).expect("server log");
    let mut cmd = Command::new(&server);
    cmd.arg("--no-defaults")
        .arg(format!("--datadir={}", data.display()))
        .arg(format!("--socket={}/mysqld.sock", dir.display()))
        .arg(format!("--pid-file={}/mysqld.pid", dir.display()))
        .arg(format!("--port={port}"))
        .arg("--bind-address=127.0.0.1")
        .arg("--skip-name-resolve")
        .arg("--skip-log-bin")
        .arg("--innodb-buffer-pool-size=32M");
    if tls {
        cmd.arg(format!("--ssl-ca={}", files[0].display()))
            .arg(format!("--ssl-cert={}", files[2].display()))
            .arg(format!("--ssl-key={}", files[3].display()));
    } else {
        cmd.arg("--skip-ssl");
    }
    if let Some(u) = user {
        cmd.arg(format!("--user={u}"));
    }
    let child = cmd
        .current_dir(&dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone().expect("log"))
        .stderr(log)
        .spawn()
        .expect("run mariadbd");
    let mut s = Server {
        ca: files[0].clone(),
        other_ca: files[1].clone(),
        client: (files[4].clone(), files[5].clone()),
        rogue: (files[6].clone(), files[7].clone()),
        dir,
        child,
        port,
    };
    // Ready when a plain-text connection answers (a client may still connect without TLS).
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = s.child.try_wait() {
            let log = fs::read_to_string(s.dir.join("server.log")).unwrap_or_default();
            panic!("mariadbd exited ({status}):\n{log}");
        }
        let plain = format!("mysql://root@127.0.0.1:{port}/mysql");
        if let Ok(Ok(mut c)) =
            tokio::time::timeout(Duration::from_secs(2), mysql_async::Conn::from_url(plain)).await
        {
            use mysql_async::prelude::Queryable;
            if tls {
                // A user that may log in only with a client certificate the server's CA signed.
                c.query_drop(format!(
                    "CREATE USER '{X509_USER}'@'%' REQUIRE X509; \
                     GRANT SELECT ON mysql.* TO '{X509_USER}'@'%'"
                ))
                .await
                .expect("the client-certificate user");
            }
            let _ = c.disconnect().await;
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "the throwaway server did not start within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    s
}

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
    let s = start(true).await;
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
                // Stricter than libpq's verify-ca on MySQL: mysql_async's rustls verifier cannot
                // skip only the host name check, so the name is checked as in verify-full
                // (documented in src/mysql/tls.rs and the backends guide).
                "verify-ca, the right root, a host name the certificate does not name",
                my("127.0.0.1")
                    .ssl_mode(SslMode::VerifyCa)
                    .ssl_root_cert(&ca),
                None,
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
    let p = start(false).await;
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
