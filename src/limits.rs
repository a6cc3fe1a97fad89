//! The range of every pool setting, checked once when the pool is built, whichever input set
//! it (builder, URL, `key=value` string, environment, serde `Config`): a value out of range is
//! an [`ErrorKind::Config`] error naming the setting, never a panic later (in a timer, in the
//! engine, or on a blocking thread).

use std::time::Duration;

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::pooling::PoolOptions;

/// The longest duration any setting accepts: 2^31 - 1 milliseconds (about 24.8 days), the
/// largest timeout SQLite's `busy_timeout` and Postgres' `statement_timeout` take.
pub(crate) const MAX_DURATION: Duration = Duration::from_millis(i32::MAX as u64);

/// The largest `max_size` (and so `min_idle`): the pool reserves a slot per connection.
pub(crate) const MAX_POOL_SIZE: usize = 10_000;

/// The largest `statement_cache_capacity`.
pub(crate) const MAX_STATEMENT_CACHE: usize = 100_000;

fn out_of_range(key: &str, rule: &str) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(ErrorKind::Config, format!("`{key}` {rule}"))
}

/// Checks one duration setting against [`MAX_DURATION`].
pub(crate) fn duration(key: &str, d: Duration) -> Result<()> {
    if d > MAX_DURATION {
        return Err(out_of_range(
            key,
            "must be at most 2147483647ms (about 24.8 days)",
        ));
    }
    Ok(())
}

/// A duration that must also be more than zero (unset means "never").
fn positive(key: &str, d: Option<Duration>) -> Result<()> {
    match d {
        Some(d) if d.is_zero() => Err(out_of_range(
            key,
            "must be greater than zero; leave it unset for no limit",
        )),
        Some(d) => duration(key, d),
        None => Ok(()),
    }
}

/// Checks a count against its largest value.
pub(crate) fn count(key: &str, n: usize, max: usize) -> Result<()> {
    if n > max {
        return Err(out_of_range(key, &format!("must be at most {max}")));
    }
    Ok(())
}

/// Checks the settings every engine shares; each engine's own are checked by its
/// [`Knobs::check`](crate::knobs::Knobs::check) after these.
pub(crate) fn check(
    p: &PoolOptions,
    connect_on_build: Option<Duration>,
    slow_statement_threshold: Option<Duration>,
) -> Result<()> {
    count("max_size", p.max_size, MAX_POOL_SIZE)?;
    if p.max_size == 0 {
        return Err(out_of_range("max_size", "must be at least 1"));
    }
    if p.min_idle > p.max_size {
        return Err(out_of_range(
            "min_idle",
            &format!("must be at most max_size ({})", p.max_size),
        ));
    }
    duration("wait_timeout", p.wait_timeout)?;
    positive("create_timeout", Some(p.create_timeout))?;
    positive("recycle_timeout", Some(p.recycle_timeout))?;
    positive("max_lifetime", p.max_lifetime)?;
    positive("idle_timeout", p.idle_timeout)?;
    positive("statement_timeout", p.statement_timeout)?;
    if let Some(d) = connect_on_build {
        duration("connect_on_build", d)?;
    }
    if let Some(d) = slow_statement_threshold {
        duration("slow_statement_threshold", d)?;
    }
    Ok(())
}

/// Checks the statement cache capacity every engine has.
pub(crate) fn statement_cache_capacity(n: usize) -> Result<()> {
    count("statement_cache_capacity", n, MAX_STATEMENT_CACHE)
}
