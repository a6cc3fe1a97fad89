//! PostgreSQL: the middleware reads SQL text as the session's `standard_conforming_strings`
//! does.
//!
//! With the setting off, a backslash escapes the next byte in a plain `'…'` string
//! (`'it\'s'` is one string). Read with the standard rules, such a string ends early and the
//! rest of it reads as code: a `?N` placeholder after it would not be rewritten and one inside
//! a later string would be, a session change after it would go unseen (and reach the next
//! borrower), and a `COMMIT` after it would not be refused inside a `Tx`.
//!
//! The setting is tested set by the session (`SET`), as the database's default (`ALTER
//! DATABASE … SET`), for one transaction (`SET LOCAL`, which its end undoes), through
//! `set_config` and through the raw client, on the query builder (`one`, `select`, `dml`,
//! `stream`), a prepared statement, a pipeline, a `Tx`, a script and a migration. Prints
//! `pg_strings set_by=S checks=N`.
#![cfg(feature = "postgres")]

use futures::TryStreamExt;
use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::hook_reads::reading_hook;
use crate::common::pg;

/// A one-row `SELECT` of the text `it's` (as `p`) and `?1` (as `v`), right only when a
/// backslash escapes in a plain string.
const ESCAPED: &str = "SELECT 'it\\'s' AS p, ?1::int8 AS v";
/// The same with the standard rules: the text `C:\`.
const STANDARD: &str = "SELECT 'C:\\' AS p, ?1::int8 AS v";
/// An `INSERT` of `it's` and `?1`, then a literal `?2` that must stay text.
const INSERT: &str = "INSERT INTO ss (p, v, note) VALUES ('it\\'s', ?1, '?2')";

/// Runs every path on `pool` (one connection), whose sessions have
/// `standard_conforming_strings` off; `set_by_session`: each checkout turns it off itself.
/// Returns the checks made.
async fn every_path(pool: &ConfigAndPool, set_by_session: bool) -> usize {
    let mut checks = 0;
    let checkout = || async {
        let mut c = pool.get_connection().await.expect("checkout");
        if set_by_session {
            c.execute_batch("SET standard_conforming_strings = off")
                .await
                .expect("set standard_conforming_strings");
        }
        c
    };
    let want = ("it's".to_owned(), 7i64);
    let seven = [RowValues::Int(7)];

    let mut c = checkout().await;
    c.execute_batch("DROP TABLE IF EXISTS ss; CREATE TABLE ss (p text, v int8, note text)")
        .await
        .expect("table");

    let one: (String, i64) = c.query(ESCAPED).params(&seven).one().await.expect("one");
    assert_eq!(one, want, "query().one()");
    checks += 1;

    let rs = c
        .query(ESCAPED)
        .params(&seven)
        .select()
        .await
        .expect("select");
    assert_eq!(rs.results[0].get("v"), Some(&RowValues::Int(7)), "select()");
    checks += 1;

    let mut st = c.prepare(ESCAPED).await.expect("prepare");
    let prepared: (String, i64) = st.one(&seven).await.expect("prepared one");
    assert_eq!(prepared, want, "prepare().one()");
    checks += 1;

    let streamed: Vec<(String, i64)> = c
        .query(ESCAPED)
        .params(&seven)
        .stream()
        .try_collect()
        .await
        .expect("stream");
    assert_eq!(streamed, vec![want.clone()], "stream()");
    checks += 1;

    let n = c.query(INSERT).params(&seven).dml().await.expect("dml");
    assert_eq!(n, 1, "dml()");
    let sets: [&[RowValues]; 2] = [&[RowValues::Int(8)], &[RowValues::Int(9)]];
    c.pipeline(INSERT, &sets).await.expect("pipeline");
    checks += 2;

    {
        let mut tx = c.begin().await.expect("begin");
        tx.query(INSERT)
            .params(&[RowValues::Int(10)])
            .dml()
            .await
            .expect("insert in tx");
        // A COMMIT after the string is still transaction control: refused, and the
        // transaction rolled back, the row with it.
        let e = tx
            .execute_batch("SELECT 'it\\'s'; COMMIT; --'")
            .await
            .expect_err("COMMIT inside a Tx");
        assert_eq!(e.kind(), ErrorKind::TransactionState, "{e}");
        tx.rollback().await.expect("rollback");
        checks += 1;
    }
    let rows: Vec<(String, i64, String)> = c
        .query("SELECT p, v, note FROM ss ORDER BY v")
        .all()
        .await
        .expect("rows");
    // Each placeholder bound, the `'?2'` after it still text; the Tx's row is gone.
    assert_eq!(
        rows,
        [7, 8, 9].map(|v| ("it's".to_owned(), v, "?2".to_owned())),
        "rows written"
    );
    checks += 1;

    // A session change after the string is seen: the next borrower does not get it.
    c.execute_batch("SELECT 'it\\'s'; SET application_name = 'ss_leak'; --'")
        .await
        .expect("script");
    drop(c);
    let mut next = pool.get_connection().await.expect("next checkout");
    let (name,): (String,) = next
        .query("SELECT current_setting('application_name')")
        .one()
        .await
        .expect("application_name");
    assert_ne!(
        name, "ss_leak",
        "a setting changed after the string reached the next borrower"
    );
    next.execute_batch("DROP TABLE ss").await.expect("drop");
    checks + 1
}

/// A pool of one connection on `url`: each checkout gets the session the last one left.
async fn one_connection(url: &str) -> ConfigAndPool {
    ConfigAndPool::postgres(url)
        .max_size(1)
        .build()
        .await
        .expect("pool")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_standard_conforming_strings_decides_how_its_sql_is_read() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let pool = one_connection(&url).await;
        let checks = every_path(&pool, true).await;
        println!("pg_strings set_by=session checks={checks}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_databases_default_decides_how_its_sql_is_read() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let admin = pg::raw_client(&url).await;
        admin
            .batch_execute(
                "DO $$BEGIN EXECUTE format('ALTER DATABASE %I SET standard_conforming_strings = off', current_database()); END$$",
            )
            .await
            .expect("database default");
        let pool = one_connection(&url).await;
        let checks = every_path(&pool, false).await;
        println!("pg_strings set_by=database checks={checks}");
    })
    .await;
}

/// The setting changed for one transaction, or by a function: what comes after is read as
/// the session reads it then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_setting_is_followed_as_it_changes() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let pool = one_connection(&url).await;
        let seven = [RowValues::Int(7)];
        let standard = ("C:\\".to_owned(), 7i64);
        let escaped = ("it's".to_owned(), 7i64);
        let mut c = pool.get_connection().await.expect("checkout");
        let mut checks = 0;

        // For one transaction: its end undoes it, committed or rolled back.
        for commit in [true, false] {
            let mut tx = c.begin().await.expect("begin");
            tx.execute_batch("SET LOCAL standard_conforming_strings = off")
                .await
                .expect("set local");
            let got: (String, i64) = tx.query(ESCAPED).params(&seven).one().await.expect("in tx");
            assert_eq!(got, escaped, "inside the transaction");
            if commit {
                tx.commit().await.expect("commit");
            } else {
                tx.rollback().await.expect("rollback");
            }
            let got: (String, i64) = c.query(STANDARD).params(&seven).one().await.expect("after");
            assert_eq!(got, standard, "after the transaction (commit: {commit})");
            checks += 2;
        }

        // Set for the session inside a transaction that rolls back: undone too.
        let mut tx = c.begin().await.expect("begin");
        tx.execute_batch("SET standard_conforming_strings = off")
            .await
            .expect("set");
        drop(tx);
        let got: (String, i64) = c
            .query(STANDARD)
            .params(&seven)
            .one()
            .await
            .expect("after drop");
        assert_eq!(got, standard, "after a dropped transaction");
        checks += 1;

        // By a function, through a prepared statement; and back.
        let (v,): (String,) = c
            .query("SELECT set_config('standard_conforming_strings', 'off', false)")
            .one()
            .await
            .expect("set_config");
        assert_eq!(v, "off");
        let got: (String, i64) = c.query(ESCAPED).params(&seven).one().await.expect("off");
        assert_eq!(got, escaped, "after set_config");
        c.execute_batch("RESET standard_conforming_strings")
            .await
            .expect("reset");
        let got: (String, i64) = c.query(STANDARD).params(&seven).one().await.expect("on");
        assert_eq!(got, standard, "after RESET");
        checks += 2;

        // Through the raw client: read again before the next call.
        c.postgres_client()
            .await
            .expect("raw client")
            .batch_execute("SET standard_conforming_strings = off")
            .await
            .expect("raw set");
        let got: (String, i64) = c
            .query(ESCAPED)
            .params(&seven)
            .one()
            .await
            .expect("raw off");
        assert_eq!(got, escaped, "after a raw SET");
        checks += 1;
        println!("pg_strings set_by=transaction_function_and_raw checks={checks}");
    })
    .await;
}

/// The `after_connect` hook's statements are read as the session reads them when each runs:
/// with the setting on, off as the database's default, and turned off by the hook itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_after_connect_hooks_statements_are_read_as_the_session_reads_them() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        // Opens a connection whose hook runs `setup` (if any), then selects `sql` with 7, and
        // returns what the hook read.
        let read_by_hook = |setup: Option<&'static str>, sql: &'static str| {
            let b = ConfigAndPool::postgres(&url).max_size(1);
            let (b, reads) = reading_hook(b, setup.map(str::to_owned), sql);
            async move {
                let pool = b.build().await.expect("pool");
                let c = pool
                    .get_connection()
                    .await
                    .unwrap_or_else(|e| panic!("the hook's {sql:?} after {setup:?} failed: {e}"));
                drop(c);
                reads.lock().unwrap().clone()
            }
        };
        let standard = ("C:\\".to_owned(), 7i64);
        let escaped = ("it's".to_owned(), 7i64);
        assert_eq!(read_by_hook(None, STANDARD).await, [standard], "setting on");
        assert_eq!(
            read_by_hook(Some("SET standard_conforming_strings = off"), ESCAPED).await,
            std::slice::from_ref(&escaped),
            "turned off by the hook"
        );
        let admin = pg::raw_client(&url).await;
        admin
            .batch_execute(
                "DO $$BEGIN EXECUTE format('ALTER DATABASE %I SET standard_conforming_strings = off', current_database()); END$$",
            )
            .await
            .expect("database default");
        assert_eq!(
            read_by_hook(None, ESCAPED).await,
            [escaped],
            "off as the database's default"
        );
        println!("pg_strings set_by=after_connect checks=3");
    })
    .await;
}

/// In the unnamed mode the server parses a statement's text again on every run, as the session
/// reads it then. A held prepared statement that turns the setting off and on itself is read
/// again each time its text would read differently (its columns, here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unnamed_statement_is_read_as_the_session_reads_it_at_each_run() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let pool = ConfigAndPool::postgres(&url)
            .max_size(1)
            .statement_cache(sql_middleware::StatementCache::Unnamed)
            .build()
            .await
            .expect("pool");
        let mut c = pool.get_connection().await.expect("checkout");
        // Setting on: the string `x\`, then a comment (two columns). Setting off: a string
        // that runs on to the quote after `--`, then a third column.
        const FLIP: &str = "SELECT set_config('standard_conforming_strings', ?1, false) AS v, \
                            'x\\' AS p --', 'y' AS q";
        let to = |v: &str| [RowValues::Text(v.to_owned())];
        let read_as_on = ("off".to_owned(), "x\\".to_owned());
        let mut checks = 0;
        for round in 0..2 {
            let mut st = c.prepare(FLIP).await.expect("prepare");
            for _ in 0..2 {
                // Read with the setting on, turning it off.
                let got: (String, String) = st.one(&to("off")).await.expect("read as on");
                assert_eq!(got, read_as_on, "read as on");
                // Read with the setting off, turning it on.
                let got: (String, String, String) = st.one(&to("on")).await.expect("read as off");
                assert_eq!(
                    got,
                    ("on".to_owned(), "x' AS p --".to_owned(), "y".to_owned()),
                    "read as off"
                );
                checks += 2;
            }
            // Turned off once more: what comes next is read with it off.
            let got: (String, String) = st.one(&to("off")).await.expect("read as on");
            assert_eq!(got, read_as_on, "read as on, last");
            let got: (String, i64) = c
                .query(ESCAPED)
                .params(&[RowValues::Int(7)])
                .one()
                .await
                .unwrap_or_else(|e| panic!("round {round}: the next statement: {e}"));
            assert_eq!(got, ("it's".to_owned(), 7), "the next statement");
            c.execute_batch("RESET standard_conforming_strings")
                .await
                .expect("reset");
            checks += 2;
        }
        println!("pg_strings set_by=held_unnamed_statement checks={checks}");
    })
    .await;
}

/// Inside a `Tx`, a script after raw access that turned the setting off is read as the session
/// reads it: a `COMMIT` after an escaped quote is refused, and the transaction's rows are not
/// committed with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_after_raw_access_inside_a_tx_is_read_as_the_session_reads_it() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let pool = one_connection(&url).await;
        let mut c = pool.get_connection().await.expect("checkout");
        c.execute_batch("CREATE TABLE sr (id int8)")
            .await
            .expect("table");
        for raw_first in [true, false] {
            let mut tx = c.begin().await.expect("begin");
            tx.query("INSERT INTO sr VALUES (1)")
                .dml()
                .await
                .expect("insert");
            if raw_first {
                // Read unsure after raw access, and then asked before the script is read.
                tx.postgres_client()
                    .await
                    .expect("raw client")
                    .batch_execute("SET LOCAL standard_conforming_strings = off")
                    .await
                    .expect("raw set");
            } else {
                tx.execute_batch("SET LOCAL standard_conforming_strings = off")
                    .await
                    .expect("set");
            }
            let e = tx
                .execute_batch("SELECT 'it\\'s'; COMMIT; --'")
                .await
                .expect_err("COMMIT inside a Tx");
            assert_eq!(
                e.kind(),
                ErrorKind::TransactionState,
                "raw first: {raw_first}: {e}"
            );
            tx.rollback().await.expect("rollback");
            let (n,): (i64,) = c
                .query("SELECT count(*) FROM sr")
                .one()
                .await
                .expect("count");
            assert_eq!(n, 0, "raw first: {raw_first}: the Tx's row was committed");
        }
        c.execute_batch("DROP TABLE sr").await.expect("drop");
        println!("pg_strings set_by=raw_inside_tx checks=2");
    })
    .await;
}

/// Outside a `Tx`, a script after raw access that turned the setting off is read as the
/// session reads it too: a `VACUUM` inside an escaped string is not split out of its statement
/// (split there, each part would be sent as an unterminated string).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_after_raw_access_outside_a_tx_is_read_as_the_session_reads_it() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let pool = one_connection(&url).await;
        let mut c = pool.get_connection().await.expect("checkout");
        c.execute_batch("CREATE TABLE sv (id int8)")
            .await
            .expect("table");
        c.postgres_client()
            .await
            .expect("raw client")
            .batch_execute("SET standard_conforming_strings = off")
            .await
            .expect("raw set");
        c.execute_batch("SELECT 'x\\'; VACUUM sv; --' AS p")
            .await
            .expect("one statement, as the session reads it");
        let (p,): (String,) = c
            .query("SELECT 'x\\'; VACUUM sv; --' AS p")
            .one()
            .await
            .expect("the same text as a query");
        assert_eq!(p, "x'; VACUUM sv; --");
        c.execute_batch("DROP TABLE sv").await.expect("drop");
        println!("pg_strings set_by=raw_outside_tx checks=2");
    })
    .await;
}

/// A migration that turns the setting off part-way is read statement by statement as the
/// session reads it then, in its own transaction (`SET LOCAL`) and outside one (the
/// no-transaction directive, a session `SET`): the `;` inside the escaped string does not end
/// a statement.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_migration_that_changes_the_setting_is_read_as_it_runs() {
    use sql_middleware::migrate::Migrator;
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let pool = one_connection(&url).await;
        let mut c = pool.get_connection().await.expect("checkout");
        let m = Migrator::from_files([
            (
                "0001_in_tx.sql",
                "CREATE TABLE sm (n int8, v text);\nSET LOCAL standard_conforming_strings = off;\nINSERT INTO sm VALUES (1, 'a\\';b');\n",
            ),
            (
                "0002_outside.sql",
                "-- sql-middleware: no-transaction\nSET standard_conforming_strings = off;\nINSERT INTO sm VALUES (2, 'c\\';d');\n",
            ),
        ])
        .expect("files");
        let report = m.run(&mut c).await.expect("migrations");
        assert_eq!(report.applied, vec![1, 2]);
        drop(c);
        let mut c = pool.get_connection().await.expect("checkout");
        let rows: Vec<(i64, String)> = c
            .query("SELECT n, v FROM sm ORDER BY n")
            .all()
            .await
            .expect("rows");
        assert_eq!(rows, vec![(1, "a';b".to_owned()), (2, "c';d".to_owned())]);
        c.execute_batch("DROP TABLE sm").await.expect("drop");
        println!("pg_strings set_by=migration checks=2");
    })
    .await;
}

/// Outside a `Tx`, a script that turns the setting off and is cut around a `VACUUM` is read,
/// after the part that turned it off, as the session reads it then: each part is a query of its
/// own, which the server parses with the setting as it is when the part arrives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_cut_around_vacuum_reads_its_parts_as_the_session_reads_them() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let pool = one_connection(&url).await;
        let mut c = pool.get_connection().await.expect("checkout");
        c.execute_batch("CREATE TABLE sc (v text)")
            .await
            .expect("table");
        // With the setting off, the `VACUUM` after `'x\'` is inside the string.
        c.execute_batch(
            "SET standard_conforming_strings = off; VACUUM sc; \
             INSERT INTO sc VALUES ('x\\'; VACUUM sc; --')",
        )
        .await
        .expect("read part by part");
        let (v,): (String,) = c.query("SELECT v FROM sc").one().await.expect("row");
        assert_eq!(v, "x'; VACUUM sc; --");
        // The setting is still followed after the script.
        let (p,): (String,) = c
            .query("SELECT 'it\\'s' AS p")
            .one()
            .await
            .expect("after the script");
        assert_eq!(p, "it's");
        c.execute_batch("DROP TABLE sc").await.expect("drop");
        println!("pg_strings set_by=script_with_vacuum checks=2");
    })
    .await;
}
