//! A statement prepared on one MySQL connection, kept in that connection's cache: what it is,
//! preparing it, and forgetting the cache when the schema changed.

use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use mysql_async::Statement;
use mysql_async::prelude::Queryable;

use super::config::MyClient;
use super::conn::MyConnection;
use super::counts::CountRule;
use super::error::map_err;
use super::rows::columns_of;
use crate::contract::WingStmt;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::Columns;
use crate::server::StatementCache;
use crate::sql::Dialect;
use crate::sql::scanner::QuoteModes;
use crate::translation::TranslationMode;
use crate::value::RowValues;

/// A MySQL statement and what was learnt about it at prepare time.
pub(crate) struct MyStmt {
    /// The server-side statement (`None` in the unnamed mode: prepared, run and closed per
    /// execution).
    pub(super) stmt: Option<mysql_async::Statement>,
    /// The text sent to the server (placeholders rewritten to `?`).
    pub(super) text: Box<str>,
    pub(super) columns: Arc<Columns>,
    /// The parameter each `?` binds (`None`: in order).
    pub(super) order: Option<Box<[u16]>>,
    /// How many parameters the statement takes.
    pub(super) params: usize,
    /// It changes rows: its affected-row count is a number of rows.
    pub(super) dml: bool,
    /// How its affected-row count is read (see `counts.rs`).
    pub(super) count: super::counts::CountRule,
    /// What running it may do beyond its rows.
    pub(super) fx: Effects,
    /// The connection it was prepared on, and that connection's statement generation then.
    pub(super) conn: (u64, u64),
    /// How it was read, for a text that reads otherwise as `sql_mode` changes the quotes (see
    /// [`ReadAs`]); `None` for any other text.
    pub(super) read_as: Option<Box<ReadAs>>,
}

/// How a statement whose text has a backslash or a double quote was read: where its strings
/// and quoted names end, and so its placeholders, depends on the quote flags of `sql_mode`.
/// The server parses the text again whenever it is prepared anew (each run in the unnamed
/// mode; after a reset, or on another connection, in the named mode), as the session reads it
/// then: a held statement read under other flags than the session's now is read again from
/// its SQL first.
#[derive(Debug)]
pub(crate) struct ReadAs {
    pub(super) quotes: QuoteModes,
    pub(super) sql: Box<str>,
    pub(super) mode: TranslationMode,
}

/// What running a statement (or a script) may do beyond its rows, read from its text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Effects {
    /// It may change data (see `session::writes`).
    pub(crate) writes: bool,
    /// It leaves nothing in the session (see `session.rs`).
    pub(crate) plain: bool,
    /// It changes the schema.
    pub(crate) ddl: bool,
    /// It may run a routine (`CALL`, `EXECUTE`) that ends a transaction by itself.
    pub(crate) routine: bool,
}

impl Effects {
    /// The effects of the SQL `text`, read in the session's dialect `d`.
    pub(crate) fn of(text: &str, d: Dialect) -> Self {
        Self {
            writes: super::session::writes(text, d),
            plain: super::session::is_plain(text, d),
            ddl: crate::sql::script::changes_schema(text, d),
            routine: super::session::runs_routine(text, d),
        }
    }
}

impl std::fmt::Debug for MyStmt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MyStmt")
            .field("columns", &self.columns)
            .finish_non_exhaustive()
    }
}

impl WingStmt for MyStmt {
    fn columns(&self) -> &Arc<Columns> {
        &self.columns
    }

    fn writes(&self) -> bool {
        self.fx.writes
    }
}

impl MyStmt {
    /// Checks the parameter count before anything is sent.
    #[inline]
    pub(super) fn check(&self, p: &[RowValues]) -> Result<()> {
        if p.len() == self.params {
            Ok(())
        } else {
            Err(SqlMiddlewareDbError::parameter_count(self.params, p.len()))
        }
    }
}

impl MyConnection {
    /// `s` as it must run now: `None` while the session reads its text as it was read, else
    /// the statement read again from its SQL under the session's quote flags (see [`ReadAs`]).
    #[inline]
    pub(super) async fn read_now(&mut self, s: &MyStmt) -> Result<Option<Arc<MyStmt>>> {
        let Some(r) = s.read_as.as_deref() else {
            return Ok(None);
        };
        if r.quotes == self.client()?.facts.quotes {
            return Ok(None);
        }
        Box::pin(self.prepare_within(&r.sql, r.mode))
            .await
            .map(Some)
    }

    /// [`Wing::prepare`](crate::contract::Wing::prepare) without its time limit.
    pub(super) async fn prepare_within(
        &mut self,
        sql: &str,
        mode: TranslationMode,
    ) -> Result<Arc<MyStmt>> {
        let c = self.client()?;
        let epoch = c.opts.schema_epoch.load(Ordering::Acquire);
        if epoch == c.epoch {
            if let Some(s) = c.stmts.get(sql, mode) {
                return Ok(Arc::clone(s));
            }
        }
        self.in_flight = true;
        let r = self.prepare_new(sql, mode, epoch).await;
        self.in_flight = false;
        r
    }

    /// Prepares a statement the cache does not hold (the call is marked as running: dropped
    /// part-way, the connection is given up).
    pub(super) async fn prepare_new(
        &mut self,
        sql: &str,
        mode: TranslationMode,
        epoch: u64,
    ) -> Result<Arc<MyStmt>> {
        let c = self.client()?;
        if epoch != c.epoch {
            // The schema changed through another connection of the pool: statements cached
            // here may describe tables as they were.
            forget_statements(c).await;
            c.epoch = epoch;
            if let Some(s) = c.stmts.get(sql, mode) {
                return Ok(Arc::clone(s));
            }
        }
        crate::sql::reject_nul(sql)?;
        // Where the session's strings end decides what the text holds.
        let d = c.facts.dialect();
        if crate::sql::is_blank(sql, d) {
            return Err(SqlMiddlewareDbError::blank_sql());
        }
        if crate::sql::script::statements(sql, d)
            .filter(|s| !crate::sql::is_blank(s, d))
            .nth(1)
            .is_some()
        {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::InvalidInput,
                "the SQL text holds more than one statement; run scripts with execute_batch",
            ));
        }
        let super::dialect::MysqlText {
            text,
            order,
            params,
        } = match mode {
            TranslationMode::On => super::dialect::to_mysql(sql, d)?,
            TranslationMode::Off => super::dialect::MysqlText {
                text: Cow::Borrowed(sql),
                order: None,
                params: usize::MAX,
            },
        };
        let st = c.conn.prep(text.as_ref()).await.map_err(map_err)?;
        let server = usize::from(st.num_params());
        let params = if params == usize::MAX {
            server
        } else {
            // The `?`s this translation wrote must be the ones the server counts.
            let written = order.as_ref().map_or(params, |o| o.len());
            if written != server {
                let _ = c.conn.close(st).await;
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::InvalidInput,
                    format!(
                        "the statement has {server} placeholders as MySQL reads it, but {written} as the middleware reads it; write placeholders as $1, $2, …"
                    ),
                ));
            }
            params
        };
        let columns = Arc::new(columns_of(&st.columns()));
        let named = c.opts.statement_cache == StatementCache::Named;
        let stmt = if named {
            Some(st)
        } else {
            // Unnamed: nothing is left on the server between runs.
            c.conn.close(st).await.map_err(map_err)?;
            None
        };
        let read_as = sql.contains(['\\', '"']).then(|| {
            Box::new(ReadAs {
                quotes: c.facts.quotes,
                sql: sql.into(),
                mode,
            })
        });
        let s = Arc::new(MyStmt {
            read_as,
            stmt,
            fx: Effects::of(&text, d),
            count: CountRule::of(&text, d),
            dml: crate::sql::is_dml(&text, d),
            text: text.into(),
            columns,
            order,
            params,
            conn: (c.id, c.generation),
        });
        let evicted = c
            .stmts
            .insert(sql, mode, Arc::clone(&s), c.opts.statement_cache_capacity);
        if let Some(old) = evicted {
            // Closed on the server, unless a reset since dropped it there already.
            if let (Some(st), true) = (old.stmt.clone(), old.conn == (c.id, c.generation)) {
                c.conn.close(st).await.map_err(map_err)?;
            }
        }
        Ok(s)
    }
}

/// The schema changed through `c`: every connection of the pool, this one included, closes
/// its cached statements before it prepares the next one (their columns may have changed).
pub(super) fn schema_changed(c: &mut MyClient) {
    c.opts.schema_epoch.fetch_add(1, Ordering::AcqRel);
}

/// Closes and forgets every cached statement (a statement still held by a caller is prepared
/// again for its next run).
pub(super) async fn forget_statements(c: &mut MyClient) {
    let all: Vec<Statement> = c.stmts.values().filter_map(|s| s.stmt.clone()).collect();
    c.stmts.clear();
    c.generation += 1;
    for st in all {
        let _ = c.conn.close(st).await;
    }
}
