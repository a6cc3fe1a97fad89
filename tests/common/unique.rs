//! Names unique to this process, for the databases, schemas and users the tests and the
//! throughput examples make. Dependency-free, so an example can include it by path.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// 16 hex digits, unique within the process and very likely across processes: per-process
/// random hasher keys mixed with the time, the pid, a counter and the thread id.
pub fn unique_hex() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let count = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let hash = RandomState::new().hash_one((
        nanos,
        std::process::id(),
        count,
        std::thread::current().id(),
    ));
    format!("{hash:016x}")
}
