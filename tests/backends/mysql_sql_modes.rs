//! MySQL/MariaDB: the middleware reads SQL text as the session's `sql_mode` does.
//!
//! Two flags change where a MySQL string or quoted name ends: under `NO_BACKSLASH_ESCAPES` a
//! backslash in a string is a plain byte (`'C:\'` is a whole string), and under `ANSI_QUOTES`
//! `"…"` quotes a name, in which a backslash is a plain byte. Read with the default rules, such
//! a string or name runs on over the rest of the statement: its placeholders would not be
//! rewritten, a session change after it would go unseen (and reach the next borrower), and a
//! `COMMIT` after it would not be refused inside a `Tx`.
//!
//! Each flag is tested set by the session (`SET sql_mode = …`) and as the server's global
//! default (a private server), through the query builder (`one`, `select`, `dml`, `stream`), a
//! prepared statement, a pipeline, a `Tx`, a script and a migration. Prints `mysql_sql_modes mode=M
//! set_by=S checks=N`.
#![cfg(feature = "mysql")]

use futures::TryStreamExt;
use mysql_async::prelude::Queryable;
use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::hook_reads::reading_hook;
use crate::common::mysql;

/// A flag of `sql_mode` that changes how quotes read, and SQL that is only right when read
/// with it: a quoted text ending in a backslash, then a placeholder.
#[derive(Debug, Clone, Copy)]
enum Flag {
    NoBackslashEscapes,
    AnsiQuotes,
}

impl Flag {
    fn name(self) -> &'static str {
        match self {
            Flag::NoBackslashEscapes => "NO_BACKSLASH_ESCAPES",
            Flag::AnsiQuotes => "ANSI_QUOTES",
        }
    }

    /// A one-row `SELECT` of the text `C:\` (as column `p`) and `$1` (as `v`).
    fn select(self) -> &'static str {
        match self {
            Flag::NoBackslashEscapes => "SELECT 'C:\\' AS p, $1 AS v",
            // A name ending in a backslash, then the placeholder.
            Flag::AnsiQuotes => "SELECT \"p\\\" AS p, $1 AS v FROM (SELECT 'C:\\\\' AS `p\\`) AS x",
        }
    }

    /// An `INSERT` of the text `C:\` and `$1`, then a literal `$2` that must stay text.
    fn insert(self) -> &'static str {
        match self {
            Flag::NoBackslashEscapes => "INSERT INTO sm (p, v, note) VALUES ('C:\\', $1, '$2')",
            Flag::AnsiQuotes => {
                "INSERT INTO sm (\"p\\\", v, note) SELECT 'C:\\\\', $1, '$2' FROM DUAL"
            }
        }
    }

    /// A table whose first column is named `p\` under `ANSI_QUOTES` (and `p` otherwise).
    fn table(self) -> &'static str {
        match self {
            Flag::NoBackslashEscapes => {
                "CREATE TABLE sm (id INT AUTO_INCREMENT PRIMARY KEY, p VARCHAR(10), v BIGINT, note VARCHAR(10))"
            }
            Flag::AnsiQuotes => {
                "CREATE TABLE sm (id INT AUTO_INCREMENT PRIMARY KEY, `p\\` VARCHAR(10), v BIGINT, note VARCHAR(10))"
            }
        }
    }

    /// A statement that sets a user variable after the quoted text: a session change.
    fn leak(self) -> &'static str {
        match self {
            Flag::NoBackslashEscapes => "SELECT 'C:\\' AS p, @sm_leak := 42 AS v",
            Flag::AnsiQuotes => {
                "SELECT \"p\\\" AS p, @sm_leak := 42 AS v FROM (SELECT 'C:\\\\' AS `p\\`) AS x"
            }
        }
    }

    /// A script whose second statement is a `COMMIT` after the quoted text.
    fn commit_script(self) -> &'static str {
        match self {
            Flag::NoBackslashEscapes => "SELECT 'C:\\'; COMMIT",
            Flag::AnsiQuotes => "SELECT \"p\\\" FROM (SELECT 1 AS `p\\`) AS x; COMMIT",
        }
    }
}

const FLAGS: [Flag; 2] = [Flag::NoBackslashEscapes, Flag::AnsiQuotes];

/// The session's mode with `flag` added (keeping the rest).
fn set_mode(flag: Flag) -> String {
    format!(
        "SET SESSION sql_mode = CONCAT(@@session.sql_mode, ',{}')",
        flag.name()
    )
}

/// Runs every path on `pool` (one connection), whose sessions read quotes under `flag`;
/// `set_by_session`: the flag is set by each checkout itself. Returns the checks made.
async fn every_path(pool: &ConfigAndPool, flag: Flag, set_by_session: bool) -> usize {
    let mut checks = 0;
    let checkout = || async {
        let mut c = pool.get_connection().await.expect("checkout");
        if set_by_session {
            c.execute_batch(&set_mode(flag))
                .await
                .expect("set sql_mode");
        }
        c
    };
    let want = ("C:\\".to_owned(), 7i64);
    let seven = [RowValues::Int(7)];

    let mut c = checkout().await;
    c.execute_batch("DROP TABLE IF EXISTS sm")
        .await
        .expect("drop");
    c.execute_batch(flag.table()).await.expect("table");

    let one: (String, i64) = c
        .query(flag.select())
        .params(&seven)
        .one()
        .await
        .expect("one");
    assert_eq!(one, want, "query().one() under {}", flag.name());
    checks += 1;

    let rs = c
        .query(flag.select())
        .params(&seven)
        .select()
        .await
        .expect("select");
    assert_eq!(rs.len(), 1);
    assert_eq!(
        rs.results[0].get("v"),
        Some(&RowValues::Int(7)),
        "select() under {}",
        flag.name()
    );
    checks += 1;

    let mut st = c.prepare(flag.select()).await.expect("prepare");
    let prepared: (String, i64) = st.one(&seven).await.expect("prepared one");
    assert_eq!(prepared, want, "prepare().one() under {}", flag.name());
    checks += 1;

    let streamed: Vec<(String, i64)> = c
        .query(flag.select())
        .params(&seven)
        .stream()
        .try_collect()
        .await
        .expect("stream");
    assert_eq!(
        streamed,
        vec![want.clone()],
        "stream() under {}",
        flag.name()
    );
    checks += 1;

    let n = c
        .query(flag.insert())
        .params(&seven)
        .dml()
        .await
        .expect("dml");
    assert_eq!(n, 1, "dml() under {}", flag.name());
    let sets: [&[RowValues]; 2] = [&[RowValues::Int(8)], &[RowValues::Int(9)]];
    c.pipeline(flag.insert(), &sets).await.expect("pipeline");
    checks += 2;

    {
        let mut tx = c.begin().await.expect("begin");
        tx.query(flag.insert())
            .params(&[RowValues::Int(10)])
            .dml()
            .await
            .expect("insert in tx");
        // A COMMIT after the quoted text is still transaction control: refused, and the
        // transaction is rolled back, the row with it.
        let e = tx
            .execute_batch(flag.commit_script())
            .await
            .expect_err("COMMIT inside a Tx");
        assert_eq!(e.kind(), ErrorKind::TransactionState, "{e}");
        tx.rollback().await.expect("rollback");
        checks += 1;
    }
    let rows: Vec<(i64, String)> = c
        .query("SELECT v, note FROM sm ORDER BY v")
        .all()
        .await
        .expect("rows");
    // The placeholder bound, and the `'$2'` after it stayed text; the Tx's row is gone.
    assert_eq!(
        rows,
        [7, 8, 9].map(|v| (v, "$2".to_owned())),
        "rows written under {}",
        flag.name()
    );
    checks += 1;

    // A session change after the quoted text is seen: the next borrower does not get it.
    let leaked: (String, i64) = c.query(flag.leak()).one().await.expect("leak");
    assert_eq!(leaked, ("C:\\".to_owned(), 42));
    drop(c);
    let mut next = pool.get_connection().await.expect("next checkout");
    let left: (Option<i64>,) = next.query("SELECT @sm_leak").one().await.expect("@sm_leak");
    assert_eq!(
        left,
        (None,),
        "a user variable set under {} reached the next borrower",
        flag.name()
    );
    next.execute_batch("DROP TABLE sm").await.expect("drop");
    checks + 1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_sql_mode_decides_how_its_sql_is_read() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        for flag in FLAGS {
            let pool = ConfigAndPool::mysql(&url)
                .max_size(1)
                .build()
                .await
                .expect("pool");
            let checks = every_path(&pool, flag, true).await;
            println!(
                "mysql_sql_modes mode={} set_by=session checks={checks}",
                flag.name()
            );
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_servers_default_sql_mode_decides_how_its_sql_is_read() {
    let _group = groups::enter("mysql");
    let base = tokio::task::spawn_blocking(mysql::start_private_server)
        .await
        .expect("start task")
        .unwrap_or_else(|e| panic!("a private MariaDB/MySQL server is needed for this test: {e}"));
    for flag in FLAGS {
        let mut admin = mysql::raw_conn(&base).await;
        let global: Option<String> = admin
            .query_first("SELECT @@global.sql_mode")
            .await
            .expect("global sql_mode");
        let global = global.unwrap_or_default();
        admin
            .query_drop(format!(
                "CREATE DATABASE IF NOT EXISTS sql_modes CHARACTER SET utf8mb4;
                 SET GLOBAL sql_mode = CONCAT_WS(',', NULLIF(@@global.sql_mode, ''), '{}')",
                flag.name()
            ))
            .await
            .expect("server default");
        let _ = admin.disconnect().await;
        let url = mysql::url_with_database(&base, "sql_modes");
        let pool = ConfigAndPool::mysql(&url)
            .max_size(1)
            .build()
            .await
            .expect("pool");
        let checks = every_path(&pool, flag, false).await;
        pool.close();
        println!(
            "mysql_sql_modes mode={} set_by=server checks={checks}",
            flag.name()
        );
        let mut admin = mysql::raw_conn(&base).await;
        admin
            .query_drop(format!("SET GLOBAL sql_mode = '{global}'"))
            .await
            .expect("server default back");
        let _ = admin.disconnect().await;
    }
}

/// The `after_connect` hook's statements are read as the session reads them when each runs:
/// here after the hook itself set the flag.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_after_connect_hooks_statements_are_read_as_the_session_reads_them() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        for flag in FLAGS {
            let b = ConfigAndPool::mysql(&url).max_size(1);
            let (b, seen) = reading_hook(b, Some(set_mode(flag)), flag.select());
            let pool = b.build().await.expect("pool");
            let c = pool
                .get_connection()
                .await
                .unwrap_or_else(|e| panic!("[{}] the hook's statement failed: {e}", flag.name()));
            drop(c);
            pool.close();
            assert_eq!(
                *seen.lock().unwrap(),
                [("C:\\".to_owned(), 7i64)],
                "[{}] what the hook read",
                flag.name()
            );
        }
        println!("mysql_sql_modes set_by=after_connect checks=2");
    })
    .await;
}

/// Inside a `Tx`, a script after raw access that set a flag is read as the session reads it:
/// a `COMMIT` after the quoted text is refused, and the transaction's rows are not committed
/// with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_after_raw_access_inside_a_tx_is_read_as_the_session_reads_it() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let pool = ConfigAndPool::mysql(&url)
            .max_size(1)
            .build()
            .await
            .expect("pool");
        let mut c = pool.get_connection().await.expect("checkout");
        c.execute_batch("CREATE TABLE sr (id BIGINT) ENGINE=InnoDB")
            .await
            .expect("table");
        for flag in FLAGS {
            let mut tx = c.begin().await.expect("begin");
            tx.query("INSERT INTO sr VALUES (1)")
                .dml()
                .await
                .expect("insert");
            tx.mysql_connection()
                .await
                .expect("raw connection")
                .query_drop(set_mode(flag))
                .await
                .expect("raw set");
            let e = tx
                .execute_batch(flag.commit_script())
                .await
                .expect_err("COMMIT inside a Tx");
            assert_eq!(
                e.kind(),
                ErrorKind::TransactionState,
                "[{}] {e}",
                flag.name()
            );
            tx.rollback().await.expect("rollback");
            let (n,): (i64,) = c
                .query("SELECT count(*) FROM sr")
                .one()
                .await
                .expect("count");
            assert_eq!(n, 0, "[{}] the Tx's row was committed", flag.name());
            c.execute_batch("SET SESSION sql_mode = DEFAULT")
                .await
                .expect("mode back");
        }
        c.execute_batch("DROP TABLE sr").await.expect("drop");
        println!("mysql_sql_modes set_by=raw_inside_tx checks=2");
    })
    .await;
}

/// A migration that sets a quote flag part-way is read statement by statement as the session
/// reads it then: the `;` inside the quoted text does not end a statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_that_sets_a_flag_is_read_as_it_runs() {
    use sql_middleware::migrate::Migrator;
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let pool = ConfigAndPool::mysql(&url)
            .max_size(1)
            .build()
            .await
            .expect("pool");
        for flag in FLAGS {
            let mut c = pool.get_connection().await.expect("checkout");
            // Read with the default rules, each text is cut at the `;` inside its quotes.
            let rest = match flag {
                Flag::NoBackslashEscapes => {
                    "CREATE TABLE mm (n BIGINT, v TEXT);\nINSERT INTO mm VALUES (1, 'C:\\'), (2, 'x;y');\n"
                }
                Flag::AnsiQuotes => {
                    "CREATE TABLE mm (\"n\\\" BIGINT, v TEXT);\nINSERT INTO mm VALUES (1, 'x\"y;z');\n"
                }
            };
            let text = format!("{};\n{rest}", set_mode(flag));
            let m = Migrator::from_files([("0001_flag.sql", text.as_str())])
                .expect("files")
                .table(&format!("history_{}", flag.name().to_lowercase()))
                .expect("table");
            m.run(&mut c)
                .await
                .unwrap_or_else(|e| panic!("[{}] {e}", flag.name()));
            drop(c);
            let mut c = pool.get_connection().await.expect("checkout");
            let rows: Vec<(i64, String)> = c
                .query("SELECT * FROM mm ORDER BY 1")
                .all()
                .await
                .expect("rows");
            let want = match flag {
                Flag::NoBackslashEscapes => vec![(1, "C:\\".to_owned()), (2, "x;y".to_owned())],
                Flag::AnsiQuotes => vec![(1, "x\"y;z".to_owned())],
            };
            assert_eq!(rows, want, "[{}]", flag.name());
            c.execute_batch("DROP TABLE mm").await.expect("drop");
        }
        println!("mysql_sql_modes set_by=migration checks=2");
    })
    .await;
}

/// A held statement whose own run sets `NO_BACKSLASH_ESCAPES` on and off is read, at each run,
/// as the session reads quotes then, with the statement cache named and unnamed: its text is
/// translated again when the session's rules changed since it was read (the server parses it
/// again after the change, as the session reads it then).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_statement_is_read_as_the_session_reads_it_at_each_run() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        // With backslash escapes, `'x\', … -- '` is one string and the mode is set from `$2`;
        // without them the string is `x\`, the mode is set from `$1`, and the rest is a comment.
        // Both readings take both parameters.
        const FLIP: &str = "SET @q = CONCAT($1, $2), @p = 'x\\', SESSION sql_mode = $1 -- ', \
                            SESSION sql_mode = $2";
        let modes = |first: &str, second: &str| {
            [
                RowValues::Text(first.to_owned()),
                RowValues::Text(second.to_owned()),
            ]
        };
        let mut checks = 0;
        for cache in [
            sql_middleware::StatementCache::Named,
            sql_middleware::StatementCache::Unnamed,
        ] {
            let pool = ConfigAndPool::mysql(&url)
                .max_size(1)
                .statement_cache(cache)
                .build()
                .await
                .expect("pool");
            let mut c = pool.get_connection().await.expect("checkout");
            {
                let mut st = c.prepare(FLIP).await.expect("prepare");
                // Each run flips how the next reads it; each way of running meets both.
                for run in 0..10 {
                    let reading = if run % 2 == 0 {
                        "with escapes"
                    } else {
                        "without"
                    };
                    let p = modes("", "NO_BACKSLASH_ESCAPES");
                    let r = match run % 5 {
                        0 => st.dml(&p).await.map(drop),
                        1 => st.select(&p).await.map(drop),
                        2 => st.optional::<(i64,)>(&p).await.map(drop),
                        3 => st.all::<(i64,)>(&p).await.map(drop),
                        _ => st
                            .stream::<(i64,)>(&p)
                            .try_collect::<Vec<_>>()
                            .await
                            .map(drop),
                    };
                    r.unwrap_or_else(|e| panic!("[{cache:?} run {run}] read {reading}: {e}"));
                    checks += 1;
                }
            }
            let (p, mode): (String, String) = c
                .query("SELECT @p, @@session.sql_mode")
                .one()
                .await
                .expect("read back");
            assert_eq!(
                p, "x\\",
                "[{cache:?}] the last run read the text without escapes"
            );
            assert!(
                !mode.contains("NO_BACKSLASH_ESCAPES"),
                "[{cache:?}] the last run set the mode from $1: {mode}"
            );
            checks += 2;
        }
        println!("mysql_sql_modes set_by=held_statement checks={checks}");
    })
    .await;
}

/// A script that sets a quote flag is read as the server reads it: MySQL reads a
/// multi-statement text one statement at a time, so the statements after the flag's `SET` are
/// read with the flag on. Inside a `Tx`, a `COMMIT` after a quoted text is refused (on the old
/// code it committed the Tx's row); outside one, the script runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_sets_a_flag_is_read_as_the_server_reads_it() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let pool = ConfigAndPool::mysql(&url)
            .max_size(1)
            .build()
            .await
            .expect("pool");
        let mut c = pool.get_connection().await.expect("checkout");
        c.execute_batch("CREATE TABLE sf (id BIGINT) ENGINE=InnoDB")
            .await
            .expect("table");
        for flag in FLAGS {
            let mut tx = c.begin().await.expect("begin");
            tx.query("INSERT INTO sf VALUES (1)")
                .dml()
                .await
                .expect("insert");
            let script = format!("{}; {}", set_mode(flag), flag.commit_script());
            let e = tx
                .execute_batch(&script)
                .await
                .expect_err("COMMIT inside a Tx");
            assert_eq!(
                e.kind(),
                ErrorKind::TransactionState,
                "[{}] {e}",
                flag.name()
            );
            tx.rollback().await.expect("rollback");
            let (n,): (i64,) = c
                .query("SELECT count(*) FROM sf")
                .one()
                .await
                .expect("count");
            assert_eq!(n, 0, "[{}] the Tx's row was committed", flag.name());
            // Outside a Tx the same script, without its `COMMIT`, runs in its parts.
            let script = format!(
                "{}; INSERT INTO sf VALUES (2); {}",
                set_mode(flag),
                flag.commit_script().trim_end_matches("; COMMIT")
            );
            c.execute_batch(&script)
                .await
                .unwrap_or_else(|e| panic!("[{}] outside a Tx: {e}", flag.name()));
            let (n, mode): (i64, String) = c
                .query("SELECT count(*), @@session.sql_mode FROM sf")
                .one()
                .await
                .expect("count");
            assert_eq!(n, 1, "[{}] outside a Tx", flag.name());
            assert!(mode.contains(flag.name()), "[{}] {mode}", flag.name());
            c.execute_batch("DELETE FROM sf; SET SESSION sql_mode = DEFAULT")
                .await
                .expect("mode back");
        }
        c.execute_batch("DROP TABLE sf").await.expect("drop");
        println!("mysql_sql_modes set_by=script checks=4");
    })
    .await;
}

/// A script that sets another client character set stops there. MySQL lexes each statement of
/// a multi-statement text in the character set in force when it reaches it: after `SET NAMES
/// gbk`, the bytes of `'中\'` are a whole string (the backslash is the second byte of a GBK
/// character), so a `COMMIT` or a `DELETE` the middleware reads inside that string runs. The
/// script is cut after the `SET`; the session check then puts UTF-8 back and fails the call
/// (`Unsupported`), and the rest never runs. On the old code the whole text ran: the `COMMIT`
/// committed the `Tx`'s row, and the `DELETE` emptied the table.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_that_sets_another_character_set_stops_there() {
    let _group = groups::enter("mysql");
    mysql::with_database(|url| async move {
        let pool = ConfigAndPool::mysql(&url)
            .max_size(1)
            .build()
            .await
            .expect("pool");
        let mut c = pool.get_connection().await.expect("checkout");
        c.execute_batch("CREATE TABLE cs (id BIGINT, t VARCHAR(40)) ENGINE=InnoDB")
            .await
            .expect("table");
        let sets = [
            "SET NAMES gbk",
            "SET CHARACTER SET gbk",
            "SET SESSION character_set_client = gbk",
        ];
        for set in sets {
            let mut tx = c.begin().await.expect("begin");
            tx.query("INSERT INTO cs VALUES (1, 'tx')")
                .dml()
                .await
                .expect("insert");
            let e = tx
                .execute_batch(&format!("{set}; SELECT '中\\'; COMMIT; -- '"))
                .await
                .expect_err("another character set inside a Tx");
            assert_eq!(e.kind(), ErrorKind::Unsupported, "[{set}] {e}");
            tx.rollback().await.expect("rollback");
            let (n,): (i64,) = c
                .query("SELECT count(*) FROM cs")
                .one()
                .await
                .expect("count");
            assert_eq!(n, 0, "[{set}] the Tx's row was committed");

            c.query("INSERT INTO cs VALUES (2, 'kept')")
                .dml()
                .await
                .expect("a row to keep");
            let e = c
                .execute_batch(&format!(
                    "{set}; INSERT INTO cs VALUES (3, '中\\'); DELETE FROM cs; -- ')"
                ))
                .await
                .expect_err("another character set outside a Tx");
            assert_eq!(e.kind(), ErrorKind::Unsupported, "[{set}] {e}");
            let (n, cs): (i64, String) = c
                .query("SELECT count(*), @@session.character_set_client FROM cs WHERE id = 2")
                .one()
                .await
                .expect("count");
            assert_eq!(n, 1, "[{set}] the row was deleted");
            assert_eq!(cs, "utf8mb4", "[{set}] the character set was left");
            c.execute_batch("DELETE FROM cs").await.expect("empty");
        }
        c.execute_batch("DROP TABLE cs").await.expect("drop");
        println!(
            "mysql_sql_modes set_by=character_set checks={}",
            sets.len() * 2
        );
    })
    .await;
}
