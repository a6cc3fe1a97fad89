//! Throwaway PostgreSQL clusters for the tests: one started with the local `initdb` and
//! `pg_ctl` (the last resort of [`super::base_url`]), one a test may restart, one with files,
//! settings and a `pg_hba.conf` of its own (the TLS cluster is one), a primary with a streaming
//! hot standby, and a private directory for server programs a test runs itself (the HA
//! engine's). Each lives in a temporary directory of its own and is stopped and removed when
//! the test process exits.

/// Starts a throwaway PostgreSQL cluster and returns its URL
/// (`postgres://postgres@127.0.0.1:<port>/postgres`, trust auth), or `None` (with the reason
/// printed to stderr) if that is impossible.
///
/// The cluster lives in a fresh temporary directory and listens only on a unix socket in that
/// directory and on 127.0.0.1 with a free port. When running as root it runs as the `postgres`
/// system user (or `nobody`) through `runuser` (or `su`), because `initdb` and `postgres` refuse
/// to run as root. A watchdog shell waits for this process to exit, then stops the server
/// (`pg_ctl -m immediate stop`, then SIGQUIT/SIGKILL to the postmaster) and removes the
/// directory. Every call starts a new cluster; [`super::base_url`] calls it at most once per
/// process.
pub fn start_throwaway_cluster() -> Option<String> {
    match try_start_throwaway_cluster() {
        Ok(url) => Some(url),
        Err(e) => {
            eprintln!("[pg tests] cannot start a throwaway PostgreSQL cluster: {e}");
            None
        }
    }
}

/// A throwaway cluster that a test may restart (see [`start_restartable_cluster`]).
#[derive(Debug)]
pub struct Throwaway {
    /// `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub url: String,
    restart: Vec<String>,
}

impl Throwaway {
    /// Restarts the server (`pg_ctl restart -m fast -w`: clients are disconnected, open
    /// transactions rolled back, a checkpoint written) and returns once it accepts connections.
    pub fn restart(&self) -> Result<(), String> {
        if self.restart.is_empty() {
            return Err("no pg_ctl: this cluster cannot be restarted".to_owned());
        }
        #[cfg(unix)]
        {
            unix::run(&self.restart)
        }
        #[cfg(not(unix))]
        {
            Err("throwaway clusters are only supported on unix".to_owned())
        }
    }
}

/// Starts a throwaway cluster (as [`start_throwaway_cluster`]) that the test may restart. It
/// needs the PostgreSQL server binaries; the error says what is missing.
pub fn start_restartable_cluster() -> Result<Throwaway, String> {
    #[cfg(unix)]
    {
        unix::start_restartable()
    }
    #[cfg(not(unix))]
    {
        Err("throwaway clusters are only supported on unix".to_owned())
    }
}

/// A throwaway primary and its streaming hot standby (see [`start_primary_and_standby`]).
#[derive(Debug)]
pub struct Pair {
    /// The primary: `postgres://postgres@127.0.0.1:<port>/postgres`.
    pub primary: String,
    /// The standby (`pg_is_in_recovery()` is true there), on another port.
    pub standby: String,
    start_standby: Vec<String>,
    stop_standby: Vec<String>,
}

/// Starts a primary and a hot standby that streams from it (`pg_basebackup -R`), both
/// throwaway clusters on loopback ports, removed when this process exits. It needs the
/// PostgreSQL server binaries (`initdb`, `pg_ctl`, `pg_basebackup`); the error says what is
/// missing.
pub fn start_primary_and_standby() -> Result<Pair, String> {
    #[cfg(unix)]
    {
        unix::start_pair()
    }
    #[cfg(not(unix))]
    {
        Err("throwaway clusters are only supported on unix".to_owned())
    }
}

/// What a throwaway cluster gets beyond `initdb`'s defaults (see [`start_cluster_with`]).
#[derive(Debug, Default, Clone)]
pub struct ClusterSetup {
    /// Files written into the data directory, mode 0600 and owned by the server's user (as
    /// the server demands of a private key).
    pub files: Vec<(String, Vec<u8>)>,
    /// Extra `key=value` server settings.
    pub settings: Vec<(String, String)>,
    /// A `pg_hba.conf` replacing initdb's. It must keep a `local` line: the cluster is
    /// probed, and administered, through its unix socket.
    pub hba: Option<String>,
}

/// A throwaway cluster started by [`start_cluster_with`].
#[derive(Debug, Clone)]
pub struct Cluster {
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
    /// `postgres://postgres@<socket dir>:<port>/postgres`: the unix socket, which TLS never
    /// applies to.
    pub socket_url: String,
    /// The cluster's own temporary directory, removed (with everything put in it) when the
    /// process exits.
    pub dir: std::path::PathBuf,
}

/// Starts a throwaway cluster (as [`start_throwaway_cluster`]) with the files, settings and
/// `pg_hba.conf` of `setup`. The error says what is missing.
pub fn start_cluster_with(setup: &ClusterSetup) -> Result<Cluster, String> {
    #[cfg(unix)]
    {
        unix::start_with(setup)
    }
    #[cfg(not(unix))]
    {
        let _ = setup;
        Err("throwaway clusters are only supported on unix".to_owned())
    }
}

/// A private temporary directory for server programs a test runs itself (the HA engine's),
/// handed to an unprivileged user when the tests run as root (as the throwaway clusters'),
/// and the directory of the PostgreSQL server programs. Removing it is the caller's job.
#[cfg(unix)]
pub struct ServerDir {
    /// The directory.
    pub dir: std::path::PathBuf,
    /// Where `initdb` and `pg_ctl` are.
    pub bin_dir: std::path::PathBuf,
    run_as: unix::RunAs,
}

#[cfg(unix)]
impl ServerDir {
    /// The argument vector that runs `program args...` as the directory's user.
    pub fn argv(&self, program: &str, args: &[&str]) -> Vec<String> {
        self.run_as.argv(std::path::Path::new(program), args)
    }
}

/// See [`ServerDir`]; the error says what is missing.
#[cfg(unix)]
pub fn server_dir(prefix: &str) -> Result<ServerDir, String> {
    unix::server_dir(prefix)
}

/// [`start_throwaway_cluster`] is only implemented on unix.
#[cfg(not(unix))]
pub(super) fn try_start_throwaway_cluster() -> Result<String, String> {
    Err("throwaway clusters are only supported on unix".to_owned())
}

/// [`start_throwaway_cluster`], reporting why it failed.
#[cfg(unix)]
pub(super) fn try_start_throwaway_cluster() -> Result<String, String> {
    unix::start()
}

/// The unix-only machinery behind [`start_throwaway_cluster`].
#[cfg(unix)]
mod unix {
    use std::fs;
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    use std::os::unix::process::CommandExt;
    use std::path::{Path, PathBuf};
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};

    /// How long the server may take to accept connections after being started.
    const START_TIMEOUT: Duration = Duration::from_secs(60);

    /// Shell script run by the watchdog (`$1` = pid to wait for, or `now`; `$2` = directory to
    /// remove, or empty; `$3` = data directory; the rest = optional stop command).
    const STOP_SCRIPT: &str = r#"
parent=$1; base=$2; data=$3; shift 3
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
if [ -f "$data/postmaster.pid" ]; then read -r pid < "$data/postmaster.pid"; fi
if [ -n "$pid" ] && alive "$pid"; then
  if [ $# -gt 0 ]; then "$@" >/dev/null 2>&1; fi
  kill -QUIT "$pid" 2>/dev/null
  i=0
  while alive "$pid" && [ "$i" -lt 100 ]; do sleep 0.1; i=$((i+1)); done
  kill -KILL "$pid" 2>/dev/null
fi
if [ -n "$base" ]; then rm -rf "$base"; fi
"#;

    /// The server programs to use, all from one directory.
    struct PgBins {
        initdb: PathBuf,
        pg_ctl: Option<PathBuf>,
        postgres: Option<PathBuf>,
    }

    /// Who runs the server programs.
    pub(super) enum RunAs {
        /// The current (non-root) user.
        Current,
        /// Another user, through `runuser -u NAME --`.
        Runuser { runuser: PathBuf, user: String },
        /// Another user, through `su -s /bin/sh -c CMD NAME`.
        Su { su: PathBuf, user: String },
    }

    impl RunAs {
        /// The argument vector that runs `program args...` as this user.
        pub(super) fn argv(&self, program: &Path, args: &[&str]) -> Vec<String> {
            let program = program.to_string_lossy().into_owned();
            let mut argv = Vec::new();
            match self {
                RunAs::Current => {
                    argv.push(program);
                    argv.extend(args.iter().map(|a| (*a).to_owned()));
                }
                RunAs::Runuser { runuser, user } => {
                    argv.push(runuser.to_string_lossy().into_owned());
                    argv.extend(["-u".to_owned(), user.clone(), "--".to_owned(), program]);
                    argv.extend(args.iter().map(|a| (*a).to_owned()));
                }
                RunAs::Su { su, user } => {
                    let mut line = shell_quote(&program);
                    for arg in args {
                        line.push(' ');
                        line.push_str(&shell_quote(arg));
                    }
                    argv.push(su.to_string_lossy().into_owned());
                    argv.extend([
                        "-s".to_owned(),
                        "/bin/sh".to_owned(),
                        "-c".to_owned(),
                        line,
                        user.clone(),
                    ]);
                }
            }
            argv
        }

        /// A `Command` that runs `program args...` as this user.
        fn command(&self, program: &Path, args: &[&str]) -> Command {
            let argv = self.argv(program, args);
            let mut command = Command::new(&argv[0]);
            command.args(&argv[1..]);
            command
        }
    }

    /// Single-quotes `s` for `/bin/sh`.
    fn shell_quote(s: &str) -> String {
        format!("'{}'", s.replace('\'', r"'\''"))
    }

    /// Whether `path` is an executable regular file.
    fn is_executable(path: &Path) -> bool {
        fs::metadata(path)
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }

    /// `/usr/lib/postgresql/<version>/bin`, newest version first.
    fn versioned_bin_dirs() -> Vec<PathBuf> {
        let mut versions: Vec<(Vec<u32>, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
            .map(|entries| {
                entries
                    .filter_map(Result::ok)
                    .filter_map(|entry| {
                        let name = entry.file_name().to_string_lossy().into_owned();
                        let version: Option<Vec<u32>> =
                            name.split('.').map(|part| part.parse().ok()).collect();
                        version.map(|v| (v, entry.path().join("bin")))
                    })
                    .collect()
            })
            .unwrap_or_default();
        versions.sort_by(|a, b| b.0.cmp(&a.0));
        versions.into_iter().map(|(_, dir)| dir).collect()
    }

    /// The first directory (`PATH`, then `/usr/lib/postgresql/*/bin`) holding `initdb` and
    /// `pg_ctl` or `postgres`.
    fn find_pg_bins() -> Option<PgBins> {
        let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).collect())
            .unwrap_or_default();
        dirs.extend(versioned_bin_dirs());
        dirs.into_iter().find_map(|dir| {
            let initdb = dir.join("initdb");
            if !is_executable(&initdb) {
                return None;
            }
            let pg_ctl = Some(dir.join("pg_ctl")).filter(|p| is_executable(p));
            let postgres = Some(dir.join("postgres")).filter(|p| is_executable(p));
            (pg_ctl.is_some() || postgres.is_some()).then_some(PgBins {
                initdb,
                pg_ctl,
                postgres,
            })
        })
    }

    /// Finds an executable by name in `PATH` and the usual system directories.
    fn find_program(name: &str) -> Option<PathBuf> {
        let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
            .map(|path| std::env::split_paths(&path).collect())
            .unwrap_or_default();
        dirs.extend(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from));
        dirs.into_iter()
            .map(|dir| dir.join(name))
            .find(|p| is_executable(p))
    }

    /// Uid and gid of a system user, from `/etc/passwd` or else `id`.
    fn lookup_user(name: &str) -> Option<(u32, u32)> {
        if let Ok(passwd) = fs::read_to_string("/etc/passwd") {
            for line in passwd.lines() {
                let fields: Vec<&str> = line.split(':').collect();
                if fields.len() >= 4
                    && fields[0] == name
                    && let (Ok(uid), Ok(gid)) = (fields[2].parse(), fields[3].parse())
                {
                    return Some((uid, gid));
                }
            }
        }
        let id = |flag: &str| -> Option<u32> {
            let out = Command::new("id").arg(flag).arg(name).output().ok()?;
            if !out.status.success() {
                return None;
            }
            String::from_utf8_lossy(&out.stdout).trim().parse().ok()
        };
        Some((id("-u")?, id("-g")?))
    }

    /// Decides who runs the server; when we are root, hands `base` to an unprivileged user.
    fn run_as_for(base: &Path) -> Result<RunAs, String> {
        let meta =
            fs::metadata(base).map_err(|e| format!("cannot stat {}: {e}", base.display()))?;
        if meta.uid() != 0 {
            return Ok(RunAs::Current);
        }
        let (user, uid, gid) = ["postgres", "nobody"]
            .into_iter()
            .find_map(|name| lookup_user(name).map(|(uid, gid)| (name.to_owned(), uid, gid)))
            .ok_or("running as root, but neither a `postgres` nor a `nobody` user exists")?;
        std::os::unix::fs::chown(base, Some(uid), Some(gid))
            .map_err(|e| format!("cannot chown {} to {user}: {e}", base.display()))?;
        if let Some(runuser) = find_program("runuser") {
            Ok(RunAs::Runuser { runuser, user })
        } else if let Some(su) = find_program("su") {
            Ok(RunAs::Su { su, user })
        } else {
            Err("running as root, but neither `runuser` nor `su` was found".to_owned())
        }
    }

    /// Runs [`STOP_SCRIPT`] in a new shell; `wait_for` is a pid or `now`.
    fn stop_script(wait_for: &str, base: &str, data: &str, stop_cmd: &[String]) -> Command {
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(STOP_SCRIPT)
            .arg("sqlmw-pg-watchdog")
            .arg(wait_for)
            .arg(base)
            .arg(data)
            .args(stop_cmd)
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0);
        command
    }

    /// Stops the server in `data` (if running) right now, and removes `base` if non-empty.
    fn stop_now(base: &str, data: &str, stop_cmd: &[String]) {
        let _ = stop_script("now", base, data, stop_cmd).status();
    }

    /// The last lines of the server log, for error messages.
    fn log_tail(log: &str) -> String {
        let text = fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        let start = lines.len().saturating_sub(15);
        lines[start..].join("\n")
    }

    /// A TCP port on 127.0.0.1 for a server (see `ports.rs`).
    fn free_port() -> Result<u16, String> {
        super::super::ports::server_port()
    }

    /// Polls `url` until it accepts connections, the deadline passes, or `exited` reports that
    /// the server died.
    fn wait_ready(url: &str, mut exited: impl FnMut() -> Option<String>) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(why) = exited() {
                return Err(why);
            }
            let err = match super::super::probe(url, super::super::PROBE_TIMEOUT) {
                Ok(()) => return Ok(()),
                Err(e) => e,
            };
            if Instant::now() > deadline {
                return Err(format!(
                    "server did not accept connections within {START_TIMEOUT:?}: {err}"
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// See [`super::start_throwaway_cluster`].
    pub(super) fn start() -> Result<String, String> {
        start_with_restart(&super::ClusterSetup::default()).map(|(url, _, _)| url)
    }

    /// See [`super::start_cluster_with`].
    pub(super) fn start_with(setup: &super::ClusterSetup) -> Result<super::Cluster, String> {
        let (url, _, dir) = start_with_restart(setup)?;
        let port: u16 = url
            .rsplit(':')
            .next()
            .and_then(|tail| tail.split('/').next())
            .and_then(|p| p.parse().ok())
            .ok_or_else(|| format!("no port in {url}"))?;
        let socket_url = socket_url(&dir, port)?;
        Ok(super::Cluster {
            port,
            socket_url,
            dir: PathBuf::from(dir),
        })
    }

    /// The URL of the cluster's unix socket in `dir`.
    fn socket_url(dir: &str, port: u16) -> Result<String, String> {
        Ok(format!(
            "postgres://postgres@{}:{port}/postgres",
            super::super::percent_encode(dir)
        ))
    }

    /// Writes `setup`'s files and `pg_hba.conf` into `data`, owned by the server's user.
    fn apply(setup: &super::ClusterSetup, run_as: &RunAs, data: &str) -> Result<(), String> {
        let owner = match run_as {
            RunAs::Current => None,
            RunAs::Runuser { user, .. } | RunAs::Su { user, .. } => {
                Some(lookup_user(user).ok_or_else(|| format!("no user {user}"))?)
            }
        };
        let hba = setup
            .hba
            .as_ref()
            .map(|h| ("pg_hba.conf".to_owned(), h.clone().into_bytes()));
        for (name, bytes) in setup.files.iter().cloned().chain(hba) {
            let path = Path::new(data).join(&name);
            fs::write(&path, &bytes)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            fs::set_permissions(&path, fs::Permissions::from_mode(0o600))
                .map_err(|e| format!("cannot chmod {}: {e}", path.display()))?;
            if let Some((uid, gid)) = owner {
                std::os::unix::fs::chown(&path, Some(uid), Some(gid))
                    .map_err(|e| format!("cannot chown {}: {e}", path.display()))?;
            }
        }
        Ok(())
    }

    /// See [`super::start_restartable_cluster`].
    pub(super) fn start_restartable() -> Result<super::Throwaway, String> {
        let (url, restart, _) = start_with_restart(&super::ClusterSetup::default())?;
        if restart.is_empty() {
            return Err("no pg_ctl next to initdb: the cluster cannot be restarted".to_owned());
        }
        Ok(super::Throwaway { url, restart })
    }

    /// See [`super::server_dir`].
    pub(super) fn server_dir(prefix: &str) -> Result<super::ServerDir, String> {
        let bins = find_pg_bins().ok_or(
            "no PostgreSQL server binaries (initdb plus pg_ctl) in PATH or /usr/lib/postgresql/*/bin",
        )?;
        let bin_dir = fs::canonicalize(&bins.initdb)
            .unwrap_or_else(|_| bins.initdb.clone())
            .parent()
            .map(Path::to_path_buf)
            .ok_or("initdb has no directory")?;
        let (dir, _, run_as) = private_dir(prefix)?;
        Ok(super::ServerDir {
            dir,
            bin_dir,
            run_as,
        })
    }

    /// A new private (0700) temporary directory `<prefix>_<pid>_<random>` for a cluster, and
    /// who runs the server in it (handed to an unprivileged user when we are root).
    fn private_dir(prefix: &str) -> Result<(PathBuf, String, RunAs), String> {
        let base = std::env::temp_dir().join(format!(
            "{prefix}_{}_{}",
            std::process::id(),
            super::super::random_hex()
        ));
        let base_str = base
            .to_str()
            .ok_or("the temporary directory path is not UTF-8")?
            .to_owned();
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&base)
            .map_err(|e| format!("cannot create {base_str}: {e}"))?;
        match run_as_for(&base) {
            Ok(run_as) => Ok((base, base_str, run_as)),
            Err(e) => {
                let _ = fs::remove_dir_all(&base);
                Err(e)
            }
        }
    }

    /// Starts a cluster; returns its URL, the command that restarts it (empty without
    /// `pg_ctl`) and its directory.
    fn start_with_restart(
        setup: &super::ClusterSetup,
    ) -> Result<(String, Vec<String>, String), String> {
        let bins = find_pg_bins().ok_or(
            "no PostgreSQL server binaries (initdb plus pg_ctl or postgres) in PATH or \
             /usr/lib/postgresql/*/bin",
        )?;
        let (base, base_str, run_as) = private_dir("sqlmw_pg")?;
        let data = format!("{base_str}/data");
        let stop_cmd = bins
            .pg_ctl
            .as_ref()
            .map(|pg_ctl| run_as.argv(pg_ctl, &["-D", &data, "-m", "immediate", "-w", "stop"]))
            .unwrap_or_default();

        // The watchdog exists before the server does, so no exit path can leak a server.
        let parent = std::process::id().to_string();
        if let Err(e) = stop_script(&parent, &base_str, &data, &stop_cmd).spawn() {
            let _ = fs::remove_dir_all(&base);
            return Err(format!("cannot spawn the watchdog shell /bin/sh: {e}"));
        }

        // The log must be a file: a restarted server would otherwise keep pg_ctl's output open.
        let log = format!("{base_str}/server.log");
        let restart = bins
            .pg_ctl
            .as_ref()
            .map(|pg_ctl| {
                run_as.argv(
                    pg_ctl,
                    &[
                        "-D", &data, "-l", &log, "-m", "fast", "-w", "-t", "60", "restart",
                    ],
                )
            })
            .unwrap_or_default();
        let result = init_and_start(&bins, &run_as, &base_str, &data, &stop_cmd, setup);
        match &result {
            Ok(url) => eprintln!(
                "[pg tests] started a throwaway PostgreSQL cluster at {url} (data in {base_str}); \
                 it is removed when process {parent} exits"
            ),
            Err(_) => stop_now(&base_str, &data, &stop_cmd),
        }
        result.map(|url| (url, restart, base_str))
    }

    /// Runs `initdb`, then starts the server, retrying with another port if the start fails.
    fn init_and_start(
        bins: &PgBins,
        run_as: &RunAs,
        base: &str,
        data: &str,
        stop_cmd: &[String],
        setup: &super::ClusterSetup,
    ) -> Result<String, String> {
        let out = run_as
            .command(
                &bins.initdb,
                &[
                    "-D",
                    data,
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "-E",
                    "UTF8",
                    "--locale=C",
                    "--no-sync",
                ],
            )
            .current_dir(base)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", bins.initdb.display()))?;
        if !out.status.success() {
            return Err(format!(
                "{} failed ({}): {}",
                bins.initdb.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        apply(setup, run_as, data)?;

        let mut last_error = String::new();
        for _ in 0..3 {
            let port = free_port()?;
            match start_server(bins, run_as, base, data, port, setup) {
                Ok(url) => return Ok(url),
                Err(e) => {
                    last_error = e;
                    stop_now("", data, stop_cmd);
                }
            }
        }
        Err(last_error)
    }

    /// Starts the server on `port` and waits until it accepts connections.
    fn start_server(
        bins: &PgBins,
        run_as: &RunAs,
        base: &str,
        data: &str,
        port: u16,
        setup: &super::ClusterSetup,
    ) -> Result<String, String> {
        let url = format!("postgres://postgres@127.0.0.1:{port}/postgres");
        // A custom pg_hba.conf may refuse plain TCP: readiness is probed on the socket then.
        let probe_url = if setup.hba.is_some() {
            socket_url(base, port)?
        } else {
            url.clone()
        };
        let log = format!("{base}/server.log");
        let port = port.to_string();
        let mut settings = vec![
            ("listen_addresses", "127.0.0.1"),
            ("port", port.as_str()),
            ("unix_socket_directories", base),
            ("fsync", "off"),
            ("synchronous_commit", "off"),
            ("full_page_writes", "off"),
            ("max_connections", "200"),
        ];
        settings.extend(setup.settings.iter().map(|(k, v)| (k.as_str(), v.as_str())));

        if let Some(pg_ctl) = &bins.pg_ctl {
            // pg_ctl hands -o to /bin/sh, hence the quoting.
            let options = settings
                .iter()
                .map(|(key, value)| format!("-c {}", shell_quote(&format!("{key}={value}"))))
                .collect::<Vec<_>>()
                .join(" ");
            let out = run_as
                .command(
                    pg_ctl,
                    &[
                        "-D", data, "-l", &log, "-w", "-t", "60", "-o", &options, "start",
                    ],
                )
                .current_dir(base)
                .stdin(Stdio::null())
                .process_group(0)
                .output()
                .map_err(|e| format!("cannot run {}: {e}", pg_ctl.display()))?;
            if !out.status.success() {
                return Err(format!(
                    "{} start failed ({}): {}\nserver log:\n{}",
                    pg_ctl.display(),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim(),
                    log_tail(&log)
                ));
            }
            wait_ready(&probe_url, || None)?;
        } else if let Some(postgres) = &bins.postgres {
            let log_file =
                fs::File::create(&log).map_err(|e| format!("cannot create {log}: {e}"))?;
            let log_err = log_file
                .try_clone()
                .map_err(|e| format!("cannot clone the log file handle: {e}"))?;
            let mut args = vec!["-D".to_owned(), data.to_owned()];
            for (key, value) in &settings {
                args.push("-c".to_owned());
                args.push(format!("{key}={value}"));
            }
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let mut child = run_as
                .command(postgres, &args)
                .current_dir(base)
                .stdin(Stdio::null())
                .stdout(log_file)
                .stderr(log_err)
                .process_group(0)
                .spawn()
                .map_err(|e| format!("cannot run {}: {e}", postgres.display()))?;
            wait_ready(&probe_url, || match child.try_wait() {
                Ok(Some(status)) => Some(format!(
                    "{} exited ({status}); server log:\n{}",
                    postgres.display(),
                    log_tail(&log)
                )),
                _ => None,
            })?;
        }
        Ok(url)
    }

    /// The pair's watchdog (`$1` = pid to wait for, `$2` = directory to remove, the rest =
    /// data directories): once the test process exits, every server is shut down (SIGQUIT, an
    /// immediate shutdown; SIGKILL if it lingers) and only then is the directory removed.
    const PAIR_STOP_SCRIPT: &str = r#"
parent=$1; base=$2; shift 2
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
for d in "$@"; do
  pid=
  if [ -f "$d/postmaster.pid" ]; then read -r pid < "$d/postmaster.pid"; fi
  if [ -n "$pid" ]; then kill -QUIT "$pid" 2>/dev/null; fi
done
sleep 2
for d in "$@"; do
  pid=
  if [ -f "$d/postmaster.pid" ]; then read -r pid < "$d/postmaster.pid"; fi
  if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null; fi
done
rm -rf "$base"
"#;

    /// See [`super::start_primary_and_standby`].
    pub(super) fn start_pair() -> Result<super::Pair, String> {
        let bins = find_pg_bins().ok_or(
            "no PostgreSQL server binaries (initdb plus pg_ctl) in PATH or \
             /usr/lib/postgresql/*/bin",
        )?;
        let pg_ctl = bins
            .pg_ctl
            .clone()
            .ok_or("no pg_ctl next to initdb: a standby is started with it")?;
        // Next to the real initdb (PATH may hold a symlink to it).
        let basebackup = fs::canonicalize(&bins.initdb)
            .unwrap_or_else(|_| bins.initdb.clone())
            .with_file_name("pg_basebackup");
        if !is_executable(&basebackup) {
            return Err(format!("no {} next to initdb", basebackup.display()));
        }
        let (base, base_str, run_as) = private_dir("sqlmw_pgpair")?;
        let primary_data = format!("{base_str}/primary");
        let standby_data = format!("{base_str}/standby");
        let parent = std::process::id().to_string();
        Command::new("/bin/sh")
            .arg("-c")
            .arg(PAIR_STOP_SCRIPT)
            .arg("sqlmw-pg-pair-watchdog")
            .args([&parent, &base_str, &standby_data, &primary_data])
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot spawn the watchdog shell /bin/sh: {e}"))?;

        let stop_primary = run_as.argv(
            &pg_ctl,
            &["-D", &primary_data, "-m", "immediate", "-w", "stop"],
        );
        let primary = init_and_start(
            &bins,
            &run_as,
            &base_str,
            &primary_data,
            &stop_primary,
            &super::ClusterSetup::default(),
        )?;
        let primary_port = primary
            .rsplit(':')
            .next()
            .and_then(|tail| tail.split('/').next())
            .ok_or("no port in the primary's URL")?
            .to_owned();

        // The standby: a base backup that streams WAL and starts in recovery (`-R` writes
        // standby.signal and primary_conninfo).
        let out = run_as
            .command(
                &basebackup,
                &[
                    "-D",
                    &standby_data,
                    "-R",
                    "-X",
                    "stream",
                    "-c",
                    "fast",
                    "--no-sync",
                    "-h",
                    "127.0.0.1",
                    "-p",
                    &primary_port,
                    "-U",
                    "postgres",
                ],
            )
            .current_dir(&base)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run {}: {e}", basebackup.display()))?;
        if !out.status.success() {
            return Err(format!(
                "pg_basebackup failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let port = free_port()?;
        let settings = format!(
            "\nport = {port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = '{base_str}'\n\
             fsync = off\nmax_connections = 200\nhot_standby = on\nwal_receiver_status_interval = 1s\n"
        );
        let conf = format!("{standby_data}/postgresql.conf");
        fs::OpenOptions::new()
            .append(true)
            .open(&conf)
            .and_then(|mut f| std::io::Write::write_all(&mut f, settings.as_bytes()))
            .map_err(|e| format!("cannot write {conf}: {e}"))?;
        let log = format!("{base_str}/standby.log");
        let start_standby = run_as.argv(
            &pg_ctl,
            &["-D", &standby_data, "-l", &log, "-w", "-t", "60", "start"],
        );
        let stop_standby = run_as.argv(&pg_ctl, &["-D", &standby_data, "-m", "fast", "-w", "stop"]);
        let pair = super::Pair {
            primary,
            standby: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            start_standby,
            stop_standby,
        };
        pair.start_standby()?;
        eprintln!(
            "[pg tests] started a throwaway primary at {} and its standby at {} (data in {base_str}); \
             they are removed when process {parent} exits",
            pair.primary, pair.standby
        );
        Ok(pair)
    }

    /// Runs `argv`; its error output on failure.
    pub(super) fn run(argv: &[String]) -> Result<(), String> {
        let (program, args) = argv.split_first().ok_or("empty command")?;
        let out = Command::new(program)
            .args(args)
            .current_dir("/")
            .stdin(Stdio::null())
            .process_group(0)
            .output()
            .map_err(|e| format!("cannot run {program}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{program} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    impl super::Pair {
        /// Starts the standby and waits until it accepts connections.
        pub fn start_standby(&self) -> Result<(), String> {
            run(&self.start_standby)?;
            wait_ready(&self.standby, || None)
        }

        /// Stops the standby (`pg_ctl stop -m fast`): its clients are disconnected.
        pub fn stop_standby(&self) -> Result<(), String> {
            run(&self.stop_standby)
        }
    }
}
