//! PostgreSQL's own entry points and settings: the pool constructors, replicas and
//! read-your-writes routing, `application_name`, `LISTEN`/`NOTIFY`, replica status, and raw
//! access to the tokio-postgres client.

use std::time::Duration;

use crate::config::{ConfigAndPool, PoolBuilder};
use crate::dispatch::{ConnInner, PoolInner, Settings};
use crate::error::Result;
use crate::pool::{MiddlewarePool, MiddlewarePoolConnection};
use crate::postgres::config::Settings as PgSettings;
use crate::transaction::Tx;

impl ConfigAndPool {
    /// A PostgreSQL server, from a `postgres://user@host:port/db?options` URL or a
    /// `key=value` connection string.
    pub fn postgres(url: &str) -> PoolBuilder {
        if crate::postgres::url::is_url(url) {
            // URL parameters for the pool (see `from_url`) are understood here too.
            return Self::from_url(url).unwrap_or_else(|e| {
                Self::postgres_config(tokio_postgres::Config::new()).failed(e)
            });
        }
        // libpq's `key=value` form: `target_session_attrs` is the middleware's (tokio-postgres
        // refuses `primary`, `standby` and `prefer-standby`).
        match crate::postgres::url::parse_key_value(url, "the Postgres connection string") {
            Ok((cfg, attrs)) => {
                let mut s = PgSettings::new(cfg);
                s.options.attrs = attrs;
                PoolBuilder::new(Settings::Postgres(s))
            }
            Err(e) => Self::postgres_config(tokio_postgres::Config::new()).failed(e),
        }
    }

    /// A PostgreSQL server described by a `tokio_postgres::Config`.
    pub fn postgres_config(config: tokio_postgres::Config) -> PoolBuilder {
        PoolBuilder::new(Settings::Postgres(PgSettings::new(config)))
    }

    /// Each replica's state, measured now: reachable, in recovery, and how far behind the
    /// primary it is (empty without replicas).
    pub async fn replica_status(&self) -> Vec<crate::ReplicaStatus> {
        self.pool().replica_status().await
    }

    /// A `LISTEN`/`NOTIFY` [`Listener`](crate::Listener) on a connection of its own (Postgres
    /// only).
    pub async fn listener(&self) -> Result<crate::Listener> {
        self.pool().listener().await
    }
}

impl PoolBuilder {
    /// Sets what `set` sets on the Postgres settings, or, on another engine, makes the
    /// builder fail saying `what` does not apply (with `reject`), or leaves it (without).
    fn postgres_settings(
        mut self,
        what: Option<&str>,
        set: impl FnOnce(&mut PgSettings, &mut Option<crate::SqlMiddlewareDbError>),
    ) -> PoolBuilder {
        match &mut self.settings {
            Settings::Postgres(s) => set(s, &mut self.error),
            #[allow(unreachable_patterns)]
            _ => {
                if let Some(what) = what {
                    return self.reject(what);
                }
            }
        }
        self
    }

    /// Postgres with replicas: after a write through this pool completes, readers go to the
    /// primary (in read-only sessions) for `window`, so a caller reads its own writes while the
    /// replicas catch up. Off by default; set it to more than the replicas' usual replay delay
    /// (see [`ConfigAndPool::replica_status`]).
    pub fn read_your_writes(self, window: Duration) -> Self {
        self.postgres_settings(None, |s, _| s.replicas.read_your_writes = Some(window))
    }

    /// The Postgres `application_name` of every connection.
    pub fn application_name(self, name: &str) -> Self {
        self.postgres_settings(Some("application_name"), |s, _| {
            s.config.application_name(name);
        })
    }
}

/// A Postgres replica from `url` for `s`, or the error for the builder (see
/// [`PoolBuilder::replica`]).
pub(super) fn add_replica(
    s: &mut PgSettings,
    error: &mut Option<crate::SqlMiddlewareDbError>,
    url: &str,
) {
    if crate::postgres::url::is_url(url) {
        // The URL forms of `from_url`, `sslmode=verify-full` and every
        // `target_session_attrs` value included; the pool's TLS is never weaker than
        // the strictest mode a replica names.
        match ConfigAndPool::from_url(url) {
            Ok(PoolBuilder {
                settings: Settings::Postgres(r),
                ..
            }) => {
                s.replica_ssl = s.replica_ssl.max(r.options.tls.mode);
                s.replicas.replicas.push((*r.config, r.options.attrs));
            }
            #[allow(unreachable_patterns)]
            Ok(_) => {}
            Err(e) => {
                error.get_or_insert(e);
            }
        }
        return;
    }
    // libpq's `key=value` form: `target_session_attrs` is the middleware's.
    match crate::postgres::url::parse_key_value(url, "a replica's connection string") {
        Ok(replica) => s.replicas.replicas.push(replica),
        Err(e) => {
            error.get_or_insert(e);
        }
    }
}

impl MiddlewarePool {
    /// Each replica's state, measured now (empty without replicas).
    pub async fn replica_status(&self) -> Vec<crate::ReplicaStatus> {
        match &self.inner {
            PoolInner::Postgres(p) => crate::postgres::replica::status(p).await,
            #[allow(unreachable_patterns)]
            _ => Vec::new(),
        }
    }

    /// A `LISTEN`/`NOTIFY` listener on a connection of its own, made with this pool's
    /// settings (Postgres only; `Unsupported` on other backends).
    pub async fn listener(&self) -> Result<crate::Listener> {
        match &self.inner {
            PoolInner::Postgres(p) => crate::postgres::listen::Listener::for_pool(p).await,
            #[allow(unreachable_patterns)]
            _ => Err(crate::connection::wrong_backend(
                "listener",
                self.database_type(),
            )),
        }
    }
}

impl MiddlewarePoolConnection {
    /// The raw tokio-postgres client of this connection. Fails with
    /// [`ErrorKind::Unsupported`](crate::ErrorKind::Unsupported) on other backends. Statements
    /// run through it are outside the middleware's bookkeeping: leave the connection outside any
    /// transaction you open with it.
    pub async fn postgres_client(&mut self) -> Result<&tokio_postgres::Client> {
        let ty = self.database_type();
        match &mut self.inner {
            ConnInner::Postgres(c) => crate::contract::Wing::raw(c).await,
            #[allow(unreachable_patterns)]
            _ => Err(crate::connection::wrong_backend("postgres_client", ty)),
        }
    }
}

impl Tx<'_> {
    /// The raw tokio-postgres client, inside this transaction (see
    /// [`MiddlewarePoolConnection::postgres_client`]).
    pub async fn postgres_client(&mut self) -> Result<&tokio_postgres::Client> {
        self.conn.postgres_client().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::config_err as err;

    #[cfg(feature = "serde")]
    #[test]
    fn config_from_toml_and_json() {
        let toml_text =
            "url = \"postgres://app:hunter2@db/app\"\nmax_size = 5\nwait_timeout_ms = 250\n";
        let cfg: crate::Config = toml::from_str(toml_text).unwrap();
        assert_eq!(cfg.max_size, Some(5));
        assert!(!format!("{cfg:?}").contains("hunter2"), "{cfg:?}");
        let b = cfg.builder().unwrap();
        assert_eq!(b.pool.max_size, 5);
        assert_eq!(b.pool.wait_timeout, Duration::from_millis(250));
        let json: crate::Config =
            serde_json::from_str(r#"{"url":"postgres://app@db/app","statement_cache_capacity":9}"#)
                .unwrap();
        assert_eq!(json.statement_cache_capacity, Some(9));
        assert!(serde_json::from_str::<crate::Config>(r#"{"url":"x","colour":1}"#).is_err());
    }

    #[test]
    fn postgres_urls_never_show_the_password() {
        let secret = "s3cr3t-pw";
        let url = format!(
            "postgres://app:{secret}@db.example:5433/app?application_name=x&max_size=7&sslmode=prefer"
        );
        let b = ConfigAndPool::from_url(&url).unwrap();
        assert_eq!(b.pool.max_size, 7);
        assert!(!format!("{b:?}").contains(secret), "{b:?}");
        let mut bad_urls = vec![
            format!("postgres://app:{secret}@h/db?sslmode=sometimes"),
            format!("postgres://app:{secret}@h/db?sslmode=require&sslcert=c.pem"),
            format!("postgres://app:{secret}@h/db?sslmode=require&sslrootcert=system"),
            format!("postgres://app:{secret}@h:notaport/db"),
            format!("postgres://app:{secret}@h/db?max_size=-1"),
        ];
        if cfg!(not(feature = "postgres-tls")) {
            // A build without TLS refuses a URL that asks for it, never connects in plain text.
            bad_urls.push(format!("postgres://app:{secret}@h/db?sslmode=require"));
            bad_urls.push(format!("postgres://app:{secret}@h/db?sslmode=verify-full"));
            bad_urls.push(format!(
                "postgres://app:{secret}@h/db?sslmode=prefer&sslrootcert=ca.pem"
            ));
        }
        for bad in bad_urls {
            let msg = err(ConfigAndPool::from_url(&bad));
            assert!(!msg.contains(secret), "{msg}");
        }
    }
}
