//! A MySQL connection being opened: the connect (TLS as the mode asks), the session's first
//! state, and the pool's `after_connect` hook (and MySQL's own checks after it) on a connection
//! whose statements are prepared for the call and closed after it.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use mysql_async::Value;
use mysql_async::prelude::Queryable;

use super::config::{Endpoint, MyClient, MyManager};
use super::counts::CountRule;
use super::error::map_err;
use super::exec::{count_rows, select_rows};
use super::params::to_values;
use super::rows::columns_of;
use super::stmt::{Effects, MyStmt};
use super::tx::in_transaction;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::ResultSet;
use crate::stmt_cache::StmtCache;
use crate::value::RowValues;

/// Opens a pooled connection (the manager's `create`): the connect (TLS as the mode asks; see
/// [`Endpoint::connect`]), the server's `max_allowed_packet` and the session's mark (see
/// `deadline::Mark`), the `after_connect` hook (see [`set_up`]), and what the session then is.
pub(super) async fn create(m: &MyManager) -> Result<Box<MyClient>> {
    // Boxed: a connect is rare, and its future is deep.
    let super::hosts::Opened {
        mut conn,
        host,
        generation,
    } = Box::pin(super::hosts::connect(&m.endpoint)).await?;
    // A connection of a multi-host pool keeps the endpoint of its own host (for a `KILL QUERY`).
    let endpoint = if m.endpoint.hosts.list.len() > 1 {
        Arc::new(Endpoint {
            opts: super::hosts::one_host(&m.endpoint.opts, &m.endpoint.hosts, host),
            tls: m.endpoint.tls.clone(),
            password: m.endpoint.password.clone(),
            hosts: m.endpoint.hosts.clone(),
            book: Arc::clone(&m.endpoint.book),
            reader: m.endpoint.reader,
        })
    } else {
        Arc::clone(&m.endpoint)
    };
    // The session's `sql_mode` too: the readers of SQL follow how it reads quotes from the
    // first statement on (the `after_connect` hook's included).
    let (max_packet, sql_mode): (Option<u64>, Option<String>) = conn
        .query_first("SELECT @@max_allowed_packet, @@session.sql_mode")
        .await
        .map_err(super::error::map_err)?
        .unwrap_or((None, None));
    let server_quotes = super::dialect::quotes_of(sql_mode.as_deref().unwrap_or(""));
    let mark = super::deadline::Mark::record(&mut conn).await?;
    let mut c = Box::new(MyClient {
        conn,
        stmts: StmtCache::new(),
        opts: Arc::clone(&m.opts),
        returned_at: None,
        flushed: Default::default(),
        id: {
            static NEXT: AtomicU64 = AtomicU64::new(1);
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        },
        generation: 0,
        facts: super::check::Facts::fresh(server_quotes),
        autocommit_off: false,
        pending_close: Vec::new(),
        dirty: false,
        broken: false,
        epoch: m
            .opts
            .schema_epoch
            .load(std::sync::atomic::Ordering::Acquire),
        max_packet: max_packet.unwrap_or(u64::MAX),
        server_quotes,
        #[cfg(feature = "tracing")]
        host: (
            Arc::from(endpoint.opts.ip_or_hostname()),
            endpoint.opts.tcp_port(),
        ),
        endpoint,
        mark,
        node: (host, generation),
    });
    Box::pin(set_up(&mut c)).await?;
    // What the session now is, for the checks after statements that may change it.
    if let Some(e) = Box::pin(super::check::session(&mut c, false))
        .await?
        .error()
    {
        return Err(e);
    }
    Ok(c)
}

impl Endpoint {
    /// Opens a connection to the server the endpoint's options name (see [`Self::connect_to`]).
    pub(crate) async fn connect(&self) -> Result<mysql_async::Conn> {
        self.connect_to(&self.opts).await
    }

    /// Opens a connection to the server `opts` names (one host of a multi-host URL): with TLS
    /// as the mode asks, and for `prefer`, in plain text when the server offers no TLS. With a
    /// password provider, the provider's password for this host, port, user and database
    /// (asked now, bounded by the create timeout) replaces the configuration's.
    pub(crate) async fn connect_to(&self, opts: &mysql_async::Opts) -> Result<mysql_async::Conn> {
        if !self.password.is_set() {
            return self.connect_with(opts).await;
        }
        let login = crate::credentials::Login::new(
            crate::error::Backend::Mysql,
            (Arc::from(opts.ip_or_hostname()), opts.tcp_port()),
            opts.user(),
            opts.db_name(),
            self.reader,
        );
        let with = match self.password.fetch(login).await? {
            None => opts.clone(),
            Some(p) => mysql_async::OptsBuilder::from_opts(opts.clone())
                .pass(Some(p.expose()))
                .into(),
        };
        self.connect_with(&with).await
    }

    /// Opens a connection with `opts` (the password already chosen): with TLS as the mode asks.
    async fn connect_with(&self, opts: &mysql_async::Opts) -> Result<mysql_async::Conn> {
        #[cfg(feature = "mysql-tls")]
        if self.tls.mode() != crate::SslMode::Disable {
            return self.tls.connect(opts).await;
        }
        mysql_async::Conn::new(opts.clone())
            .await
            .map_err(super::error::map_err)
    }
}

/// Runs the pool's `after_connect` hook on a connection being opened (and again after a session
/// reset; see `setup.rs`), then MySQL's own checks. What the hook leaves is the session the next
/// reset goes back to, then runs the hook again.
pub(crate) async fn set_up(c: &mut MyClient) -> Result<()> {
    // A fresh or reset session reads quotes as the server's global mode says.
    c.facts.quotes = c.server_quotes;
    if c.opts.reader {
        // Before the hook, and again after every reset (which puts back the server's default):
        // a write through a reader fails with `ReadOnly` (1792), a transaction begun on it is
        // read-only too.
        c.conn
            .query_drop("SET SESSION TRANSACTION READ ONLY")
            .await
            .map_err(map_err)?;
    }
    if c.opts.causal_reads {
        // Before the hook, and again after every reset (which clears it).
        super::health::causal_reads(&mut c.conn).await?;
    }
    let hook = c.opts.after_connect.clone();
    let ran = hook.set_up(&mut MySetup(c)).await?;
    // What the session now is (the checks after statements that may change it compare with
    // it), and what the hook may not change.
    let found = super::check::session(c, false).await?;
    if found.autocommit_was_off {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::TransactionState,
            "the after_connect hook turned autocommit off, or completion_type to chain or release; the middleware commits every statement outside a Tx, so the connection is closed",
        ));
    }
    if let Some(was) = found.charset_was {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::Config,
            format!(
                "the after_connect hook set the character set to {was}; the middleware binds and reads text as UTF-8, so the connection is closed"
            ),
        ));
    }
    if ran {
        // The hook's statements were closed after it; nothing it did is left to reset.
        c.dirty = false;
    }
    Ok(())
}

/// A connection being opened, as the pool's `after_connect` hook drives it: statements are
/// prepared for the call and closed after it.
pub(crate) struct MySetup<'a>(&'a mut MyClient);

impl MySetup<'_> {
    /// The statement for `sql`, described for one run (closed again at once: each run prepares
    /// its own, as the unnamed mode does). A text with a backslash or a double quote is read as
    /// the session's `sql_mode` reads it now, which the hook itself may have changed; a text
    /// without either reads the same in every mode.
    async fn statement(&mut self, sql: &str, params: &[RowValues]) -> Result<(MyStmt, Vec<Value>)> {
        crate::sql::reject_nul(sql)?;
        let d = if sql.contains(['\\', '"']) {
            let mode: Option<String> = self
                .0
                .conn
                .query_first("SELECT @@session.sql_mode")
                .await
                .map_err(map_err)?;
            super::dialect::of_session(super::dialect::quotes_of(mode.as_deref().unwrap_or("")))
        } else {
            self.0.facts.dialect()
        };
        let super::dialect::MysqlText {
            text,
            order,
            params: n,
        } = super::dialect::to_mysql(sql, d)?;
        let c = &mut *self.0;
        let st = c.conn.prep(text.as_ref()).await.map_err(map_err)?;
        let s = MyStmt {
            stmt: None,
            text: text.as_ref().into(),
            columns: Arc::new(columns_of(&st.columns())),
            order,
            params: if n == 0 {
                usize::from(st.num_params())
            } else {
                n
            },
            dml: crate::sql::is_dml(&text, d),
            fx: Effects {
                writes: true,
                plain: true,
                ddl: false,
                routine: false,
            },
            count: CountRule::of(&text, d),
            conn: (0, 0),
            // Run once, as it was read.
            read_as: None,
        };
        c.conn.close(st).await.map_err(map_err)?;
        s.check(params)?;
        let values = to_values(params, s.order.as_deref(), self.0.facts.utc)?;
        Ok((s, values))
    }
}

impl crate::setup::Setup for MySetup<'_> {
    fn execute_batch<'a>(&'a mut self, sql: &'a str) -> crate::setup::BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            crate::sql::reject_nul(sql)?;
            self.0.conn.query_drop(sql).await.map_err(map_err)
        })
    }

    fn dml<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [RowValues],
    ) -> crate::setup::BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let (s, values) = self.statement(sql, params).await?;
            count_rows(self.0, &s, values).await
        })
    }

    fn select<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [RowValues],
    ) -> crate::setup::BoxFuture<'a, Result<ResultSet>> {
        Box::pin(async move {
            let (s, values) = self.statement(sql, params).await?;
            select_rows(self.0, &s, values).await
        })
    }

    fn in_transaction(&mut self) -> crate::setup::BoxFuture<'_, Result<bool>> {
        Box::pin(async move { Ok(in_transaction(&self.0.conn)) })
    }

    fn skip_stats(&mut self) {
        let c = &mut *self.0;
        let cache = c.stmts.stats(c.opts.statement_cache_capacity);
        c.flushed.skip(cache, Default::default());
    }
}
