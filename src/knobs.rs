//! The settings a pool builder hands to whichever engine it was made for: every engine's
//! [`Settings`](crate::dispatch::Settings) implements [`Knobs`], and a setting the engine does
//! not have is refused (the builder's `build` then fails with `ErrorKind::Config`) instead of
//! being ignored. Settings of one engine only (SQLite's WAL, Postgres replicas, …) are set
//! through that engine's own builder methods.

use std::time::Duration;

use crate::error::Result;

/// What a builder may set on an engine's settings. Each method returns whether the engine has
/// the setting; the defaults say it does not.
pub(crate) trait Knobs {
    /// How many prepared statements each connection keeps (every engine has this one).
    fn statement_cache_capacity(&mut self, n: usize);

    /// How long an in-process engine waits for another connection's lock.
    fn busy_timeout(&mut self, _d: Duration) -> bool {
        false
    }

    /// An embedded engine's single-writer mode: one writer connection and `readers` read-only
    /// connections (see [`SingleWriter`]).
    fn single_writer(&mut self, _readers: usize) -> bool {
        false
    }

    /// Whether the single-writer mode is set.
    #[cfg(feature = "_embedded")]
    fn single_writer_mode(&self) -> bool {
        false
    }

    /// Named or unnamed prepared statements on the server.
    #[cfg(feature = "_server")]
    fn statement_cache(&mut self, _mode: crate::StatementCache) -> bool {
        false
    }

    /// A round trip before each checkout.
    #[cfg(feature = "_server")]
    fn test_before_acquire(&mut self, _on: bool) -> bool {
        false
    }

    /// How connections use TLS: the strictest of the modes given applies.
    #[cfg(feature = "_server")]
    fn ssl_mode(&mut self, _mode: crate::SslMode) -> bool {
        false
    }

    /// The password provider, asked each time a connection opens.
    #[cfg(feature = "_server")]
    fn password_provider(&mut self, _p: crate::credentials::PasswordProvider) -> bool {
        false
    }

    /// A PEM file of CA certificates the server's certificate must chain to.
    #[cfg(feature = "_tls")]
    fn ssl_root_cert(&mut self, _path: std::path::PathBuf) -> bool {
        false
    }

    /// A client certificate and its key.
    #[cfg(feature = "_tls")]
    fn ssl_client_cert(&mut self, _cert: std::path::PathBuf, _key: std::path::PathBuf) -> bool {
        false
    }

    /// Checks the engine's settings against their ranges (see `limits.rs`), when the pool is
    /// built.
    fn check(&self) -> Result<()>;
}

/// The settings of an embedded engine (SQLite, Turso): where its database is (`T`) and the
/// options every connection is opened with (`O`), of which the builder reaches two.
#[cfg(feature = "_embedded")]
#[derive(Debug, Clone)]
pub(crate) struct Embedded<T, O> {
    /// Where the database is.
    pub(crate) target: T,
    /// How connections use it.
    pub(crate) options: O,
    /// How many read-only connections the single-writer mode keeps beside its one writer
    /// (`None`: the default pool, where every connection reads and writes).
    pub(crate) readers: Option<usize>,
}

/// The single-writer mode of an embedded engine's pool: its checkouts (`get`, transactions)
/// share one writer connection, queued fairly by the pool instead of waiting in the engine's
/// busy handler, and its readers (`reader`) come from a pool of read-only connections, which
/// WAL never blocks on the writer.
#[cfg(feature = "_embedded")]
pub(crate) struct SingleWriter;

#[cfg(feature = "_embedded")]
impl SingleWriter {
    /// The largest number of readers.
    pub(crate) const MAX_READERS: usize = crate::limits::MAX_POOL_SIZE;

    /// Checks the number of readers.
    pub(crate) fn check(readers: usize) -> Result<()> {
        if readers == 0 {
            return Err(crate::error::SqlMiddlewareDbError::new(
                crate::error::ErrorKind::Config,
                "`single_writer` needs at least one reader",
            ));
        }
        crate::limits::count("single_writer", readers, Self::MAX_READERS)
    }

    /// The error for the mode on a private in-memory database (SQLite's has no WAL, so its
    /// readers would wait for the writer, and the writer for them).
    pub(crate) fn in_memory() -> crate::error::SqlMiddlewareDbError {
        crate::error::SqlMiddlewareDbError::new(
            crate::error::ErrorKind::Config,
            "`single_writer` needs a database file in WAL mode, not an in-memory database",
        )
    }

    /// The settings of the writer's pool and of the readers' pool, from the pool's `opts`: one
    /// writer, `readers` readers; `min_idle` is shared out between them, and both count into
    /// the pool's counters.
    pub(crate) fn split(
        opts: &crate::pooling::PoolOptions,
        readers: usize,
    ) -> (crate::pooling::PoolOptions, crate::pooling::PoolOptions) {
        let mut writer = opts.clone();
        writer.max_size = 1;
        writer.min_idle = opts.min_idle.min(1);
        let mut reader = opts.clone();
        reader.max_size = readers;
        reader.min_idle = opts.min_idle.saturating_sub(1).min(readers);
        (writer, reader)
    }
}

/// The builder's knobs an embedded engine's options hold.
#[cfg(feature = "_embedded")]
pub(crate) trait EmbeddedOptions: Default {
    /// How long a statement waits for a lock another connection holds.
    fn busy_timeout_mut(&mut self) -> &mut Duration;
    /// How many prepared statements each connection keeps.
    fn statement_cache_capacity_mut(&mut self) -> &mut usize;
    /// The two, to check their ranges: the busy timeout and the statement cache's capacity.
    fn knobs(&self) -> (Duration, usize);
}

#[cfg(feature = "_embedded")]
impl<T, O: EmbeddedOptions> Embedded<T, O> {
    /// The defaults, for the database at `target`.
    pub(crate) fn new(target: T) -> Self {
        Self {
            target,
            options: O::default(),
            readers: None,
        }
    }
}

#[cfg(feature = "_embedded")]
impl<T, O: EmbeddedOptions> Knobs for Embedded<T, O> {
    fn statement_cache_capacity(&mut self, n: usize) {
        *self.options.statement_cache_capacity_mut() = n;
    }

    fn busy_timeout(&mut self, d: Duration) -> bool {
        *self.options.busy_timeout_mut() = d;
        true
    }

    fn single_writer(&mut self, readers: usize) -> bool {
        self.readers = Some(readers);
        true
    }

    fn single_writer_mode(&self) -> bool {
        self.readers.is_some()
    }

    fn check(&self) -> Result<()> {
        if let Some(n) = self.readers {
            SingleWriter::check(n)?;
        }
        let (busy, capacity) = self.options.knobs();
        crate::limits::duration("busy_timeout", busy)?;
        crate::limits::statement_cache_capacity(capacity)
    }
}
