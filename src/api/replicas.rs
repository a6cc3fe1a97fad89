//! Read replicas, on Postgres and MySQL/MariaDB pools: where [`ConfigAndPool::reader`] sends
//! its connections, and what happens when a replica cannot be reached.

use std::time::Duration;

#[cfg(doc)]
use crate::config::ConfigAndPool;
use crate::config::PoolBuilder;
use crate::dispatch::Settings;

impl PoolBuilder {
    /// A read replica for [`ConfigAndPool::reader`]; call it once per replica. Replicas get the
    /// pool's settings (size, timeouts, statement mode, TLS files) and their own pools;
    /// `get_connection` and transactions stay on the primary. Every reader session is
    /// read-only, on a replica as on the primary: a write through a reader fails with
    /// [`ErrorKind::ReadOnly`](crate::ErrorKind::ReadOnly). A replica's `sslmode` never
    /// weakens the pool's TLS. See the README's "Scaling out".
    ///
    /// - Postgres (a streaming hot standby): a `postgres://` URL takes the forms of
    ///   [`ConfigAndPool::from_url`] (`sslmode=verify-full` included; its pool parameters are
    ///   ignored), or libpq's `key=value` form; a stricter `sslmode` raises every connection of
    ///   the pool to it.
    /// - MySQL/MariaDB (an asynchronous replica, or other nodes of a Galera cluster): a
    ///   `mysql://` or `mariadb://` URL, multi-host allowed (`mysql://u@h1,h2/db`; its hosts
    ///   are picked with the node health rules of the pool's own hosts: see docs/Backends.md,
    ///   "MySQL multi-host URLs and Galera"). Its user, password and database are its own.
    ///
    /// A URL of another engine than the pool's makes [`Self::build`] fail with
    /// [`ErrorKind::Config`](crate::ErrorKind::Config); SQLite and Turso pools take no replica.
    pub fn replica(mut self, url: &str) -> Self {
        match &mut self.settings {
            #[cfg(feature = "postgres")]
            Settings::Postgres(s) => super::postgres::add_replica(s, &mut self.error, url),
            #[cfg(feature = "mysql")]
            Settings::Mysql(s) => super::mysql::add_replica(s, &mut self.error, url),
            #[allow(unreachable_patterns)]
            _ => return self.reject("replica"),
        }
        self
    }

    /// How long a replica that could not be reached is skipped before readers try it again
    /// (default 5 s). Postgres and MySQL; ignored by other engines.
    pub fn replica_retry_after(mut self, d: Duration) -> Self {
        match &mut self.settings {
            #[cfg(feature = "postgres")]
            Settings::Postgres(s) => s.replicas.retry_after = d,
            #[cfg(feature = "mysql")]
            Settings::Mysql(s) => s.replicas.retry_after = d,
            #[allow(unreachable_patterns)]
            _ => {}
        }
        self
    }

    /// Whether readers go to the primary (in read-only sessions) when no replica is healthy
    /// (default `true`); with `false`, [`ConfigAndPool::reader`] fails with
    /// [`ErrorKind::ConnectionLost`](crate::ErrorKind::ConnectionLost) instead. Postgres and
    /// MySQL; ignored by other engines.
    pub fn replica_fallback(mut self, to_primary: bool) -> Self {
        match &mut self.settings {
            #[cfg(feature = "postgres")]
            Settings::Postgres(s) => s.replicas.fallback_to_primary = to_primary,
            #[cfg(feature = "mysql")]
            Settings::Mysql(s) => s.replicas.fallback_to_primary = to_primary,
            #[allow(unreachable_patterns)]
            _ => {}
        }
        self
    }
}
