//! What a Turso statement does beyond its rows, and giving the next borrower a freshly
//! configured session.
//!
//! **What Turso can tell.** Turso 0.8 has no authorizer and no read-only flag on a statement,
//! but it lists the program it compiled: `EXPLAIN` shows every instruction, with the programs of
//! the triggers a statement fires and the views it reads inlined. So, once per statement, when
//! it is prepared (never per call), the program of every query and DML statement is read:
//! - it writes when it opens a write transaction (`Transaction` with a write mode): a `SELECT`
//!   that calls `nextval()`, directly or through a view, writes;
//! - it sets a sequence's value for the session (`SetSequenceCurrval`, what `currval()`
//!   returns), through a trigger too. No statement undoes that, so the connection is discarded
//!   when it goes back to the pool.
//!
//! **What it cannot tell.** Turso applies a `PRAGMA` assignment while compiling it, so its
//! program is empty; schema statements are not run through `EXPLAIN` (compiling
//! `CREATE TEMP …` already opens the temporary database). For these, for scripts and for raw
//! access the checkout is marked, and when the connection goes back the pool checks what a
//! session can hold, at the cost of a few statements then (nothing per call): every session
//! setting against the values of a freshly configured connection (restoring those that differ),
//! the attached databases, the temporary objects, and the session values of the sequences.
//! What cannot be restored (temporary objects, an encryption key, a sequence's session value)
//! makes the pool discard the connection.

use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};
use crate::sql::scanner::{Kind, tokens};

use super::conn::TursoConn;
use super::error::map_err;

/// A checkout mark: check the session when the connection goes back.
pub(crate) const VERIFY: u8 = 1;
/// A checkout mark: the session holds state nothing undoes; discard the connection.
pub(crate) const DISCARD: u8 = 2;

/// What was learnt about a statement when it was prepared.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Effects {
    /// Running it may change the database.
    pub(crate) writes: bool,
    /// The checkout marks ([`VERIFY`], [`DISCARD`]) that preparing or running it sets.
    pub(crate) session: u8,
    /// It may be kept in the statement cache: not a `PRAGMA` (Turso applies an assignment, and
    /// computes a read, while compiling, so a cached one would do nothing, or answer with the
    /// value it was prepared at) and not `EXPLAIN` (which compiles its statement).
    pub(crate) cache: bool,
}

/// The kind of a statement, from its first word: the kinds whose programs are read, and the
/// rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StmtKind {
    /// `SELECT`, `VALUES`, `WITH` without DML.
    Query,
    /// `INSERT`, `UPDATE`, `DELETE`, `REPLACE`, also after `WITH`.
    Dml,
    /// `BEGIN`, `COMMIT`, `END`, `ROLLBACK`, `SAVEPOINT`, `RELEASE`: their effect on the session
    /// (an open transaction) is checked on every return anyway.
    TxControl,
    /// `PRAGMA`, `EXPLAIN`: effects at compile time.
    CompileTime,
    /// Schema statements, `ATTACH`, `VACUUM`, anything else.
    Other,
}

fn kind(sql: &str) -> StmtKind {
    let Some(first) = tokens(sql, super::dialect::DIALECT)
        .find(|t| t.kind == Kind::Word)
        .map(|t| &sql[t.start..t.end])
    else {
        return StmtKind::Other;
    };
    let is = |w: &str| first.eq_ignore_ascii_case(w);
    if is("SELECT") || is("VALUES") {
        StmtKind::Query
    } else if is("INSERT") || is("UPDATE") || is("DELETE") || is("REPLACE") {
        StmtKind::Dml
    } else if is("WITH") {
        if crate::sql::is_dml(sql, super::dialect::DIALECT) {
            StmtKind::Dml
        } else {
            StmtKind::Query
        }
    } else if ["BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE"]
        .iter()
        .any(|w| is(w))
    {
        StmtKind::TxControl
    } else if is("PRAGMA") || is("EXPLAIN") {
        StmtKind::CompileTime
    } else {
        StmtKind::Other
    }
}

/// Whether a statement of `sql` (one statement or a script) sets `query_only`.
fn sets_query_only(sql: &str) -> bool {
    let dialect = super::dialect::DIALECT;
    crate::sql::script::statements(sql, dialect).any(|stmt| {
        let text = |t: &crate::sql::scanner::Token| {
            stmt[t.start..t.end].trim_matches(|c| matches!(c, '"' | '`' | '[' | ']'))
        };
        let mut parts = tokens(stmt, dialect).filter(|t| {
            !matches!(
                t.kind,
                Kind::Space | Kind::LineComment | Kind::BlockComment | Kind::Semi
            )
        });
        if !parts
            .next()
            .is_some_and(|t| text(&t).eq_ignore_ascii_case("PRAGMA"))
        {
            return false;
        }
        // `PRAGMA [schema.]query_only` reads it; anything after the name assigns it.
        let mut rest = parts.skip_while(|t| !text(t).eq_ignore_ascii_case("query_only"));
        rest.next().is_some() && rest.next().is_some()
    })
}

impl TursoConn {
    /// On a single-writer pool's reader, refuses `sql` when it sets `query_only`, which keeps
    /// the reader read-only.
    pub(super) fn check_reader(&self, sql: &str) -> Result<()> {
        if self.opts.read_only && sets_query_only(sql) {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::ReadOnly,
                "a reader of a single-writer pool stays query_only",
            ));
        }
        Ok(())
    }
}

/// Whether every statement of a script is a `PRAGMA`: Turso applies each while compiling it,
/// outside any transaction's reach (a rollback does not undo it), and refuses some inside one
/// (`temp_store`), so such a script gains nothing from running inside a transaction.
pub(crate) fn only_pragmas(sql: &str) -> bool {
    let mut any = false;
    for stmt in crate::sql::script::statements(sql, super::dialect::DIALECT) {
        if crate::sql::is_blank(stmt, super::dialect::DIALECT) {
            continue;
        }
        let first = tokens(stmt, super::dialect::DIALECT)
            .find(|t| t.kind == Kind::Word)
            .map(|t| &stmt[t.start..t.end]);
        if !first.is_some_and(|w| w.eq_ignore_ascii_case("PRAGMA")) {
            return false;
        }
        any = true;
    }
    any
}

/// The longest statement whose program is read (see [`learn`]).
const EXPLAIN_MAX_SQL: usize = 8 * 1024;

/// Learns what `sql` (one statement, placeholders already translated) does: from its program
/// for queries and DML, conservatively for the rest.
pub(crate) async fn learn(conn: &turso::Connection, sql: &str) -> Effects {
    let unknown = Effects {
        writes: true,
        session: VERIFY,
        cache: true,
    };
    match kind(sql) {
        // Turso lists a program in time that grows faster than its length: a statement longer
        // than this (thousands of placeholders) is taken to write and is checked on return.
        StmtKind::Query | StmtKind::Dml if sql.len() > EXPLAIN_MAX_SQL => unknown,
        k @ (StmtKind::Query | StmtKind::Dml) => match program(conn, sql).await {
            Ok(p) => Effects {
                writes: p.writes || k == StmtKind::Dml,
                session: if p.sequence { DISCARD } else { 0 },
                cache: true,
            },
            Err(_) => unknown,
        },
        StmtKind::TxControl => Effects {
            writes: true,
            session: 0,
            cache: true,
        },
        StmtKind::CompileTime => Effects {
            cache: false,
            ..unknown
        },
        StmtKind::Other => unknown,
    }
}

/// What a compiled program does, read from its listing.
struct Program {
    writes: bool,
    sequence: bool,
}

async fn program(conn: &turso::Connection, sql: &str) -> turso::Result<Program> {
    let mut rows = conn.query(format!("EXPLAIN {sql}"), ()).await?;
    let mut p = Program {
        writes: false,
        sequence: false,
    };
    // Columns: addr, opcode, p1, p2, p3, p4, p5, comment.
    while let Some(row) = rows.next().await? {
        let turso::Value::Text(op) = row.get_value(1)? else {
            continue;
        };
        if op == "Transaction" {
            // p2 is the transaction mode: 0 none, 1 read, 2 write, 3 concurrent write.
            if !matches!(row.get_value(3)?, turso::Value::Integer(0 | 1)) {
                p.writes = true;
            }
        } else if op.contains("Sequence") {
            // `nextval`/`setval`: sets the sequence's value for the session.
            p.sequence = true;
        }
    }
    Ok(p)
}

/// The session settings a borrower can change, read through their table-valued pragma
/// functions in one statement (`capture_data_changes_conn` has three columns, the last two
/// describe the first; `hexkey` says whether an encryption key was set).
const SETTINGS: [&str; 15] = [
    "busy_timeout",
    "cache_size",
    "cache_spill",
    "count_changes",
    "foreign_keys",
    "ignore_check_constraints",
    "query_only",
    "require_where",
    "temp_store",
    "synchronous",
    "data_sync_retry",
    "fts_merge_threshold",
    "max_page_count",
    "capture_data_changes_conn",
    "hexkey",
];

/// The settings without a table-valued function, read one statement each.
const SETTINGS_ALONE: [&str; 3] = ["full_column_names", "short_column_names", "cipher"];

/// A session's settings: `(name, value)` in the order of [`SETTINGS`], then [`SETTINGS_ALONE`]
/// (the first value of each; `Null` when a pragma answers with no row).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Settings(Vec<(&'static str, turso::Value)>);

fn settings_sql() -> String {
    let from: Vec<String> = SETTINGS.iter().map(|s| format!("pragma_{s}()")).collect();
    format!("SELECT * FROM {}", from.join(", "))
}

/// How many columns setting `name`'s pragma function returns.
fn width(name: &str) -> usize {
    if name == "capture_data_changes_conn" {
        3
    } else {
        1
    }
}

fn recycle_error(msg: &'static str) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(ErrorKind::ConnectionLost, msg)
}

/// The first value of each row of `sql`.
async fn first_values(conn: &turso::Connection, sql: &str) -> Result<Vec<turso::Value>> {
    let mut rows = conn.query(sql, ()).await.map_err(map_err)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().await.map_err(map_err)? {
        out.push(row.get_value(0).map_err(map_err)?);
    }
    Ok(out)
}

/// Reads the session settings of `conn`.
pub(crate) async fn read_settings(conn: &turso::Connection) -> Result<Settings> {
    let mut out = Vec::with_capacity(SETTINGS.len() + SETTINGS_ALONE.len());
    let mut rows = conn.query(settings_sql(), ()).await.map_err(map_err)?;
    let row = rows
        .next()
        .await
        .map_err(map_err)?
        .ok_or_else(|| recycle_error("the Turso session settings could not be read"))?;
    let mut col = 0;
    for name in SETTINGS {
        out.push((name, row.get_value(col).map_err(map_err)?));
        col += width(name);
    }
    drop(row);
    while rows.next().await.map_err(map_err)?.is_some() {}
    drop(rows);
    for name in SETTINGS_ALONE {
        let v = first_values(conn, &format!("PRAGMA {name}")).await?;
        out.push((name, v.into_iter().next().unwrap_or(turso::Value::Null)));
    }
    Ok(Settings(out))
}

/// What a connection's `after_connect` hook left: the session settings, and how many temporary
/// objects there are.
pub(crate) async fn read_fresh(conn: &turso::Connection) -> Result<(Settings, i64)> {
    let settings = read_settings(conn).await?;
    // Without a temporary database (the hook made no temporary object) there is none to count.
    let temp = match first_values(conn, "SELECT count(*) FROM temp.sqlite_schema")
        .await
        .as_deref()
    {
        Ok([turso::Value::Integer(n), ..]) => *n,
        _ => 0,
    };
    Ok((settings, temp))
}

/// The statement that puts setting `name` back to `v`, when one can.
fn restore_sql(name: &str, v: &turso::Value) -> Option<String> {
    match (name, v) {
        ("hexkey" | "cipher", _) => None,
        (_, turso::Value::Integer(i)) => Some(format!("PRAGMA {name} = {i}")),
        (_, turso::Value::Text(t)) if t.bytes().all(|b| b.is_ascii_alphanumeric()) => {
            Some(format!("PRAGMA {name}('{t}')"))
        }
        _ => None,
    }
}

impl TursoConn {
    /// Checks the session a marked checkout leaves (see the module docs), restores its
    /// settings, and fails (so the pool discards the connection) when it holds what no
    /// statement undoes.
    pub(super) async fn verify_session(&mut self) -> Result<()> {
        // The middleware's own lock waiting: Turso's busy handler off.
        self.set_native_busy(false)?;
        let (baseline, temp_objects) = match &self.fresh {
            Some((settings, temp)) => (settings.clone(), *temp),
            None => (
                self.opts
                    .baseline
                    .get()
                    .ok_or_else(|| {
                        recycle_error("no freshly configured Turso session to compare with")
                    })?
                    .clone(),
                0,
            ),
        };
        let now = read_settings(&self.conn).await?;
        if now != baseline {
            for ((name, want), (_, have)) in baseline.0.iter().zip(&now.0) {
                if want == have {
                    continue;
                }
                let Some(sql) = restore_sql(name, want) else {
                    return Err(recycle_error(
                        "this Turso connection changed a setting no statement restores; it is discarded",
                    ));
                };
                self.conn.execute(sql, ()).await.map_err(map_err)?;
            }
            if read_settings(&self.conn).await? != baseline {
                return Err(recycle_error(
                    "the settings of this Turso connection could not be restored; it is discarded",
                ));
            }
            // Turso compiles some settings into its programs (foreign keys, column names): the
            // cached statements were prepared under the changed ones.
            self.forget_statements();
        }
        // Attached databases and temporary objects.
        let mut rows = self
            .conn
            .query("PRAGMA database_list", ())
            .await
            .map_err(map_err)?;
        let mut temp = false;
        while let Some(row) = rows.next().await.map_err(map_err)? {
            match row.get_value(1).map_err(map_err)? {
                turso::Value::Text(n) if n == "main" => {}
                turso::Value::Text(n) if n == "temp" => temp = true,
                _ => {
                    return Err(recycle_error(
                        "this Turso connection attached a database; it is discarded",
                    ));
                }
            }
        }
        drop(rows);
        // Turso opens the temporary database with any transaction; only objects in it count.
        if temp {
            let n = first_values(&self.conn, "SELECT count(*) FROM temp.sqlite_schema").await?;
            if n.first() != Some(&turso::Value::Integer(temp_objects)) {
                return Err(recycle_error(
                    "this Turso connection made temporary objects; it is discarded",
                ));
            }
        }
        // The session values of the sequences (`currval`), which nothing resets.
        let seqs = first_values(
            &self.conn,
            "SELECT substr(name, 22) FROM sqlite_schema WHERE type = 'table' \
             AND name LIKE '\\_\\_turso\\_internal\\_seq\\_%' ESCAPE '\\' \
             AND name NOT LIKE '\\_\\_turso\\_internal\\_seq\\_\\_\\_turso\\_internal\\_autoincrement\\_%' ESCAPE '\\'",
        )
        .await?;
        for seq in seqs {
            let turso::Value::Text(name) = seq else {
                continue;
            };
            let sql = format!("SELECT currval('{}')", name.replace('\'', "''"));
            match first_values(&self.conn, &sql).await {
                Err(e) if e.message().contains("not yet defined") => {}
                _ => {
                    return Err(recycle_error(
                        "this Turso connection set a sequence's session value; it is discarded",
                    ));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statement_kinds() {
        for (sql, k) in [
            ("SELECT 1", StmtKind::Query),
            ("/* x */ values (1)", StmtKind::Query),
            ("WITH a AS (SELECT 1) SELECT * FROM a", StmtKind::Query),
            (
                "WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a",
                StmtKind::Dml,
            ),
            ("replace into t values (1)", StmtKind::Dml),
            ("-- c\nPRAGMA foreign_keys = OFF", StmtKind::CompileTime),
            ("EXPLAIN PRAGMA cache_size = 1", StmtKind::CompileTime),
            ("SAVEPOINT sp", StmtKind::TxControl),
            ("CREATE TEMP TABLE x (a)", StmtKind::Other),
            ("ATTACH 'x' AS y", StmtKind::Other),
        ] {
            assert_eq!(kind(sql), k, "{sql}");
        }
        assert!(only_pragmas(
            "PRAGMA temp_store = MEMORY; pragma cache_size = 9;"
        ));
        assert!(!only_pragmas("PRAGMA cache_size = 9; SELECT 1"));
        assert!(!only_pragmas(" ; "));
    }

    #[tokio::test]
    async fn the_program_says_what_a_statement_does() {
        let db = turso::Builder::new_local(":memory:").build().await.unwrap();
        let c = db.connect().unwrap();
        c.execute_batch(
            "CREATE TABLE t (a INTEGER); CREATE SEQUENCE s; \
             CREATE VIEW vs AS SELECT nextval('s') AS n; CREATE TABLE f (a INTEGER); \
             CREATE TRIGGER tr AFTER INSERT ON f BEGIN SELECT nextval('s'); END",
        )
        .await
        .unwrap();
        for (sql, writes, session) in [
            ("SELECT a FROM t WHERE a = ?1", false, 0),
            ("SELECT nextval('s')", true, DISCARD),
            ("SELECT n FROM vs", true, DISCARD),
            ("INSERT INTO t VALUES (?1)", true, 0),
            ("INSERT INTO f VALUES (1)", true, DISCARD),
            ("PRAGMA foreign_keys = OFF", true, VERIFY),
            ("CREATE TEMP TABLE x (a)", true, VERIFY),
        ] {
            let e = learn(&c, sql).await;
            assert_eq!((e.writes, e.session), (writes, session), "{sql}");
        }
    }

    #[tokio::test]
    async fn settings_are_read_and_restored() {
        let db = turso::Builder::new_local(":memory:").build().await.unwrap();
        let c = db.connect().unwrap();
        let fresh = read_settings(&c).await.unwrap();
        assert_eq!(fresh.0.len(), SETTINGS.len() + SETTINGS_ALONE.len());
        c.execute("PRAGMA cache_size = 77", ()).await.unwrap();
        c.execute("PRAGMA foreign_keys = ON", ()).await.unwrap();
        let changed = read_settings(&c).await.unwrap();
        assert_ne!(changed, fresh);
        for ((name, want), (_, have)) in fresh.0.iter().zip(&changed.0) {
            if want != have {
                let sql = restore_sql(name, want).unwrap();
                c.execute(sql, ()).await.unwrap();
            }
        }
        assert_eq!(read_settings(&c).await.unwrap(), fresh);
    }
}
