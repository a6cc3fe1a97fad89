#![allow(dead_code)]
//! A three-node MariaDB Galera cluster for the tests, started from the installed binaries
//! (`mariadbd`, `mariadb-install-db` and the `galera-4` provider) on free loopback ports.
//!
//! [`cluster`] starts it once per test process (10–15 s: node 1 bootstraps the cluster, the
//! others join one after another by rsync state transfer) and shares it; a watchdog shell
//! kills the nodes and removes their directories when the process exits. Each node has its own
//! data directory and the fast failure-detection options (a frozen node is evicted after about
//! a second). [`Cluster`] can kill, freeze, resume, isolate and restart a node, and waits for
//! the cluster to heal. Without the binaries it fails and says how to install them (never a
//! silent skip). As root the servers switch to the `mysql` user (`--user`), which the rsync
//! transfer needs.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use mysql_async::prelude::Queryable;

/// The Galera provider of Debian's `galera-4` package.
pub const PROVIDER: &str = "/usr/lib/galera/libgalera_smm.so";

/// Failure detection in about a second instead of the defaults' six (FIELD-NOTES, Galera).
const FAST_TIMEOUTS: &str = "evs.suspect_timeout=PT1S;evs.inactive_timeout=PT2S;\
evs.keepalive_period=PT0.3S;evs.inactive_check_period=PT0.3S;gmcast.peer_timeout=PT1S;\
evs.install_timeout=PT2S;evs.join_retrans_period=PT0.3S;pc.announce_timeout=PT1S";

/// How long a node may take to start and reach Synced.
const NODE_START: Duration = Duration::from_secs(60);

/// How to get the binaries, for the failure message.
const INSTALL_HINT: &str = "the Galera tests need MariaDB with the Galera provider: \
`apt-get install mariadb-server galera-4 rsync` (Debian/Ubuntu; `.ci/run` installs them)";

/// Kills every node (by the pid in its pid file) once process `$1` has exited, then removes
/// the directory `$2`.
const WATCHDOG: &str = r#"
parent=$1; base=$2
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
for f in "$base"/n*/pid; do
  [ -f "$f" ] && read -r pid < "$f" && kill -KILL "$pid" 2>/dev/null
done
sleep 1
rm -rf "$base"
"#;

/// One node: its ports and its server process.
#[derive(Debug)]
pub struct Node {
    /// The client port.
    pub port: u16,
    /// Group communication (`gmcast.listen_addr`).
    pub gcomm: u16,
    /// Incremental state transfer (`ist.recv_addr`).
    pub ist: u16,
    /// Full state transfer (rsync).
    pub sst: u16,
    dir: PathBuf,
    pid: Mutex<Option<u32>>,
}

/// What a node says about itself (`SHOW GLOBAL STATUS LIKE 'wsrep_%'`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeState {
    pub ready: String,
    pub status: String,
    pub local_state: String,
    pub size: String,
}

impl NodeState {
    /// Usable: ready, in the primary component, Synced.
    pub fn usable(&self) -> bool {
        self.ready == "ON" && self.status == "Primary" && self.local_state == "4"
    }
}

/// The three nodes and how they were started.
#[derive(Debug)]
pub struct Cluster {
    pub nodes: Vec<Node>,
    base: PathBuf,
    server: PathBuf,
    user: Option<String>,
    /// Serialises node starts (a state transfer at a time).
    starting: Mutex<()>,
}

/// The process's cluster, started on first use; panics (with how to install the binaries) when
/// it cannot start.
pub fn cluster() -> &'static Cluster {
    static CLUSTER: OnceLock<Result<Cluster, String>> = OnceLock::new();
    let r = CLUSTER.get_or_init(|| {
        std::thread::spawn(Cluster::start)
            .join()
            .unwrap_or_else(|_| Err("the cluster start panicked".into()))
    });
    match r {
        Ok(c) => c,
        Err(e) => panic!("cannot start a Galera cluster: {e}"),
    }
}

fn find(names: &[&str]) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map(PathBuf::from));
    names
        .iter()
        .find_map(|n| dirs.iter().map(|d| d.join(n)).find(|p| p.is_file()))
}

fn free_port() -> Result<u16, String> {
    super::ports::server_port()
}

fn log_tail(log: &Path) -> String {
    let text = fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Runs `f` on a thread of its own with a current-thread runtime (callable from async code).
fn block<T: Send + 'static>(f: impl std::future::Future<Output = T> + Send + 'static) -> T {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(f)
    })
    .join()
    .expect("the helper thread panicked")
}

/// A node's state, or why it could not be read within `limit`.
pub async fn node_state(port: u16, limit: Duration) -> Result<NodeState, String> {
    let url = format!("mysql://root@127.0.0.1:{port}/mysql?prefer_socket=false");
    let work = async move {
        let mut c = mysql_async::Conn::from_url(url.as_str())
            .await
            .map_err(|e| e.to_string())?;
        let rows: Vec<(String, String)> = c
            .query("SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_cluster_status', 'wsrep_local_state', 'wsrep_cluster_size')")
            .await
            .map_err(|e| e.to_string())?;
        let _ = c.disconnect().await;
        let get = |k: &str| {
            rows.iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(k))
                .map(|(_, v)| v.clone())
                .unwrap_or_default()
        };
        Ok(NodeState {
            ready: get("wsrep_ready"),
            status: get("wsrep_cluster_status"),
            local_state: get("wsrep_local_state"),
            size: get("wsrep_cluster_size"),
        })
    };
    tokio::time::timeout(limit, work)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {limit:?}")))
}

impl Cluster {
    fn start() -> Result<Cluster, String> {
        let server = find(&["mariadbd"]).ok_or_else(|| format!("no mariadbd; {INSTALL_HINT}"))?;
        let install = find(&["mariadb-install-db", "mysql_install_db"])
            .ok_or_else(|| format!("no mariadb-install-db; {INSTALL_HINT}"))?;
        if !Path::new(PROVIDER).is_file() {
            return Err(format!("no Galera provider at {PROVIDER}; {INSTALL_HINT}"));
        }
        if find(&["rsync"]).is_none() {
            return Err(format!(
                "no rsync (the state transfer uses it); {INSTALL_HINT}"
            ));
        }
        let base = std::env::temp_dir().join(format!(
            "sqlmw_galera_{}_{}",
            std::process::id(),
            super::backends::unique_hex()
        ));
        fs::create_dir_all(&base).map_err(|e| format!("cannot create {}: {e}", base.display()))?;
        Command::new("/bin/sh")
            .arg("-c")
            .arg(WATCHDOG)
            .arg("sqlmw-galera-watchdog")
            .arg(std::process::id().to_string())
            .arg(&base)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot spawn the watchdog: {e}"))?;
        let root = fs::metadata(&base).map(|m| m.uid() == 0).unwrap_or(false);
        let user = root.then(|| "mysql".to_owned());
        let mut nodes = Vec::new();
        for i in 0..3 {
            let dir = base.join(format!("n{}", i + 1));
            fs::create_dir_all(&dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            if root {
                Command::new("chown")
                    .args(["-R", "mysql:mysql"])
                    .arg(&base)
                    .status()
                    .map_err(|e| format!("chown: {e}"))?;
            }
            super::mysql::install_data_dir(&install, &dir.join("data"), user.as_deref(), &dir)?;
            nodes.push(Node {
                port: free_port()?,
                gcomm: free_port()?,
                ist: free_port()?,
                sst: free_port()?,
                dir,
                pid: Mutex::new(None),
            });
        }
        if root {
            let _ = Command::new("chown")
                .args(["-R", "mysql:mysql"])
                .arg(&base)
                .status();
        }
        let c = Cluster {
            nodes,
            base,
            server,
            user,
            starting: Mutex::new(()),
        };
        let started = Instant::now();
        for i in 0..3 {
            c.start_node(i, i == 0, false)?;
        }
        let ports = c.ports();
        block(async move { wait_all_synced(&ports, NODE_START).await })?;
        eprintln!(
            "[galera tests] a 3-node cluster on ports {:?} started in {:.1} s",
            c.ports(),
            started.elapsed().as_secs_f64()
        );
        Ok(c)
    }

    /// The client ports, node 1 first.
    pub fn ports(&self) -> Vec<u16> {
        self.nodes.iter().map(|n| n.port).collect()
    }

    /// A URL for node `i` alone.
    pub fn url(&self, i: usize, db: &str) -> String {
        format!("mysql://root@127.0.0.1:{}/{db}", self.nodes[i].port)
    }

    /// A multi-host URL listing the nodes in `order`, with `query` appended.
    pub fn multi_url(&self, order: &[usize], db: &str, query: &str) -> String {
        let hosts: Vec<String> = order
            .iter()
            .map(|&i| format!("127.0.0.1:{}", self.nodes[i].port))
            .collect();
        let q = if query.is_empty() {
            String::new()
        } else {
            format!("?{query}")
        };
        format!("mysql://root@{}/{db}{q}", hosts.join(","))
    }

    fn gcomm_address(&self) -> String {
        let peers: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.gcomm))
            .collect();
        format!("gcomm://{}", peers.join(","))
    }

    fn args(&self, i: usize) -> Vec<String> {
        let n = &self.nodes[i];
        let d = n.dir.display();
        let mut a = vec![
            "--no-defaults".to_owned(),
            format!("--datadir={d}/data"),
            format!("--socket={d}/sock"),
            format!("--pid-file={d}/pid"),
            format!("--log-error={d}/err.log"),
            format!("--port={}", n.port),
            "--bind-address=127.0.0.1".into(),
            "--skip-name-resolve".into(),
            "--character-set-server=utf8mb4".into(),
            "--collation-server=utf8mb4_bin".into(),
            "--max-connections=300".into(),
            "--innodb-buffer-pool-size=32M".into(),
            "--innodb-flush-log-at-trx-commit=0".into(),
            "--binlog-format=ROW".into(),
            "--innodb-autoinc-lock-mode=2".into(),
            "--wsrep-on=ON".into(),
            format!("--wsrep-provider={PROVIDER}"),
            format!("--wsrep-cluster-address={}", self.gcomm_address()),
            "--wsrep-cluster-name=sqlmw".into(),
            "--wsrep-node-address=127.0.0.1".into(),
            format!("--wsrep-node-name=node{}", i + 1),
            format!("--wsrep-node-incoming-address=127.0.0.1:{}", n.port),
            format!("--wsrep-sst-receive-address=127.0.0.1:{}", n.sst),
            "--wsrep-sst-method=rsync".into(),
            format!(
                "--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:{};ist.recv_addr=127.0.0.1:{};{FAST_TIMEOUTS}",
                n.gcomm, n.ist
            ),
        ];
        if let Some(u) = &self.user {
            a.push(format!("--user={u}"));
        }
        a
    }

    /// Starts node `i` (bootstrapping a new cluster when `new_cluster`; after a kill, recovering
    /// its position first with `--wsrep-recover` when `recover`), and waits until it is Synced.
    fn start_node(&self, i: usize, new_cluster: bool, recover: bool) -> Result<(), String> {
        let _one = self.starting.lock().unwrap_or_else(|e| e.into_inner());
        let n = &self.nodes[i];
        let log = n.dir.join("err.log");
        if recover {
            let out = Command::new(&self.server)
                .args(self.args(i))
                .arg("--wsrep-recover")
                .current_dir(&n.dir)
                .stdin(Stdio::null())
                .output()
                .map_err(|e| format!("mariadbd --wsrep-recover: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "node{} --wsrep-recover failed: {}",
                    i + 1,
                    log_tail(&log)
                ));
            }
        }
        let mut cmd = Command::new(&self.server);
        cmd.args(self.args(i));
        if new_cluster {
            cmd.arg("--wsrep-new-cluster");
        }
        let mut child = cmd
            .current_dir(&n.dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(|e| format!("cannot run {}: {e}", self.server.display()))?;
        *n.pid.lock().unwrap_or_else(|e| e.into_inner()) = Some(child.id());
        // Reaped in the background so that a killed node leaves no zombie.
        std::thread::spawn(move || {
            let _ = child.wait();
        });
        let port = n.port;
        let pid = child_id(n);
        let r = block(async move {
            let deadline = Instant::now() + NODE_START;
            loop {
                if let Ok(s) = node_state(port, Duration::from_secs(2)).await
                    && s.usable()
                {
                    return Ok(());
                }
                if !alive(pid) {
                    return Err("the server exited".to_owned());
                }
                if Instant::now() > deadline {
                    return Err(format!("not Synced within {NODE_START:?}"));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        });
        r.map_err(|e| {
            format!(
                "node{} on port {port}: {e}; log:\n{}",
                i + 1,
                log_tail(&log)
            )
        })
    }

    fn signal(&self, i: usize, sig: &str) {
        let pid = child_id(&self.nodes[i]);
        let ok = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -{sig} {pid} (node{}) failed", i + 1);
    }

    /// SIGKILL node `i`, and waits until its process is gone.
    pub fn kill(&self, i: usize) {
        self.signal(i, "KILL");
        let pid = child_id(&self.nodes[i]);
        let t = Instant::now();
        while alive(pid) && t.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Freezes node `i` (SIGSTOP).
    pub fn stop(&self, i: usize) {
        self.signal(i, "STOP");
    }

    /// Resumes node `i` (SIGCONT).
    pub fn cont(&self, i: usize) {
        self.signal(i, "CONT");
    }

    /// Cuts node `i` off from the others (`gmcast.isolate=1`) or lets it back (`false`).
    pub async fn isolate(&self, i: usize, on: bool) -> Result<(), String> {
        let mut c = mysql_async::Conn::from_url(format!(
            "mysql://root@127.0.0.1:{}/mysql?prefer_socket=false",
            self.nodes[i].port
        ))
        .await
        .map_err(|e| e.to_string())?;
        c.query_drop(format!(
            "SET GLOBAL wsrep_provider_options='gmcast.isolate={}'",
            u8::from(on)
        ))
        .await
        .map_err(|e| e.to_string())?;
        let _ = c.disconnect().await;
        Ok(())
    }

    /// Starts a killed node `i` again (`--wsrep-recover` first) and waits until it is Synced.
    pub fn restart(&self, i: usize) -> Result<(), String> {
        self.start_node(i, false, true)
    }

    /// Whether node `i`'s process is running (also when frozen).
    pub fn running(&self, i: usize) -> bool {
        alive(child_id(&self.nodes[i]))
    }

    /// Waits until every node is usable and sees three members.
    pub async fn wait_healed(&self, limit: Duration) -> Result<Duration, String> {
        wait_all_synced(&self.ports(), limit).await
    }

    /// Where the cluster's files are.
    pub fn base(&self) -> &Path {
        &self.base
    }
}

fn child_id(n: &Node) -> u32 {
    n.pid
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .expect("the node was started")
}

/// Whether process `pid` exists and is no zombie.
fn alive(pid: u32) -> bool {
    match fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Waits until every node on `ports` is usable with a cluster size of `ports.len()`.
async fn wait_all_synced(ports: &[u16], limit: Duration) -> Result<Duration, String> {
    let t = Instant::now();
    loop {
        let mut last = String::new();
        let mut all = true;
        for &p in ports {
            match node_state(p, Duration::from_secs(2)).await {
                Ok(s) if s.usable() && s.size == ports.len().to_string() => {}
                Ok(s) => {
                    all = false;
                    last = format!("port {p}: {s:?}");
                }
                Err(e) => {
                    all = false;
                    last = format!("port {p}: {e}");
                }
            }
        }
        if all {
            return Ok(t.elapsed());
        }
        if t.elapsed() > limit {
            return Err(format!("the cluster did not heal within {limit:?}: {last}"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
