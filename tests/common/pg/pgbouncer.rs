//! A PgBouncer in **transaction** pooling mode in front of the test server, started from the
//! system's `pgbouncer` binary (Debian: `apt-get install pgbouncer`) on a free loopback port,
//! for the life of the test process (a watchdog shell stops it when the process exits).
//!
//! `SQL_MIDDLEWARE_PG_VIA_PGBOUNCER=1` makes [`super::with_schema`] hand every Postgres test
//! a fresh database reached through it (a schema's `search_path` cannot survive transaction
//! pooling, a database can).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The running PgBouncer.
#[derive(Debug)]
pub struct Bouncer {
    /// Its loopback port.
    pub port: u16,
    /// The user the test server trusts.
    pub user: String,
}

/// True when the Postgres tests run through PgBouncer (`SQL_MIDDLEWARE_PG_VIA_PGBOUNCER=1`).
pub fn via_bouncer() -> bool {
    std::env::var("SQL_MIDDLEWARE_PG_VIA_PGBOUNCER").is_ok_and(|v| v == "1")
}

/// The process's PgBouncer, started on first use. Panics, saying what to install, when it
/// cannot be started.
pub fn shared() -> &'static Bouncer {
    static B: OnceLock<Result<Bouncer, String>> = OnceLock::new();
    match B.get_or_init(|| start(&super::base_url(), 20, None)) {
        Ok(b) => b,
        Err(e) => panic!("{e}"),
    }
}

/// A PgBouncer of its own with `pool_size` server connections per database (for tests that need
/// clients to share one server connection). Panics, saying what to install, when it cannot
/// start.
pub fn dedicated(pool_size: usize) -> Bouncer {
    start(&super::base_url(), pool_size, None).unwrap_or_else(|e| panic!("{e}"))
}

impl Bouncer {
    /// The database of the test server's URL, through the bouncer.
    pub fn base_db_url(&self) -> String {
        let base: tokio_postgres::Config = super::base_url().parse().expect("test URL");
        self.url(base.get_dbname().unwrap_or("postgres"))
    }

    /// A URL for database `db` through the bouncer.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://{}@127.0.0.1:{}/{db}", self.user, self.port)
    }
}

fn find_binary() -> Option<PathBuf> {
    [
        "/usr/sbin/pgbouncer",
        "/usr/bin/pgbouncer",
        "/usr/local/bin/pgbouncer",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
    .or_else(|| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("pgbouncer"))
                .find(|p| p.exists())
        })
    })
}

/// Starts a PgBouncer in front of the server of `base_url` with `pool_size` server connections
/// per database. `alias`, `(name, schema)`, adds a database `name` whose server connections
/// use `schema` as their `search_path` (set once per server connection, so it survives
/// transaction pooling).
pub fn start(
    base_url: &str,
    pool_size: usize,
    alias: Option<(&str, &str)>,
) -> Result<Bouncer, String> {
    let bin = find_binary().ok_or(
        "the PgBouncer tests need the `pgbouncer` binary (Debian: apt-get install pgbouncer; \
         .ci/run installs it)",
    )?;
    let base: tokio_postgres::Config = base_url
        .parse()
        .map_err(|e| format!("the server URL does not parse: {e}"))?;
    let user = base.get_user().unwrap_or("postgres").to_owned();
    let port_of_server = base.get_ports().first().copied().unwrap_or(5432);
    let host = match base.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "127.0.0.1".to_owned(),
    };
    let port = super::ports::server_port()?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let dir =
        std::env::temp_dir().join(format!("sqlmw_pgbouncer_{}_{nanos:x}", std::process::id()));
    let db = base.get_dbname().unwrap_or("postgres");
    let extra = alias.map_or(String::new(), |(name, schema)| {
        format!(
            "{name} = host={host} port={port_of_server} dbname={db} connect_query='SET search_path = {schema}'\n"
        )
    });
    fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    // PgBouncer refuses to run as root; when the tests do, it runs as `postgres` and needs to
    // write its log and pid file here.
    set_mode(&dir, 0o777)?;
    let users = dir.join("users.txt");
    fs::write(&users, format!("\"{user}\" \"\"\n")).map_err(|e| e.to_string())?;
    set_mode(&users, 0o644)?;
    let cfg = dir.join("pgbouncer.ini");
    fs::write(
        &cfg,
        format!(
            "[databases]\n{extra}* = host={host} port={port_of_server}\n\n[pgbouncer]\n\
             listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n\
             auth_type = trust\nauth_file = {users}\npool_mode = transaction\n\
             max_client_conn = 1000\ndefault_pool_size = {pool_size}\n\
             ignore_startup_parameters = extra_float_digits,options\n\
             logfile = {log}\npidfile = {pid}\nserver_reset_query =\n",
            users = users.display(),
            log = dir.join("pgbouncer.log").display(),
            pid = dir.join("pgbouncer.pid").display(),
        ),
    )
    .map_err(|e| e.to_string())?;
    set_mode(&cfg, 0o644)?;
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let run = if root {
        format!("runuser -u postgres -- {} {}", bin.display(), cfg.display())
    } else {
        format!("{} {}", bin.display(), cfg.display())
    };
    // The watchdog: runs PgBouncer, and stops it (and removes its folder) once this process
    // has exited.
    let script = format!(
        "{run} & child=$!; while kill -0 {parent} 2>/dev/null && kill -0 $child 2>/dev/null; \
         do sleep 1; done; kill $child 2>/dev/null; wait $child 2>/dev/null; rm -rf {dir}",
        parent = std::process::id(),
        dir = dir.display()
    );
    Command::new("/bin/sh")
        .arg("-c")
        .arg(script)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start PgBouncer: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(15);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            let log = fs::read_to_string(dir.join("pgbouncer.log")).unwrap_or_default();
            return Err(format!("PgBouncer did not start on port {port}:\n{log}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    eprintln!(
        "[pg tests] PgBouncer (transaction mode) on 127.0.0.1:{port} in front of {host}:{port_of_server}"
    );
    Ok(Bouncer { port, user })
}

fn set_mode(p: &Path, mode: u32) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode))
        .map_err(|e| format!("cannot chmod {}: {e}", p.display()))
}
