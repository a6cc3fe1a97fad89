//! Configuration from a URL (`ConfigAndPool::from_url`, `from_env`): the scheme picks the
//! backend, query parameters set the pool (the forms are listed on `from_url`).

use std::time::Duration;

use crate::config::{ConfigAndPool, PoolBuilder};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::translation::TranslationMode;

fn config_error(msg: impl Into<String>) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(ErrorKind::Config, msg.into())
}

/// Decodes `%XX` escapes as RFC 3986 does, in the path and the query alike (as libpq does):
/// `+` stays a `+`, a `%` not followed by two hex digits is an error, and an escape that
/// decodes to a NUL byte or to bytes that are not UTF-8 is refused. The error never repeats
/// the text, which may hold a password.
fn percent_decode(s: &str) -> Result<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = s
                .get(i + 1..i + 3)
                .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| config_error("a database URL has a bad %-escape"))?;
            if hex == 0 {
                return Err(config_error("a database URL has a %00 (NUL) escape"));
            }
            out.push(hex);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| config_error("a database URL's %-escapes are not UTF-8"))
}

/// `key=value` pairs of a query string, decoded, in order.
#[cfg(any(feature = "sqlite", feature = "turso"))]
fn params(query: &str) -> Result<Vec<(String, String)>> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            Ok((percent_decode(k)?, percent_decode(v)?))
        })
        .collect()
}

/// A duration in a URL, by the one rule of the whole URL: a whole number with a unit (`ms`,
/// `s`, `m` for minutes, `h`), or a bare whole number of seconds, as libpq reads
/// `connect_timeout`. It must be at most [`crate::limits::MAX_DURATION`].
pub(crate) fn duration(key: &str, v: &str) -> Result<Duration> {
    let bad = || {
        config_error(format!(
            "`{key}` must be a duration: a whole number with a unit (250ms, 5s, 2m, 1h) or a \
             bare number of seconds"
        ))
    };
    let (num, unit) = match v.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => v.split_at(i),
        None => (v, "s"),
    };
    if num.is_empty() {
        return Err(bad());
    }
    // Too many digits for a u64 is out of range, not malformed.
    let n: u64 = num.parse().unwrap_or(u64::MAX);
    let d = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.saturating_mul(60)),
        "h" => Duration::from_secs(n.saturating_mul(3600)),
        _ => return Err(bad()),
    };
    crate::limits::duration(key, d)?;
    Ok(d)
}

fn number(key: &str, v: &str) -> Result<usize> {
    if v.is_empty() || !v.bytes().all(|c| c.is_ascii_digit()) {
        return Err(config_error(format!("`{key}` must be a whole number")));
    }
    // Too many digits is out of range, which the builder reports with the setting's limit.
    Ok(v.parse().unwrap_or(usize::MAX))
}

fn flag(key: &str, v: &str) -> Result<bool> {
    match v {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" => Ok(false),
        _ => Err(config_error(format!("`{key}` must be true or false"))),
    }
}

/// Applies a pool parameter every backend knows; `Ok(Err(builder))` gives the builder back
/// untouched when `key` is not one of them.
fn pool_param(
    b: PoolBuilder,
    key: &str,
    v: &str,
) -> Result<std::result::Result<PoolBuilder, PoolBuilder>> {
    Ok(Ok(match key {
        "max_size" => b.max_size(number(key, v)?),
        "wait_timeout" => b.wait_timeout(duration(key, v)?),
        "create_timeout" => b.create_timeout(duration(key, v)?),
        "recycle_timeout" => b.recycle_timeout(duration(key, v)?),
        "max_lifetime" => b.max_lifetime(duration(key, v)?),
        "idle_timeout" => b.idle_timeout(duration(key, v)?),
        "min_idle" => b.min_idle(number(key, v)?),
        "statement_timeout" => b.statement_timeout(duration(key, v)?),
        "connect_on_build" => b.connect_on_build(duration(key, v)?),
        "statement_cache_capacity" => b.statement_cache_capacity(number(key, v)?),
        "translation" => b.translation(if flag(key, v)? {
            TranslationMode::On
        } else {
            TranslationMode::Off
        }),
        _ => return Ok(Err(b)),
    }))
}

/// Splits `scheme:rest` and `rest?query`.
fn split(url: &str) -> Result<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once(':').ok_or_else(|| {
        config_error("a database URL starts with a scheme: postgres://, sqlite:, turso:")
    })?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    Ok((scheme, rest, query))
}

/// The file (or `None` for an in-memory database) of a `sqlite:`/`turso:` URL body.
#[cfg(any(feature = "sqlite", feature = "turso"))]
fn local_target(rest: &str) -> Result<Option<String>> {
    let path = rest.strip_prefix("//").unwrap_or(rest);
    let path = percent_decode(path)?;
    match path.as_str() {
        ":memory:" => Ok(None),
        "" => Err(config_error(
            "the database URL names no file (use :memory: for an in-memory database)",
        )),
        p => Ok(Some(p.to_owned())),
    }
}

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
        match scheme {
            #[cfg(feature = "postgres")]
            "postgres" | "postgresql" => postgres(scheme, rest, query),
            #[cfg(feature = "mysql")]
            "mysql" | "mariadb" => mysql(rest, query),
            #[cfg(feature = "sqlite")]
            "sqlite" => {
                let mut b = match local_target(rest)? {
                    None => ConfigAndPool::sqlite_memory(),
                    Some(p) => ConfigAndPool::sqlite(p),
                };
                for (k, v) in params(query)? {
                    b = match pool_param(b, &k, &v)? {
                        Ok(b) => b,
                        Err(b) => match k.as_str() {
                            "busy_timeout" => b.busy_timeout(duration(&k, &v)?),
                            "wal" => b.wal(flag(&k, &v)?),
                            "foreign_keys" => b.foreign_keys(flag(&k, &v)?),
                            "exec_model" => b.sqlite_exec_model(match v.as_str() {
                                "adaptive" => crate::SqliteExecModel::default(),
                                "inline" => crate::SqliteExecModel::Inline,
                                "offload" => crate::SqliteExecModel::Offload,
                                _ => {
                                    return Err(config_error(
                                        "`exec_model` must be adaptive, inline or offload",
                                    ));
                                }
                            }),
                            _ => return Err(unknown(&k, "SQLite")),
                        },
                    };
                }
                Ok(b)
            }
            #[cfg(feature = "turso")]
            "turso" => {
                let mut b = match local_target(rest)? {
                    None => ConfigAndPool::turso_memory(),
                    Some(p) => ConfigAndPool::turso(p),
                };
                for (k, v) in params(query)? {
                    b = match pool_param(b, &k, &v)? {
                        Ok(b) => b,
                        Err(b) if k == "busy_timeout" => b.busy_timeout(duration(&k, &v)?),
                        Err(_) => return Err(unknown(&k, "Turso")),
                    };
                }
                Ok(b)
            }
            // The scheme is repeated only when it is one (a few letters): the text before the
            // first `:` of a malformed URL may be a password.
            other if is_scheme(other) => Err(config_error(format!(
                "unknown database URL scheme `{other}:` (this build knows {})",
                known_schemes()
            ))),
            _ => Err(config_error(format!(
                "a database URL starts with a scheme ({}); a `key=value` connection string goes \
                 to ConfigAndPool::postgres",
                known_schemes()
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

/// `url` with any password in it replaced by `***`, for `Debug` output: the `user:password@`
/// of an authority (with or without `//`), and the value of every `password=` or
/// `sslpassword=` parameter, in a query string or a `key=value` string (quoted or not).
#[cfg(any(test, feature = "serde"))]
pub(crate) fn redact(url: &str) -> String {
    let mut out = unreserved_decoded(url);
    let start = out.find("://").map_or(0, |i| i + 3);
    let end = out[start..]
        .find(['/', '?', ' ', '\t', '\n'])
        .map_or(out.len(), |i| start + i);
    if let Some(at) = out[start..end].rfind('@').map(|i| start + i) {
        if let Some(colon) = out[start..at].find(':').map(|i| start + i) {
            out.replace_range(colon + 1..at, "***");
        }
    }
    let mut from = 0;
    while let Some(i) = out[from..]
        .to_ascii_lowercase()
        .find("password")
        .map(|i| from + i)
    {
        let b = out.as_bytes();
        let mut j = i + "password".len();
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if j >= b.len() || b[j] != b'=' {
            from = j.max(i + 1);
            continue;
        }
        j += 1;
        while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
            j += 1;
        }
        let value_end = if b.get(j) == Some(&b'\'') {
            // A quoted value of a key=value string: up to the closing quote (`\'` escapes one).
            let mut k = j + 1;
            while k < b.len() && b[k] != b'\'' {
                k += if b[k] == b'\\' { 2 } else { 1 };
            }
            (k + 1).min(b.len())
        } else {
            out[j..]
                .find(|c: char| c == '&' || c == '#' || c.is_whitespace())
                .map_or(out.len(), |k| j + k)
        };
        out.replace_range(j..value_end, "***");
        from = j + 3;
    }
    out
}

/// `s` with every `%XX` escape of an unreserved character (a letter, a digit, `-._~`)
/// decoded, which RFC 3986 says changes nothing: so `passw%6Frd=` is seen as `password=`.
#[cfg(any(test, feature = "serde"))]
fn unreserved_decoded(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let c = rest
            .get(i + 1..i + 3)
            .filter(|h| h.bytes().all(|c| c.is_ascii_hexdigit()))
            .and_then(|h| u8::from_str_radix(h, 16).ok())
            .map(char::from)
            .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~'));
        match c {
            Some(c) => {
                out.push(c);
                rest = &rest[i + 3..];
            }
            None => {
                out.push('%');
                rest = &rest[i + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Pool settings as data, for configuration files and the environment (feature `serde`): a
/// URL (see [`ConfigAndPool::from_url`]) and optional overrides. It deserialises from TOML,
/// JSON, or environment variables through any serde source (for example the `config` or `envy`
/// crates), as deadpool's configs do. `Debug` never shows the password.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let cfg: sql_middleware::Config = serde_json::from_str(
///     r#"{ "url": "sqlite::memory:", "max_size": 3, "wait_timeout_ms": 500 }"#,
/// )?;
/// let db = cfg.builder()?.build().await?;
/// assert_eq!(db.status().max_size, 3);
/// # Ok(()) }
/// ```
#[cfg(feature = "serde")]
#[derive(Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The database URL; pool parameters may also be given in it.
    pub url: String,
    /// The largest number of open connections.
    pub max_size: Option<usize>,
    /// How long a checkout waits for a free connection, in milliseconds.
    pub wait_timeout_ms: Option<u64>,
    /// How long opening a connection may take, in milliseconds.
    pub create_timeout_ms: Option<u64>,
    /// How long checking a returned connection may take, in milliseconds.
    pub recycle_timeout_ms: Option<u64>,
    /// How many prepared statements each connection keeps.
    pub statement_cache_capacity: Option<usize>,
    /// The default time limit of each statement, in milliseconds.
    pub statement_timeout_ms: Option<u64>,
}

#[cfg(feature = "serde")]
impl Config {
    /// A pool builder from these settings (the fields override the URL's parameters).
    pub fn builder(&self) -> Result<PoolBuilder> {
        let mut b = ConfigAndPool::from_url(&self.url)?;
        if let Some(n) = self.max_size {
            b = b.max_size(n);
        }
        if let Some(ms) = self.wait_timeout_ms {
            b = b.wait_timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = self.create_timeout_ms {
            b = b.create_timeout(Duration::from_millis(ms));
        }
        if let Some(ms) = self.recycle_timeout_ms {
            b = b.recycle_timeout(Duration::from_millis(ms));
        }
        if let Some(n) = self.statement_cache_capacity {
            b = b.statement_cache_capacity(n);
        }
        if let Some(ms) = self.statement_timeout_ms {
            b = b.statement_timeout(Duration::from_millis(ms));
        }
        Ok(b)
    }
}

#[cfg(feature = "serde")]
impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("url", &redact(&self.url))
            .field("max_size", &self.max_size)
            .field("wait_timeout_ms", &self.wait_timeout_ms)
            .field("create_timeout_ms", &self.create_timeout_ms)
            .field("recycle_timeout_ms", &self.recycle_timeout_ms)
            .field("statement_cache_capacity", &self.statement_cache_capacity)
            .field("statement_timeout_ms", &self.statement_timeout_ms)
            .finish()
    }
}

#[cfg(any(feature = "sqlite", feature = "turso"))]
fn unknown(key: &str, backend: &str) -> SqlMiddlewareDbError {
    config_error(format!("unknown {backend} URL parameter `{key}`"))
}

/// RFC 3986's scheme: a letter, then letters, digits, `+`, `-` or `.` (at most 16 here).
fn is_scheme(s: &str) -> bool {
    s.len() <= 16
        && s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn known_schemes() -> String {
    let mut s: Vec<&str> = Vec::new();
    if cfg!(feature = "postgres") {
        s.push("postgres://, postgresql://");
    }
    if cfg!(feature = "sqlite") {
        s.push("sqlite:");
    }
    if cfg!(feature = "turso") {
        s.push("turso:");
    }
    if cfg!(feature = "mysql") {
        s.push("mysql://, mariadb://");
    }
    s.join(", ")
}

/// A Postgres URL: the pool's parameters are taken out, TLS requests are checked against this
/// build, the rest goes to tokio-postgres.
#[cfg(feature = "postgres")]
fn postgres(scheme: &str, rest: &str, query: &str) -> Result<PoolBuilder> {
    let mut pool_params = Vec::new();
    let mut driver = Vec::new();
    let mut test_before_acquire = None;
    let mut statement_cache = None;
    let mut tls = crate::postgres::tls::TlsOptions::default();
    let mut attrs = None;
    let mut timeouts = Vec::new();
    for raw in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = raw.split_once('=').unwrap_or((raw, ""));
        let (key, value) = (percent_decode(k)?, percent_decode(v)?);
        match key.as_str() {
            "max_size"
            | "wait_timeout"
            | "create_timeout"
            | "recycle_timeout"
            | "max_lifetime"
            | "idle_timeout"
            | "min_idle"
            | "statement_timeout"
            | "connect_on_build"
            | "statement_cache_capacity"
            | "translation" => pool_params.push((key, value)),
            "test_before_acquire" => test_before_acquire = Some(flag(&key, &value)?),
            "statement_cache" => {
                statement_cache = Some(match value.as_str() {
                    "named" => crate::StatementCache::Named,
                    "unnamed" => crate::StatementCache::Unnamed,
                    _ => return Err(config_error("`statement_cache` must be named or unnamed")),
                })
            }
            // TLS settings are the middleware's own (tokio-postgres knows neither the
            // `verify-*` modes nor the certificate files); see `postgres::tls`.
            "sslmode" => tls.mode = Some(value.parse()?),
            "sslrootcert" => {
                tls.roots = Some(if value == "system" {
                    crate::postgres::tls::Roots::System
                } else {
                    crate::postgres::tls::Roots::File(value.into())
                })
            }
            // Every libpq value (tokio-postgres knows only any, read-write and read-only);
            // checked by the middleware as it connects (see `postgres::hosts`).
            "target_session_attrs" => {
                attrs = Some(crate::postgres::hosts::SessionAttrs::parse(&value)?)
            }
            "sslcert" => tls.client_cert = Some(value.into()),
            "sslkey" => tls.client_key = Some(value.into()),
            // The driver's own durations follow the URL's one rule too (tokio-postgres reads
            // only bare seconds); zero means none, as in libpq.
            "connect_timeout" | "keepalives_idle" | "keepalives_interval" | "tcp_user_timeout" => {
                let d = duration(&key, &value)?;
                timeouts.push((key, d));
            }
            _ => driver.push(raw),
        }
    }
    let url = if driver.is_empty() {
        format!("{scheme}:{rest}")
    } else {
        format!("{scheme}:{rest}?{}", driver.join("&"))
    };
    let mut cfg: tokio_postgres::Config = url.parse().map_err(|e: tokio_postgres::Error| {
        // tokio-postgres' message names the bad option, never the URL.
        config_error(format!("the Postgres URL is invalid: {e}"))
    })?;
    for (key, d) in timeouts.into_iter().filter(|(_, d)| !d.is_zero()) {
        match key.as_str() {
            "connect_timeout" => cfg.connect_timeout(d),
            "keepalives_idle" => cfg.keepalives_idle(d),
            "keepalives_interval" => cfg.keepalives_interval(d),
            _ => cfg.tcp_user_timeout(d),
        };
    }
    let mut b = ConfigAndPool::postgres_config(cfg);
    for (k, v) in pool_params {
        b = pool_param(b, &k, &v)?.unwrap_or_else(|b| b);
    }
    if let Some(on) = test_before_acquire {
        b = b.test_before_acquire(on);
    }
    if let Some(mode) = statement_cache {
        b = b.statement_cache(mode);
    }
    // Checked now, against this build, so a URL that asks for TLS that cannot be had fails
    // here rather than at the first connection; the files are read when the pool is built.
    crate::postgres::tls::check(&tls)?;
    b.postgres.tls = tls;
    b.postgres.attrs = attrs;
    Ok(b)
}

/// A MySQL URL: the pool's parameters and the TLS settings are taken out, the rest goes to
/// mysql_async.
#[cfg(feature = "mysql")]
fn mysql(rest: &str, query: &str) -> Result<PoolBuilder> {
    let mut pool_params = Vec::new();
    let mut driver = Vec::new();
    let mut tls = crate::mysql::tls::MyTls::default();
    let (mut cert, mut key) = (None, None);
    let mut statement_cache = None;
    let mut test_before_acquire = None;
    let mut prefer_socket = false;
    for raw in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = raw.split_once('=').unwrap_or((raw, ""));
        let (key_, value) = (percent_decode(k)?, percent_decode(v)?);
        match key_.as_str() {
            "max_size"
            | "wait_timeout"
            | "create_timeout"
            | "recycle_timeout"
            | "max_lifetime"
            | "idle_timeout"
            | "min_idle"
            | "statement_timeout"
            | "connect_on_build"
            | "statement_cache_capacity"
            | "translation" => pool_params.push((key_, value)),
            "test_before_acquire" => test_before_acquire = Some(flag(&key_, &value)?),
            "statement_cache" => {
                statement_cache = Some(match value.as_str() {
                    "named" => crate::StatementCache::Named,
                    "unnamed" => crate::StatementCache::Unnamed,
                    _ => return Err(config_error("`statement_cache` must be named or unnamed")),
                })
            }
            "sslmode" | "ssl-mode" | "ssl_mode" => {
                let mode: crate::SslMode = value.parse()?;
                tls.mode = Some(tls.mode.map_or(mode, |m| m.max(mode)));
            }
            "sslrootcert" | "ssl-ca" | "ssl_ca" => tls.roots = Some(value.into()),
            "sslcert" | "ssl-cert" | "ssl_cert" => cert = Some(std::path::PathBuf::from(value)),
            "sslkey" | "ssl-key" | "ssl_key" => key = Some(std::path::PathBuf::from(value)),
            "stmt_cache_size" | "pool_min" | "pool_max" | "require_ssl" | "verify_ca"
            | "verify_identity" | "built_in_roots" | "reset_connection" => {
                return Err(config_error(format!(
                    "`{key_}` is set by the pool itself (statement cache, pool size, TLS through sslmode)"
                )));
            }
            "prefer_socket" => {
                prefer_socket = true;
                driver.push(raw);
            }
            _ => driver.push(raw),
        }
    }
    match (cert, key) {
        (Some(c), Some(k)) => tls.client = Some((c, k)),
        (None, None) => {}
        _ => return Err(config_error("a client certificate needs both sslcert and sslkey")),
    }
    let url = if driver.is_empty() {
        format!("mysql:{rest}")
    } else {
        format!("mysql:{rest}?{}", driver.join("&"))
    };
    // mysql_async's message names the bad part, never the URL.
    let opts = mysql_async::Opts::from_url(&url)
        .map_err(|e| config_error(format!("the MySQL URL is invalid: {e}")))?;
    // A URL names a host: connect there (mysql_async would otherwise move to the server's Unix
    // socket when it finds one), unless it asks for the socket with `prefer_socket=true`.
    let opts = if prefer_socket {
        opts
    } else {
        mysql_async::OptsBuilder::from_opts(opts)
            .prefer_socket(false)
            .into()
    };
    let mut b = ConfigAndPool::mysql_opts(opts);
    for (k, v) in pool_params {
        b = pool_param(b, &k, &v)?.unwrap_or_else(|b| b);
    }
    if let Some(on) = test_before_acquire {
        b = b.test_before_acquire(on);
    }
    if let Some(mode) = statement_cache {
        b = b.statement_cache(mode);
    }
    // Checked now, against this build: a URL that asks for TLS that cannot be had fails here.
    let mut check = tls.clone();
    check.roots = None;
    check.client = None;
    check.check()?;
    if !cfg!(feature = "mysql-tls") && (tls.roots.is_some() || tls.client.is_some()) {
        return Err(config_error(
            "ssl-ca, ssl-cert and ssl-key need the `mysql-tls` feature",
        ));
    }
    b.mysql.tls = tls;
    Ok(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(r: Result<PoolBuilder>) -> String {
        match r {
            Ok(b) => panic!("expected an error, got {b:?}"),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Config, "{e:?}");
                e.to_string()
            }
        }
    }

    #[test]
    fn durations_and_flags() {
        assert_eq!(duration("d", "250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(duration("d", "5s").unwrap(), Duration::from_secs(5));
        assert_eq!(duration("d", "2m").unwrap(), Duration::from_secs(120));
        assert_eq!(duration("d", "40").unwrap(), Duration::from_secs(40));
        assert_eq!(duration("d", "1h").unwrap(), Duration::from_secs(3600));
        assert!(duration("d", "2147483648ms").is_err());
        assert!(duration("d", "1.5s").is_err());
        assert!(duration("d", "5 s").is_err());
        assert!(duration("d", "s").is_err());
        assert!(flag("f", "maybe").is_err());
        assert_eq!(percent_decode("a%20b+c").unwrap(), "a b+c");
        assert!(percent_decode("%zz").is_err());
        assert!(percent_decode("%+1").is_err());
        assert!(percent_decode("%00").is_err());
    }

    #[test]
    fn schemes_and_errors() {
        assert!(
            err(ConfigAndPool::from_url("mongodb://x/y")).contains("unknown database URL scheme")
        );
        assert!(err(ConfigAndPool::from_url("no scheme at all")).contains("scheme"));
        #[cfg(feature = "sqlite")]
        {
            assert!(ConfigAndPool::from_url("sqlite::memory:").is_ok());
            assert!(ConfigAndPool::from_url("sqlite://:memory:?max_size=3").is_ok());
            assert!(err(ConfigAndPool::from_url("sqlite://")).contains("names no file"));
            assert!(
                err(ConfigAndPool::from_url("sqlite::memory:?colour=blue")).contains("`colour`")
            );
            assert!(
                err(ConfigAndPool::from_url("sqlite::memory:?max_size=many"))
                    .contains("whole number")
            );
        }
    }

    #[test]
    fn redaction() {
        assert_eq!(
            redact("postgres://u:pw@h:5432/db"),
            "postgres://u:***@h:5432/db"
        );
        assert_eq!(
            redact("postgres://u@h/db?password=pw&x=1"),
            "postgres://u@h/db?password=***&x=1"
        );
        assert_eq!(redact("postgres://u:p@ss@h/db"), "postgres://u:***@h/db");
        assert_eq!(redact("sqlite::memory:"), "sqlite::memory:");
        assert_eq!(redact("app:pw@h/db"), "app:***@h/db");
        assert_eq!(
            redact("host=h password = 'a b\\' c' sslpassword=kp user=u"),
            "host=h password = *** sslpassword=*** user=u"
        );
    }

    #[cfg(all(feature = "serde", feature = "postgres"))]
    #[test]
    fn config_from_toml_and_json() {
        let toml_text =
            "url = \"postgres://app:hunter2@db/app\"\nmax_size = 5\nwait_timeout_ms = 250\n";
        let cfg: Config = toml::from_str(toml_text).unwrap();
        assert_eq!(cfg.max_size, Some(5));
        assert!(!format!("{cfg:?}").contains("hunter2"), "{cfg:?}");
        let b = cfg.builder().unwrap();
        assert_eq!(b.pool.max_size, 5);
        assert_eq!(b.pool.wait_timeout, Duration::from_millis(250));
        let json: Config =
            serde_json::from_str(r#"{"url":"postgres://app@db/app","statement_cache_capacity":9}"#)
                .unwrap();
        assert_eq!(json.statement_cache_capacity, Some(9));
        assert!(serde_json::from_str::<Config>(r#"{"url":"x","colour":1}"#).is_err());
    }

    #[cfg(feature = "postgres")]
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
