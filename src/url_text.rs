//! Reading the text of a database URL, for every engine: `%`-escapes, durations, numbers and
//! flags by the URL's one set of rules, and the parameters of the pool itself (the same keys on
//! every engine). Each engine reads the rest of its URL in its own `url.rs`.

use std::time::Duration;

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::translation::TranslationMode;

/// A configuration error with `msg` (which never repeats the URL: it may hold a password).
pub(crate) fn config_error(msg: impl Into<String>) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(ErrorKind::Config, msg.into())
}

/// Decodes `%XX` escapes as RFC 3986 does, in the path and the query alike (as libpq does):
/// `+` stays a `+`, a `%` not followed by two hex digits is an error, and an escape that
/// decodes to a NUL byte or to bytes that are not UTF-8 is refused. The error never repeats
/// the text, which may hold a password.
pub(crate) fn percent_decode(s: &str) -> Result<String> {
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
#[cfg(feature = "_embedded")]
pub(crate) fn params(query: &str) -> Result<Vec<(String, String)>> {
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

/// A whole number.
pub(crate) fn number(key: &str, v: &str) -> Result<usize> {
    if v.is_empty() || !v.bytes().all(|c| c.is_ascii_digit()) {
        return Err(config_error(format!("`{key}` must be a whole number")));
    }
    // Too many digits is out of range, which the builder reports with the setting's limit.
    Ok(v.parse().unwrap_or(usize::MAX))
}

/// `true`/`on`/`1` or `false`/`off`/`0`.
pub(crate) fn flag(key: &str, v: &str) -> Result<bool> {
    match v {
        "true" | "on" | "1" => Ok(true),
        "false" | "off" | "0" => Ok(false),
        _ => Err(config_error(format!("`{key}` must be true or false"))),
    }
}

/// A parameter of the pool itself, read from a URL.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PoolParam {
    /// `max_size`.
    MaxSize(usize),
    /// `wait_timeout`.
    WaitTimeout(Duration),
    /// `create_timeout`.
    CreateTimeout(Duration),
    /// `recycle_timeout`.
    RecycleTimeout(Duration),
    /// `max_lifetime`.
    MaxLifetime(Duration),
    /// `idle_timeout`.
    IdleTimeout(Duration),
    /// `min_idle`.
    MinIdle(usize),
    /// `statement_timeout`.
    StatementTimeout(Duration),
    /// `connect_on_build`.
    ConnectOnBuild(Duration),
    /// `statement_cache_capacity`.
    StatementCacheCapacity(usize),
    /// `translation`.
    Translation(TranslationMode),
    /// `single_writer` (SQLite and Turso; refused by the other engines).
    SingleWriter(usize),
}

/// The keys of the pool's own parameters.
#[cfg(feature = "_server")]
const POOL_KEYS: [&str; 12] = [
    "max_size",
    "wait_timeout",
    "create_timeout",
    "recycle_timeout",
    "max_lifetime",
    "idle_timeout",
    "min_idle",
    "statement_timeout",
    "connect_on_build",
    "statement_cache_capacity",
    "translation",
    "single_writer",
];

/// Whether `key` is a parameter of the pool itself (the same on every engine).
/// A server engine's `statement_cache` parameter: `named` or `unnamed`.
#[cfg(feature = "_server")]
pub(crate) fn statement_cache(v: &str) -> Result<crate::server::StatementCache> {
    match v {
        "named" => Ok(crate::server::StatementCache::Named),
        "unnamed" => Ok(crate::server::StatementCache::Unnamed),
        _ => Err(config_error("`statement_cache` must be named or unnamed")),
    }
}

#[cfg(feature = "_server")]
pub(crate) fn is_pool_key(key: &str) -> bool {
    POOL_KEYS.contains(&key)
}

/// Reads a parameter of the pool itself; `Ok(None)` when `key` is not one of them.
pub(crate) fn pool_param(key: &str, v: &str) -> Result<Option<PoolParam>> {
    Ok(Some(match key {
        "max_size" => PoolParam::MaxSize(number(key, v)?),
        "wait_timeout" => PoolParam::WaitTimeout(duration(key, v)?),
        "create_timeout" => PoolParam::CreateTimeout(duration(key, v)?),
        "recycle_timeout" => PoolParam::RecycleTimeout(duration(key, v)?),
        "max_lifetime" => PoolParam::MaxLifetime(duration(key, v)?),
        "idle_timeout" => PoolParam::IdleTimeout(duration(key, v)?),
        "min_idle" => PoolParam::MinIdle(number(key, v)?),
        "statement_timeout" => PoolParam::StatementTimeout(duration(key, v)?),
        "connect_on_build" => PoolParam::ConnectOnBuild(duration(key, v)?),
        "statement_cache_capacity" => PoolParam::StatementCacheCapacity(number(key, v)?),
        "single_writer" => PoolParam::SingleWriter(number(key, v)?),
        "translation" => PoolParam::Translation(if flag(key, v)? {
            TranslationMode::On
        } else {
            TranslationMode::Off
        }),
        _ => return Ok(None),
    }))
}

/// The error for a URL parameter `engine` does not know.
#[cfg(feature = "_embedded")]
pub(crate) fn unknown(key: &str, engine: &str) -> SqlMiddlewareDbError {
    config_error(format!("unknown {engine} URL parameter `{key}`"))
}

/// Splits `scheme:rest` and `rest?query`.
pub(crate) fn split(url: &str) -> Result<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once(':').ok_or_else(|| {
        config_error("a database URL starts with a scheme: postgres://, sqlite:, turso:")
    })?;
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    Ok((scheme, rest, query))
}

/// The file (or `None` for an in-memory database) of the URL body of an engine that keeps its
/// database in a local file: `//relative/path`, `///absolute/path`, `path`, or `:memory:`.
#[cfg(feature = "_embedded")]
pub(crate) fn local_target(rest: &str) -> Result<Option<String>> {
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

/// RFC 3986's scheme: a letter, then letters, digits, `+`, `-` or `.` (at most 16 here).
pub(crate) fn is_scheme(s: &str) -> bool {
    s.len() <= 16
        && s.starts_with(|c: char| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
