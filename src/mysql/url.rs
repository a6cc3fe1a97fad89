//! MySQL and MariaDB URLs (`mysql://`, `mariadb://`): the pool's parameters, the TLS
//! settings and the multi-host ones (a host list, `target_session_attrs`,
//! `load_balance_hosts`, `connect_timeout`; see `hosts.rs`) and `causal_reads` are taken out,
//! the rest goes to mysql_async.

use super::config::Settings;
use crate::error::Result;
use crate::url_text::{
    PoolParam, config_error, flag, is_pool_key, percent_decode, pool_param,
    statement_cache as statement_cache_param,
};

/// The URL schemes of MySQL and MariaDB.
pub(crate) const SCHEMES: &[&str] = &["mysql", "mariadb"];

/// How the schemes are written, for messages.
pub(crate) const SCHEMES_SHOWN: &str = "mysql://, mariadb://";

/// A MySQL URL: the pool's parameters and the TLS settings are taken out, the rest goes to
/// mysql_async.
pub(crate) fn parse(_scheme: &str, rest: &str, query: &str) -> Result<(Settings, Vec<PoolParam>)> {
    let mut pool_params = Vec::new();
    let mut driver = Vec::new();
    let mut tls = super::tls::MyTls::default();
    let (mut cert, mut key) = (None, None);
    let mut statement_cache = None;
    let mut test_before_acquire = None;
    let mut prefer_socket = false;
    let mut hosts = super::hosts::Hosts::default();
    let mut attrs_given = false;
    let mut causal_reads = false;
    for raw in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = raw.split_once('=').unwrap_or((raw, ""));
        let (key_, value) = (percent_decode(k)?, percent_decode(v)?);
        match key_.as_str() {
            k if is_pool_key(k) => pool_params.push((key_, value)),
            "test_before_acquire" => test_before_acquire = Some(flag(&key_, &value)?),
            "statement_cache" => statement_cache = Some(statement_cache_param(&value)?),
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
            "target_session_attrs" => {
                hosts.attrs = super::health::Attrs::parse(&value)?;
                attrs_given = true;
            }
            "load_balance_hosts" => {
                hosts.random = match value.as_str() {
                    "random" => true,
                    "disable" => false,
                    _ => {
                        return Err(config_error(
                            "load_balance_hosts must be `disable` or `random`",
                        ));
                    }
                }
            }
            "connect_timeout" => {
                hosts.connect_timeout = Some(crate::url_text::duration(&key_, &value)?);
            }
            "causal_reads" => causal_reads = flag(&key_, &value)?,
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
        _ => {
            return Err(config_error(
                "a client certificate needs both sslcert and sslkey",
            ));
        }
    }
    // A host list: mysql_async reads the URL with its first host; the list is the pool's.
    let rest = match one_host_url(rest)? {
        Some((first, list)) => {
            hosts.list = list;
            first
        }
        None => rest.to_owned(),
    };
    hosts.check = hosts.list.len() > 1 || attrs_given;
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
    let mut s = Settings::new(opts);
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
    s.options.tls = tls;
    s.options.hosts = hosts;
    s.options.causal_reads = causal_reads;
    Ok((s, pool))
}

/// For a URL whose authority lists several hosts (`//user@h1:p1,h2:p2/db`): the URL with the
/// first host only, and the list; `None` for one host.
fn one_host_url(rest: &str) -> Result<Option<(String, super::hosts::HostList)>> {
    let Some(after) = rest.strip_prefix("//") else {
        return Ok(None);
    };
    let end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let (authority, tail) = after.split_at(end);
    let (user, list) = super::hosts::split_hosts(authority)?;
    let Some((h, p)) = list.first() else {
        return Ok(None);
    };
    let host = if h.contains(':') {
        format!("[{h}]:{p}")
    } else {
        format!("{h}:{p}")
    };
    let first = match user {
        Some(u) => format!("//{u}@{host}{tail}"),
        None => format!("//{host}{tail}"),
    };
    Ok(Some((first, list)))
}
