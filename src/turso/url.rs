//! Turso URLs: `turso://…`, `turso:…`, `turso::memory:` (a local file, or in memory), with the
//! pool's parameters and `busy_timeout`.

use super::config::{Settings, TursoTarget};
use crate::error::Result;
use crate::url_text::{PoolParam, duration, local_target, params, pool_param, unknown};

/// The URL schemes of Turso.
pub(crate) const SCHEMES: &[&str] = &["turso"];

/// How the schemes are written, for messages.
pub(crate) const SCHEMES_SHOWN: &str = "turso:";

/// The settings a Turso URL names, and the pool's parameters in it (in URL order).
pub(crate) fn parse(_scheme: &str, rest: &str, query: &str) -> Result<(Settings, Vec<PoolParam>)> {
    let mut s = Settings::new(match local_target(rest)? {
        None => TursoTarget::Memory,
        Some(p) => TursoTarget::File(p.into()),
    });
    let mut pool = Vec::new();
    for (k, v) in params(query)? {
        if let Some(p) = pool_param(&k, &v)? {
            pool.push(p);
        } else if k == "busy_timeout" {
            s.options.busy_timeout = duration(&k, &v)?;
        } else {
            return Err(unknown(&k, "Turso"));
        }
    }
    Ok((s, pool))
}
