//! A PostgreSQL connection being opened: the connect and the session's first state (the pool
//! manager's `create`), and the pool's `after_connect` hook on it.

use std::sync::Arc;

use futures_util::TryStreamExt;
use tokio_postgres::error::SqlState;

use super::config::{PgClient, PgManager};
use super::error::map_err;
use super::hosts;
use super::params::PgParam;
use super::rows::{collect, columns_of};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::ResultSet;
use crate::stmt_cache::StmtCache;
use crate::translation::{PlaceholderStyle, translate_placeholders_in};
use crate::value::RowValues;

/// Opens a pooled connection (the manager's `create`): the connect to a host of the pool's
/// kind (see `hosts::connect`, TLS included), the `after_connect` hook, and the session's first
/// state (see [`opening_settings`]).
pub(super) async fn create(m: &PgManager) -> Result<Box<PgClient>> {
    let epoch = m.book.epoch();
    let limit = m.host_bound;
    // Boxed: a connect is rare, and its future is deep.
    let opened = Box::pin(hosts::connect(&m.config, m.attrs, &m.book, limit)).await?;
    let client = opened.client;
    // Before the settings are counted: a library the hook loads is part of the fresh session.
    if m.opts.after_connect.is_set() {
        // Boxed, as the connect: the hook's future must not grow every checkout's future.
        Box::pin(PgSetup(&client).run(&m.opts.after_connect)).await?;
    }
    // The opening exchange is part of the connect: bounded by the host's bound too.
    let (mut settings, backslash_strings) = match limit {
        None => opening_settings(&client).await?,
        Some(limit) => tokio::time::timeout(limit, opening_settings(&client))
            .await
            .map_err(|_| {
                SqlMiddlewareDbError::new(
                    ErrorKind::ConnectionLost,
                    format!(
                        "host {} did not finish opening the session within connect_timeout ({limit:?})",
                        opened.host
                    ),
                )
            })??,
    };
    if m.opts.statement_cache == super::stmt::StatementCache::Unnamed {
        // Behind a transaction-mode pooler each transaction may run on another server
        // connection, whose count says nothing about this one.
        settings = None;
    }
    Ok(Box::new(PgClient {
        client,
        stmts: StmtCache::new(),
        opts: Arc::clone(&m.opts),
        returned_at: None,
        flushed: Default::default(),
        connector: m.config.connector.clone(),
        type_lookups: Vec::new(),
        settings,
        id: {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        },
        host: opened.host,
        flags: opened.flags,
        epoch,
        backslash_strings,
    }))
}

/// Whether the session's `standard_conforming_strings` is off, so that a backslash escapes
/// in a plain `'…'` string: the server's, the database's or the role's default, the
/// connection's options or the `after_connect` hook may set it.
pub(super) async fn backslash_strings(
    client: &tokio_postgres::Client,
) -> std::result::Result<bool, tokio_postgres::Error> {
    Ok(session_text(client).await?.backslash_strings)
}

/// How the session reads and writes text now (see [`session_text`]).
pub(super) struct SessionText {
    /// `standard_conforming_strings` is off (see [`backslash_strings`]).
    pub(super) backslash_strings: bool,
    /// `client_encoding`, when it is not UTF-8.
    pub(super) other_encoding: Option<String>,
}

/// Reads `standard_conforming_strings` and `client_encoding` in one round trip. The server
/// converts every text it receives from the client's encoding, bound parameters in the binary
/// format included, and every text it sends into it: with `client_encoding` other than UTF-8,
/// the UTF-8 the middleware binds would be stored as other characters (`é` as `Ã©` under
/// `LATIN1`), and what it reads would not be UTF-8.
pub(super) async fn session_text(
    client: &tokio_postgres::Client,
) -> std::result::Result<SessionText, tokio_postgres::Error> {
    let msgs = client
        .simple_query("SHOW standard_conforming_strings; SHOW client_encoding")
        .await?;
    let mut rows = msgs.iter().filter_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0),
        _ => None,
    });
    let backslash_strings = rows.next() == Some("off");
    let other_encoding = rows
        .next()
        .filter(|e| !e.eq_ignore_ascii_case("UTF8"))
        .map(str::to_owned);
    Ok(SessionText {
        backslash_strings,
        other_encoding,
    })
}

/// Puts a session whose `client_encoding` is `was` back to UTF-8. Returns the error of the
/// call that found it so, and whether it is UTF-8 again (not inside an aborted transaction,
/// say, whose end puts it back: it is read again then).
pub(super) async fn encoding_back(
    client: &tokio_postgres::Client,
    was: &str,
) -> (SqlMiddlewareDbError, bool) {
    let put_back = client
        .simple_query("SET client_encoding = 'UTF8'")
        .await
        .is_ok();
    let e = SqlMiddlewareDbError::new(
        ErrorKind::Unsupported,
        format!(
            "the session's client_encoding was set to {was}; the middleware binds and reads text as UTF-8, so {}",
            if put_back {
                "it was put back to UTF8"
            } else {
                "no statement runs until it is UTF8 again"
            }
        ),
    );
    (e, put_back)
}

impl super::config::Endpoint {
    /// Gives `one` (the settings of the one host `host`; see `hosts::one_host`) the password
    /// provider's password for that host when the pool has one (asked now, bounded by the
    /// create timeout; see `credentials.rs`). Without a provider, `one` keeps the
    /// configuration's password.
    pub(crate) async fn login(
        &self,
        one: &mut tokio_postgres::Config,
        host: &hosts::HostName,
    ) -> Result<()> {
        if !self.password.is_set() {
            return Ok(());
        }
        let login = crate::credentials::Login::new(
            crate::error::Backend::Postgres,
            (Arc::clone(&host.address), host.port),
            one.get_user(),
            one.get_dbname(),
            self.reader,
        );
        if let Some(p) = self.password.fetch(login).await? {
            one.password(p.expose());
        }
        Ok(())
    }
}

/// Part of the session every pooled connection opens with: PL/pgSQL loaded (an empty `DO`
/// block), as the first `DO` block or PL/pgSQL function of any borrower would load it, adding
/// settings that no reset removes. Returns how many settings the session then has (`None`
/// where the server has no PL/pgSQL or no `pg_settings`, as a pooler may not), and whether it
/// reads a backslash in a plain string as an escape (see [`backslash_strings`]): one round
/// trip where the server has both.
async fn opening_settings(
    client: &tokio_postgres::Client,
) -> std::result::Result<(Option<u64>, bool), tokio_postgres::Error> {
    const ASK: &str = "SHOW standard_conforming_strings; SELECT count(*) FROM pg_settings";
    let msgs = match client
        .simple_query(&format!("DO $$BEGIN END$$; {ASK}"))
        .await
    {
        Ok(m) => m,
        Err(e) if e.as_db_error().is_some() => match client.simple_query(ASK).await {
            Ok(m) => m,
            Err(e) if e.as_db_error().is_some() => {
                return Ok((None, backslash_strings(client).await?));
            }
            Err(e) => return Err(e),
        },
        Err(e) => return Err(e),
    };
    let mut rows = msgs.iter().filter_map(|m| match m {
        tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0),
        _ => None,
    });
    let off = rows.next() == Some("off");
    Ok((rows.next().and_then(|n| n.parse().ok()), off))
}

/// A Postgres connection being opened (pooled, a reader's or a `Listener`'s), as the pool's
/// `after_connect` hook drives it: straight on the client, with statements prepared for the
/// call and closed after it (the connection has no statement cache yet).
pub(crate) struct PgSetup<'a>(pub(crate) &'a tokio_postgres::Client);

impl PgSetup<'_> {
    /// Runs `hook` on the connection (see `setup.rs`). A hook that leaves `client_encoding`
    /// other than UTF-8 fails the connection (see [`session_text`]).
    pub(crate) async fn run(mut self, hook: &crate::setup::AfterConnect) -> Result<()> {
        if !hook.set_up(&mut self).await? {
            return Ok(());
        }
        let now = session_text(self.0).await.map_err(map_err)?;
        match now.other_encoding {
            Some(was) => Err(SqlMiddlewareDbError::new(
                ErrorKind::Config,
                format!(
                    "the after_connect hook set client_encoding to {was}; the middleware binds and reads text as UTF-8, so the connection is closed"
                ),
            )),
            None => Ok(()),
        }
    }

    /// `sql` prepared with its placeholders translated, read as the session reads it now: a
    /// text with a backslash asks the session's `standard_conforming_strings` first (the
    /// database's default, the URL's options or the hook itself may have turned it off); a
    /// text without one reads the same either way.
    async fn prepared(&self, sql: &str) -> Result<tokio_postgres::Statement> {
        crate::sql::reject_nul(sql)?;
        let off = sql.contains('\\') && backslash_strings(self.0).await.map_err(map_err)?;
        let lexer = super::dialect::of_session(off).lexer;
        let sql = translate_placeholders_in(sql, PlaceholderStyle::Postgres, lexer);
        self.0.prepare(&sql).await.map_err(map_err)
    }
}

impl crate::setup::Setup for PgSetup<'_> {
    fn execute_batch<'a>(&'a mut self, sql: &'a str) -> crate::setup::BoxFuture<'a, Result<()>> {
        Box::pin(async move {
            crate::sql::reject_nul(sql)?;
            self.0.batch_execute(sql).await.map_err(map_err)
        })
    }

    fn dml<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [RowValues],
    ) -> crate::setup::BoxFuture<'a, Result<u64>> {
        Box::pin(async move {
            let st = self.prepared(sql).await?;
            self.0
                .execute_raw(&st, params.iter().map(PgParam))
                .await
                .map_err(map_err)
        })
    }

    fn select<'a>(
        &'a mut self,
        sql: &'a str,
        params: &'a [RowValues],
    ) -> crate::setup::BoxFuture<'a, Result<ResultSet>> {
        Box::pin(async move {
            let st = self.prepared(sql).await?;
            let rows: Vec<tokio_postgres::Row> = self
                .0
                .query_raw(&st, params.iter().map(PgParam))
                .await
                .map_err(map_err)?
                .try_collect()
                .await
                .map_err(map_err)?;
            collect(&rows, &Arc::new(columns_of(&st)))
        })
    }

    /// A `SAVEPOINT` is refused outside a transaction (with `25P01`): the probe.
    fn in_transaction(&mut self) -> crate::setup::BoxFuture<'_, Result<bool>> {
        Box::pin(async move {
            match self.0.simple_query("SAVEPOINT sqlmw_after_connect").await {
                Err(e) if e.code() == Some(&SqlState::NO_ACTIVE_SQL_TRANSACTION) => Ok(false),
                Err(e) => Err(map_err(e)),
                Ok(_) => Ok(true),
            }
        })
    }

    /// The hook ran outside the statement cache: nothing to skip.
    fn skip_stats(&mut self) {}
}
