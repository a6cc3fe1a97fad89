//! SQLite URLs: `sqlite://relative/app.db`, `sqlite:///absolute/app.db`, `sqlite:app.db`,
//! `sqlite::memory:`, with the pool's parameters and SQLite's own (`busy_timeout`, `wal`,
//! `foreign_keys`, `exec_model`).

use super::config::{Settings, SqliteExecModel, SqliteTarget};
use crate::error::Result;
use crate::url_text::{
    PoolParam, config_error, duration, flag, local_target, params, pool_param, unknown,
};

/// The URL schemes of SQLite.
pub(crate) const SCHEMES: &[&str] = &["sqlite"];

/// How the schemes are written, for messages.
pub(crate) const SCHEMES_SHOWN: &str = "sqlite:";

/// The settings a SQLite URL names, and the pool's parameters in it (in URL order).
pub(crate) fn parse(_scheme: &str, rest: &str, query: &str) -> Result<(Settings, Vec<PoolParam>)> {
    let mut s = Settings::new(match local_target(rest)? {
        None => SqliteTarget::Memory,
        Some(p) => SqliteTarget::File(p.into()),
    });
    let mut pool = Vec::new();
    for (k, v) in params(query)? {
        if let Some(p) = pool_param(&k, &v)? {
            pool.push(p);
            continue;
        }
        match k.as_str() {
            "busy_timeout" => s.options.busy_timeout = duration(&k, &v)?,
            "wal" => s.options.wal = flag(&k, &v)?,
            "foreign_keys" => s.options.foreign_keys = flag(&k, &v)?,
            "exec_model" => {
                s.options.exec_model = match v.as_str() {
                    "adaptive" => SqliteExecModel::default(),
                    "inline" => SqliteExecModel::Inline,
                    "offload" => SqliteExecModel::Offload,
                    _ => {
                        return Err(config_error(
                            "`exec_model` must be adaptive, inline or offload",
                        ));
                    }
                }
            }
            _ => return Err(unknown(&k, "SQLite")),
        }
    }
    Ok((s, pool))
}
