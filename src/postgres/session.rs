//! The session of a PostgreSQL connection: what a checkout may have changed in it (noted as
//! statements are sent), and the reset that puts it back as the pool opened it before the
//! connection is reused.

use std::time::Duration;

use super::config::PgClient;
use super::conn::{Obj, PgConnection};
use super::effects::Session;
use super::open::PgSetup;
use super::stmt::{PgStmt, StatementCache};
use crate::server::held;

impl PgConnection {
    /// Notes what SQL about to be sent does to the connection's state beyond its rows: session
    /// changes, and (outside a `Tx`) transaction control, after which the server's transaction
    /// status is no longer known and is checked or reset before the connection is reused.
    pub(super) fn note_sql(&mut self, sql: &str) {
        let d = super::dialect::of_session(self.backslash_strings);
        let s = super::effects::session_change(sql, d);
        if s > self.session {
            self.session = s;
        }
        if s != Session::Untouched && super::effects::deallocates(sql, d) {
            self.deallocated = true;
        }
        let tx_control = crate::sql::has_transaction_control(sql, d);
        if !self.in_tx && tx_control {
            self.unknown = true;
        }
        if super::effects::may_change_strings(sql, s, d) {
            self.strings_touched = true;
            self.strings_unsure = true;
        } else if tx_control && self.strings_touched {
            // The end of a transaction (or of a savepoint) undoes what it set.
            self.strings_unsure = true;
        }
    }

    /// Notes what a statement about to run does beyond its rows (see [`Self::note_sql`]).
    #[inline]
    pub(super) fn note_stmt(&mut self, s: &PgStmt) {
        if s.session > self.session {
            self.session = s.session;
        }
        if s.deallocates {
            self.deallocated = true;
        }
        if s.tx_control && !self.in_tx {
            self.unknown = true;
        }
    }

    /// Notes that the statement `s` is about to run: when it may change how the session reads
    /// quotes, the session's `standard_conforming_strings` is read again after the call.
    #[inline]
    pub(super) fn note_strings(&mut self, s: &PgStmt) {
        if s.strings || (s.tx_control && self.strings_touched) {
            self.strings_touched = true;
            self.strings_unsure = true;
        }
    }

    /// Notes that the middleware's own transaction ended: what a statement of it set for the
    /// transaction (`SET LOCAL`), or set and rolled back, no longer holds.
    pub(super) fn note_tx_end(&mut self) {
        if self.strings_touched {
            self.strings_unsure = true;
        }
    }

    /// Reads the session's `standard_conforming_strings` again after a statement that may have
    /// changed it, so that the SQL readers read the next text as the server will. Where it
    /// cannot be read now (an aborted transaction, a lost connection) it stays unsure and is
    /// read after the next call. A changed value also empties the statement cache: a statement
    /// parsed again from its text (the unnamed mode) would be read differently now.
    ///
    /// The same read finds a `client_encoding` other than UTF-8, which anything that changes
    /// the session may set too: it is put back, and the error says so (`Unsupported`; see
    /// `open::session_text`).
    pub(super) async fn reread_strings(&mut self) -> crate::error::Result<()> {
        if self.in_flight {
            return Ok(());
        }
        let Some(o) = self.obj.as_ref() else {
            return Ok(());
        };
        // A dropped call leaves the connection to be replaced (the answer still on its way).
        self.in_flight = true;
        let r = super::open::session_text(&o.client).await;
        let Ok(now) = r else {
            self.in_flight = false;
            return Ok(());
        };
        let refused = match &now.other_encoding {
            Some(was) => Some(super::open::encoding_back(&o.client, was).await),
            None => None,
        };
        self.in_flight = false;
        // Read again before the next statement when it could not be put back.
        self.strings_unsure = refused.as_ref().is_some_and(|(_, back)| !back);
        if now.backslash_strings != self.backslash_strings {
            self.backslash_strings = now.backslash_strings;
            if let Some(o) = self.obj.as_mut() {
                o.stmts.clear();
            }
        }
        match refused {
            Some((e, _)) => Err(e),
            None => Ok(()),
        }
    }
}

/// Back to the session the pool opened, as `DISCARD ALL` does, except that the statements
/// prepared through the protocol stay: tokio-postgres keeps the named statements of its type
/// lookups for the life of the client, and `DEALLOCATE ALL` would leave it running statements
/// that no longer exist (`26000`) on every later lookup. Settings and role, cursors, listeners,
/// advisory locks, cached plans, temporary objects and sequence state are reset; the query
/// ends by listing the `PREPARE`d statements (deallocated by name next, when there are any)
/// and counting the settings (see [`reset_session`]). No procedural code: a `DO` block would load
/// PL/pgSQL, whose settings a fresh session does not have.
pub(super) const RESET: &str = "CLOSE ALL; SET SESSION AUTHORIZATION DEFAULT; RESET ALL; \
UNLISTEN *; SELECT pg_advisory_unlock_all(); DISCARD PLANS; DISCARD TEMP; DISCARD SEQUENCES; \
SELECT name AS prepared FROM pg_prepared_statements WHERE from_sql; \
SELECT count(*) AS settings FROM pg_settings";

/// Runs [`RESET`] (and deallocates what it listed). Returns whether the session is now as the
/// pool opened it: not when the borrower loaded a library (PL/pgSQL is loaded when the
/// connection opens, see `open.rs`), which adds settings nothing can remove; the connection
/// is then closed instead of reused.
async fn reset_session(obj: &PgClient) -> bool {
    let Ok(msgs) = obj.client.simple_query(RESET).await else {
        return false;
    };
    let mut deallocate = String::new();
    let mut settings = None;
    for m in &msgs {
        if let tokio_postgres::SimpleQueryMessage::Row(row) = m {
            match row.columns().first().map(|c| c.name()) {
                Some("prepared") => {
                    if let Some(name) = row.get(0) {
                        deallocate.push_str("DEALLOCATE \"");
                        deallocate.push_str(&name.replace('"', "\"\""));
                        deallocate.push_str("\"; ");
                    }
                }
                Some("settings") => settings = row.get(0).and_then(|n| n.parse::<u64>().ok()),
                _ => {}
            }
        }
    }
    if !deallocate.is_empty() && obj.client.batch_execute(&deallocate).await.is_err() {
        return false;
    }
    obj.settings.is_none_or(|opened| settings == Some(opened))
}

/// Before [`RESET`]: the statement cache drops what was prepared after the session changed
/// (parsed under a changed `search_path`, which a prepared statement keeps for life); what
/// was prepared in the configured session stays, so the next borrower does not prepare it
/// again. Named mode also forgets the driver's cached types (its lookup statements stay valid,
/// and every cached statement carries its own types); the unnamed mode keeps them, since its
/// statements find their result types there (see `describe`).
fn forget_changed_session(obj: &mut PgClient) {
    let stale: Vec<(Box<str>, crate::translation::TranslationMode)> = obj
        .stmts
        .values()
        .filter(|s| !s.clean)
        .map(|s| (s.key.clone(), s.mode))
        .collect();
    for (key, mode) in stale {
        obj.stmts.remove(&key, mode);
    }
    if obj.opts.statement_cache == StatementCache::Named {
        obj.client.clear_type_cache();
    }
}

/// Cleans `obj` as it goes back to the pool, in a task of its own bounded by `bound`: the
/// `ROLLBACK`, and when `reset` the session reset and the `after_connect` hook again. A
/// connection whose cleaning does not finish is detached and closed (see
/// `server::held::Cleaning`).
pub(super) fn clean(obj: Obj, reset: bool, bound: Duration) {
    held::clean_in_background(
        obj,
        bound,
        |_| {},
        move |obj| {
            Box::pin(async move {
                let mut ok = obj.client.batch_execute("ROLLBACK").await.is_ok();
                if ok && reset {
                    forget_changed_session(obj);
                    ok = reset_session(obj).await;
                    // The reset undid the `after_connect` hook's work too: it runs again.
                    if ok {
                        let hook = &obj.opts.after_connect;
                        ok = PgSetup(&obj.client).run(hook).await.is_ok();
                    }
                }
                ok
            })
        },
    );
}
