#![allow(dead_code)]
//! MySQL / MariaDB provisioning for the integration tests.
//!
//! Include it through `tests/common/mod.rs` (`pub mod mysql;`, feature `mysql`). It depends
//! only on `std`, `tokio` and `mysql_async` (the crate's own driver under that feature), never
//! on the library under test.
//!
//! [`base_url`] finds (or starts) a server once per process; [`MyDatabase`] and
//! [`with_database`] give every test its own database on that server, so tests can run in
//! parallel without seeing each other's tables.

use std::future::Future;
use std::panic::resume_unwind;
use std::sync::OnceLock;
use std::time::Duration;

use mysql_async::prelude::Queryable;

/// Environment variable that names the MySQL or MariaDB server to test against
/// (`mysql://user[:password]@host:port/db`; `mariadb://` is accepted too).
pub const MYSQL_URL_ENV: &str = "SQL_MIDDLEWARE_MYSQL_URL";

/// Environment variable that, set to `1`, skips the local server and starts a throwaway one:
/// it exercises the path taken on machines that have the server binaries but no server.
pub const MYSQL_THROWAWAY_ENV: &str = "SQL_MIDDLEWARE_MYSQL_THROWAWAY";

/// The machine's default server, tried when [`MYSQL_URL_ENV`] is unset.
pub const DEFAULT_URL: &str = "mysql://root@127.0.0.1:3306/test";

/// Prefix of every database created by [`MyDatabase::create`].
pub const DATABASE_PREFIX: &str = "sqlmw_";

/// How long one connectivity probe may take before the candidate counts as unreachable.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// Base URL of a reachable server whose user may create databases.
///
/// Resolved once per process, in this order:
///  1. the environment variable `SQL_MIDDLEWARE_MYSQL_URL`, if set and non-empty; if that
///     server cannot be used this panics instead of falling through to the other sources;
///  2. the local default server, [`DEFAULT_URL`] (skipped when
///     `SQL_MIDDLEWARE_MYSQL_THROWAWAY=1`);
///  3. a throwaway server started with `mariadb-install-db` (or `mysql_install_db`) and
///     `mariadbd` (or `mysqld`) found in `PATH`, `/usr/sbin` or `/usr/bin`, listening on a free
///     loopback port and stopped when this process exits;
///  4. otherwise it panics with instructions for providing a server. It never skips silently.
///
/// A candidate counts only if a connection succeeds within a few seconds and its user may
/// create and drop a database. The outcome, including a failure, is cached: every later call
/// returns the same URL or panics with the same message.
///
/// This function is synchronous and safe to call from inside a tokio runtime: probes run on a
/// short-lived separate thread with its own current-thread runtime.
pub fn base_url() -> String {
    static BASE: OnceLock<Result<String, String>> = OnceLock::new();
    match BASE.get_or_init(resolve_base_url) {
        Ok(url) => url.clone(),
        Err(message) => panic!("{message}"),
    }
}

/// Runs the resolution steps documented on [`base_url`].
fn resolve_base_url() -> Result<String, String> {
    if let Some(url) = std::env::var(MYSQL_URL_ENV)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
    {
        return match probe(&url, PROBE_TIMEOUT) {
            Ok(()) => {
                eprintln!(
                    "[mysql tests] using the server from {MYSQL_URL_ENV}: {}",
                    redact(&url)
                );
                Ok(url)
            }
            Err(e) => Err(format!(
                "{MYSQL_URL_ENV} is set to {:?}, but that server is not usable: {e}\n\
                 Fix the URL (format: mysql://user[:password]@host:port/db; the user must be \
                 allowed to create databases) or unset {MYSQL_URL_ENV} to let the tests find or \
                 start a local server.",
                redact(&url)
            )),
        };
    }

    let mut tried = Vec::new();
    if std::env::var(MYSQL_THROWAWAY_ENV).is_ok_and(|v| v == "1") {
        tried.push(format!(
            "  - local server: skipped because {MYSQL_THROWAWAY_ENV}=1"
        ));
    } else {
        match probe(DEFAULT_URL, PROBE_TIMEOUT) {
            Ok(()) => {
                eprintln!("[mysql tests] using the local server at {DEFAULT_URL}");
                return Ok(DEFAULT_URL.to_owned());
            }
            Err(e) => tried.push(format!("  - {DEFAULT_URL}: {e}")),
        }
    }

    match try_start_throwaway_server() {
        Ok(url) => return Ok(url),
        Err(e) => tried.push(format!("  - throwaway server: {e}")),
    }

    Err(format!(
        "no MySQL or MariaDB server is available for the integration tests.\n\
         Tried:\n{}\n\
         Provide one of these:\n\
         \x20 * set {MYSQL_URL_ENV}=mysql://user@host:port/db for a running server on which that \
         user may create databases, or\n\
         \x20 * start the local server so that {DEFAULT_URL} answers (root with an empty \
         password), or\n\
         \x20 * install the server binaries (mariadb-install-db and mariadbd) so a throwaway \
         server can be started (Debian/Ubuntu: `apt-get install mariadb-server`).",
        tried.join("\n")
    ))
}

/// `url` in the form `mysql_async` reads: the `mariadb://` scheme becomes `mysql://`.
pub fn driver_url(url: &str) -> String {
    match url.strip_prefix("mariadb://") {
        Some(rest) => format!("mysql://{rest}"),
        None => url.to_owned(),
    }
}

/// `url` with its database (the path) replaced by `database`; the query string is kept.
pub fn url_with_database(url: &str, database: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("mysql", url));
    let (head, query) = match rest.split_once('?') {
        Some((h, q)) => (h, Some(q)),
        None => (rest, None),
    };
    let authority = head.split_once('/').map_or(head, |(a, _)| a);
    match query {
        Some(q) => format!("{scheme}://{authority}/{database}?{q}"),
        None => format!("{scheme}://{authority}/{database}"),
    }
}

/// Checks that `url` accepts a connection within `timeout` and that its user may create and
/// drop a database. Runs on a separate thread with its own current-thread runtime.
fn probe(url: &str, timeout: Duration) -> Result<(), String> {
    let url = driver_url(url);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot build the probe runtime: {e}"))?;
        runtime.block_on(async {
            match tokio::time::timeout(timeout, probe_async(&url)).await {
                Ok(result) => result,
                Err(_) => Err(format!("no answer within {timeout:?}")),
            }
        })
    })
    .join()
    .unwrap_or_else(|_| Err("the probe thread panicked".to_owned()))
}

/// The async body of [`probe`].
async fn probe_async(url: &str) -> Result<(), String> {
    let mut conn = mysql_async::Conn::from_url(url)
        .await
        .map_err(|e| e.to_string())?;
    let name = format!("{DATABASE_PREFIX}probe_{}", super::backends::unique_hex());
    let result = conn
        .query_drop(format!("CREATE DATABASE `{name}`"))
        .await
        .map_err(|e| format!("connected, but the user may not create a database: {e}"));
    if result.is_ok() {
        conn.query_drop(format!("DROP DATABASE `{name}`"))
            .await
            .map_err(|e| format!("connected, but the user may not drop a database: {e}"))?;
    }
    let _ = conn.disconnect().await;
    result
}

/// Hides the password of a `mysql://user:password@host` URL.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    if let Some(at) = rest[..authority_end].rfind('@')
        && let Some(colon) = rest[..at].find(':')
    {
        return format!("{scheme}://{}:***{}", &rest[..colon], &rest[at..]);
    }
    url.to_owned()
}

/// Connects with plain `mysql_async` to `url` (either scheme), for assertions and admin work
/// from outside the middleware. Panics if the connection fails.
pub async fn raw_conn(url: &str) -> mysql_async::Conn {
    mysql_async::Conn::from_url(driver_url(url))
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", redact(url)))
}

/// An isolated database for one test: the crate's own `TestDatabase` (feature `testing`) on
/// the [`base_url`] server, with room in the connection bound for a test pool of four.
///
/// [`MyDatabase::url`] is the base URL with the database as its default, so unqualified table
/// names land in it. Call [`MyDatabase::drop_database`], or use [`with_database`], which always
/// does; one dropped without either is removed all the same.
pub struct MyDatabase {
    /// The base URL with [`MyDatabase::name`] as the database.
    pub url: String,
    /// The database name (needs no quoting).
    pub name: String,
    db: std::sync::Mutex<Option<sql_middleware::testing::TestDatabase>>,
}

impl MyDatabase {
    /// Creates a fresh, uniquely named database on the [`base_url`] server. Panics on failure.
    pub async fn create() -> MyDatabase {
        let db = sql_middleware::testing::TestDatabase::builder()
            .url(base_url())
            .connections(4)
            .build()
            .await
            .unwrap_or_else(|e| panic!("cannot create a test database: {e}"));
        MyDatabase {
            url: db.url().to_owned(),
            name: db.name().to_owned(),
            db: std::sync::Mutex::new(Some(db)),
        }
    }

    /// Drops the database (ending the sessions still in it first). Idempotent. Panics if the
    /// server cannot be reached or the drop fails.
    pub async fn drop_database(&self) {
        if let Err(e) = self.try_drop().await {
            panic!("cannot drop test database {}: {e}", self.name);
        }
    }

    /// Drops the database, reporting failures instead of panicking.
    async fn try_drop(&self) -> Result<(), String> {
        let db = self.db.lock().unwrap_or_else(|p| p.into_inner()).take();
        match db {
            Some(db) => db.close().await.map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }
}

/// Runs `body(url)` with a fresh [`MyDatabase`] and always drops the database afterwards,
/// even when the body panics: the panic is caught, the body's future is dropped (closing its
/// connections), the database is dropped, and then the panic is resumed.
pub async fn with_database<F, Fut>(body: F)
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = ()>,
{
    let database = MyDatabase::create().await;
    let url = database.url.clone();
    let outcome = super::unwind::run_catching(body, url).await;
    match outcome {
        Ok(()) => database.drop_database().await,
        Err(panic) => {
            if let Err(e) = database.try_drop().await {
                eprintln!(
                    "[mysql tests] cannot drop test database {} after a panic: {e}",
                    database.name
                );
            }
            resume_unwind(panic);
        }
    }
}

/// Whether the server behind `url` is MariaDB (`VERSION()` says so), as opposed to MySQL.
/// The two differ in documented ways (`JSON` is `LONGTEXT` on MariaDB, `RETURNING` exists
/// only there).
pub async fn is_mariadb(url: &str) -> bool {
    static MARIADB: tokio::sync::OnceCell<bool> = tokio::sync::OnceCell::const_new();
    *MARIADB
        .get_or_init(|| async {
            let mut conn = raw_conn(url).await;
            let version: Option<String> = conn
                .query_first("SELECT VERSION()")
                .await
                .unwrap_or_else(|e| panic!("SELECT VERSION(): {e}"));
            let _ = conn.disconnect().await;
            version.unwrap_or_default().contains("MariaDB")
        })
        .await
}

/// Starts another throwaway server, of its own, beside the one [`base_url`] found: for tests
/// that need servers nobody else uses (several of them, or sessions numbered from the start).
/// Returns its URL (`mysql://root@127.0.0.1:<port>/mysql`, root with an empty password), or
/// the reason it cannot (no server binaries). It is stopped and its files are removed when this
/// process exits.
pub fn start_private_server() -> Result<String, String> {
    try_start_throwaway_server()
}

/// Starts a throwaway server and returns its URL (`mysql://root@127.0.0.1:<port>/mysql`,
/// root with an empty password), or the reason it cannot.
#[cfg(not(unix))]
fn try_start_throwaway_server() -> Result<String, String> {
    Err("throwaway servers are only supported on unix".to_owned())
}

/// See [`server::start`].
#[cfg(unix)]
fn try_start_throwaway_server() -> Result<String, String> {
    server::start()
}

#[cfg(unix)]
#[allow(unused_imports)]
pub use server::install_data_dir;

/// Ports for the throwaway server, the same source as the rest of `common` uses (compiled a
/// second time here in the tests: the throughput example includes this file by path).
#[cfg(unix)]
#[path = "ports.rs"]
#[allow(clippy::duplicate_mod, dead_code)]
mod ports;

/// The unix-only machinery behind the throwaway server.
#[cfg(unix)]
mod server {
    use std::fs;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    use std::path::{Path, PathBuf};
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    /// How long the server may take to accept connections after being started.
    const START_TIMEOUT: Duration = Duration::from_secs(60);

    /// Shell script run by the watchdog (`$1` = pid to wait for, or `now`; `$2` = directory to
    /// remove, or empty; `$3` = the server's pid file). Once the test process has exited it
    /// stops the server (SIGTERM, then SIGKILL if it lingers) by the pid in the pid file, and
    /// only then removes the directory.
    const STOP_SCRIPT: &str = r#"
parent=$1; base=$2; pidfile=$3
alive() {
  kill -0 "$1" 2>/dev/null || return 1
  if [ -r "/proc/$1/stat" ]; then
    read -r _pid _comm state _rest < "/proc/$1/stat" || return 0
    [ "$state" != Z ] || return 1
  fi
  return 0
}
if [ "$parent" != now ]; then
  while alive "$parent"; do sleep 1; done
fi
pid=
if [ -f "$pidfile" ]; then read -r pid < "$pidfile"; fi
if [ -n "$pid" ] && alive "$pid"; then
  kill -TERM "$pid" 2>/dev/null
  i=0
  while alive "$pid" && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i+1)); done
  kill -KILL "$pid" 2>/dev/null
fi
if [ -n "$base" ]; then rm -rf "$base"; fi
"#;

    /// Whether `path` is an executable regular file.
    fn is_executable(path: &Path) -> bool {
        fs::metadata(path)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }

    /// The first of `names` found in `PATH` or the usual system directories.
    fn find_program(names: &[&str]) -> Option<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).collect())
            .unwrap_or_default();
        dirs.extend(["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map(PathBuf::from));
        names.iter().find_map(|name| {
            dirs.iter()
                .map(|dir| dir.join(name))
                .find(|p| is_executable(p))
        })
    }

    /// Uid and gid of a system user, from `/etc/passwd`.
    fn lookup_user(name: &str) -> Option<(u32, u32)> {
        let passwd = fs::read_to_string("/etc/passwd").ok()?;
        passwd.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            if fields.len() >= 4 && fields[0] == name {
                Some((fields[2].parse().ok()?, fields[3].parse().ok()?))
            } else {
                None
            }
        })
    }

    /// A TCP port on 127.0.0.1 for a server (see `ports.rs`).
    fn free_port() -> Result<u16, String> {
        super::ports::server_port()
    }

    /// The last lines of the server log, for error messages.
    fn log_tail(log: &Path) -> String {
        let text = fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let start = lines.len().saturating_sub(15);
        lines[start..].join("\n")
    }

    /// Runs [`STOP_SCRIPT`] in a new shell; `wait_for` is a pid or `now`.
    fn stop_script(wait_for: &str, base: &str, pidfile: &str) -> Command {
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(STOP_SCRIPT)
            .arg("sqlmw-mysql-watchdog")
            .arg(wait_for)
            .arg(base)
            .arg(pidfile)
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        command
    }

    /// Starts the throwaway server; see [`super::base_url`].
    pub(super) fn start() -> Result<String, String> {
        let install = find_program(&["mariadb-install-db", "mysql_install_db"])
            .ok_or("no mariadb-install-db or mysql_install_db in PATH, /usr/sbin or /usr/bin")?;
        let server = find_program(&["mariadbd", "mysqld"])
            .ok_or("no mariadbd or mysqld in PATH, /usr/sbin or /usr/bin")?;

        let base = std::env::temp_dir().join(format!(
            "sqlmw_mysql_{}_{}",
            std::process::id(),
            super::super::backends::unique_hex()
        ));
        let base_str = base
            .to_str()
            .ok_or("the temporary directory path is not UTF-8")?
            .to_owned();
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&base)
            .map_err(|e| format!("cannot create {base_str}: {e}"))?;
        let pidfile = format!("{base_str}/mysqld.pid");

        // The watchdog exists before the server does, so no exit path can leak a server.
        let parent = std::process::id().to_string();
        if let Err(e) = stop_script(&parent, &base_str, &pidfile).spawn() {
            let _ = fs::remove_dir_all(&base);
            return Err(format!("cannot spawn the watchdog shell /bin/sh: {e}"));
        }
        let result = install_and_start(&install, &server, &base, &pidfile);
        match &result {
            Ok(url) => eprintln!(
                "[mysql tests] started a throwaway server at {url} (data in {base_str}); \
                 it is removed when process {parent} exits"
            ),
            Err(_) => {
                let _ = stop_script("now", &base_str, &pidfile).status();
            }
        }
        result
    }

    /// Initialises the data directory, then starts the server, retrying with another port if
    /// the start fails.
    fn install_and_start(
        install: &Path,
        server: &Path,
        base: &Path,
        pidfile: &str,
    ) -> Result<String, String> {
        // As root, the server runs as an unprivileged user: it switches to `--user` itself,
        // and the directory must be that user's.
        let user = if fs::metadata(base).map(|m| m.uid()).unwrap_or(1) == 0 {
            let (name, uid, gid) = ["mysql", "nobody"]
                .into_iter()
                .find_map(|n| lookup_user(n).map(|(u, g)| (n.to_owned(), u, g)))
                .ok_or("running as root, but neither a `mysql` nor a `nobody` user exists")?;
            std::os::unix::fs::chown(base, Some(uid), Some(gid))
                .map_err(|e| format!("cannot chown {} to {name}: {e}", base.display()))?;
            Some(name)
        } else {
            None
        };
        let data = base.join("data");
        install_data_dir(install, &data, user.as_deref(), base)?;

        let mut last_error = String::new();
        for _ in 0..3 {
            let port = free_port()?;
            match start_server(server, base, &data, pidfile, port, user.as_deref()) {
                Ok(url) => return Ok(url),
                Err(e) => {
                    last_error = e;
                    let _ = super::server::stop_script("now", "", pidfile).status();
                }
            }
        }
        Err(last_error)
    }

    /// Runs `install` (`mariadb-install-db`) for the data directory `data` (as `user`, from
    /// `cwd`). Under load the installation of the system tables now and then fails: it is run
    /// again on an empty directory, three times at most.
    pub fn install_data_dir(
        install: &Path,
        data: &Path,
        user: Option<&str>,
        cwd: &Path,
    ) -> Result<(), String> {
        let mut last = String::new();
        for _ in 0..3 {
            let _ = fs::remove_dir_all(data);
            let mut cmd = Command::new(install);
            cmd.arg("--no-defaults")
                .arg(format!("--datadir={}", data.display()))
                .arg("--auth-root-authentication-method=normal")
                .arg("--skip-test-db")
                .arg("--skip-name-resolve");
            if let Some(user) = user {
                cmd.arg(format!("--user={user}"));
            }
            let out = cmd
                .current_dir(cwd)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("cannot run {}: {e}", install.display()))?;
            if out.status.success() {
                return Ok(());
            }
            last = format!(
                "{} failed ({}): {}{}",
                install.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout).trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Err(last)
    }

    /// Starts the server on `port` and waits until it accepts connections.
    fn start_server(
        server: &Path,
        base: &Path,
        data: &Path,
        pidfile: &str,
        port: u16,
        user: Option<&str>,
    ) -> Result<String, String> {
        let log = base.join("server.log");
        let log_file =
            fs::File::create(&log).map_err(|e| format!("cannot create {}: {e}", log.display()))?;
        let log_err = log_file
            .try_clone()
            .map_err(|e| format!("cannot clone the log file handle: {e}"))?;
        let mut cmd = Command::new(server);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", data.display()))
            .arg(format!("--socket={}/mysqld.sock", base.display()))
            .arg(format!("--pid-file={pidfile}"))
            .arg(format!("--port={port}"))
            .arg("--bind-address=127.0.0.1")
            .arg("--skip-name-resolve")
            .arg("--skip-log-bin")
            .arg("--character-set-server=utf8mb4")
            .arg("--collation-server=utf8mb4_bin")
            .arg("--max-connections=500")
            .arg("--max-allowed-packet=64M")
            // A test server: durability is not what is being tested.
            .arg("--innodb-flush-log-at-trx-commit=0")
            .arg("--innodb-doublewrite=0")
            .arg("--innodb-buffer-pool-size=128M")
            .arg("--innodb-log-file-size=64M");
        if let Some(user) = user {
            cmd.arg(format!("--user={user}"));
        }
        let mut child = cmd
            .current_dir(base)
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(log_err)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", server.display()))?;
        let url = format!("mysql://root@127.0.0.1:{port}/mysql");
        wait_ready(&url, &mut child, server, &log)?;
        Ok(url)
    }

    /// Polls `url` until it accepts connections, the deadline passes, or the server exits.
    fn wait_ready(url: &str, child: &mut Child, server: &Path, log: &Path) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!(
                    "{} exited ({status}); server log:\n{}",
                    server.display(),
                    log_tail(log)
                ));
            }
            let err = match super::probe(url, super::PROBE_TIMEOUT) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if Instant::now() > deadline {
                return Err(format!(
                    "server did not accept connections within {START_TIMEOUT:?}: {err}\n\
                     server log:\n{}",
                    log_tail(log)
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}
