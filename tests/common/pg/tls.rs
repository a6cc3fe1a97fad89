//! A throwaway PostgreSQL cluster that speaks TLS, for the TLS tests and benches (feature
//! `postgres-tls`). Certificates are made at start with `rcgen`:
//!
//! - a test CA, and a server certificate it signs for the DNS name `localhost` **only** (no IP
//!   address), so `verify-full` to `localhost` succeeds and to `127.0.0.1` fails on the name
//!   ([`start_named`] can add the address `127.0.0.1`);
//! - a second, unrelated CA (the wrong root);
//! - a client certificate for the role [`CERT_USER`], signed by the test CA.
//!
//! The server has `ssl = on`, trusts the test CA for client certificates, and a `pg_hba.conf`
//! that is `hostssl` only over TCP (`cert` authentication for [`CERT_USER`], `trust` for the
//! rest) and `trust` on its unix socket, where the tests' own plain-text admin connections go.
//!
//! `SQL_MIDDLEWARE_PG_TLS=1` makes [`super::base_url`] use this cluster's socket and
//! [`super::PgSchema`] hand tests `verify-full` URLs to it, so the conformance suite runs
//! over TLS. It needs the PostgreSQL server binaries, and fails saying so without them.

use std::path::PathBuf;
use std::sync::OnceLock;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SanType,
};

/// Environment variable that, set to `1`, runs the Postgres tests over TLS.
pub const PG_TLS_ENV: &str = "SQL_MIDDLEWARE_PG_TLS";

/// The role that logs in with a client certificate (`cert` authentication).
pub const CERT_USER: &str = "sqlmw_cert_user";

/// True when the Postgres tests run over TLS (`SQL_MIDDLEWARE_PG_TLS=1`).
pub fn via_tls() -> bool {
    std::env::var(PG_TLS_ENV).is_ok_and(|v| v == "1")
}

/// A running TLS cluster and the client-side files to reach it.
#[derive(Debug, Clone)]
pub struct TlsServer {
    /// The cluster (its port, its unix-socket URL, its directory).
    pub cluster: super::cluster::Cluster,
    /// The CA that signed the server's and the client's certificates (PEM).
    pub ca: PathBuf,
    /// A CA that signed nothing here (PEM).
    pub other_ca: PathBuf,
    /// The client certificate of [`CERT_USER`] and its key (PEM).
    pub client_cert: PathBuf,
    pub client_key: PathBuf,
}

impl TlsServer {
    /// `postgres://<user>@<host>:<port>/postgres?<query>`: a TCP URL (TLS is always required).
    pub fn url(&self, user: &str, host: &str, query: &str) -> String {
        let port = self.cluster.port;
        if query.is_empty() {
            format!("postgres://{user}@{host}:{port}/postgres")
        } else {
            format!("postgres://{user}@{host}:{port}/postgres?{query}")
        }
    }

    /// The URL the TLS mode hands the tests: `localhost`, `verify-full`, the test CA.
    pub fn verify_full_url(&self) -> String {
        let ca = super::percent_encode(&self.ca.display().to_string());
        self.url(
            "postgres",
            "localhost",
            &format!("sslmode=verify-full&sslrootcert={ca}"),
        )
    }
}

/// The process's TLS cluster, started on first use. Panics, saying what to install, when it
/// cannot be started.
pub fn shared() -> &'static TlsServer {
    match try_shared() {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    }
}

/// [`shared`], reporting why it could not start.
pub fn try_shared() -> Result<&'static TlsServer, String> {
    static S: OnceLock<Result<TlsServer, String>> = OnceLock::new();
    S.get_or_init(start).as_ref().map_err(Clone::clone)
}

/// Starts a TLS cluster of its own (see the module docs), `hostssl` only over TCP.
pub fn start() -> Result<TlsServer, String> {
    start_with(false)
}

/// [`start`]; with `plain_tcp`, the server also accepts plain-text TCP connections (the
/// benches compare connecting with and without TLS on one server).
pub fn start_with(plain_tcp: bool) -> Result<TlsServer, String> {
    start_named(plain_tcp, false)
}

/// [`start_with`]; with `ip_san`, the server certificate also names the IP address
/// `127.0.0.1`, so `verify-full` to that address succeeds.
pub fn start_named(plain_tcp: bool, ip_san: bool) -> Result<TlsServer, String> {
    let mut hba = format!(
        "local all all trust\n\
         hostssl all {CERT_USER} 127.0.0.1/32 cert\n\
         hostssl all {CERT_USER} ::1/128 cert\n\
         hostssl all all 127.0.0.1/32 trust\n\
         hostssl all all ::1/128 trust\n"
    );
    if plain_tcp {
        hba.push_str("host all all 127.0.0.1/32 trust\nhost all all ::1/128 trust\n");
    }
    start_hba(ip_san, hba, plain_tcp)
}

/// A cluster as [`start_with`]`(true)`, whose TCP logins (TLS or plain text) need the role's
/// password (`scram-sha-256`) instead of `trust`: for the tests of credentials per connection.
/// The unix socket stays `trust` for the tests' own admin connections.
pub fn start_password_auth() -> Result<TlsServer, String> {
    let hba = "local all all trust\n\
               host all all 127.0.0.1/32 scram-sha-256\n\
               host all all ::1/128 scram-sha-256\n"
        .to_owned();
    start_hba(false, hba, true)
}

/// Starts a TLS cluster with `hba` as its `pg_hba.conf` (see the module docs).
fn start_hba(ip_san: bool, hba: String, plain_tcp: bool) -> Result<TlsServer, String> {
    let m = Material::new(ip_san).map_err(|e| format!("cannot make test certificates: {e}"))?;
    let setup = super::cluster::ClusterSetup {
        files: vec![
            ("server.crt".to_owned(), m.server_cert.clone().into_bytes()),
            ("server.key".to_owned(), m.server_key.clone().into_bytes()),
            ("ca.crt".to_owned(), m.ca.clone().into_bytes()),
        ],
        settings: [
            ("ssl", "on"),
            ("ssl_cert_file", "server.crt"),
            ("ssl_key_file", "server.key"),
            ("ssl_ca_file", "ca.crt"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .to_vec(),
        hba: Some(hba),
    };
    let cluster = super::cluster::start_cluster_with(&setup).map_err(|e| {
        format!(
            "cannot start a TLS PostgreSQL cluster for the TLS tests: {e}\n\
             Install the PostgreSQL server binaries (initdb, pg_ctl, postgres; Debian/Ubuntu: \
             `apt-get install postgresql`)."
        )
    })?;
    let client = cluster.dir.join("client");
    std::fs::create_dir_all(&client)
        .map_err(|e| format!("cannot create {}: {e}", client.display()))?;
    let write = |name: &str, text: &str| -> Result<PathBuf, String> {
        let path = client.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok(path)
    };
    let server = TlsServer {
        ca: write("ca.crt", &m.ca)?,
        other_ca: write("other-ca.crt", &m.other_ca)?,
        client_cert: write("client.crt", &m.client_cert)?,
        client_key: write("client.key", &m.client_key)?,
        cluster,
    };
    admin(
        &server.cluster.socket_url,
        &format!("CREATE ROLE {CERT_USER} LOGIN"),
    )?;
    eprintln!(
        "[pg tests] TLS cluster on localhost:{} ({} over TCP; certificates in {})",
        server.cluster.port,
        if plain_tcp {
            "TLS or plain text"
        } else {
            "TLS only"
        },
        client.display()
    );
    Ok(server)
}

/// Runs `sql` on `url` (plain text; meant for the unix socket) from a thread of its own.
pub fn admin(url: &str, sql: &str) -> Result<(), String> {
    let (url, sql) = (url.to_owned(), sql.to_owned());
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
                .await
                .map_err(|e| format!("cannot connect to the TLS cluster's socket: {e}"))?;
            let conn = tokio::spawn(conn);
            let r = client
                .batch_execute(&sql)
                .await
                .map_err(|e| format!("{sql}: {e}"));
            drop(client);
            let _ = conn.await;
            r
        })
    })
    .join()
    .unwrap_or_else(|_| Err("the admin thread panicked".to_owned()))
}

/// The PEM texts of the test PKI.
struct Material {
    ca: String,
    other_ca: String,
    server_cert: String,
    server_key: String,
    client_cert: String,
    client_key: String,
}

impl Material {
    fn new(ip_san: bool) -> Result<Material, rcgen::Error> {
        let ca = ca("sqlmw test CA")?;
        let other = ca_cert_only("sqlmw unrelated CA")?;
        // Without `ip_san`, `localhost` only: then 127.0.0.1 is a name the certificate lacks.
        let mut server = CertificateParams::new(vec!["localhost".to_owned()])?;
        if ip_san {
            server
                .subject_alt_names
                .push(SanType::IpAddress([127, 0, 0, 1].into()));
        }
        server
            .distinguished_name
            .push(DnType::CommonName, "localhost");
        server.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let server_key = KeyPair::generate()?;
        let server_cert = server.signed_by(&server_key, &ca)?;
        let mut client = CertificateParams::new(Vec::<String>::new())?;
        // `cert` authentication matches the certificate's CN with the role.
        client
            .distinguished_name
            .push(DnType::CommonName, CERT_USER);
        client.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let client_key = KeyPair::generate()?;
        let client_cert = client.signed_by(&client_key, &ca)?;
        Ok(Material {
            ca: ca.pem(),
            other_ca: other,
            server_cert: server_cert.pem(),
            server_key: server_key.serialize_pem(),
            client_cert: client_cert.pem(),
            client_key: client_key.serialize_pem(),
        })
    }
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

fn ca(name: &str) -> Result<CertifiedIssuer<'static, KeyPair>, rcgen::Error> {
    CertifiedIssuer::self_signed(ca_params(name)?, KeyPair::generate()?)
}

fn ca_cert_only(name: &str) -> Result<String, rcgen::Error> {
    Ok(ca(name)?.pem())
}
