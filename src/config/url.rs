//! Configuration from a URL (`ConfigAndPool::from_url`, `from_env`): the scheme picks the
//! engine, whose `url.rs` reads the URL; the pool's parameters in it are applied here (the forms
//! are listed on `from_url`).

use super::{ConfigAndPool, PoolBuilder};
use crate::dispatch::Settings;
use crate::error::Result;
use crate::url_text::{config_error, is_scheme, split};

impl ConfigAndPool {
    /// A pool builder from a database URL: the scheme picks the backend, query parameters set
    /// the pool. The builder's settings can still be changed before `build()`.
    ///
    /// | URL | backend |
    /// |---|---|
    /// | `postgres://user:pass@host:port/db?…`, `postgresql://…` | PostgreSQL |
    /// | `sqlite://relative/app.db`, `sqlite:///absolute/app.db`, `sqlite:app.db` | SQLite file |
    /// | `sqlite::memory:`, `sqlite://:memory:` | private in-memory SQLite |
    /// | `turso://…`, `turso:…`, `turso::memory:` | Turso (a local file, or in memory) |
    /// | `mysql://user:pass@host:port/db?…`, `mariadb://…` | MySQL or MariaDB |
    ///
    /// Pool parameters, on every backend: `max_size`, `wait_timeout`, `create_timeout`,
    /// `recycle_timeout`, `max_lifetime`, `idle_timeout`, `statement_timeout` (durations: `250ms`,
    /// `5s`, `2m`, or a number of milliseconds), `min_idle`, `connect_on_build` (a duration),
    /// `statement_cache_capacity`, `translation` (`on`/`off`). SQLite: `busy_timeout`, `wal`,
    /// `foreign_keys` (`true`/`false`), `exec_model` (`adaptive`/`inline`/`offload`). Turso:
    /// `busy_timeout`. Postgres: `test_before_acquire`, `statement_cache` (`named`/`unnamed`),
    /// the TLS settings `sslmode` (`disable`, `prefer`, `require`, `verify-ca`, `verify-full`;
    /// see [`crate::SslMode`]), `sslrootcert` (a PEM file of CA certificates, or `system`),
    /// `sslcert` and `sslkey` (a client certificate and its key; these three need the
    /// `postgres-tls` feature), and every other parameter goes to tokio-postgres
    /// (`application_name`, `connect_timeout`, `options`, …). MySQL: `test_before_acquire`,
    /// `statement_cache`, `sslmode` or `ssl-mode` (libpq's names, or MySQL's `DISABLED`,
    /// `PREFERRED`, `REQUIRED`, `VERIFY_CA`, `VERIFY_IDENTITY`), `sslrootcert`/`ssl-ca`,
    /// `sslcert`/`ssl-cert`, `sslkey`/`ssl-key` (these need the `mysql-tls` feature), and every
    /// other parameter goes to mysql_async (`socket`, `prefer_socket`, `tcp_nodelay`, …) except
    /// the ones the pool owns (`stmt_cache_size`, `pool_min`, `pool_max`, `require_ssl`,
    /// `verify_ca`, `verify_identity`, `reset_connection`). An unknown parameter, a
    /// bad value or an unknown scheme is an `ErrorKind::Config` error. Errors never repeat the URL,
    /// so a password in it never reaches a log.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), sql_middleware::SqlMiddlewareDbError> {
    /// use sql_middleware::prelude::*;
    ///
    /// let db = ConfigAndPool::from_url("sqlite::memory:?max_size=2&busy_timeout=2s")?
    ///     .build()
    ///     .await?;
    /// assert_eq!(db.status().max_size, 2);
    /// # Ok(()) }
    /// ```
    pub fn from_url(url: &str) -> Result<PoolBuilder> {
        let (scheme, rest, query) = split(url.trim())?;
        match Settings::from_url(scheme, rest, query) {
            Some(parsed) => {
                let (settings, params) = parsed?;
                Ok(params
                    .into_iter()
                    .fold(PoolBuilder::new(settings), PoolBuilder::apply))
            }
            // The scheme is repeated only when it is one (a few letters): the text before the
            // first `:` of a malformed URL may be a password.
            None if is_scheme(scheme) => Err(config_error(format!(
                "unknown database URL scheme `{scheme}:` (this build knows {})",
                Settings::known_schemes()
            ))),
            None => Err(config_error(format!(
                "a database URL starts with a scheme ({}); a `key=value` connection string goes \
                 to ConfigAndPool::postgres",
                Settings::known_schemes()
            ))),
        }
    }

    /// [`Self::from_url`] with the URL in the `DATABASE_URL` environment variable.
    pub fn from_env() -> Result<PoolBuilder> {
        match std::env::var("DATABASE_URL") {
            Ok(url) if !url.trim().is_empty() => Self::from_url(&url),
            _ => Err(config_error(
                "DATABASE_URL is not set; set it to a URL such as postgres://user@host/db or sqlite://app.db",
            )),
        }
    }
}

/// The message of a configuration error a builder must refuse with: for the URL tests here and
/// in each engine's `api/` file.
#[cfg(test)]
pub(crate) fn config_err(r: Result<PoolBuilder>) -> String {
    match r {
        Ok(b) => panic!("expected an error, got {b:?}"),
        Err(e) => {
            assert_eq!(e.kind(), crate::error::ErrorKind::Config, "{e:?}");
            e.to_string()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::config_err as err;
    use super::*;

    #[test]
    fn schemes_and_errors() {
        assert!(
            err(ConfigAndPool::from_url("mongodb://x/y")).contains("unknown database URL scheme")
        );
        assert!(err(ConfigAndPool::from_url("no scheme at all")).contains("scheme"));
    }
}
