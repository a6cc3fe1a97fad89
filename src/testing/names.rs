//! Names of test databases: each encodes the machine (a hash of the host name and the boot id)
//! and the owning process, so that a later run can tell a database left behind by a killed
//! process from one whose process still runs.
//!
//! A name reads `sqlmw_t_<host:4 hex><boot:4 hex>_<pid>_<nonce:6 hex>_<sequence>`: at most 44
//! characters, lower case ASCII, digits and `_`, so it needs no quoting on any engine.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// What every test database's name starts with.
pub(crate) const PREFIX: &str = "sqlmw_t_";

/// The prefix of a Postgres template built from a set of migrations (followed by their
/// fingerprint).
pub(crate) const TEMPLATE_PREFIX: &str = "sqlmw_tpl_";

/// This machine and this process, as they appear in names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    /// A hash of the host name.
    pub(crate) host: u16,
    /// A hash of the boot id (0 where the system does not give one).
    pub(crate) boot: u16,
    /// The process id.
    pub(crate) pid: u32,
}

fn fnv(bytes: &[u8]) -> u16 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h = (h ^ u32::from(*b)).wrapping_mul(0x0100_0193);
    }
    (h ^ (h >> 16)) as u16
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// The owner of the databases this process creates.
pub(crate) fn this_process() -> Owner {
    static OWNER: OnceLock<Owner> = OnceLock::new();
    *OWNER.get_or_init(|| {
        let host = read_trimmed("/proc/sys/kernel/hostname")
            .or_else(|| read_trimmed("/etc/hostname"))
            .or_else(|| std::env::var("HOSTNAME").ok())
            .or_else(|| std::env::var("COMPUTERNAME").ok())
            .unwrap_or_default();
        let boot = read_trimmed("/proc/sys/kernel/random/boot_id")
            .map(|b| fnv(b.as_bytes()).max(1))
            .unwrap_or(0);
        Owner {
            host: fnv(host.as_bytes()),
            boot,
            pid: std::process::id(),
        }
    })
}

/// A number that differs between two processes that happen to get the same id.
fn nonce() -> u32 {
    static NONCE: OnceLock<u32> = OnceLock::new();
    *NONCE.get_or_init(|| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        (t as u32 ^ (t >> 32) as u32) & 0x00ff_ffff
    })
}

/// A fresh name for a test database of this process.
pub(crate) fn fresh() -> String {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let o = this_process();
    format!(
        "{PREFIX}{:04x}{:04x}_{}_{:06x}_{}",
        o.host,
        o.boot,
        o.pid,
        nonce(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

/// The owner a test database's name encodes, or `None` for a name this module did not make.
pub(crate) fn owner_of(name: &str) -> Option<Owner> {
    let rest = name.strip_prefix(PREFIX)?;
    let mut parts = rest.split('_');
    let machine = parts.next()?;
    let pid = parts.next()?.parse().ok()?;
    let nonce = parts.next()?;
    let seq = parts.next()?;
    if machine.len() != 8
        || nonce.len() != 6
        || seq.parse::<u64>().is_err()
        || parts.next().is_some()
    {
        return None;
    }
    Some(Owner {
        host: u16::from_str_radix(&machine[..4], 16).ok()?,
        boot: u16::from_str_radix(&machine[4..], 16).ok()?,
        pid,
    })
}

/// Whether process `pid` of this machine still runs. Where that cannot be known (no `/proc`),
/// every process counts as running, so nothing is removed.
fn alive(pid: u32) -> bool {
    if !std::path::Path::new("/proc/self").exists() {
        return true;
    }
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Whether the database `name` was left behind by a process of this machine that no longer
/// runs (it ended without cleaning up, or the machine restarted since). Databases of other
/// machines are never orphans: their processes cannot be seen from here.
pub(crate) fn is_orphan(name: &str) -> bool {
    let Some(o) = owner_of(name) else {
        return false;
    };
    let me = this_process();
    if o.host != me.host || o.pid == me.pid && o.boot == me.boot {
        return false;
    }
    (o.boot != me.boot && me.boot != 0) || !alive(o.pid)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let (a, b) = (fresh(), fresh());
        assert_ne!(a, b);
        assert!(a.len() <= 63, "{a}");
        assert_eq!(owner_of(&a), Some(this_process()));
        assert!(!is_orphan(&a), "a name of this process is never an orphan");
        assert_eq!(owner_of("sqlmw_t_zz"), None);
        assert_eq!(owner_of("other"), None);
        assert_eq!(owner_of(&format!("{a}_x")), None);
    }

    #[test]
    fn a_dead_process_of_this_machine_leaves_orphans() {
        let me = this_process();
        let name =
            |host: u16, boot: u16, pid: u32| format!("{PREFIX}{host:04x}{boot:04x}_{pid}_abcdef_0");
        // Process ids above the kernel's maximum (4194304) never run.
        let dead = 4_194_400;
        assert!(
            is_orphan(&name(me.host, me.boot, dead))
                || !std::path::Path::new("/proc/self").exists()
        );
        // The parent of this process runs: its databases stay.
        let parent = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|s| {
                s.rsplit(')')
                    .next()?
                    .split_whitespace()
                    .nth(1)?
                    .parse()
                    .ok()
            })
            .unwrap_or(1);
        assert!(!is_orphan(&name(me.host, me.boot, parent)));
        // Another machine's database is never touched.
        assert!(!is_orphan(&name(me.host.wrapping_add(1), me.boot, dead)));
    }
}
