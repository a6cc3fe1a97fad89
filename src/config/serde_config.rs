//! Pool settings from serde (`Config`: TOML, JSON, the environment through a serde source),
//! and the redaction that keeps a password in its URL out of `Debug` output.

use super::{ConfigAndPool, PoolBuilder};
use std::time::Duration;

use crate::error::Result;

/// `url` with any password in it replaced by `***`, for `Debug` output: the `user:password@`
/// of an authority (with or without `//`), and the value of every `password=` or
/// `sslpassword=` parameter, in a query string or a `key=value` string (quoted or not).
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
