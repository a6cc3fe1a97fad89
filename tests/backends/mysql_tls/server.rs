//! A throwaway MariaDB for the TLS tests, and its certificates (made here with `rcgen`):
//!
//! - a test CA, and a server certificate it signs for the DNS name `localhost` (and, when asked,
//!   the IP address `127.0.0.1`), which a test may replace ([`Server::reissue`]);
//! - a second, unrelated CA (the wrong root);
//! - client certificates for a user created `REQUIRE X509`: one the test CA signed, and one the
//!   unrelated CA signed (which the server must refuse);
//! - a user with a password ([`PW_USER`]), so tests can check that no error shows it.
//!
//! The server needs the MariaDB server binaries (`mariadb-install-db`, `mariadbd`); starting
//! one fails saying so without them.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};

use crate::common::backends::unique_hex;

/// The user that must present a client certificate signed by the server's CA.
pub const X509_USER: &str = "sqlmw_x509";
/// A user that logs in with a password (see [`Server::password`]).
pub const PW_USER: &str = "sqlmw_pw";

/// How a server is started.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// Speak TLS (else `--skip-ssl`).
    pub tls: bool,
    /// The server certificate also names the IP address `127.0.0.1`.
    pub ip_san: bool,
}

/// A throwaway server, stopped and removed when dropped.
pub struct Server {
    dir: PathBuf,
    child: Child,
    pub port: u16,
    /// The CA that signed the server's certificate, and one that signed nothing (PEM files).
    pub ca: PathBuf,
    pub other_ca: PathBuf,
    /// A client certificate and key the CA signed, and a pair the unrelated CA signed.
    pub client: (PathBuf, PathBuf),
    pub rogue: (PathBuf, PathBuf),
    /// The password of [`PW_USER`].
    pub password: String,
    /// The CA, to sign a new server certificate ([`Server::reissue`]).
    issuer: Ca,
    /// The server's certificate and key files.
    server_files: (PathBuf, PathBuf),
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

impl Server {
    /// `mysql://root@<host>:<port>/mysql?<query>`.
    pub fn url(&self, host: &str, query: &str) -> String {
        self.url_as("root", host, query)
    }

    /// As [`Self::url`], for `user` (no password).
    pub fn url_as(&self, user: &str, host: &str, query: &str) -> String {
        let sep = if query.is_empty() { "" } else { "?" };
        format!("mysql://{user}@{host}:{}/mysql{sep}{query}", self.port)
    }

    /// Gives the server a new certificate from the same CA, naming `names` (DNS names or IP
    /// addresses), and makes it load it (`FLUSH SSL`): new connections see it.
    pub async fn reissue(&self, names: &[&str]) {
        use mysql_async::prelude::Queryable;
        let [cert, key] = server_pair(&self.issuer, names).expect("a new server certificate");
        // Written in place: the files keep their owner.
        fs::write(&self.server_files.0, cert).expect("write the server certificate");
        fs::write(&self.server_files.1, key).expect("write the server key");
        let mut c = mysql_async::Conn::from_url(self.url("127.0.0.1", ""))
            .await
            .expect("admin connection");
        c.query_drop("FLUSH SSL").await.expect("FLUSH SSL");
        let _ = c.disconnect().await;
    }

    /// A server counter (`SHOW GLOBAL STATUS`), read over a plain-text admin connection.
    pub async fn global_status(&self, name: &str) -> u64 {
        use mysql_async::prelude::Queryable;
        let mut c = mysql_async::Conn::from_url(self.url("127.0.0.1", ""))
            .await
            .expect("admin connection");
        let row: Option<(String, u64)> = c
            .query_first(format!("SHOW GLOBAL STATUS LIKE '{name}'"))
            .await
            .expect("SHOW GLOBAL STATUS");
        let _ = c.disconnect().await;
        row.unwrap_or_else(|| panic!("no status variable {name}")).1
    }

    /// As [`Self::url`], for [`PW_USER`] with its password.
    pub fn url_with_password(&self, host: &str, query: &str) -> String {
        let sep = if query.is_empty() { "" } else { "?" };
        format!(
            "mysql://{PW_USER}:{}@{host}:{}/mysql{sep}{query}",
            self.password, self.port
        )
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

/// A client certificate for [`X509_USER`] signed by `issuer`, and its key (PEM).
fn client_pair(issuer: &CertifiedIssuer<'_, KeyPair>) -> Result<[String; 2], rcgen::Error> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.distinguished_name.push(DnType::CommonName, X509_USER);
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate()?;
    let cert = p.signed_by(&key, issuer)?;
    Ok([cert.pem(), key.serialize_pem()])
}

type Ca = CertifiedIssuer<'static, KeyPair>;

/// A server certificate `ca` signs for `names` (DNS names, or IP addresses), and its key (PEM).
fn server_pair(ca: &Ca, names: &[&str]) -> Result<[String; 2], rcgen::Error> {
    let mut server = CertificateParams::new(Vec::<String>::new())?;
    for n in names {
        server.subject_alt_names.push(match n.parse() {
            Ok(ip) => SanType::IpAddress(ip),
            Err(_) => SanType::DnsName((*n).try_into()?),
        });
    }
    server.distinguished_name.push(DnType::CommonName, names[0]);
    server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate()?;
    let cert = server.signed_by(&key, ca)?;
    Ok([cert.pem(), key.serialize_pem()])
}

/// The CA (kept, to sign again), the unrelated CA, the server certificate and its key, a
/// client certificate and key the CA signed, and a client certificate and key the unrelated CA
/// signed (PEM).
fn material(ip_san: bool) -> Result<(Ca, [String; 8]), rcgen::Error> {
    let ca = CertifiedIssuer::self_signed(ca_params("sqlmw mysql test CA")?, KeyPair::generate()?)?;
    let other =
        CertifiedIssuer::self_signed(ca_params("sqlmw mysql unrelated CA")?, KeyPair::generate()?)?;
    // Without `ip_san`, `localhost` only: then 127.0.0.1 is a name the certificate lacks.
    let names: &[&str] = if ip_san {
        &["localhost", "127.0.0.1"]
    } else {
        &["localhost"]
    };
    let [cert, key] = server_pair(&ca, names)?;
    let [client, client_key] = client_pair(&ca)?;
    let [rogue, rogue_key] = client_pair(&other)?;
    let pems = [
        ca.pem(),
        other.pem(),
        cert,
        key,
        client,
        client_key,
        rogue,
        rogue_key,
    ];
    Ok((ca, pems))
}

/// Starts a throwaway server on a free loopback port, as `setup` says.
pub async fn start(setup: Setup) -> Server {
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
    let (
        issuer,
        [
            ca,
            other_ca,
            cert,
            key,
            client,
            client_key,
            rogue,
            rogue_key,
        ],
    ) = material(setup.ip_san).expect("test certificates");
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
    crate::common::mysql::install_data_dir(&install, &data, user, &dir)
        .unwrap_or_else(|e| panic!("{e}"));
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
    if setup.tls {
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
        issuer,
        server_files: (files[2].clone(), files[3].clone()),
        ca: files[0].clone(),
        other_ca: files[1].clone(),
        client: (files[4].clone(), files[5].clone()),
        rogue: (files[6].clone(), files[7].clone()),
        password: format!("pw-{}", unique_hex()),
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
            c.query_drop(format!(
                "CREATE USER '{PW_USER}'@'%' IDENTIFIED BY '{}'; \
                 GRANT SELECT ON mysql.* TO '{PW_USER}'@'%'",
                s.password
            ))
            .await
            .expect("the password user");
            if setup.tls {
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
