//! Loopback ports for the servers the tests start (Postgres clusters and standbys, MariaDB
//! servers and Galera nodes, PgBouncer, pg_auto_failover). Dependency-free, so code that
//! includes a harness by path can include it too.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::net::TcpListener;

/// Where ports are chosen from when the kernel's ephemeral range cannot be read.
const FIRST: u16 = 10_000;

/// A port on 127.0.0.1 for a server a test starts: free when chosen, and below the kernel's
/// ephemeral range. A port found by binding port 0 comes from that range, where any outgoing
/// connection of any process may take it as its local port in the seconds before the server
/// binds it (a Galera node once failed to start with "Address already in use" so). Below the
/// range only servers bind, and those of the tests pick at random among some 20,000 ports.
pub fn server_port() -> Result<u16, String> {
    let end = ephemeral_start().unwrap_or(32_768);
    if end <= FIRST + 1_000 {
        // An unusual range: the old way, which at least finds a free port.
        return TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| format!("cannot find a free port: {e}"));
    }
    let seed = RandomState::new();
    for attempt in 0u32..500 {
        let pick = seed.hash_one((attempt, std::process::id()));
        let port = FIRST + (pick % u64::from(end - FIRST)) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    Err(format!(
        "cannot find a free port on 127.0.0.1 between {FIRST} and {end}"
    ))
}

/// The first port of the kernel's ephemeral range (Linux).
fn ephemeral_start() -> Option<u16> {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}
