//! A pg_auto_failover formation for the HA tests: a monitor and two Postgres nodes on loopback
//! ports in a private temporary directory (handed to an unprivileged user when the tests run
//! as root, as the throwaway clusters are), with synchronous replication (the engine's default
//! with one standby) and the monitor's health checks shortened so a failover takes seconds.
//! Each node's process tree (`pg_autoctl` and its Postgres) runs in a process group of its
//! own, so a test can freeze or kill a whole node; a watchdog per group kills it when the test
//! process exits, and dropping the formation kills everything and removes the directory.
//!
//! It needs `pg_autoctl` (Debian: `apt-get install postgresql-15-auto-failover`; `.ci/run`
//! installs it) and the PostgreSQL server programs.
#![cfg(unix)]

use std::fs;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::cluster;

/// The monitor's settings: health checks every 500 ms, a node unhealthy after 2 s.
const MONITOR_SETTINGS: &str = "\n# shortened by the HA tests\n\
pgautofailover.health_check_period = 500\n\
pgautofailover.health_check_timeout = 500\n\
pgautofailover.health_check_max_retries = 1\n\
pgautofailover.health_check_retry_delay = 250\n\
pgautofailover.node_considered_unhealthy_timeout = 2000\n\
pgautofailover.startup_grace_period = 2000\n\
pgautofailover.primary_demote_timeout = 5000\n";

/// Kills a process group once the test process is gone (`$1` parent pid, `$2` group), then
/// removes `$3` when given (the formation's directory, with the monitor's watchdog).
const WATCHDOG: &str = r#"
while kill -0 "$1" 2>/dev/null; do sleep 1; done
kill -CONT "-$2" 2>/dev/null
kill -KILL "-$2" 2>/dev/null
if [ -n "$3" ]; then sleep 2; rm -rf "$3"; fi
"#;

/// One Postgres node of the formation.
#[derive(Debug)]
pub struct Node {
    /// `node1`, `node2`.
    pub name: String,
    /// Its port on 127.0.0.1.
    pub port: u16,
    /// Its data directory.
    pub pgdata: String,
    /// The process group of its `pg_autoctl` and Postgres.
    pgid: i32,
}

/// A running formation (see the module's documentation).
pub struct Formation {
    dir: cluster::ServerDir,
    autoctl: String,
    monitor_pgdata: String,
    /// The monitor's port.
    pub monitor_port: u16,
    /// The two nodes; `nodes[0]` is the first primary.
    pub nodes: Vec<Node>,
    children: Vec<Child>,
    groups: Vec<i32>,
}

fn free_port() -> Result<u16, String> {
    super::ports::server_port()
}

fn find_autoctl(bin_dir: &std::path::Path) -> Option<String> {
    let mut dirs: Vec<std::path::PathBuf> = vec![bin_dir.to_path_buf()];
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs.extend(["/usr/bin".into(), "/usr/local/bin".into()]);
    dirs.into_iter()
        .map(|d| d.join("pg_autoctl"))
        .find(|p| p.is_file())
        .map(|p| p.to_string_lossy().into_owned())
}

impl Formation {
    /// Starts a monitor and two nodes and waits until `node1` is primary and `node2` its
    /// synchronous secondary. The error says what is missing or what failed.
    pub fn start() -> Result<Formation, String> {
        let dir = cluster::server_dir("sqlmw_pgaf")?;
        let autoctl = find_autoctl(&dir.bin_dir).ok_or(
            "pg_autoctl was not found: install pg_auto_failover (Debian: apt-get install \
             postgresql-15-auto-failover; .ci/run installs it when missing)",
        )?;
        let base = dir.dir.to_string_lossy().into_owned();
        let mut f = Formation {
            autoctl,
            monitor_pgdata: format!("{base}/monitor"),
            monitor_port: free_port()?,
            nodes: Vec::new(),
            children: Vec::new(),
            groups: Vec::new(),
            dir,
        };
        let port = f.monitor_port.to_string();
        let pgdata = f.monitor_pgdata.clone();
        f.run(&[
            "create",
            "monitor",
            "--pgdata",
            &pgdata,
            "--pgport",
            &port,
            "--hostname",
            "127.0.0.1",
            "--auth",
            "trust",
            "--no-ssl",
        ])?;
        fs::OpenOptions::new()
            .append(true)
            .open(format!("{pgdata}/postgresql.conf"))
            .and_then(|mut c| std::io::Write::write_all(&mut c, MONITOR_SETTINGS.as_bytes()))
            .map_err(|e| format!("cannot tune the monitor: {e}"))?;
        f.spawn(&["run", "--pgdata", &pgdata], "monitor")?;
        f.wait_ready(f.monitor_port)?;
        let monitor = format!(
            "postgres://autoctl_node@127.0.0.1:{}/pg_auto_failover?sslmode=disable",
            f.monitor_port
        );
        for i in 1..=2 {
            let name = format!("node{i}");
            let pgdata = format!("{base}/{name}");
            let port = free_port()?;
            let p = port.to_string();
            let pgid = f.spawn(
                &[
                    "create",
                    "postgres",
                    "--pgdata",
                    &pgdata,
                    "--pgport",
                    &p,
                    "--listen",
                    "127.0.0.1",
                    "--hostname",
                    "127.0.0.1",
                    "--name",
                    &name,
                    "--auth",
                    "trust",
                    "--no-ssl",
                    "--monitor",
                    &monitor,
                    "--run",
                ],
                &name,
            )?;
            f.nodes.push(Node {
                name: name.clone(),
                port,
                pgdata,
                pgid,
            });
            let want: &[(&str, &str)] = if i == 1 {
                &[("node1", "single")]
            } else {
                &[("node1", "primary"), ("node2", "secondary")]
            };
            f.wait_states(want, Duration::from_secs(120))?;
        }
        Ok(f)
    }

    /// The environment `pg_autoctl` runs with: its own home and state directories.
    fn env(&self) -> Vec<String> {
        let base = self.dir.dir.to_string_lossy();
        vec![
            format!("HOME={base}"),
            format!("XDG_CONFIG_HOME={base}/config"),
            format!("XDG_DATA_HOME={base}/data"),
            format!("XDG_RUNTIME_DIR={base}/run"),
            format!("PATH={}:/usr/bin:/bin", self.dir.bin_dir.to_string_lossy()),
        ]
    }

    fn argv(&self, args: &[&str]) -> Vec<String> {
        let env = self.env();
        let mut all: Vec<&str> = env.iter().map(String::as_str).collect();
        all.push(&self.autoctl);
        all.extend_from_slice(args);
        self.dir.argv("/usr/bin/env", &all)
    }

    /// Runs `pg_autoctl args…` to its end; its output.
    pub fn run(&self, args: &[&str]) -> Result<String, String> {
        let argv = self.argv(args);
        let out = Command::new(&argv[0])
            .args(&argv[1..])
            .current_dir("/")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run pg_autoctl: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "pg_autoctl {} failed ({}): {}",
                args.join(" "),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// Starts `pg_autoctl args…` in a process group of its own (logging to `<dir>/<log>.log`),
    /// watched; returns the group.
    fn spawn(&mut self, args: &[&str], log: &str) -> Result<i32, String> {
        let argv = self.argv(args);
        let path = self.dir.dir.join(format!("{log}.log"));
        let out = fs::File::create(&path).map_err(|e| format!("cannot create a log: {e}"))?;
        let err = out
            .try_clone()
            .map_err(|e| format!("cannot create a log: {e}"))?;
        let child = Command::new(&argv[0])
            .args(&argv[1..])
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start pg_autoctl: {e}"))?;
        let pgid = i32::try_from(child.id()).map_err(|e| e.to_string())?;
        Command::new("/bin/sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("sqlmw-pgaf-watchdog")
            .arg(std::process::id().to_string())
            .arg(pgid.to_string())
            .arg(if self.groups.is_empty() {
                self.dir.dir.to_string_lossy().into_owned()
            } else {
                String::new()
            })
            .current_dir("/")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot start the watchdog: {e}"))?;
        self.children.push(child);
        self.groups.push(pgid);
        Ok(pgid)
    }

    fn wait_ready(&self, port: u16) -> Result<(), String> {
        let isready = self.dir.bin_dir.join("pg_isready");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let ok = Command::new(&isready)
                .args(["-q", "-h", "127.0.0.1", "-p", &port.to_string()])
                .status()
                .is_ok_and(|s| s.success());
            if ok {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "nothing accepts connections on port {port} after 60 s"
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `(name, reported state, assigned state)` of each node, as the monitor sees them.
    pub fn states(&self) -> Result<Vec<(String, String, String)>, String> {
        let out = self.run(&["show", "state", "--pgdata", &self.monitor_pgdata])?;
        Ok(out
            .lines()
            .filter_map(|l| {
                let cols: Vec<&str> = l.split('|').map(str::trim).collect();
                (cols.len() >= 7 && cols[0].starts_with("node"))
                    .then(|| (cols[0].to_owned(), cols[5].to_owned(), cols[6].to_owned()))
            })
            .collect())
    }

    /// Waits until each named node is reported and assigned the state given.
    pub fn wait_states(&self, want: &[(&str, &str)], limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        let mut last = Vec::new();
        loop {
            if let Ok(st) = self.states() {
                if want.iter().all(|(n, s)| {
                    st.iter()
                        .any(|(name, rep, goal)| name == n && rep == s && goal == s)
                }) {
                    return Ok(());
                }
                last = st;
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the formation did not reach {want:?} within {limit:?}; last seen {last:?}"
                ));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `host:port` of each node, in the order given, for a multi-host URL.
    pub fn url(&self, order: &[usize], params: &str) -> String {
        let hosts: Vec<String> = order
            .iter()
            .map(|&i| format!("127.0.0.1:{}", self.nodes[i].port))
            .collect();
        format!("postgres://postgres@{}/postgres?{params}", hosts.join(","))
    }

    /// `pg_autoctl perform failover` (planned: the monitor demotes the primary, promotes the
    /// secondary), waiting until the new primary is reported.
    pub fn perform_failover(&self) -> Result<(), String> {
        self.run(&["perform", "failover", "--pgdata", &self.monitor_pgdata])
            .map(drop)
    }

    /// Asks the monitor for a failover (`pgautofailover.perform_failover()`, as `pg_autoctl
    /// perform failover` does) and returns without waiting for it. The monitor's function can
    /// deadlock with the keepers' own reports to it (the server then aborts the call, which
    /// changed nothing); the request is made again then, a few times.
    pub fn ask_failover(&self) -> Result<(), String> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.ask_failover_once() {
                Err(e) if tries < 5 && e.contains("deadlock detected") => {
                    std::thread::sleep(std::time::Duration::from_millis(200));
                }
                r => return r,
            }
        }
    }

    fn ask_failover_once(&self) -> Result<(), String> {
        let out = Command::new(self.dir.bin_dir.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.monitor_port.to_string(),
                "-U",
                "autoctl_node",
                "-d",
                "pg_auto_failover",
                "-Atc",
                "SELECT pgautofailover.perform_failover()",
            ])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run psql: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "perform_failover() failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    }

    /// The pid of node `i`'s postmaster.
    pub fn postmaster(&self, i: usize) -> Result<i32, String> {
        let pid = fs::read_to_string(format!("{}/postmaster.pid", self.nodes[i].pgdata))
            .map_err(|e| format!("no postmaster.pid for {}: {e}", self.nodes[i].name))?;
        pid.lines()
            .next()
            .and_then(|l| l.trim().parse().ok())
            .ok_or_else(|| "postmaster.pid holds no pid".to_owned())
    }

    /// Sends `signal` (`KILL`, `STOP`, `CONT`, …) to `pid`, or to a process group when
    /// `pid` is negative.
    pub fn signal(signal: &str, pid: i32) -> Result<(), String> {
        let ok = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg("--")
            .arg(pid.to_string())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(())
            .ok_or_else(|| format!("kill -{signal} {pid} failed"))
    }

    /// Node `i`'s process group (its `pg_autoctl` and Postgres), as a negative pid for
    /// [`Self::signal`].
    pub fn node_group(&self, i: usize) -> i32 {
        -self.nodes[i].pgid
    }

    /// The pids of node `i`'s `pg_autoctl` processes (not its Postgres).
    pub fn keeper_pids(&self, i: usize) -> Vec<i32> {
        let out = Command::new("pgrep")
            .args(["-g", &self.nodes[i].pgid.to_string(), "-f", "pg_autoctl"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        out.lines().filter_map(|l| l.trim().parse().ok()).collect()
    }
}

impl Drop for Formation {
    fn drop(&mut self) {
        for g in &self.groups {
            let _ = Self::signal("CONT", -g);
            let _ = Self::signal("KILL", -g);
        }
        for c in &mut self.children {
            let _ = c.wait();
        }
        std::thread::sleep(Duration::from_millis(200));
        let _ = fs::remove_dir_all(&self.dir.dir);
    }
}
