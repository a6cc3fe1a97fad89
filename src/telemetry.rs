//! Tracing (feature `tracing`): one span per statement following the OpenTelemetry database
//! conventions, a parent span per transaction (and per savepoint), a span per checkout, and a
//! `WARN` event for statements slower than the pool's threshold.
//!
//! The hall holds a [`PoolTrace`] per pool and a [`ConnTrace`] per checkout and wraps each
//! operation's future in [`ConnTrace::statement`]. Without the feature both are empty types whose
//! methods are inline pass-throughs, so nothing of `tracing` is compiled in.
//!
//! Span fields (all spans have target `sql_middleware`):
//!
//! | span | fields |
//! |---|---|
//! | `checkout` | `db.system`, `sqlmw.pool.wait_us`, `sqlmw.connection.id` |
//! | `transaction`, `savepoint` | `db.system`, `sqlmw.connection.id`, `sqlmw.outcome` (`commit`, `rollback`, `failed`, `dropped`) |
//! | `statement` | `otel.name`, `otel.kind`, `db.system`, `db.operation.name`, `db.query.text` (the SQL as written: placeholders, never bound values), `db.namespace` and `server.address`/`server.port` (Postgres), `db.operation.batch.size` (pipelines), `db.response.returned_rows`, `sqlmw.rows_affected`, `sqlmw.pool.wait_us`, `sqlmw.connection.id`, `sqlmw.sqlite.exec` (`inline`, `offloaded`, `rerun`), `error.type` and `otel.status_code` on failure |

#[cfg(feature = "tracing")]
mod on {
    use std::future::Future;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use tracing::field::Empty;

    use crate::error::Result;
    use crate::sql::Dialect;

    /// What a pool's spans say about its database, and the pool's tracing options.
    #[derive(Debug)]
    struct Settings {
        enabled: bool,
        slow: Option<Duration>,
        system: &'static str,
        dialect: Dialect,
        namespace: Option<Box<str>>,
        address: Option<Box<str>>,
        port: Option<u16>,
    }

    /// The span of a checkout.
    pub(crate) type CheckoutSpan = tracing::Span;

    /// A pool's tracing settings, shared by its checkouts.
    #[derive(Debug, Clone)]
    pub(crate) struct PoolTrace(Arc<Settings>);

    /// Where a pool's database is, for the spans' `server.*` and `db.namespace` fields.
    #[derive(Debug, Default)]
    pub(crate) struct Server {
        pub(crate) namespace: Option<String>,
        pub(crate) address: Option<String>,
        pub(crate) port: Option<u16>,
    }

    impl PoolTrace {
        pub(crate) fn new(
            opts: &TraceOptions,
            system: &'static str,
            dialect: Dialect,
            server: Server,
        ) -> Self {
            PoolTrace(Arc::new(Settings {
                enabled: opts.enabled,
                slow: opts.slow,
                system,
                dialect,
                namespace: server.namespace.map(Into::into),
                address: server.address.map(Into::into),
                port: server.port,
            }))
        }

        /// The span of one checkout, entered while the pool is waited for.
        pub(crate) fn checkout_span(&self) -> tracing::Span {
            if !self.0.enabled {
                return tracing::Span::none();
            }
            tracing::info_span!(
                target: "sql_middleware",
                "checkout",
                db.system = self.0.system,
                sqlmw.pool.wait_us = Empty,
                sqlmw.connection.id = Empty,
            )
        }

        /// The span of one retrying transaction call (`crate::retry`): its attempts are its
        /// children, each the parent of that attempt's checkout and transaction.
        pub(crate) fn retry_span(&self) -> tracing::Span {
            if !self.0.enabled {
                return tracing::Span::none();
            }
            tracing::info_span!(
                target: "sql_middleware",
                "retrying_transaction",
                db.system = self.0.system,
                sqlmw.retry.attempts = Empty,
                sqlmw.outcome = Empty,
            )
        }

        /// The tracing state of a checkout that waited `wait` for connection `id`.
        pub(crate) fn checkout(&self, span: &tracing::Span, wait: Duration, id: u64) -> ConnTrace {
            let wait_us = micros(wait);
            if !span.is_disabled() {
                span.record("sqlmw.pool.wait_us", wait_us);
                span.record("sqlmw.connection.id", id);
            }
            ConnTrace {
                pool: self.clone(),
                wait_us,
                id,
                host: None,
                scopes: Vec::new(),
            }
        }
    }

    /// The pool-builder options of tracing.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct TraceOptions {
        pub(crate) enabled: bool,
        pub(crate) slow: Option<Duration>,
    }

    impl Default for TraceOptions {
        fn default() -> Self {
            TraceOptions {
                enabled: true,
                slow: None,
            }
        }
    }

    /// The tracing state of one checkout: the pool's settings, the checkout's wait, and the
    /// spans of the open transaction and its savepoints (innermost last).
    #[derive(Debug)]
    pub(crate) struct ConnTrace {
        pool: PoolTrace,
        wait_us: u64,
        /// The pooled connection's id (unique in the process).
        id: u64,
        /// The host and port the connection reached (`None`: the pool's first).
        host: Option<(Arc<str>, u16)>,
        scopes: Vec<tracing::Span>,
    }

    impl ConnTrace {
        /// The connection reached `host` (of the hosts the pool's URL lists).
        pub(crate) fn at(mut self, host: Option<(Arc<str>, u16)>) -> Self {
            self.host = host;
            self
        }
    }

    /// How many rows an operation's result returned or changed, for its span.
    #[derive(Debug, Clone, Copy)]
    pub(crate) enum Rows {
        /// Rows returned by a query.
        Returned(usize),
        /// Rows changed by DML.
        Affected(u64),
        /// Nothing to report (a script).
        Unknown,
    }

    /// A statement's span, started: the statement's future is polled inside it
    /// ([`Started::poll_in`]), then its result is recorded ([`Started::finish`]).
    #[derive(Debug)]
    pub(crate) struct Started {
        span: tracing::Span,
        t0: Option<Instant>,
        slow: Option<Duration>,
        system: &'static str,
    }

    impl Started {
        /// Polls the statement's future inside the span. The future stays where the caller
        /// pinned it: wrapping it (`Instrumented`) would move it, and a statement's future is
        /// large enough for that copy to show in a lookup's cost.
        #[inline]
        pub(crate) fn poll_in<F: Future>(
            &self,
            fut: std::pin::Pin<&mut F>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<F::Output> {
            let _entered = self.span.enter();
            fut.poll(cx)
        }

        /// Enters the span (a stream's, while it is polled).
        #[inline]
        pub(crate) fn enter(&self) -> tracing::span::Entered<'_> {
            self.span.enter()
        }

        /// Records the statement's rows or error on its span, and warns when it took longer
        /// than the pool's slow-statement threshold.
        #[inline]
        pub(crate) fn finish<R>(
            self,
            sql: &str,
            r: Result<R>,
            rows: impl FnOnce(&R) -> Rows,
        ) -> Result<R> {
            if !self.span.is_disabled() {
                self.record(&r, rows);
            }
            if let (Some(limit), Some(t0)) = (self.slow, self.t0) {
                self.warn_if_slow(sql, limit, t0);
            }
            r
        }

        #[cold]
        fn record<R>(&self, r: &Result<R>, rows: impl FnOnce(&R) -> Rows) {
            let span = &self.span;
            match r {
                Ok(v) => match rows(v) {
                    Rows::Returned(n) => {
                        span.record("db.response.returned_rows", n as u64);
                    }
                    Rows::Affected(n) => {
                        span.record("sqlmw.rows_affected", n);
                    }
                    Rows::Unknown => {}
                },
                Err(e) => {
                    span.record("error.type", tracing::field::debug(e.kind()));
                    span.record("otel.status_code", "ERROR");
                }
            }
        }

        fn warn_if_slow(&self, sql: &str, limit: Duration, t0: Instant) {
            let elapsed = t0.elapsed();
            if elapsed >= limit {
                self.span.in_scope(|| {
                    tracing::event!(
                        target: "sql_middleware::slow",
                        tracing::Level::WARN,
                        db.system = self.system,
                        db.query.text = sql,
                        elapsed_ms = elapsed.as_secs_f64() * 1e3,
                        threshold_ms = limit.as_secs_f64() * 1e3,
                        "slow statement"
                    );
                });
            }
        }
    }

    impl ConnTrace {
        /// Whether this pool records spans (and slow-statement events) at all.
        #[inline]
        pub(crate) fn enabled(&self) -> bool {
            self.pool.0.enabled
        }

        /// Starts the span of one statement (`sql`, as written); `batch`: the number of
        /// parameter sets of a pipeline.
        pub(crate) fn start(&self, sql: &str, batch: Option<usize>) -> Started {
            let s = &*self.pool.0;
            if !s.enabled {
                return Started {
                    span: tracing::Span::none(),
                    t0: None,
                    slow: None,
                    system: s.system,
                };
            }
            Started {
                span: self.statement_span(sql, batch),
                t0: s.slow.map(|_| Instant::now()),
                slow: s.slow,
                system: s.system,
            }
        }

        fn statement_span(&self, sql: &str, batch: Option<usize>) -> tracing::Span {
            let s = &*self.pool.0;
            macro_rules! span {
                ($($parent:tt)*) => {
                    tracing::info_span!(
                        target: "sql_middleware",
                        $($parent)*
                        "statement",
                        otel.name = operation(sql, s.dialect.lexer),
                        otel.kind = "client",
                        db.system = s.system,
                        db.operation.name = operation(sql, s.dialect.lexer),
                        db.query.text = sql,
                        db.namespace = s.namespace.as_deref(),
                        server.address = self.host.as_ref().map(|h| &*h.0).or(s.address.as_deref()),
                        server.port = self.host.as_ref().map(|h| h.1).or(s.port),
                        db.operation.batch.size = batch.map(|n| n as u64),
                        db.response.returned_rows = Empty,
                        sqlmw.rows_affected = Empty,
                        sqlmw.pool.wait_us = self.wait_us,
                        sqlmw.connection.id = self.id,
                        sqlmw.sqlite.exec = Empty,
                        error.type = Empty,
                        otel.status_code = Empty,
                    )
                };
            }
            match self.scopes.last() {
                Some(parent) => span!(parent: parent,),
                None => span!(),
            }
        }

        /// A transaction (`level` 0) or a savepoint (`level` ≥ 1) began: its span becomes the
        /// parent of the statements that follow until it ends.
        pub(crate) fn scope_begin(&mut self, level: u32) {
            let s = &*self.pool.0;
            if !s.enabled {
                return;
            }
            if level == 0 {
                self.scopes.clear();
            }
            let span = match (level, self.scopes.last()) {
                (0, _) | (_, None) => tracing::info_span!(
                    target: "sql_middleware",
                    "transaction",
                    db.system = s.system,
                    sqlmw.connection.id = self.id,
                    sqlmw.outcome = Empty,
                ),
                (_, Some(parent)) => tracing::info_span!(
                    target: "sql_middleware",
                    parent: parent,
                    "savepoint",
                    db.system = s.system,
                    sqlmw.connection.id = self.id,
                    sqlmw.outcome = Empty,
                ),
            };
            self.scopes.truncate(level as usize);
            self.scopes.push(span);
        }

        /// The transaction or savepoint at `level` ended with `outcome`; its span (and any
        /// inner savepoint's) closes.
        pub(crate) fn scope_end(&mut self, level: u32, outcome: &'static str) {
            let level = level as usize;
            if level < self.scopes.len() {
                self.scopes[level].record("sqlmw.outcome", outcome);
                self.scopes.truncate(level);
            }
        }
    }

    fn micros(d: Duration) -> u64 {
        u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
    }

    /// The statement's first keyword, upper-cased: `SELECT`, `INSERT`, `WITH`, ….
    fn operation(sql: &str, d: crate::sql::Lexer) -> String {
        crate::sql::scanner::tokens(sql, d)
            .find(|t| !t.kind.is_blank())
            .filter(|t| t.kind == crate::sql::scanner::Kind::Word)
            .map(|t| sql[t.start..t.end].to_ascii_uppercase())
            .unwrap_or_default()
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use crate::sql::Lexer;

        #[test]
        fn operation_is_the_first_keyword() {
            assert_eq!(operation("  select 1", Lexer::Plain), "SELECT");
            assert_eq!(
                operation(
                    "/* x */ -- y\n insert into t values (1)",
                    Lexer::DollarQuotes
                ),
                "INSERT"
            );
            assert_eq!(operation("", Lexer::Plain), "");
            assert_eq!(operation("'lit'", Lexer::Plain), "");
        }
    }
}

#[cfg(not(feature = "tracing"))]
mod off {
    use std::time::Duration;

    use crate::sql::Dialect;

    /// Without the feature: nothing.
    #[derive(Debug, Clone, Default)]
    pub(crate) struct PoolTrace;

    /// Without the feature: nothing.
    #[derive(Debug, Default)]
    pub(crate) struct Server;

    /// Without the feature: nothing.
    #[derive(Debug, Clone, Copy, Default)]
    pub(crate) struct TraceOptions;

    /// Without the feature: nothing.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct CheckoutSpan;

    impl PoolTrace {
        #[inline(always)]
        pub(crate) fn new(_: &TraceOptions, _: &'static str, _: Dialect, _: Server) -> Self {
            PoolTrace
        }

        #[inline(always)]
        pub(crate) fn checkout_span(&self) -> CheckoutSpan {
            CheckoutSpan
        }

        #[inline(always)]
        pub(crate) fn checkout(&self, _: &CheckoutSpan, _: Duration, _: u64) -> ConnTrace {
            ConnTrace
        }
    }

    /// Without the feature: nothing.
    #[derive(Debug)]
    pub(crate) struct ConnTrace;

    impl ConnTrace {
        #[inline(always)]
        pub(crate) fn scope_begin(&mut self, _: u32) {}

        #[inline(always)]
        pub(crate) fn scope_end(&mut self, _: u32, _: &'static str) {}
    }
}

#[cfg(feature = "tracing")]
pub(crate) use on::*;

#[cfg(not(feature = "tracing"))]
pub(crate) use off::*;

/// Runs the future `$fut` of one statement (`$sql`, as written) of the connection `$conn`: inside
/// its span with the feature, as a plain `.await` without it. `$rows` maps the result to
/// [`Rows`] for the span; `$batch` is a pipeline's number of parameter sets.
macro_rules! traced {
    ($conn:expr, $sql:expr, $batch:expr, $fut:expr, $rows:expr) => {{
        #[cfg(feature = "tracing")]
        {
            let started = $conn.trace.start($sql, $batch);
            let r = {
                let mut fut = ::std::pin::pin!($fut);
                ::std::future::poll_fn(|cx| started.poll_in(fut.as_mut(), cx)).await
            };
            started.finish($sql, r, $rows)
        }
        #[cfg(not(feature = "tracing"))]
        {
            $fut.await
        }
    }};
}
pub(crate) use traced;
