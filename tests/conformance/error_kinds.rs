//! One failure, one kind: the same failing statements, run on every engine, give the same
//! `ErrorKind`. Where an engine cannot fail that way (SQLite and Turso enforce no declared
//! length, detect no deadlock and have no users), the test says so and checks what the engine
//! does instead.

use std::time::Duration;

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb, expect_kind};
use crate::helpers::*;

// ---------------------------------------------------------------------------------------------
// NOT NULL: a missing value and an explicit NULL
// ---------------------------------------------------------------------------------------------

/// A row that leaves a `NOT NULL` column without a default out is refused as a not-null
/// violation, as an explicit `NULL` is: Postgres `23502`, SQLite and Turso `NOT NULL
/// constraint failed`, MySQL `1364` (missing value) and `1048` (explicit NULL).
async fn t_missing_not_null_value(db: &TestDb) {
    let k = db.kind.name();
    let mut c = db.conn().await;
    batch(
        &mut c,
        &format!(
            "CREATE TABLE ek_nn (id {} PRIMARY KEY, nn {} NOT NULL, other {})",
            db.ty(Logical::Int),
            db.ty(Logical::KeyText),
            db.ty(Logical::Int)
        ),
    )
    .await;
    let cases: Vec<(&str, &str, Vec<RowValues>)> = vec![
        (
            "a NOT NULL column left out",
            "INSERT INTO ek_nn (id, other) VALUES ($1, $2)",
            vec![1.into(), 7.into()],
        ),
        (
            "a NOT NULL column left out, literal values",
            "INSERT INTO ek_nn (id) VALUES (2)",
            vec![],
        ),
        (
            "an explicit NULL bound",
            "INSERT INTO ek_nn (id, nn) VALUES ($1, $2)",
            vec![3.into(), RowValues::Null],
        ),
        (
            "an explicit NULL literal",
            "INSERT INTO ek_nn (id, nn) VALUES (4, NULL)",
            vec![],
        ),
    ];
    for (what, sql, params) in cases {
        let e = expect_kind(
            &format!("[{k}] {what}"),
            c.query(sql).params(&params).dml().await,
            ErrorKind::NotNullViolation,
        );
        assert!(
            e.to_string().contains("nn"),
            "[{k}] {what}: the message names the column: {e}"
        );
    }
    assert_eq!(count(&mut c, "ek_nn").await, 0, "[{k}] nothing was stored");
}

// ---------------------------------------------------------------------------------------------
// a value too long for its column
// ---------------------------------------------------------------------------------------------

/// `'abcd'` into a `VARCHAR(3)`, bound and written as a literal: the value does not fit the
/// column's declared type, which is [`ErrorKind::ParameterType`] on Postgres (`22001`) and
/// MySQL (`1406`) whether the value was bound or written in the SQL (MySQL's error cannot tell
/// the two apart, so neither may the kind).
///
/// SQLite and Turso enforce no declared length: `VARCHAR(3)` stores the four characters. What
/// they do enforce is a `CHECK (length(s) <= 3)`, which is a [`ErrorKind::CheckViolation`] there
/// (as a `CHECK` is on every engine).
async fn t_value_too_long(db: &TestDb) {
    let k = db.kind.name();
    let mut c = db.conn().await;
    let int = db.ty(Logical::Int);
    batch(
        &mut c,
        &format!("CREATE TABLE ek_len (id {int} PRIMARY KEY, s VARCHAR(3))"),
    )
    .await;
    let bound = c
        .query("INSERT INTO ek_len (id, s) VALUES ($1, $2)")
        .params(&[1.into(), "abcd".into()])
        .dml()
        .await;
    let literal = c
        .query("INSERT INTO ek_len (id, s) VALUES (2, 'abcd')")
        .dml()
        .await;
    match db.kind {
        Kind::Postgres | Kind::Mysql => {
            for (what, r) in [("bound", bound), ("literal", literal)] {
                let e = expect_kind(
                    &format!("[{k}] 'abcd' into VARCHAR(3), {what}"),
                    r,
                    ErrorKind::ParameterType,
                );
                assert!(e.driver_code().is_some(), "[{k}] {what}: {e:?}");
            }
            assert_eq!(count(&mut c, "ek_len").await, 0, "[{k}] nothing stored");
        }
        Kind::Sqlite | Kind::Turso => {
            // No length is enforced: both rows are stored whole.
            assert_eq!(bound.expect("stored"), 1, "[{k}] bound");
            assert_eq!(literal.expect("stored"), 1, "[{k}] literal");
            let (s,): (String,) = c
                .query("SELECT s FROM ek_len WHERE id = 1")
                .one()
                .await
                .unwrap();
            assert_eq!(s, "abcd", "[{k}] VARCHAR(3) is not enforced");
            batch(
                &mut c,
                &format!(
                    "CREATE TABLE ek_len_check (id {int} PRIMARY KEY, s TEXT CHECK (length(s) <= 3))"
                ),
            )
            .await;
            expect_kind(
                &format!("[{k}] 'abcd' against CHECK (length(s) <= 3), bound"),
                c.query("INSERT INTO ek_len_check (id, s) VALUES ($1, $2)")
                    .params(&[1.into(), "abcd".into()])
                    .dml()
                    .await,
                ErrorKind::CheckViolation,
            );
            expect_kind(
                &format!("[{k}] 'abcd' against CHECK (length(s) <= 3), literal"),
                c.query("INSERT INTO ek_len_check (id, s) VALUES (2, 'abcd')")
                    .dml()
                    .await,
                ErrorKind::CheckViolation,
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// a value of another type for its column
// ---------------------------------------------------------------------------------------------

/// Text bound to an integer column is [`ErrorKind::ParameterType`]: Postgres refuses to bind
/// it to the column's type, MySQL refuses the value (`1366`), and SQLite and Turso refuse it in
/// a `STRICT` table (a plain table would store the text: SQLite's columns take any type).
async fn t_value_of_another_type(db: &TestDb) {
    let k = db.kind.name();
    let mut c = db.conn().await;
    let int = db.ty(Logical::Int);
    let strict = match db.kind {
        Kind::Sqlite | Kind::Turso => " STRICT",
        Kind::Postgres | Kind::Mysql => "",
    };
    batch(
        &mut c,
        &format!("CREATE TABLE ek_type (id {int} PRIMARY KEY, n {int}){strict}"),
    )
    .await;
    expect_kind(
        &format!("[{k}] text into an integer column"),
        c.query("INSERT INTO ek_type (id, n) VALUES ($1, $2)")
            .params(&[1.into(), "not a number".into()])
            .dml()
            .await,
        ErrorKind::ParameterType,
    );
    assert_eq!(count(&mut c, "ek_type").await, 0, "[{k}]");
}

// ---------------------------------------------------------------------------------------------
// a duplicate key
// ---------------------------------------------------------------------------------------------

/// A second row with the same primary key, or the same value in a `UNIQUE` column, bound or
/// literal: [`ErrorKind::UniqueViolation`].
async fn t_duplicate_key(db: &TestDb) {
    let k = db.kind.name();
    let mut c = db.conn().await;
    batch(
        &mut c,
        &format!(
            "CREATE TABLE ek_dup (id {} PRIMARY KEY, email {} UNIQUE);
             INSERT INTO ek_dup (id, email) VALUES (1, 'a@example.com');",
            db.ty(Logical::Int),
            db.ty(Logical::KeyText)
        ),
    )
    .await;
    let cases: Vec<(&str, &str, Vec<RowValues>)> = vec![
        (
            "primary key, bound",
            "INSERT INTO ek_dup (id, email) VALUES ($1, $2)",
            vec![1.into(), "b@example.com".into()],
        ),
        (
            "unique column, bound",
            "INSERT INTO ek_dup (id, email) VALUES ($1, $2)",
            vec![2.into(), "a@example.com".into()],
        ),
        (
            "unique column, literal",
            "INSERT INTO ek_dup (id, email) VALUES (3, 'a@example.com')",
            vec![],
        ),
        (
            "an update onto a taken key",
            "UPDATE ek_dup SET id = 1 WHERE id = $1",
            vec![9.into()],
        ),
    ];
    // The last case moves a second row onto the first one's key.
    dml(
        &mut c,
        "INSERT INTO ek_dup (id, email) VALUES (9, 'z@example.com')",
        &[],
    )
    .await;
    for (what, sql, params) in cases {
        expect_kind(
            &format!("[{k}] duplicate {what}"),
            c.query(sql).params(&params).dml().await,
            ErrorKind::UniqueViolation,
        );
    }
    assert_eq!(count(&mut c, "ek_dup").await, 2, "[{k}]");
}

// ---------------------------------------------------------------------------------------------
// a deadlock
// ---------------------------------------------------------------------------------------------

/// Ends a transaction: commits it when its statement succeeded, rolls it back otherwise (so
/// the other transaction, waiting for its locks, can go on).
async fn finish(tx: Tx<'_>, ok: bool) {
    if ok {
        tx.commit().await.expect("commit the surviving transaction");
    } else {
        // The engine may have rolled the transaction back already (MySQL does on a deadlock):
        // the rollback only has to release what is left.
        let _ = tx.rollback().await;
    }
}

/// Two connections update two rows in opposite orders. Postgres (`40P01`) and MySQL (`1213`)
/// detect the cycle and abort one transaction with [`ErrorKind::Deadlock`]; the other goes on.
///
/// SQLite and Turso have no deadlock detection and need none: a transaction takes the
/// database's one write lock when it begins (`BEGIN IMMEDIATE`), so the second writer waits
/// for the first and, after the busy timeout, gets [`ErrorKind::Busy`]. Both kinds say the
/// same thing to the application: retry the whole transaction (`is_retryable()`).
async fn t_deadlock(db: &TestDb) {
    let k = db.kind.name();
    let builder = db.builder().max_size(2);
    let builder = match db.kind {
        // The second writer waits this long for the lock (5 s by default).
        Kind::Sqlite | Kind::Turso => builder.busy_timeout(Duration::from_millis(300)),
        Kind::Postgres | Kind::Mysql => builder,
    };
    let pool = builder
        .build()
        .await
        .expect("a second pool on the test database");
    let mut a = pool.get_connection().await.expect("connection a");
    let mut b = pool.get_connection().await.expect("connection b");
    batch(
        &mut a,
        &format!(
            "CREATE TABLE ek_dl (id {int} PRIMARY KEY, v {int});
             INSERT INTO ek_dl (id, v) VALUES (1, 0);
             INSERT INTO ek_dl (id, v) VALUES (2, 0);",
            int = db.ty(Logical::Int)
        ),
    )
    .await;
    let bump = "UPDATE ek_dl SET v = v + 1 WHERE id = $1";
    let mut ta = a.begin().await.expect("begin a");
    ta.query(bump)
        .params(&[1.into()])
        .dml()
        .await
        .expect("a locks row 1");
    match db.kind {
        Kind::Sqlite | Kind::Turso => {
            // The second writer cannot even begin while the first holds the write lock.
            let e = expect_kind(
                &format!("[{k}] a second writer while the first holds the lock"),
                b.begin().await.map(|_| ()),
                ErrorKind::Busy,
            );
            assert!(e.is_retryable(), "[{k}] Busy is retryable");
            ta.rollback().await.expect("rollback a");
        }
        Kind::Postgres | Kind::Mysql => {
            let mut tb = b.begin().await.expect("begin b");
            tb.query(bump)
                .params(&[2.into()])
                .dml()
                .await
                .expect("b locks row 2");
            let fa = async move {
                let r = ta.query(bump).params(&[2.into()]).dml().await;
                finish(ta, r.is_ok()).await;
                r
            };
            let fb = async move {
                let r = tb.query(bump).params(&[1.into()]).dml().await;
                finish(tb, r.is_ok()).await;
                r
            };
            let (ra, rb) =
                tokio::time::timeout(Duration::from_secs(30), async { tokio::join!(fa, fb) })
                    .await
                    .unwrap_or_else(|_| panic!("[{k}] the deadlock was never broken"));
            let errors: Vec<SqlMiddlewareDbError> =
                [ra, rb].into_iter().filter_map(Result::err).collect();
            assert_eq!(
                errors.len(),
                1,
                "[{k}] exactly one of the two transactions is aborted: {errors:?}"
            );
            assert_eq!(
                errors[0].kind(),
                ErrorKind::Deadlock,
                "[{k}] the victim's kind: {:?}",
                errors[0]
            );
            assert!(errors[0].is_retryable(), "[{k}] Deadlock is retryable");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// a write refused because the session or database is read-only
// ---------------------------------------------------------------------------------------------

/// A write in a read-only session is [`ErrorKind::ReadOnly`] on every engine: Postgres
/// `default_transaction_read_only` (`25006`, as on a standby), MySQL `SET SESSION TRANSACTION
/// READ ONLY` (`1792`; `1290` and `1836` for a server run read-only), SQLite and Turso
/// `PRAGMA query_only` (`SQLITE_READONLY`, as for a database opened read-only). Reads still
/// work, and so does the same write once the session is writable again.
async fn t_read_only_session(db: &TestDb) {
    let k = db.kind.name();
    let mut c = db.conn().await;
    create_table(db, &mut c, "ek_ro", &[("v", Logical::Int)]).await;
    let (on, off) = match db.kind {
        Kind::Postgres => (
            "SET default_transaction_read_only = on",
            "SET default_transaction_read_only = off",
        ),
        Kind::Mysql => (
            "SET SESSION TRANSACTION READ ONLY",
            "SET SESSION TRANSACTION READ WRITE",
        ),
        Kind::Sqlite | Kind::Turso => ("PRAGMA query_only = 1", "PRAGMA query_only = 0"),
    };
    batch(&mut c, on).await;
    let insert = "INSERT INTO ek_ro (id, v) VALUES ($1, $2)";
    let e = expect_kind(
        &format!("[{k}] an insert in a read-only session"),
        c.query(insert).params(&[1.into(), 1.into()]).dml().await,
        ErrorKind::ReadOnly,
    );
    assert!(!e.is_retryable(), "[{k}] a refused write is not retryable");
    expect_kind(
        &format!("[{k}] an update in a read-only session"),
        c.query("UPDATE ek_ro SET v = 2").dml().await,
        ErrorKind::ReadOnly,
    );
    assert_eq!(count(&mut c, "ek_ro").await, 0, "[{k}] reads still work");
    // One statement, not a script: SQLite runs a script inside a write transaction, which a
    // query-only session cannot begin.
    c.query(off)
        .dml()
        .await
        .unwrap_or_else(|e| panic!("[{k}] {off}: {e:?}"));
    assert_eq!(dml(&mut c, insert, &[1.into(), 1.into()]).await, 1, "[{k}]");
}

// ---------------------------------------------------------------------------------------------
// a trigger that refuses a write; permission denied
// ---------------------------------------------------------------------------------------------

/// The trigger on `ek_guard` that refuses a row whose `v` is negative, in each engine's words.
fn refusing_trigger(kind: Kind) -> &'static str {
    match kind {
        Kind::Sqlite | Kind::Turso => {
            "CREATE TRIGGER ek_guard_refuse BEFORE INSERT ON ek_guard
             WHEN NEW.v < 0
             BEGIN SELECT RAISE(ABORT, 'negative values are refused'); END;"
        }
        Kind::Postgres => {
            "CREATE FUNCTION ek_guard_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
                 IF NEW.v < 0 THEN RAISE EXCEPTION 'negative values are refused'; END IF;
                 RETURN NEW;
             END $$;
             CREATE TRIGGER ek_guard_refuse BEFORE INSERT ON ek_guard
                 FOR EACH ROW EXECUTE FUNCTION ek_guard_refuse();"
        }
        Kind::Mysql => {
            "CREATE TRIGGER ek_guard_refuse BEFORE INSERT ON ek_guard FOR EACH ROW
             BEGIN
                 IF NEW.v < 0 THEN
                     SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'negative values are refused';
                 END IF;
             END"
        }
    }
}

/// A trigger that refuses a write (SQLite and Turso `RAISE(ABORT, …)`, Postgres `RAISE
/// EXCEPTION` (`P0001`), MySQL `SIGNAL SQLSTATE '45000'` (`1644`)) is [`ErrorKind::Other`] on
/// every engine: the error is the application's own, and means what its author meant. (The
/// engines report it as user-defined at most, and Turso only as its text.)
///
/// Permission denied, where the engine has permissions (Postgres `42501`, MySQL `1142`,
/// `1143`, `1044`), is [`ErrorKind::Config`], as a refused login is: the connection's user
/// lacks a grant. SQLite and Turso have no users or grants; for them only the trigger part
/// runs.
async fn t_refusals(db: &TestDb) {
    let k = db.kind.name();
    let mut c = db.conn().await;
    create_table(db, &mut c, "ek_guard", &[("v", Logical::Int)]).await;
    batch(&mut c, refusing_trigger(db.kind)).await;
    let insert = "INSERT INTO ek_guard (id, v) VALUES ($1, $2)";
    assert_eq!(dml(&mut c, insert, &[1.into(), 1.into()]).await, 1, "[{k}]");
    let e = expect_kind(
        &format!("[{k}] a row the trigger refuses"),
        c.query(insert).params(&[2.into(), (-1).into()]).dml().await,
        ErrorKind::Other,
    );
    assert!(e.driver_code().is_some(), "[{k}] trigger: {e:?}");
    assert!(!e.is_retryable(), "[{k}] a refused row is not retryable");
    expect_kind(
        &format!("[{k}] a row the trigger refuses, literal"),
        c.query("INSERT INTO ek_guard (id, v) VALUES (3, -5)")
            .dml()
            .await,
        ErrorKind::Other,
    );
    assert_eq!(count(&mut c, "ek_guard").await, 1, "[{k}]");
    match db.kind {
        Kind::Sqlite | Kind::Turso => {}
        #[cfg(feature = "postgres")]
        Kind::Postgres => permission_denied_postgres(&mut c).await,
        #[cfg(feature = "mysql")]
        Kind::Mysql => permission_denied_mysql(&mut c).await,
        #[allow(unreachable_patterns)]
        other => panic!("{other:?} needs its feature in this build"),
    }
}

/// Checks that `r` failed with [`ErrorKind::Config`] and driver code `code`, naming `table`;
/// the mismatch otherwise.
fn refused(
    what: &str,
    r: Result<(), SqlMiddlewareDbError>,
    codes: &[&str],
    table: &str,
) -> Option<String> {
    match r {
        Ok(()) => Some(format!("{what}: succeeded")),
        Err(e) if e.kind() != ErrorKind::Config => {
            Some(format!("{what}: kind {:?}: {e:?}", e.kind()))
        }
        Err(e) if !e.driver_code().is_some_and(|c| codes.contains(&c)) => Some(format!(
            "{what}: code {:?}, expected one of {codes:?}: {e:?}",
            e.driver_code()
        )),
        Err(e) if !e.to_string().contains(table) => {
            Some(format!("{what}: does not name {table}: {e}"))
        }
        Err(_) => None,
    }
}

/// A role with `SELECT` on one table only: its `INSERT` there and its read of another table
/// are refused (`42501`), as [`ErrorKind::Config`].
#[cfg(feature = "postgres")]
async fn permission_denied_postgres(c: &mut Conn) {
    let role = format!("sqlmw_ek_{}", crate::common::backends::unique_hex());
    let (schema,): (String,) = c.query("SELECT current_schema()").one().await.unwrap();
    batch(
        c,
        &format!(
            "CREATE TABLE ek_secret (id BIGINT);
             CREATE ROLE {role} NOLOGIN;
             GRANT USAGE ON SCHEMA {schema} TO {role};
             GRANT SELECT ON ek_guard TO {role};
             SET ROLE {role};"
        ),
    )
    .await;
    let mut wrong = Vec::new();
    match c
        .query("SELECT COUNT(*) FROM ek_guard")
        .one::<(i64,)>()
        .await
    {
        Ok((1,)) => {}
        other => wrong.push(format!("the granted SELECT: {other:?}")),
    }
    wrong.extend(refused(
        "an INSERT without the privilege",
        c.query("INSERT INTO ek_guard (id, v) VALUES ($1, $2)")
            .params(&[10.into(), 1.into()])
            .dml()
            .await
            .map(|_| ()),
        &["42501"],
        "ek_guard",
    ));
    wrong.extend(refused(
        "a SELECT of a table without the privilege",
        c.query("SELECT COUNT(*) FROM ek_secret")
            .select()
            .await
            .map(|_| ()),
        &["42501"],
        "ek_secret",
    ));
    batch(
        c,
        &format!(
            "RESET ROLE;
             REVOKE ALL ON ek_guard FROM {role};
             REVOKE ALL ON SCHEMA {schema} FROM {role};
             DROP ROLE {role};"
        ),
    )
    .await;
    assert!(
        wrong.is_empty(),
        "[postgres] permission denied:\n{}",
        wrong.join("\n")
    );
}

/// A user with `SELECT` on one table and on one column of another: its `INSERT` (`1142`), its
/// update of a column (`1143`) and its read of another database (`1142` or `1044`) are refused,
/// as [`ErrorKind::Config`].
#[cfg(feature = "mysql")]
async fn permission_denied_mysql(c: &mut Conn) {
    use crate::common::mysql;
    let user = format!("sqlmw_ek_{}", crate::common::backends::unique_hex());
    let (database,): (String,) = c.query("SELECT DATABASE()").one().await.unwrap();
    batch(
        c,
        &format!(
            "CREATE TABLE ek_cols (id BIGINT PRIMARY KEY, v BIGINT);
             CREATE USER '{user}'@'%';
             GRANT SELECT ON `{database}`.ek_guard TO '{user}'@'%';
             GRANT SELECT (id), UPDATE (id) ON `{database}`.ek_cols TO '{user}'@'%';"
        ),
    )
    .await;
    // The test database as the limited user (no password), in place of the base URL's user.
    let base = mysql::url_with_database(&mysql::base_url(), &database);
    let (scheme, rest) = base.split_once("://").expect("a URL");
    let host = rest.split_once('@').map_or(rest, |(_, host)| host);
    let url = format!("{scheme}://{user}@{host}");
    let mut wrong = Vec::new();
    match crate::common::engines::mysql::builder(&url)
        .max_size(1)
        .build()
        .await
    {
        Err(e) => wrong.push(format!("a pool as the limited user: {e:?}")),
        Ok(pool) => match pool.get_connection().await {
            Err(e) => wrong.push(format!("connecting as the limited user: {e:?}")),
            Ok(mut lim) => {
                match lim
                    .query("SELECT COUNT(*) FROM ek_guard")
                    .one::<(i64,)>()
                    .await
                {
                    Ok((1,)) => {}
                    other => wrong.push(format!("the granted SELECT: {other:?}")),
                }
                wrong.extend(refused(
                    "an INSERT without the privilege",
                    lim.query("INSERT INTO ek_guard (id, v) VALUES ($1, $2)")
                        .params(&[10.into(), 1.into()])
                        .dml()
                        .await
                        .map(|_| ()),
                    &["1142"],
                    "ek_guard",
                ));
                wrong.extend(refused(
                    "an UPDATE of a column without the privilege",
                    lim.query("UPDATE ek_cols SET v = 1 WHERE id = $1")
                        .params(&[1.into()])
                        .dml()
                        .await
                        .map(|_| ()),
                    &["1143"],
                    "ek_cols",
                ));
                wrong.extend(refused(
                    "a table of a database without the privilege",
                    lim.query("SELECT COUNT(*) FROM mysql.user")
                        .select()
                        .await
                        .map(|_| ()),
                    &["1142", "1044"],
                    "user",
                ));
            }
        },
    }
    batch(c, &format!("DROP USER '{user}'@'%'")).await;
    assert!(
        wrong.is_empty(),
        "[mysql] permission denied:\n{}",
        wrong.join("\n")
    );
}

backend_tests! {
    async fn missing_not_null_value(db) { t_missing_not_null_value(&db).await }
    async fn value_too_long(db) { t_value_too_long(&db).await }
    async fn value_of_another_type(db) { t_value_of_another_type(&db).await }
    async fn duplicate_key(db) { t_duplicate_key(&db).await }
    async fn deadlock(db) { t_deadlock(&db).await }
    async fn read_only_session(db) { t_read_only_session(&db).await }
    async fn refusals(db) { t_refusals(&db).await }
}

/// A database file opened read-only (`mode=ro`): a write is [`ErrorKind::ReadOnly`], as in a
/// query-only session, while a pool that cannot even set the file up (switching it to WAL
/// needs a write) fails with [`ErrorKind::Config`], as for a file that cannot be opened.
#[cfg(feature = "sqlite")]
mod sqlite_read_only_file {
    use sql_middleware::ErrorKind;
    use sql_middleware::prelude::*;

    use crate::common::backends::{TempDir, expect_kind};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_write_to_a_read_only_file_is_read_only_and_an_unusable_one_is_config() {
        let dir = TempDir::new("ro");
        // A WAL database, kept open by a writer so that readers find its shared memory.
        let wal = dir.path().join("wal.db");
        let writer = ConfigAndPool::sqlite(&wal)
            .max_size(1)
            .build()
            .await
            .unwrap();
        let mut w = writer.get_connection().await.unwrap();
        w.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY); INSERT INTO t VALUES (1);")
            .await
            .unwrap();
        let ro = ConfigAndPool::sqlite(format!("file:{}?mode=ro", wal.display()))
            .max_size(1)
            .build()
            .await
            .expect("a read-only pool");
        let mut r = ro.get_connection().await.expect("a read-only connection");
        let (n,): (i64,) = r.query("SELECT COUNT(*) FROM t").one().await.unwrap();
        assert_eq!(n, 1, "reads work");
        expect_kind(
            "an insert into a database opened read-only",
            r.query("INSERT INTO t VALUES ($1)")
                .params(&[2.into()])
                .dml()
                .await,
            ErrorKind::ReadOnly,
        );
        // A rollback-journal database opened read-only: the pool cannot switch it to WAL.
        let plain = dir.path().join("plain.db");
        let maker = ConfigAndPool::sqlite(&plain)
            .wal(false)
            .max_size(1)
            .build()
            .await
            .unwrap();
        maker
            .get_connection()
            .await
            .unwrap()
            .execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY)")
            .await
            .unwrap();
        drop(maker);
        let e = match ConfigAndPool::sqlite(format!("file:{}?mode=ro", plain.display()))
            .max_size(1)
            .build()
            .await
        {
            Err(e) => e,
            Ok(p) => match p.get_connection().await {
                Err(e) => e,
                Ok(_) => panic!("a read-only rollback-journal file was set up for WAL"),
            },
        };
        assert_eq!(e.kind(), ErrorKind::Config, "{e:?}");
    }
}
