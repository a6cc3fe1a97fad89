//! [`PoolStats::export_metrics`]: the live statistics through the `metrics` crate facade
//! (feature `metrics`), for whatever recorder the application installed (Prometheus, StatsD, …).

use crate::stats::{PoolStats, WAIT_BUCKET_BOUNDS};

impl PoolStats {
    /// Records this snapshot through the `metrics` facade, every series labelled
    /// `pool = <pool>`: gauges for the connections now (`sql_middleware.pool.size`, `.idle`,
    /// `.in_use`, `.waiters`, `.max_size`) and absolute counters for the totals
    /// (`sql_middleware.pool.checkouts`, `.created`,
    /// `.retired` with `reason = max_lifetime | idle`, `.discarded`,
    /// `sql_middleware.statement_cache.hits`, `.misses`, `.evictions`,
    /// `sql_middleware.sqlite.calls` with `how = inline | offloaded | rerun`), and
    /// `sql_middleware.pool.checkout_wait_bucket` with `le` = each bucket's upper bound in
    /// seconds (`+Inf` for the last; counts per bucket, not cumulative); and the gauge
    /// `sql_middleware.pool.checkout_wait_seconds`, the total wait so far. Call it periodically,
    /// e.g. from the task that serves the metrics endpoint.
    pub fn export_metrics(&self, pool: &str) {
        let label = || [("pool", pool.to_owned())];
        let gauge = |name: &'static str, v: usize| {
            metrics::gauge!(name, &label()).set(v as f64);
        };
        gauge("sql_middleware.pool.size", self.size);
        gauge("sql_middleware.pool.idle", self.idle);
        gauge("sql_middleware.pool.in_use", self.in_use);
        gauge("sql_middleware.pool.waiters", self.waiters);
        gauge("sql_middleware.pool.max_size", self.max_size);
        let counter = |name: &'static str, v: u64| {
            metrics::counter!(name, &label()).absolute(v);
        };
        counter("sql_middleware.pool.checkouts", self.checkout_wait.count);
        counter("sql_middleware.pool.created", self.created);
        counter("sql_middleware.pool.discarded", self.discarded);
        counter(
            "sql_middleware.statement_cache.hits",
            self.statement_cache.hits,
        );
        counter(
            "sql_middleware.statement_cache.misses",
            self.statement_cache.misses,
        );
        counter(
            "sql_middleware.statement_cache.evictions",
            self.statement_cache.evictions,
        );
        metrics::gauge!("sql_middleware.pool.checkout_wait_seconds", &label())
            .set(self.checkout_wait.total.as_secs_f64());
        for (reason, v) in [
            ("max_lifetime", self.retired_max_lifetime),
            ("idle", self.retired_idle),
        ] {
            metrics::counter!(
                "sql_middleware.pool.retired",
                &[("pool", pool.to_owned()), ("reason", reason.to_owned())]
            )
            .absolute(v);
        }
        for (how, v) in [
            ("inline", self.sqlite.inline),
            ("offloaded", self.sqlite.offloaded_by_policy),
            ("rerun", self.sqlite.rerun_after_interrupt),
        ] {
            metrics::counter!(
                "sql_middleware.sqlite.calls",
                &[("pool", pool.to_owned()), ("how", how.to_owned())]
            )
            .absolute(v);
        }
        for (i, v) in self.checkout_wait.buckets.iter().enumerate() {
            let le = WAIT_BUCKET_BOUNDS
                .get(i)
                .map_or_else(|| "+Inf".to_owned(), |b| b.as_secs_f64().to_string());
            metrics::counter!(
                "sql_middleware.pool.checkout_wait_bucket",
                &[("pool", pool.to_owned()), ("le", le)]
            )
            .absolute(*v);
        }
    }
}
