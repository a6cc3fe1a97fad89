//! The bound on the connections test databases hold on one server: a test takes one slot per
//! connection before it creates its database and gives them back when the database is gone.
//!
//! Inside a process the slots are a semaphore (a test waits in line, without polling). Across
//! processes (`cargo nextest` runs each test in a process of its own) they are files of a
//! directory shared by all of them, `sql-middleware-slots/<server>/` in the system's temporary
//! directory, each held with an exclusive `flock` while in use: the kernel releases the lock of
//! a process that dies, so a killed test never keeps a slot.

use std::collections::HashMap;
use std::fs::File;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// How long a test waits for its slots before it fails.
const WAIT_LIMIT: Duration = Duration::from_secs(600);

/// Slots held by one test database; released when dropped.
#[derive(Debug)]
pub(crate) struct Slots {
    _permit: Option<OwnedSemaphorePermit>,
    _files: Vec<File>,
}

impl Slots {
    /// No slots (an engine without a server).
    pub(crate) fn none() -> Self {
        Self {
            _permit: None,
            _files: Vec::new(),
        }
    }
}

fn semaphore(key: &str, bound: usize) -> Arc<Semaphore> {
    static ALL: OnceLock<Mutex<HashMap<String, Arc<Semaphore>>>> = OnceLock::new();
    let mut map = ALL
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Arc::clone(
        map.entry(key.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(bound))),
    )
}

fn io_error(what: &str, e: &std::io::Error) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::Config,
        format!("test database slots: {what}: {e}"),
    )
}

/// The directory of the slot files of server `key`.
pub(crate) fn dir(key: &str) -> PathBuf {
    let safe: String = key
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    std::env::temp_dir().join("sql-middleware-slots").join(safe)
}

/// Takes `n` of the `bound` slots of server `key`, waiting as long as other tests (of this
/// process or of others) hold too many. `n` larger than `bound` is an error.
pub(crate) async fn acquire(key: &str, n: usize, bound: usize) -> Result<Slots> {
    if n > bound {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::Config,
            format!("a test database asks for {n} connections, more than the bound of {bound}"),
        ));
    }
    let started = Instant::now();
    let permits = u32::try_from(n).unwrap_or(u32::MAX);
    let permit = tokio::time::timeout(
        WAIT_LIMIT,
        semaphore(key, bound).acquire_many_owned(permits),
    )
    .await
    .map_err(|_| waited_too_long(n, bound))?
    .map_err(|_| waited_too_long(n, bound))?;
    let files = files(key, n, bound, started).await?;
    Ok(Slots {
        _permit: Some(permit),
        _files: files,
    })
}

fn waited_too_long(n: usize, bound: usize) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::PoolTimeout,
        format!(
            "waited {}s for {n} of the {bound} test database connections",
            WAIT_LIMIT.as_secs()
        ),
    )
}

#[cfg(unix)]
async fn files(key: &str, n: usize, bound: usize, started: Instant) -> Result<Vec<File>> {
    use rustix::fs::{FlockOperation, flock};
    let dir = dir(key);
    std::fs::create_dir_all(&dir).map_err(|e| io_error("cannot create the directory", &e))?;
    let mut pause = Duration::from_millis(5);
    loop {
        let mut held = Vec::with_capacity(n);
        for i in 0..bound {
            let path = dir.join(format!("slot-{i}"));
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| io_error("cannot open a slot file", &e))?;
            if flock(&file, FlockOperation::NonBlockingLockExclusive).is_ok() {
                held.push(file);
                if held.len() == n {
                    return Ok(held);
                }
            }
        }
        // Not enough free: give back what was taken (dropping a file unlocks it), so two
        // waiters never each hold part of what the other needs.
        drop(held);
        if started.elapsed() > WAIT_LIMIT {
            return Err(waited_too_long(n, bound));
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(100));
    }
}

#[cfg(not(unix))]
async fn files(_key: &str, _n: usize, _bound: usize, _started: Instant) -> Result<Vec<File>> {
    Ok(Vec::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_test_waits_for_its_share() {
        let key = format!("unit_{}", std::process::id());
        let a = acquire(&key, 2, 3).await.unwrap();
        let waiting = tokio::spawn({
            let key = key.clone();
            async move { acquire(&key, 2, 3).await.map(|_| ()) }
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            !waiting.is_finished(),
            "two of three slots are taken: the second waits"
        );
        drop(a);
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(
            acquire(&key, 4, 3).await.unwrap_err().kind(),
            ErrorKind::Config
        );
        let _ = std::fs::remove_dir_all(dir(&key));
    }
}
