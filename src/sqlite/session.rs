//! The session of a pooled SQLite connection, known from the engine: the authorizer installed
//! on every connection records what each statement being prepared will do to the session
//! ([`Effects`]); when the checkout ends, the pool puts back the settings a fresh connection of
//! the pool has ([`Fresh`]) or discards the connection.
//!
//! The authorizer runs only while SQLite prepares a statement (a statement served from a cache
//! was authorized when it was prepared, and keeps what was learnt then): the per-call path does
//! not pay for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::Connection;
use rusqlite::config::DbConfig;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::types::Value;

use super::busy::install_busy_handler;
use super::conn::SqliteConn;
use super::error::map_err;
use super::offload::broken;
use crate::error::Result;
use crate::sqlite_family::session::{Effects, RESTORABLE, pragma_effects};

/// What the authorizer saw since it was last taken, shared by the connection and its
/// authorizer.
#[derive(Debug, Default)]
pub(crate) struct SessionCell(AtomicU64);

impl SessionCell {
    /// What was seen since the last `take`, and a fresh start.
    #[inline]
    pub(crate) fn take(&self) -> Effects {
        Effects(self.0.swap(0, Ordering::Relaxed))
    }

    /// Adds `e` to what was seen.
    #[inline]
    pub(crate) fn add(&self, e: Effects) {
        self.0.fetch_or(e.0, Ordering::Relaxed);
    }
}

/// What one authorized action does to the session.
fn effects_of(ctx: &AuthContext<'_>) -> Effects {
    use AuthAction as A;
    let temp_schema = ctx
        .database_name
        .is_some_and(|d| d.eq_ignore_ascii_case("temp"));
    let bits = match ctx.action {
        A::Pragma {
            pragma_name,
            pragma_value,
        } => pragma_effects(pragma_name, pragma_value.is_some(), ctx.database_name).0,
        A::Attach { .. } | A::Detach { .. } => Effects::ATTACH,
        A::CreateTempTable { .. }
        | A::CreateTempIndex { .. }
        | A::CreateTempTrigger { .. }
        | A::CreateTempView { .. } => Effects::TEMP | Effects::SCHEMA,
        A::CreateTable { .. }
        | A::CreateIndex { .. }
        | A::CreateTrigger { .. }
        | A::CreateView { .. }
        | A::CreateVtable { .. } => {
            if temp_schema {
                Effects::TEMP | Effects::SCHEMA
            } else {
                Effects::SCHEMA
            }
        }
        A::DropTable { .. }
        | A::DropIndex { .. }
        | A::DropTrigger { .. }
        | A::DropView { .. }
        | A::DropTempTable { .. }
        | A::DropTempIndex { .. }
        | A::DropTempTrigger { .. }
        | A::DropTempView { .. }
        | A::DropVtable { .. }
        | A::AlterTable { .. } => Effects::SCHEMA,
        // Creating any temporary object writes the temp schema table; SQLite authorizes that
        // write too. (A trigger named `temp.x` on a main table is reported by its table's
        // schema as `SQLITE_CREATE_TRIGGER` in `main`; this write tells the truth.)
        A::Insert { table_name }
            if table_name.eq_ignore_ascii_case("sqlite_temp_master")
                || table_name.eq_ignore_ascii_case("sqlite_temp_schema") =>
        {
            Effects::TEMP | Effects::SCHEMA
        }
        A::Transaction { .. } | A::Savepoint { .. } => Effects::TX,
        // A loaded extension may register anything on the connection.
        A::Function { function_name } if function_name.eq_ignore_ascii_case("load_extension") => {
            Effects::OTHER_SETTING
        }
        _ => 0,
    };
    Effects(bits | Effects::SEEN)
}

/// Installs the pool's authorizer on `c`: it allows every action, and records what each does
/// to the session into `cell`. Installing an authorizer expires the connection's prepared
/// statements (each re-prepares at its next step), so this happens when the connection opens,
/// and again only when raw access replaced it.
pub(crate) fn install_authorizer(c: &Connection, cell: &Arc<SessionCell>) -> Result<()> {
    let cell = Arc::clone(cell);
    c.authorizer(Some(move |ctx: AuthContext<'_>| {
        cell.add(effects_of(&ctx));
        Authorization::Allow
    }))
    .map_err(map_err)
}

/// Connection flags (`sqlite3_db_config`) put back after raw access.
const DB_CONFIG: [DbConfig; 19] = [
    DbConfig::SQLITE_DBCONFIG_ENABLE_FKEY,
    DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER,
    DbConfig::SQLITE_DBCONFIG_ENABLE_FTS3_TOKENIZER,
    DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
    DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
    DbConfig::SQLITE_DBCONFIG_TRIGGER_EQP,
    DbConfig::SQLITE_DBCONFIG_DEFENSIVE,
    DbConfig::SQLITE_DBCONFIG_WRITABLE_SCHEMA,
    DbConfig::SQLITE_DBCONFIG_LEGACY_ALTER_TABLE,
    DbConfig::SQLITE_DBCONFIG_DQS_DML,
    DbConfig::SQLITE_DBCONFIG_DQS_DDL,
    DbConfig::SQLITE_DBCONFIG_ENABLE_VIEW,
    DbConfig::SQLITE_DBCONFIG_LEGACY_FILE_FORMAT,
    DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA,
    DbConfig::SQLITE_DBCONFIG_STMT_SCANSTATUS,
    DbConfig::SQLITE_DBCONFIG_REVERSE_SCANORDER,
    DbConfig::SQLITE_DBCONFIG_ENABLE_ATTACH_CREATE,
    DbConfig::SQLITE_DBCONFIG_ENABLE_ATTACH_WRITE,
    DbConfig::SQLITE_DBCONFIG_ENABLE_COMMENTS,
];

/// What raw access may leave that no setting undoes, in one statement: temporary objects,
/// attached databases, the main database's file (a deserialized image replaces it),
/// application-defined functions and collations, virtual table modules, and the journal and
/// locking modes.
const STATE_SQL: &str = "SELECT (SELECT count(*) FROM temp.sqlite_master), \
     (SELECT count(*) FROM pragma_database_list WHERE name NOT IN ('main', 'temp')), \
     (SELECT file FROM pragma_database_list WHERE name = 'main'), \
     (SELECT count(*) FROM pragma_function_list WHERE builtin = 0), \
     (SELECT count(*) FROM pragma_collation_list), \
     (SELECT count(*) FROM pragma_module_list), \
     (SELECT journal_mode FROM pragma_journal_mode), \
     (SELECT locking_mode FROM pragma_locking_mode)";

/// A freshly configured connection of the pool, as the pool puts its connections back: the
/// value of every restorable pragma (`None` when this build of SQLite lacks it), the
/// connection flags, and what [`STATE_SQL`] reads.
#[derive(Debug)]
pub(crate) struct Fresh {
    pragmas: [Option<i64>; RESTORABLE.len()],
    db_config: [bool; DB_CONFIG.len()],
    limits: [i32; LIMITS.len()],
    state: Vec<Value>,
}

/// Run-time limits (`sqlite3_limit`) put back after raw access.
const LIMITS: [rusqlite::limits::Limit; 12] = {
    use rusqlite::limits::Limit as L;
    [
        L::SQLITE_LIMIT_LENGTH,
        L::SQLITE_LIMIT_SQL_LENGTH,
        L::SQLITE_LIMIT_COLUMN,
        L::SQLITE_LIMIT_EXPR_DEPTH,
        L::SQLITE_LIMIT_COMPOUND_SELECT,
        L::SQLITE_LIMIT_VDBE_OP,
        L::SQLITE_LIMIT_FUNCTION_ARG,
        L::SQLITE_LIMIT_ATTACHED,
        L::SQLITE_LIMIT_LIKE_PATTERN_LENGTH,
        L::SQLITE_LIMIT_VARIABLE_NUMBER,
        L::SQLITE_LIMIT_TRIGGER_DEPTH,
        L::SQLITE_LIMIT_WORKER_THREADS,
    ]
};

fn read_pragma(c: &Connection, name: &str) -> Result<Option<i64>> {
    let mut st = c.prepare(&format!("PRAGMA {name}")).map_err(map_err)?;
    let mut rows = st.query([]).map_err(map_err)?;
    match rows.next().map_err(map_err)? {
        Some(r) => Ok(r.get::<_, i64>(0).ok()),
        None => Ok(None),
    }
}

fn read_state(c: &Connection) -> Result<Vec<Value>> {
    // Cached: it runs at the end of every checkout that used raw access.
    let mut st = c.prepare_cached(STATE_SQL).map_err(map_err)?;
    let n = st.column_count();
    st.query_row([], |r| (0..n).map(|i| r.get::<_, Value>(i)).collect())
        .map_err(map_err)
}

impl Fresh {
    /// Reads `c`, a connection the pool has just configured.
    pub(crate) fn read(c: &Connection) -> Result<Fresh> {
        let mut pragmas = [None; RESTORABLE.len()];
        for (slot, name) in pragmas.iter_mut().zip(RESTORABLE) {
            *slot = read_pragma(c, name)?;
        }
        let mut db_config = [false; DB_CONFIG.len()];
        for (slot, flag) in db_config.iter_mut().zip(DB_CONFIG) {
            *slot = c.db_config(flag).map_err(map_err)?;
        }
        let mut limits = [0; LIMITS.len()];
        for (slot, limit) in limits.iter_mut().zip(LIMITS) {
            *slot = c.limit(limit).map_err(map_err)?;
        }
        Ok(Fresh {
            pragmas,
            db_config,
            limits,
            state: read_state(c)?,
        })
    }

    /// Puts back the restorable pragmas of `which` that differ from the fresh connection's
    /// (`synchronous` as this connection opened with it); a pragma is assigned only when it
    /// differs, since assigning a flag expires every prepared statement of the connection.
    pub(crate) fn restore_pragmas(
        &self,
        c: &Connection,
        which: impl Iterator<Item = usize>,
        sync_level: i64,
    ) -> Result<()> {
        for i in which {
            let name = RESTORABLE[i];
            let target = match name {
                "synchronous" => Some(sync_level),
                // `PRAGMA busy_timeout` replaced the busy handler: the caller installs it again.
                "busy_timeout" => None,
                _ => self.pragmas[i],
            };
            let Some(target) = target else { continue };
            if read_pragma(c, name)? != Some(target) {
                c.execute_batch(&format!("PRAGMA {name} = {target}"))
                    .map_err(map_err)?;
            }
        }
        Ok(())
    }

    /// After raw access: puts back the connection flags and run-time limits, and clears the
    /// hooks a closure may have set (commit, rollback, update, WAL, trace and profile),
    /// restoring SQLite's own automatic checkpoints.
    pub(crate) fn restore_connection(&self, c: &Connection) -> Result<()> {
        for (flag, fresh) in DB_CONFIG.into_iter().zip(self.db_config) {
            if c.db_config(flag).map_err(map_err)? != fresh {
                c.set_db_config(flag, fresh).map_err(map_err)?;
            }
        }
        c.commit_hook(None::<fn() -> bool>).map_err(map_err)?;
        c.rollback_hook(None::<fn()>).map_err(map_err)?;
        c.update_hook(None::<fn(rusqlite::hooks::Action, &str, &str, i64)>)
            .map_err(map_err)?;
        c.wal_hook(None);
        // One call clears `sqlite3_trace_v2` and the legacy trace and profile callbacks alike.
        c.trace_v2(rusqlite::trace::TraceEventCodes::empty(), None);
        for (limit, fresh) in LIMITS.into_iter().zip(self.limits) {
            if c.limit(limit).map_err(map_err)? != fresh {
                c.set_limit(limit, fresh).map_err(map_err)?;
            }
        }
        // SQLite's automatic checkpoints are a WAL hook: assigning the setting installs it again.
        let i = RESTORABLE
            .iter()
            .position(|n| *n == "wal_autocheckpoint")
            .unwrap_or(0);
        if let Some(pages) = self.pragmas[i] {
            c.execute_batch(&format!("PRAGMA wal_autocheckpoint = {pages}"))
                .map_err(map_err)?;
        }
        Ok(())
    }

    /// Whether `c` holds nothing a fresh connection lacks (see [`STATE_SQL`]).
    pub(crate) fn state_is_fresh(&self, c: &Connection) -> Result<bool> {
        Ok(read_state(c)? == self.state)
    }
}

impl SqliteConn {
    /// Puts back the session of a fresh connection of the pool after this checkout changed it
    /// (`effects`); `Ok(false)` when that cannot be done exactly and the connection must go.
    ///
    /// - Pragma assignments the authorizer saw: each restorable one is assigned the fresh
    ///   value again, only if it differs (assigning a flag expires every prepared statement).
    /// - Temporary objects or attachments the authorizer saw: what no setting undoes must
    ///   equal the fresh connection's (a failed `CREATE TEMP …` or `ATTACH` leaves nothing,
    ///   and costs no connection).
    /// - After raw access, which may have done anything: the authorizer is checked (and
    ///   installed again if the closure replaced it, forgetting what was learnt without it;
    ///   every restorable pragma is then compared), the busy and progress handlers are
    ///   installed again, the connection flags and hooks are put back, and what no setting
    ///   undoes (temporary objects, attached databases, functions, collations, modules,
    ///   journal and locking modes) must equal the fresh connection's.
    pub(super) fn restore_session(&mut self, effects: Effects) -> Result<bool> {
        let fresh = Arc::clone(&self.fresh);
        let (cell, level) = (Arc::clone(&self.cell), self.sync_level);
        let capacity = self.opts.statement_cache_capacity;
        let c = self.conn.as_mut().ok_or_else(broken)?;
        let mut pragmas: Vec<usize> = effects.pragmas().collect();
        if effects.has(Effects::RAW) {
            // Is the pool's authorizer still there? It reports any statement prepared.
            cell.take();
            drop(c.prepare("SELECT 1").map_err(map_err)?);
            // What raw SQL assigned is then already in `effects`. If the closure replaced it,
            // the wing knows nothing of what ran meanwhile: it installs it again, forgets what
            // its statement cache learnt without it, and compares every restorable pragma.
            if !cell.take().has(Effects::SEEN) {
                install_authorizer(c, &cell)?;
                self.stmts.clear();
                pragmas = (0..crate::sqlite_family::session::RESTORABLE.len()).collect();
            }
            install_busy_handler(c)?;
            self.progress.reinstall(c)?;
            fresh.restore_connection(c)?;
            c.set_prepared_statement_cache_capacity(capacity);
        } else if effects
            .pragmas()
            .any(|i| crate::sqlite_family::session::RESTORABLE[i] == "busy_timeout")
        {
            install_busy_handler(c)?;
        }
        fresh.restore_pragmas(c, pragmas.into_iter(), level)?;
        let clean = !effects.needs_state_check() || fresh.state_is_fresh(c)?;
        // What the restore itself ran is not a borrower's change.
        cell.take();
        Ok(clean)
    }
}
