//! The async-SQLite peers as contenders of the SQLite suite: deadpool-sqlite and tokio-rusqlite,
//! through the `peers_throughput` binary of the peer harness crate (`bench-harnesses/sqlite_peers`,
//! which keeps both out of this crate's dependencies with a lockfile of its own), run once per
//! round and per peer (see `external.rs`). It runs this example's workloads from the same shared
//! source (`sqlite_workload.rs`): the same statements, mix and draws per client.
//!
//! Build it with
//! `cargo build --release --manifest-path bench-harnesses/sqlite_peers/Cargo.toml --bin peers_throughput`
//! and name it with `--peers PATH` (or `SQLITE_PEERS_THROUGHPUT=PATH`); `scripts/throughput.sh`
//! does both.

use std::path::Path;

use super::external::{Contender, External, Harness};

/// The peers, as the binary's `--peer` and the report name them.
pub const NAMES: [&str; 2] = ["deadpool_sqlite", "tokio_rusqlite"];

/// The peers' binary.
pub struct Peers(External);

/// What one run of a peer did.
pub struct PeerRun {
    /// Transactions per second over the window.
    pub tps: f64,
    /// `SQLITE_BUSY` errors met (each transaction run again).
    pub busy: u64,
}

impl Contender for Peers {
    /// The peers' harness: `SQLITE_PEERS_THROUGHPUT` names the binary when `--peers` does not; the
    /// peers as the binary's `--peer` and the report name them.
    const HARNESS: Harness = Harness {
        env: "SQLITE_PEERS_THROUGHPUT",
        what: "the async-SQLite peers are",
        hint: "build bench-harnesses/sqlite_peers's peers_throughput and pass --peers PATH \
               (scripts/throughput.sh does)",
        names: &NAMES,
    };

    fn wrap(bin: External) -> Self {
        Peers(bin)
    }
}

impl Peers {
    /// One run of `peer` on the database at `path`, after its one-second warm-up. `settings` is
    /// the line `settings_of` gives for the example's own connections: the peer's connections
    /// must run with the same.
    pub fn run(
        &self,
        peer: &str,
        path: &Path,
        workload: &str,
        clients: usize,
        seconds: u64,
        settings: &str,
    ) -> PeerRun {
        let line = self.0.run(&[
            "--peer".into(),
            peer.into(),
            "--path".into(),
            path.display().to_string(),
            "--workload".into(),
            workload.into(),
            "--clients".into(),
            clients.to_string(),
            "--seconds".into(),
            seconds.to_string(),
        ]);
        assert_eq!(
            line["settings"].as_str(),
            Some(settings),
            "{peer}'s connections must run with the example's settings"
        );
        PeerRun {
            tps: External::tps(&line),
            busy: line["busy"]
                .as_u64()
                .unwrap_or_else(|| panic!("no busy count in peers_throughput's output: {line}")),
        }
    }
}
