//! A server-side prepared statement and its columns, the parameter checks made before a
//! statement is sent, and preparing one (named, or described for the unnamed mode), again
//! after the server refused its cached plan.

use std::sync::{Arc, OnceLock};

use super::conn::PgConnection;
use super::effects::Session;
use super::error::map_err;
use super::rows::columns_of;
use crate::contract::{Wing, WingStmt};
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::results::Columns;
use crate::sql::scanner::Kind;
use crate::translation::{PlaceholderStyle, TranslationMode, translate_placeholders_in};
use crate::value::RowValues;

/// The most parameters one Postgres statement can take (the protocol counts them in 16 bits).
pub(super) const MAX_PARAMS: usize = 65_535;

/// A server-side prepared statement and its columns.
#[derive(Debug)]
pub(crate) struct PgStmt {
    /// The SQL as the caller wrote it: the statement cache's key, with `mode`.
    pub(super) key: Box<str>,
    pub(super) mode: crate::translation::TranslationMode,
    /// The SQL as sent (after translation): what the unnamed statement parses on every run.
    pub(super) text: Box<str>,
    /// The parameter types the server inferred when the statement was described.
    pub(super) param_types: Vec<tokio_postgres::types::Type>,
    /// The server-side named statement; `None` in the unnamed mode
    /// ([`crate::StatementCache::Unnamed`]), where every run parses the text again.
    pub(super) stmt: Option<tokio_postgres::Statement>,
    pub(super) columns: Arc<Columns>,
    /// It changes rows, so the command tag counts changed rows.
    pub(super) dml: bool,
    /// What running it may change in the session (anything but a plain statement, see
    /// `crate::sql::pg_effects`).
    pub(super) session: super::effects::Session,
    /// Prepared while the session was as the pool configured it (so a reset leaves it valid).
    pub(super) clean: bool,
    /// It deallocates prepared statements (`DEALLOCATE`, `DISCARD ALL`).
    pub(super) deallocates: bool,
    /// It holds transaction control (`BEGIN`, `COMMIT`, …).
    pub(super) tx_control: bool,
    /// Running it may change how the session reads quotes (`standard_conforming_strings`; see
    /// `effects::may_change_strings`).
    pub(super) strings: bool,
    /// How the session read quotes when its text was read: whether `standard_conforming_strings`
    /// was off (a backslash escapes in a plain string). `None` for a text without a backslash,
    /// which reads the same either way.
    pub(super) read_as: Option<bool>,
    /// The statement prepared in its place after the server refused its cached plan (a schema
    /// change altered its result type): a handle held across the change runs that one from then
    /// on, instead of being refused and prepared again on every call.
    pub(super) successor: OnceLock<Arc<PgStmt>>,
    /// The connection it was prepared on (`PgClient::id`): a handle held across a connection's
    /// replacement (after a time limit, or a lost connection) is prepared again on the new one.
    pub(super) conn: u64,
}

impl WingStmt for PgStmt {
    fn columns(&self) -> &Arc<Columns> {
        &self.columns
    }

    /// DML writes (also with `RETURNING`), and so may any statement that returns no rows, and
    /// any statement whose effects its text does not prove read-only: a call of a function
    /// other than the known built-ins, `DO`, `CALL` (see `crate::sql::pg_effects`). Only a
    /// plain query that returns rows is a read (a data-changing CTE counts as DML).
    fn writes(&self) -> bool {
        self.dml || self.columns.is_empty() || self.session != super::effects::Session::Untouched
    }
}

/// A statement with more than 65,535 placeholders cannot be prepared (the protocol counts
/// parameter types in 16 bits; the server's answer is unreadable). Only long SQL can hold that
/// many, so short statements are not scanned.
pub(super) fn too_many_placeholders(sql: &str, d: crate::sql::Dialect) -> Result<()> {
    if sql.len() <= 2 * MAX_PARAMS {
        return Ok(());
    }
    let max = crate::sql::scanner::tokens(sql, d)
        .filter(|t| t.kind == Kind::Placeholder)
        .map(|t| sql[t.start + 1..t.end].parse().unwrap_or(usize::MAX))
        .max()
        .unwrap_or(0);
    if max > MAX_PARAMS {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::ParameterCount,
            format!(
                "the statement has placeholders up to ${max}; Postgres accepts at most {MAX_PARAMS} per statement"
            ),
        ));
    }
    Ok(())
}

impl PgStmt {
    /// The statement to run for `s`: `s` itself, or the last statement prepared in its place.
    #[inline]
    pub(super) fn current(s: &Arc<PgStmt>) -> &Arc<PgStmt> {
        let mut s = s;
        while let Some(next) = s.successor.get() {
            s = next;
        }
        s
    }

    /// Checks the parameter count before anything is sent: the server's answer to a wrong count
    /// (or to more than 65,535) is hard to read.
    pub(super) fn check(&self, p: &[RowValues]) -> Result<()> {
        if p.len() > MAX_PARAMS {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::ParameterCount,
                format!(
                    "{} parameters were given; Postgres accepts at most {MAX_PARAMS} per statement (split the statement or use UNNEST with arrays)",
                    p.len()
                ),
            ));
        }
        let expected = self.param_types.len();
        if expected != p.len() {
            return Err(SqlMiddlewareDbError::parameter_count(expected, p.len()));
        }
        Ok(())
    }
}

pub use crate::server::StatementCache;

/// What a statement takes and returns, as the server described it.
struct Described {
    params: Vec<tokio_postgres::types::Type>,
    columns: crate::results::Columns,
}

impl PgConnection {
    /// [`Wing::prepare`](crate::contract::Wing::prepare) without its time limit.
    pub(super) async fn prepare_within(
        &mut self,
        sql: &str,
        mode: TranslationMode,
    ) -> Result<Arc<PgStmt>> {
        if self.needs_rollback || self.in_flight {
            self.repair().await?;
        }
        let cached = match self.obj.as_mut() {
            Some(o) => o.stmts.get(sql, mode).cloned(),
            None => None,
        };
        if let Some(s) = cached {
            self.note_stmt(&s);
            return Ok(s);
        }
        crate::sql::reject_nul(sql)?;
        if self.strings_unsure {
            // Left unsure by a stream, or by a call that could not read it.
            Box::pin(self.reread_strings()).await?;
        }
        // Read as the session reads it (see `PgConnection::backslash_strings`).
        let pg = super::dialect::of_session(self.backslash_strings);
        too_many_placeholders(sql, pg)?;
        let translated = match mode {
            TranslationMode::On => {
                translate_placeholders_in(sql, PlaceholderStyle::Postgres, pg.lexer)
            }
            TranslationMode::Off => std::borrow::Cow::Borrowed(sql),
        };
        let session = super::effects::session_change(&translated, pg);
        let tx_control = crate::sql::has_transaction_control(&translated, pg);
        let deallocates =
            session != Session::Untouched && super::effects::deallocates(&translated, pg);
        let strings = super::effects::may_change_strings(&translated, session, pg);
        // Parsed in the session the pool configured (not after a `SET search_path`, which a
        // prepared statement keeps), so it stays valid across a reset.
        let clean = self.session == Session::Untouched;
        // Noted before it reaches the server: a cancelled prepare may still have run.
        if session > self.session {
            self.session = session;
        }
        self.deallocated |= deallocates;
        if tx_control && !self.in_tx {
            self.unknown = true;
        }
        let unnamed = self
            .obj
            .as_ref()
            .is_some_and(|o| o.opts.statement_cache == StatementCache::Unnamed);
        self.in_flight = true;
        let r = if unnamed {
            self.describe(&translated).await.map(|d| (d, None))
        } else {
            self.client()?
                .prepare(&translated)
                .await
                .map(|st| {
                    let d = Described {
                        params: st.params().to_vec(),
                        columns: columns_of(&st),
                    };
                    (d, Some(st))
                })
                .map_err(map_err)
        };
        self.in_flight = false;
        // A failed prepare is not cached.
        let (described, stmt) = r?;
        let s = Arc::new(PgStmt {
            key: sql.into(),
            mode,
            text: translated.as_ref().into(),
            param_types: described.params,
            columns: Arc::new(described.columns),
            dml: crate::sql::is_dml(&translated, pg),
            strings,
            read_as: sql.contains('\\').then_some(self.backslash_strings),
            session,
            clean,
            deallocates,
            tx_control,
            stmt,
            successor: std::sync::OnceLock::new(),
            conn: self.obj.as_ref().map_or(0, |o| o.id),
        });
        if let Some(o) = self.obj.as_mut() {
            let capacity = o.opts.statement_cache_capacity;
            o.stmts.insert(sql, mode, Arc::clone(&s), capacity);
        }
        Ok(s)
    }

    /// `s` as it runs on this connection: prepared again when it is stale here (see
    /// [`Self::stale_now`]).
    pub(super) async fn here(&mut self, s: &Arc<PgStmt>) -> Result<Arc<PgStmt>> {
        let s = PgStmt::current(s);
        Ok(match self.prepared_again(s).await? {
            Some(again) => again,
            None => Arc::clone(s),
        })
    }

    /// `s` prepared again here when it is stale here (see [`Self::stale_now`]); `None` while
    /// it runs as it is. The runners check `stale_now` first and call this only when it is
    /// not plainly fresh, so the usual path makes no call.
    pub(super) async fn prepared_again(&mut self, s: &PgStmt) -> Result<Option<Arc<PgStmt>>> {
        let stale = match self.stale_now(s) {
            Some(stale) => stale,
            None => Box::pin(self.stale_after_reread(s)).await?,
        };
        if stale {
            Box::pin(self.prepare_within(&s.key, s.mode))
                .await
                .map(Some)
        } else {
            Ok(None)
        }
    }

    /// Whether `s` must be prepared again before it runs here: a named statement prepared on a
    /// connection since replaced (it exists only on the connection that prepared it), or, in
    /// the unnamed mode, a text read while the session read quotes otherwise than it does now
    /// (the server parses the text again on every run, as the session reads it then). `None`
    /// when that depends on the session's setting and the setting is unsure (see
    /// [`Self::stale_after_reread`]).
    #[inline]
    pub(super) fn stale_now(&self, s: &PgStmt) -> Option<bool> {
        let Some(o) = self.obj.as_ref() else {
            return Some(false);
        };
        match (&s.stmt, s.read_as) {
            (Some(_), _) => Some(s.conn != o.id),
            (None, None) => Some(false),
            (None, Some(_)) if self.strings_unsure => None,
            (None, Some(read_as)) => Some(read_as != self.backslash_strings),
        }
    }

    /// [`Self::stale_now`] after the session's setting is read again; stale when it still
    /// cannot be read. A statement about to run that may change the setting leaves it unsure
    /// again, so that it is read after the call as well.
    pub(super) async fn stale_after_reread(&mut self, s: &PgStmt) -> Result<bool> {
        self.reread_strings().await?;
        let stale = self.stale_now(s).unwrap_or(true);
        self.note_strings(s);
        Ok(stale)
    }

    /// The unnamed mode's prepare: learns the statement's parameter types and columns from a
    /// named statement that lives only inside a transaction (its own when none is open), which
    /// a transaction-mode pooler keeps on one server connection; the statement is closed before
    /// the transaction ends, so nothing is left on the server.
    ///
    /// The driver's type lookups happen here too, and only here: for a user-defined type (enum,
    /// domain, composite, arrays of them) tokio-postgres runs named statements of its own,
    /// which it prepares once and keeps for the life of the client. Behind a pooler the next
    /// describe may run on another server connection, where they do not exist. So they live
    /// only inside the describe's transaction as well: the first time the client prepares
    /// them, the describe learns their names and text from the server, and deallocates them
    /// before the transaction ends; every later describe prepares them again under the same
    /// names first. The types the driver learned stay in its cache, where running a statement
    /// finds its result types (after it was sent, when no lookup could be repaired).
    async fn describe(&mut self, sql: &str) -> Result<Described> {
        // Inside a transaction (the crate's, or one raw SQL left open) the describe nests in a
        // savepoint; outside one it brings its own, so that a raw transaction is never ended.
        let own_tx = !self.in_tx && !self.raw_tx_open().await?;
        let Some(obj) = self.obj.as_mut() else {
            return Err(self.client().err().unwrap_or_else(|| {
                SqlMiddlewareDbError::new(ErrorKind::ConnectionLost, "no connection")
            }));
        };
        let c: &mut super::config::PgClient = obj;
        let (client, type_lookups) = (&c.client, &mut c.type_lookups);
        let mut open = String::from(if own_tx { "BEGIN; " } else { "" });
        open.push_str("SAVEPOINT sqlmw_describe");
        for (name, text) in type_lookups.iter() {
            open.push_str("; PREPARE \"");
            open.push_str(name);
            open.push_str("\" AS ");
            open.push_str(text);
        }
        if let Err(e) = client.batch_execute(&open).await {
            if own_tx {
                let _ = client.batch_execute("ROLLBACK").await;
            }
            return Err(map_err(e));
        }
        let prepared = client.prepare(sql).await;
        let failed = prepared.is_err();
        let mut close = String::new();
        if failed {
            // The savepoint keeps the transaction usable for the learning and deallocation.
            close.push_str("ROLLBACK TO SAVEPOINT sqlmw_describe; ");
        }
        let learn = type_lookups.len() < 3
            && match &prepared {
                Ok(st) => st
                    .params()
                    .iter()
                    .chain(st.columns().iter().map(|c| c.type_()))
                    .any(|t| tokio_postgres::types::Type::from_oid(t.oid()).is_none()),
                Err(_) => true,
            };
        // The statement is dropped here (its Close sent before anything that follows).
        let described = prepared
            .map(|st| Described {
                params: st.params().to_vec(),
                columns: columns_of(&st),
            })
            .map_err(map_err);
        let r = async {
            if failed {
                client.batch_execute(&close).await?;
                close.clear();
            }
            if learn {
                // Named statements the client prepared in this transaction and kept (the one
                // described is closed): its type lookups.
                let found = client
                    .simple_query(
                        "SELECT name, statement FROM pg_prepared_statements \
                         WHERE NOT from_sql AND prepare_time >= now()",
                    )
                    .await?;
                for m in found {
                    if let tokio_postgres::SimpleQueryMessage::Row(row) = m {
                        if let (Some(name), Some(text)) = (row.get(0), row.get(1)) {
                            let known = type_lookups.iter().any(|(n, _)| n == name);
                            let plain = name.bytes().all(|b| b.is_ascii_alphanumeric());
                            if !known && plain {
                                type_lookups.push((name.to_owned(), text.to_owned()));
                            }
                        }
                    }
                }
            }
            Ok::<_, tokio_postgres::Error>(())
        }
        .await;
        // The lookups go before the transaction ends.
        for (name, _) in type_lookups.iter() {
            close.push_str("DEALLOCATE \"");
            close.push_str(name);
            close.push_str("\"; ");
        }
        close.push_str(match (own_tx, described.is_ok() && r.is_ok()) {
            (true, true) => "COMMIT",
            (true, false) => "ROLLBACK",
            (false, _) => "RELEASE SAVEPOINT sqlmw_describe",
        });
        let end = client.batch_execute(&close).await;
        if let Err(e) = end {
            if own_tx {
                let _ = client.batch_execute("ROLLBACK").await;
            }
            return Err(map_err(e));
        }
        r.map_err(map_err)?;
        described
    }

    /// After a schema change the server refuses a cached statement whose result type changed
    /// (`0A000 cached plan must not change result type`). Outside a transaction the statement is
    /// prepared again and the call retried once; inside one the error stands (the transaction is
    /// aborted on the server).
    pub(super) fn replannable(&self, e: &SqlMiddlewareDbError) -> bool {
        !self.in_tx && e.driver_code() == Some("0A000") && e.message().contains("cached plan")
    }

    pub(super) async fn replan(&mut self, s: &PgStmt) -> Result<Arc<PgStmt>> {
        if let Some(o) = self.obj.as_mut() {
            o.stmts.remove(&s.key, s.mode);
        }
        let fresh = self.prepare(&s.key, s.mode, None).await?;
        // A handle that still holds `s` runs `fresh` from now on.
        let _ = s.successor.set(Arc::clone(&fresh));
        Ok(fresh)
    }
}
