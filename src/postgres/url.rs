//! PostgreSQL URLs (`postgres://`, `postgresql://`) and libpq's `key=value` connection strings:
//! the pool's parameters and the middleware's own (TLS, `target_session_attrs`,
//! `test_before_acquire`, `statement_cache`) are taken out, the rest goes to tokio-postgres.

use super::attrs::SessionAttrs;
use super::config::Settings;
use super::tls::{Roots, TlsOptions};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::url_text::{
    PoolParam, config_error, duration, flag, is_pool_key, percent_decode, pool_param,
    statement_cache as statement_cache_param,
};

/// The URL schemes of PostgreSQL.
pub(crate) const SCHEMES: &[&str] = &["postgres", "postgresql"];

/// How the schemes are written, for messages.
pub(crate) const SCHEMES_SHOWN: &str = "postgres://, postgresql://";

/// Whether `conn` is a URL (else a `key=value` connection string).
pub(crate) fn is_url(conn: &str) -> bool {
    conn.starts_with("postgres://") || conn.starts_with("postgresql://")
}

/// The settings of a libpq `key=value` connection string (`target_session_attrs` is the
/// middleware's: tokio-postgres refuses `primary`, `standby` and `prefer-standby`). `what`
/// names the string in the error (`the Postgres connection string`).
pub(crate) fn parse_key_value(
    conn: &str,
    what: &str,
) -> Result<(tokio_postgres::Config, Option<SessionAttrs>)> {
    let (rest, attrs) = super::attrs::split_attrs(conn)?;
    match rest.parse::<tokio_postgres::Config>() {
        Ok(cfg) => Ok((cfg, attrs)),
        Err(e) => Err(SqlMiddlewareDbError::from_driver(
            crate::error::Backend::Postgres,
            ErrorKind::Config,
            None,
            format!("{what} is invalid"),
            e,
        )),
    }
}

/// A Postgres URL: the pool's parameters are taken out, TLS requests are checked against this
/// build, the rest goes to tokio-postgres.
pub(crate) fn parse(scheme: &str, rest: &str, query: &str) -> Result<(Settings, Vec<PoolParam>)> {
    let mut pool_params = Vec::new();
    let mut driver = Vec::new();
    let mut test_before_acquire = None;
    let mut statement_cache = None;
    let mut tls = TlsOptions::default();
    let mut attrs = None;
    let mut timeouts = Vec::new();
    for raw in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = raw.split_once('=').unwrap_or((raw, ""));
        let (key, value) = (percent_decode(k)?, percent_decode(v)?);
        match key.as_str() {
            k if is_pool_key(k) => pool_params.push((key, value)),
            "test_before_acquire" => test_before_acquire = Some(flag(&key, &value)?),
            "statement_cache" => statement_cache = Some(statement_cache_param(&value)?),
            // TLS settings are the middleware's own (tokio-postgres knows neither the
            // `verify-*` modes nor the certificate files); see `postgres::tls`.
            "sslmode" => tls.mode = Some(value.parse()?),
            "sslrootcert" => {
                tls.roots = Some(if value == "system" {
                    Roots::System
                } else {
                    Roots::File(value.into())
                })
            }
            // Every libpq value (tokio-postgres knows only any, read-write and read-only);
            // checked by the middleware as it connects (see `postgres::hosts`).
            "target_session_attrs" => attrs = Some(SessionAttrs::parse(&value)?),
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
    let mut s = Settings::new(cfg);
    let mut pool = Vec::new();
    for (k, v) in pool_params {
        pool.extend(pool_param(&k, &v)?);
    }
    if let Some(on) = test_before_acquire {
        s.options.test_before_acquire = on;
    }
    if let Some(mode) = statement_cache {
        s.options.statement_cache = mode;
    }
    // Checked now, against this build, so a URL that asks for TLS that cannot be had fails
    // here rather than at the first connection; the files are read when the pool is built.
    super::tls::check(&tls)?;
    s.options.tls = tls;
    s.options.attrs = attrs;
    Ok((s, pool))
}
