//! SQLite connection operations. Every backend folder has a `conn.rs` with the same functions.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::Connection;

use super::config::SqliteOptions;
use super::error::map_err;
use super::exec::{ProgressState, broken};
use super::params::bind_all;
use super::rows::{SqliteRow, changed_columns, collect, columns_of};
use crate::decode::FromRow;
use crate::error::{Result, SqlMiddlewareDbError};
use crate::results::{Columns, ResultSet};
use crate::stmt_cache::StmtCache;
use crate::translation::{PlaceholderStyle, TranslationMode, translate_placeholders};
use crate::value::RowValues;

/// A statement prepared on a SQLite connection: its translated SQL and columns, computed once.
#[derive(Debug)]
pub(crate) struct SqliteStmt {
    sql: Box<str>,
    columns: Arc<Columns>,
    readonly: bool,
    dml: bool,
    /// SQLite's re-prepare count when `columns` was read.
    reprepares: i32,
    /// The schema changed since: the connection's cache describes the statement again.
    stale: AtomicBool,
    slow: AtomicBool,
}

impl SqliteStmt {
    pub(crate) fn columns(&self) -> &Arc<Columns> {
        &self.columns
    }
}

/// One pooled SQLite connection with its per-connection state.
pub(crate) struct SqliteConn {
    /// `None` only while the connection is away on the blocking pool, or lost with it.
    pub(super) conn: Option<Connection>,
    pub(super) interrupt: Arc<rusqlite::InterruptHandle>,
    pub(super) progress: Arc<ProgressState>,
    pub(super) opts: Arc<SqliteOptions>,
    pub(super) broken: bool,
    stmts: StmtCache<SqliteStmt>,
    simple_slow: Arc<[AtomicBool; 3]>,
    /// Every commit on this connection waits for an fsync (see `config::commits_sync`).
    syncing_commits: bool,
}

impl std::fmt::Debug for SqliteConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteConn")
            .field("present", &self.conn.is_some())
            .field("broken", &self.broken)
            .finish()
    }
}

fn run_select(c: &mut Connection, s: &SqliteStmt, p: &[RowValues]) -> Result<ResultSet> {
    let mut st = c.prepare_cached(&s.sql).map_err(map_err)?;
    bind_all(&mut st, p)?;
    let mut rows = st.raw_query();
    let (mut rs, mut fresh) = collect(&mut rows, &s.columns, s.reprepares)?;
    drop(rows);
    if rs.is_empty() && fresh.is_none() {
        fresh = changed_columns(&st, &s.columns, s.reprepares);
        if let Some(cols) = &fresh {
            rs = ResultSet::with_capacity(Arc::clone(cols), 0);
        }
    }
    drop(st);
    if fresh.is_some() {
        s.stale.store(true, Ordering::Relaxed);
    }
    if s.dml {
        rs.rows_affected = usize::try_from(c.changes()).unwrap_or(usize::MAX);
    }
    Ok(rs)
}

fn run_execute(c: &mut Connection, s: &SqliteStmt, p: &[RowValues]) -> Result<usize> {
    let mut st = c.prepare_cached(&s.sql).map_err(map_err)?;
    bind_all(&mut st, p)?;
    if st.column_count() == 0 {
        st.raw_execute().map_err(map_err)?;
    } else {
        let mut rows = st.raw_query();
        while rows.next().map_err(map_err)?.is_some() {}
    }
    drop(st);
    // `changes()` still holds the previous statement's count after DDL: only DML reports one.
    Ok(if s.dml {
        usize::try_from(c.changes()).unwrap_or(usize::MAX)
    } else {
        0
    })
}

fn run_first<T: FromRow>(c: &mut Connection, s: &SqliteStmt, p: &[RowValues]) -> Result<Option<T>> {
    #[cfg(sqlmw_bench_slowdown)]
    bench_slowdown(c, s, p)?;
    let mut st = c.prepare_cached(&s.sql).map_err(map_err)?;
    bind_all(&mut st, p)?;
    let mut rows = st.raw_query();
    match rows.next().map_err(map_err)? {
        Some(row) => {
            let fresh = changed_columns(row.as_ref(), &s.columns, s.reprepares);
            if fresh.is_some() {
                s.stale.store(true, Ordering::Relaxed);
            }
            T::from_row(&SqliteRow {
                row,
                columns: fresh.as_deref().unwrap_or(&s.columns),
            })
            .map(Some)
        }
        None => Ok(None),
    }
}

/// Only with `--cfg sqlmw_bench_slowdown` (`cargo xtask nightly --slowdown`): every fifth lookup
/// on this thread runs its query once more, so the lookup path costs about 20% more on any
/// machine, to show that the nightly comparison flags a regression of that size
/// (docs/BenchTooling.md). No normal build, `--all-features` included, carries it.
#[cfg(sqlmw_bench_slowdown)]
#[inline(never)]
fn bench_slowdown(c: &Connection, s: &SqliteStmt, p: &[RowValues]) -> Result<()> {
    thread_local!(static CALLS: std::cell::Cell<u32> = const { std::cell::Cell::new(0) });
    let n = CALLS.with(|k| {
        k.set(k.get().wrapping_add(1));
        k.get()
    });
    if n.is_multiple_of(5) {
        let mut st = c.prepare_cached(&s.sql).map_err(map_err)?;
        bind_all(&mut st, p)?;
        let mut rows = st.raw_query();
        std::hint::black_box(rows.next().map_err(map_err)?.is_some());
    }
    Ok(())
}

fn run_all<T: FromRow>(c: &mut Connection, s: &SqliteStmt, p: &[RowValues]) -> Result<Vec<T>> {
    let mut st = c.prepare_cached(&s.sql).map_err(map_err)?;
    bind_all(&mut st, p)?;
    let mut rows = st.raw_query();
    let mut out = Vec::new();
    let mut fresh: Option<Option<Arc<Columns>>> = None;
    while let Some(row) = rows.next().map_err(map_err)? {
        let cols =
            fresh.get_or_insert_with(|| changed_columns(row.as_ref(), &s.columns, s.reprepares));
        out.push(T::from_row(&SqliteRow {
            row,
            columns: cols.as_deref().unwrap_or(&s.columns),
        })?);
    }
    if matches!(fresh, Some(Some(_))) {
        s.stale.store(true, Ordering::Relaxed);
    }
    Ok(out)
}

fn run_sql(c: &mut Connection, sql: &str) -> Result<()> {
    c.prepare_cached(sql)
        .and_then(|mut st| st.raw_execute())
        .map(drop)
        .map_err(map_err)
}

fn run_batch(c: &mut Connection, sql: &str, wrap: bool) -> Result<()> {
    if !wrap {
        let was_autocommit = c.is_autocommit();
        return c.execute_batch(sql).map_err(map_err).inspect_err(|_| {
            // A failed script that opened its own transaction must not leave it open: later
            // autocommit statements would silently run inside it and be lost.
            if was_autocommit && !c.is_autocommit() {
                let _ = c.execute_batch("ROLLBACK");
            }
        });
    }
    run_sql(c, "BEGIN IMMEDIATE")?;
    match c.execute_batch(sql) {
        Ok(()) => run_sql(c, "COMMIT").inspect_err(|_| {
            if !c.is_autocommit() {
                let _ = c.execute_batch("ROLLBACK");
            }
        }),
        Err(e) => {
            if !c.is_autocommit() {
                let _ = c.execute_batch("ROLLBACK");
            }
            Err(map_err(e))
        }
    }
}

impl SqliteConn {
    pub(super) fn new(
        conn: Connection,
        progress: Arc<ProgressState>,
        opts: Arc<SqliteOptions>,
        syncing_commits: bool,
    ) -> Self {
        let interrupt = Arc::new(conn.get_interrupt_handle());
        Self {
            conn: Some(conn),
            interrupt,
            progress,
            opts,
            broken: false,
            stmts: StmtCache::new(),
            simple_slow: Arc::new(Default::default()),
            syncing_commits,
        }
    }

    pub(super) fn conn_mut(&mut self) -> Result<&mut Connection> {
        if self.broken {
            return Err(broken());
        }
        self.conn.as_mut().ok_or_else(broken)
    }

    /// Prepares (or finds in this connection's cache) the statement for `sql`.
    pub(crate) async fn prepare(
        &mut self,
        sql: &str,
        mode: TranslationMode,
    ) -> Result<Arc<SqliteStmt>> {
        if let Some(s) = self.stmts.get(sql, mode)
            && !s.stale.load(Ordering::Relaxed)
        {
            return Ok(Arc::clone(s));
        }
        crate::batch::reject_nul(sql)?;
        let translated: Box<str> = match mode {
            TranslationMode::On => translate_placeholders(sql, PlaceholderStyle::Sqlite).into(),
            TranslationMode::Off => sql.into(),
        };
        let owned = translated.clone();
        let stmt = self
            .dispatch(
                true,
                false,
                None,
                |c| describe(c, translated),
                move || move |c: &mut Connection| describe(c, owned),
            )
            .await?;
        let stmt = Arc::new(stmt);
        self.stmts.insert(
            sql,
            mode,
            Arc::clone(&stmt),
            self.opts.statement_cache_capacity,
        );
        Ok(stmt)
    }

    pub(crate) async fn select(
        &mut self,
        s: &Arc<SqliteStmt>,
        p: &[RowValues],
    ) -> Result<ResultSet> {
        self.run(s, p, run_select).await
    }

    pub(crate) async fn execute(&mut self, s: &Arc<SqliteStmt>, p: &[RowValues]) -> Result<usize> {
        self.run(s, p, run_execute).await
    }

    pub(crate) async fn fetch_first<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<SqliteStmt>,
        p: &[RowValues],
    ) -> Result<Option<T>> {
        self.run(s, p, run_first::<T>).await
    }

    pub(crate) async fn fetch_all<T: FromRow + Send + 'static>(
        &mut self,
        s: &Arc<SqliteStmt>,
        p: &[RowValues],
    ) -> Result<Vec<T>> {
        self.run(s, p, run_all::<T>).await
    }

    /// SQLite has no pipelining: the statements run one after another.
    pub(crate) async fn pipeline(
        &mut self,
        s: &Arc<SqliteStmt>,
        sets: &[&[RowValues]],
    ) -> Result<Vec<ResultSet>> {
        let mut out = Vec::with_capacity(sets.len());
        for p in sets {
            out.push(self.select(s, p).await?);
        }
        Ok(out)
    }

    async fn run<R, F>(&mut self, s: &Arc<SqliteStmt>, p: &[RowValues], op: F) -> Result<R>
    where
        R: Send + 'static,
        F: Fn(&mut Connection, &SqliteStmt, &[RowValues]) -> Result<R> + Copy + Send + 'static,
    {
        let owned = Arc::clone(s);
        // A write in autocommit mode commits, and may wait for the disk.
        let syncs = self.syncing_commits && !s.readonly && self.conn_mut()?.is_autocommit();
        self.dispatch(
            s.readonly,
            syncs,
            Some(&s.slow),
            |c| op(c, s, p),
            || {
                let params = p.to_vec();
                move |c: &mut Connection| op(c, &owned, &params)
            },
        )
        .await
    }

    /// Runs a script. Outside a transaction, and when the script has no transaction control of
    /// its own, it runs inside one `BEGIN IMMEDIATE … COMMIT`, so it applies entirely or not at all.
    pub(crate) async fn execute_batch(&mut self, sql: &str, in_tx: bool) -> Result<()> {
        crate::batch::reject_nul(sql)?;
        let autocommit = self.conn_mut()?.is_autocommit();
        let wrap = !in_tx && autocommit && !crate::batch::has_transaction_control(sql);
        let sql = sql.to_owned();
        self.dispatch_blocking(move |c| run_batch(c, &sql, wrap))
            .await
    }

    pub(crate) async fn begin(&mut self) -> Result<()> {
        if !self.conn_mut()?.is_autocommit() {
            return Err(SqlMiddlewareDbError::new(
                crate::error::ErrorKind::TransactionState,
                "a transaction begun by raw SQL is still open on this connection; commit or roll it back first",
            ));
        }
        self.simple("BEGIN IMMEDIATE", 0).await
    }

    /// After a cancelled operation outside a transaction: nothing may stay open.
    pub(crate) async fn recover(&mut self) -> Result<()> {
        self.rollback_if_open();
        Ok(())
    }

    /// Commits; when the engine refuses (a deferred foreign key), the transaction is rolled back
    /// and the error returned, so the connection never stays inside it.
    pub(crate) async fn commit(&mut self) -> Result<()> {
        match self.simple("COMMIT", 1).await {
            Ok(()) => Ok(()),
            Err(e) => {
                self.rollback_if_open();
                Err(e)
            }
        }
    }

    pub(crate) async fn rollback(&mut self) -> Result<()> {
        if self.conn_mut()?.is_autocommit() {
            // The engine already rolled back (e.g. RAISE(ROLLBACK)); nothing left to undo.
            return Ok(());
        }
        self.simple("ROLLBACK", 2).await
    }

    /// `BEGIN IMMEDIATE` (0), `COMMIT` (1) or `ROLLBACK` (2): each remembers, per connection,
    /// whether it ran past the inline budget (a `COMMIT` waiting for fsync does), and is then
    /// offloaded.
    async fn simple(&mut self, sql: &'static str, slot: usize) -> Result<()> {
        let slow = Arc::clone(&self.simple_slow);
        self.dispatch(
            false,
            slot == 1 && self.syncing_commits,
            Some(&slow[slot]),
            |c| run_sql(c, sql),
            || move |c: &mut Connection| run_sql(c, sql),
        )
        .await
    }

    /// A transaction was dropped without commit: roll it back now. SQLite is in-process, so this
    /// is a short local call; it never waits for a lock.
    pub(crate) fn abandon_tx(&mut self) {
        if self.conn.is_none() {
            self.broken = true;
            return;
        }
        self.rollback_if_open();
    }

    /// The connection goes back to the pool: roll back whatever transaction is still open (a raw
    /// `BEGIN`, or one left by a cancelled call). In process, and it never waits for a lock.
    pub(crate) fn on_return(&mut self) {
        self.rollback_if_open();
    }

    pub(super) fn rollback_if_open(&mut self) {
        if let Some(c) = self.conn.as_mut()
            && !c.is_autocommit()
            && c.execute_batch("ROLLBACK").is_err()
        {
            self.broken = true;
        }
    }

    /// Recycle check: the connection must be present, not broken, and outside any transaction.
    pub(crate) fn make_clean(&mut self) -> Result<()> {
        self.rollback_if_open();
        let c = self.conn_mut()?;
        if c.is_autocommit() {
            Ok(())
        } else {
            Err(broken())
        }
    }

    /// Raw access to the rusqlite connection.
    pub(crate) async fn with_raw<R, F>(&mut self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: FnOnce(&mut Connection) -> rusqlite::Result<R> + Send + 'static,
    {
        self.dispatch_blocking(move |c| {
            let was_autocommit = c.is_autocommit();
            let r = f(c).map_err(map_err);
            // Like a failed script: a failed closure must not leave its own transaction open.
            if r.is_err() && was_autocommit && !c.is_autocommit() {
                let _ = c.execute_batch("ROLLBACK");
            }
            r
        })
        .await
    }
}

fn describe(c: &mut Connection, sql: Box<str>) -> Result<SqliteStmt> {
    let st = c.prepare_cached(&sql).map_err(map_err)?;
    let columns = Arc::new(columns_of(&st));
    let readonly = st.readonly();
    let reprepares = st.get_status(rusqlite::StatementStatus::RePrepare);
    drop(st);
    Ok(SqliteStmt {
        dml: crate::batch::is_dml(&sql),
        sql,
        columns,
        readonly,
        reprepares,
        stale: AtomicBool::new(false),
        slow: AtomicBool::new(false),
    })
}
