//! The single-writer mode of SQLite and Turso pools (`PoolBuilder::single_writer(readers)`):
//! one writer connection behind `get_connection` (and every transaction), read-only readers
//! behind `reader`. Every API path works on the writer; reads work on readers; a write through
//! a reader fails with `ReadOnly`; a reader sees what the writer committed and never what it
//! has not, and does not wait for an open write transaction; concurrent writers queue in the
//! pool instead of failing with `Busy`. Postgres and MySQL refuse the mode with `Config`.

use std::sync::Arc;
use std::time::Duration;

use sql_middleware::prelude::*;
use sql_middleware::{ErrorKind, RetryPolicy};

use crate::backend_tests;
use crate::common::backends::{Kind, TestDb, expect_kind};

fn embedded(kind: Kind) -> bool {
    matches!(kind, Kind::Sqlite | Kind::Turso)
}

/// The pool in the mode, with `readers` readers, on `db`'s database; on Postgres and MySQL,
/// checks that the builder and the URL parameter are refused with `Config` and returns `None`.
async fn mode_pool(db: &TestDb, readers: usize) -> Option<ConfigAndPool> {
    let k = db.kind.name();
    if embedded(db.kind) {
        return Some(
            db.builder()
                .single_writer(readers)
                .build()
                .await
                .unwrap_or_else(|e| panic!("[{k}] single_writer pool: {e:?}")),
        );
    }
    expect_kind(
        &format!("[{k}] single_writer on a server engine"),
        db.builder().single_writer(readers).build().await.map(drop),
        ErrorKind::Config,
    );
    let url = db.url().expect("a server engine has a URL");
    let sep = if url.contains('?') { '&' } else { '?' };
    let r = match ConfigAndPool::from_url(&format!("{url}{sep}single_writer={readers}")) {
        Ok(b) => b.build().await.map(drop),
        Err(e) => Err(e),
    };
    expect_kind(
        &format!("[{k}] single_writer in a server engine's URL"),
        r,
        ErrorKind::Config,
    );
    None
}

async fn ids(conn: &mut MiddlewarePoolConnection) -> Vec<i64> {
    let rows: Vec<(i64,)> = conn
        .query("SELECT id FROM sw ORDER BY id")
        .all()
        .await
        .unwrap();
    rows.into_iter().map(|r| r.0).collect()
}

async fn ins(tx: &mut Tx<'_>, id: i64) -> Result<u64, SqlMiddlewareDbError> {
    tx.query("INSERT INTO sw (id, v) VALUES ($1, 'tx')")
        .params(&[RowValues::Int(id)])
        .dml()
        .await
}

/// Every API path on the writer, reads on a reader, and the pool's size.
async fn t_every_path_on_the_writer(db: &TestDb) {
    let k = db.kind.name();
    let Some(pool) = mode_pool(db, 2).await else {
        return;
    };
    assert_eq!(
        pool.status().max_size,
        3,
        "[{k}] one writer and two readers"
    );
    let mut w = pool.get_connection().await.unwrap();
    w.execute_batch("CREATE TABLE sw (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        .await
        .unwrap();
    // The query builder.
    let n = w
        .query("INSERT INTO sw (id, v) VALUES ($1, $2)")
        .params(&[RowValues::Int(1), RowValues::Text("one".into())])
        .dml()
        .await
        .unwrap();
    assert_eq!(n, 1, "[{k}] dml");
    let (v,): (String,) = w
        .query("SELECT v FROM sw WHERE id = $1")
        .params(&[RowValues::Int(1)])
        .one()
        .await
        .unwrap();
    assert_eq!(v, "one", "[{k}] one");
    let none: Option<(String,)> = w
        .query("SELECT v FROM sw WHERE id = $1")
        .params(&[RowValues::Int(99)])
        .optional()
        .await
        .unwrap();
    assert!(none.is_none(), "[{k}] optional");
    let rs = w.query("SELECT id, v FROM sw").select().await.unwrap();
    assert_eq!(rs.results.len(), 1, "[{k}] select");
    // Prepared statements.
    {
        let mut st = w
            .prepare("INSERT INTO sw (id, v) VALUES ($1, 'p')")
            .await
            .unwrap();
        for id in [2, 3] {
            assert_eq!(st.dml(&[RowValues::Int(id)]).await.unwrap(), 1, "[{k}]");
        }
    }
    // A batch.
    w.execute_batch(
        "INSERT INTO sw (id, v) VALUES (4, 'b'); INSERT INTO sw (id, v) VALUES (5, 'b')",
    )
    .await
    .unwrap();
    // Transactions: commit and rollback; savepoints: commit, rollback, drop.
    let mut tx = w.begin().await.unwrap();
    ins(&mut tx, 6).await.unwrap();
    {
        let mut sp = tx.savepoint().await.unwrap();
        ins(&mut sp, 7).await.unwrap();
        sp.rollback().await.unwrap();
    }
    {
        let mut sp = tx.savepoint().await.unwrap();
        ins(&mut sp, 8).await.unwrap();
        {
            let mut inner = sp.savepoint().await.unwrap();
            ins(&mut inner, 9).await.unwrap();
        }
        sp.commit().await.unwrap();
    }
    tx.commit().await.unwrap();
    let mut tx = w.begin().await.unwrap();
    ins(&mut tx, 10).await.unwrap();
    tx.rollback().await.unwrap();
    drop(w);
    // The retrying transaction.
    let r = pool
        .transaction(&RetryPolicy::new(), |tx| {
            Box::pin(async move {
                ins(tx, 11).await?;
                Ok::<_, SqlMiddlewareDbError>(())
            })
        })
        .await;
    assert!(r.is_ok(), "[{k}] retrying transaction: {r:?}");
    // Reads on a reader: the query builder and a prepared statement.
    let mut r = pool.reader().await.unwrap();
    assert_eq!(ids(&mut r).await, [1, 2, 3, 4, 5, 6, 8, 11], "[{k}] reader");
    let mut st = r.prepare("SELECT v FROM sw WHERE id = $1").await.unwrap();
    let (v,): (String,) = st.one(&[RowValues::Int(8)]).await.unwrap();
    assert_eq!(v, "tx", "[{k}] prepared on a reader");
    // The statistics count both pools: the reader in use, the writer idle.
    let stats = pool.stats();
    assert_eq!(
        (stats.max_size, stats.in_use, stats.idle),
        (3, 1, 1),
        "[{k}] {stats:?}"
    );
    drop(r);
    // Closing closes the writer's pool and the readers'.
    pool.close();
    expect_kind(
        &format!("[{k}] a checkout after close"),
        pool.get_connection().await.map(drop),
        ErrorKind::PoolClosed,
    );
    expect_kind(
        &format!("[{k}] a reader after close"),
        pool.reader().await.map(drop),
        ErrorKind::PoolClosed,
    );
}

/// A write through a reader fails with `ReadOnly` (DML, a prepared write, a batch, DDL, inside
/// a transaction), and the reader still reads; on the default pool the same write succeeds.
async fn t_readers_refuse_writes(db: &TestDb) {
    let k = db.kind.name();
    let Some(pool) = mode_pool(db, 2).await else {
        return;
    };
    let mut w = pool.get_connection().await.unwrap();
    w.execute_batch("CREATE TABLE sw (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        .await
        .unwrap();
    drop(w);
    let mut r = pool.reader().await.unwrap();
    let what = |s: &str| format!("[{k}] {s} through a reader");
    expect_kind(
        &what("DML"),
        r.query("INSERT INTO sw (id, v) VALUES (1, 'r')")
            .dml()
            .await,
        ErrorKind::ReadOnly,
    );
    let prepared = match r.prepare("INSERT INTO sw (id, v) VALUES ($1, 'r')").await {
        Ok(mut st) => st.dml(&[RowValues::Int(2)]).await,
        Err(e) => Err(e),
    };
    expect_kind(&what("a prepared write"), prepared, ErrorKind::ReadOnly);
    expect_kind(
        &what("a batch"),
        r.execute_batch("INSERT INTO sw (id, v) VALUES (3, 'r')")
            .await,
        ErrorKind::ReadOnly,
    );
    expect_kind(
        &what("DDL"),
        r.execute_batch("CREATE TABLE other (a INTEGER)").await,
        ErrorKind::ReadOnly,
    );
    {
        let mut tx = r.begin().await.unwrap();
        expect_kind(
            &what("a transaction's write"),
            ins(&mut tx, 4).await,
            ErrorKind::ReadOnly,
        );
    }
    assert!(ids(&mut r).await.is_empty(), "[{k}] nothing written");
    drop(r);
    // The default pool's reader is any connection: the same write succeeds there.
    let default = db.builder().max_size(2).build().await.unwrap();
    let mut r = default.reader().await.unwrap();
    r.query("INSERT INTO sw (id, v) VALUES (1, 'r')")
        .dml()
        .await
        .unwrap_or_else(|e| panic!("[{k}] the default pool's reader writes: {e:?}"));
}

/// A reader is not blocked by an open write transaction, sees none of its writes until it
/// commits, and sees them after.
async fn t_readers_see_committed_data_only(db: &TestDb) {
    let k = db.kind.name();
    let Some(pool) = mode_pool(db, 2).await else {
        return;
    };
    let mut w = pool.get_connection().await.unwrap();
    w.execute_batch(
        "CREATE TABLE sw (id INTEGER PRIMARY KEY, v TEXT NOT NULL);
         INSERT INTO sw (id, v) VALUES (1, 'committed')",
    )
    .await
    .unwrap();
    let mut tx = w.begin().await.unwrap();
    ins(&mut tx, 2).await.unwrap();
    tx.query("UPDATE sw SET v = 'uncommitted' WHERE id = 1")
        .dml()
        .await
        .unwrap();
    for round in 0..2 {
        let read = async {
            let mut r = pool.reader().await.unwrap();
            let rows: Vec<(i64, String)> = r
                .query("SELECT id, v FROM sw ORDER BY id")
                .all()
                .await
                .unwrap();
            rows
        };
        let rows = tokio::time::timeout(Duration::from_millis(200), read)
            .await
            .unwrap_or_else(|_| panic!("[{k}] a reader waited for the open write transaction"));
        assert_eq!(rows, [(1, "committed".to_owned())], "[{k}] round {round}");
    }
    tx.commit().await.unwrap();
    let mut r = pool.reader().await.unwrap();
    let rows: Vec<(i64, String)> = r
        .query("SELECT id, v FROM sw ORDER BY id")
        .all()
        .await
        .unwrap();
    assert_eq!(
        rows,
        [(1, "uncommitted".to_owned()), (2, "tx".to_owned())],
        "[{k}] after the commit"
    );
}

/// Write transactions that each hold the write lock longer than the busy timeout: in the mode
/// they queue for the writer and all commit; on the default pool some fail with `Busy`.
async fn t_writers_queue_instead_of_busy(db: &TestDb) {
    let k = db.kind.name();
    let Some(_) = mode_pool(db, 1).await else {
        return;
    };
    let short = Duration::from_millis(20);
    let mode = db
        .builder()
        .single_writer(2)
        .busy_timeout(short)
        .build()
        .await
        .unwrap();
    let default = db
        .builder()
        .max_size(8)
        .busy_timeout(short)
        .build()
        .await
        .unwrap();
    let mut c = mode.get_connection().await.unwrap();
    c.execute_batch("CREATE TABLE sw (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        .await
        .unwrap();
    drop(c);
    async fn writers(pool: &ConfigAndPool, base: i64) -> Vec<SqlMiddlewareDbError> {
        let pool = Arc::new(pool.clone());
        let tasks: Vec<_> = (0..6)
            .map(|i| {
                let pool = Arc::clone(&pool);
                tokio::spawn(async move {
                    let mut c = pool.get_connection().await?;
                    let mut tx = c.begin().await?;
                    ins(&mut tx, base + i).await?;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    tx.commit().await
                })
            })
            .collect();
        let mut errors = Vec::new();
        for t in tasks {
            if let Err(e) = t.await.unwrap() {
                errors.push(e);
            }
        }
        errors
    }
    let errors = writers(&mode, 100).await;
    assert!(errors.is_empty(), "[{k}] single_writer: {errors:?}");
    let errors = writers(&default, 200).await;
    assert!(
        errors.iter().any(|e| e.kind() == ErrorKind::Busy),
        "[{k}] the default pool's writers wait in the busy handler and fail: {errors:?}"
    );
}

/// A reader stays read-only: SQLite's is opened read-only (`PRAGMA query_only = 0` changes
/// nothing), Turso's refuses a statement that sets `query_only`; after the reader went back,
/// a write on it still fails.
async fn t_a_reader_stays_read_only(db: &TestDb) {
    let k = db.kind.name();
    let Some(pool) = mode_pool(db, 1).await else {
        return;
    };
    let mut w = pool.get_connection().await.unwrap();
    w.execute_batch("CREATE TABLE sw (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
        .await
        .unwrap();
    drop(w);
    let mut r = pool.reader().await.unwrap();
    for off in [
        "PRAGMA query_only = 0",
        "PRAGMA main.query_only=false",
        "PRAGMA \"query_only\"(0)",
    ] {
        match db.kind {
            Kind::Turso => {
                let what = format!("[{k}] {off} on a reader");
                expect_kind(&what, r.execute_batch(off).await, ErrorKind::ReadOnly);
                let q = r.query(off).dml().await;
                expect_kind(&what, q, ErrorKind::ReadOnly);
            }
            _ => r.execute_batch(off).await.unwrap(),
        }
        expect_kind(
            &format!("[{k}] a write after {off}"),
            r.query("INSERT INTO sw (id, v) VALUES (1, 'r')")
                .dml()
                .await,
            ErrorKind::ReadOnly,
        );
    }
    // Reading the setting is no write.
    let _: Vec<(i64,)> = r.query("PRAGMA query_only").all().await.unwrap();
    drop(r);
    let mut r = pool.reader().await.unwrap();
    expect_kind(
        &format!("[{k}] a write on the reader after it went back"),
        r.query("INSERT INTO sw (id, v) VALUES (2, 'r')")
            .dml()
            .await,
        ErrorKind::ReadOnly,
    );
}

/// Every connection retired (idle): the WAL files may be gone, and a new reader still opens and
/// reads what was committed.
async fn t_a_reader_opens_after_every_connection_closed(db: &TestDb) {
    let k = db.kind.name();
    let Some(_) = mode_pool(db, 1).await else {
        return;
    };
    let pool = db
        .builder()
        .single_writer(2)
        .idle_timeout(Duration::from_millis(50))
        .build()
        .await
        .unwrap();
    let mut w = pool.get_connection().await.unwrap();
    w.execute_batch(
        "CREATE TABLE sw (id INTEGER PRIMARY KEY, v TEXT NOT NULL);
         INSERT INTO sw (id, v) VALUES (1, 'kept')",
    )
    .await
    .unwrap();
    drop(w);
    let mut r = pool.reader().await.unwrap();
    assert_eq!(ids(&mut r).await, [1], "[{k}]");
    drop(r);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while pool.status().size > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "[{k}] idle connections retired: {:?}",
            pool.status()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut r = pool.reader().await.unwrap();
    assert_eq!(
        ids(&mut r).await,
        [1],
        "[{k}] a reader opened after every close"
    );
}

backend_tests! {
    async fn a_reader_opens_after_every_connection_closed(db) {
        t_a_reader_opens_after_every_connection_closed(&db).await
    }
    async fn a_reader_stays_read_only(db) { t_a_reader_stays_read_only(&db).await }
    async fn every_path_on_the_writer(db) { t_every_path_on_the_writer(&db).await }
    async fn readers_refuse_writes(db) { t_readers_refuse_writes(&db).await }
    async fn readers_see_committed_data_only(db) { t_readers_see_committed_data_only(&db).await }
    async fn writers_queue_instead_of_busy(db) { t_writers_queue_instead_of_busy(&db).await }
}

/// The mode's settings: the number of readers, the database it needs, its URL parameter.
mod config {
    use sql_middleware::prelude::*;
    use sql_middleware::{ErrorKind, PoolBuilder};

    use crate::common::backends::{TempDir, expect_kind};

    async fn build(what: &str, b: PoolBuilder) -> sql_middleware::SqlMiddlewareDbError {
        expect_kind(what, b.build().await.map(drop), ErrorKind::Config)
    }

    /// Each embedded engine's builder for a file in `dir`, with its name and URL scheme.
    fn files(dir: &TempDir) -> Vec<(&'static str, String, PoolBuilder)> {
        let out: Vec<(&'static str, &str, PoolBuilder)> = vec![
            #[cfg(feature = "sqlite")]
            (
                "sqlite",
                "sqlite",
                ConfigAndPool::sqlite(dir.path().join("s.db")),
            ),
            #[cfg(feature = "turso")]
            (
                "turso",
                "turso",
                ConfigAndPool::turso(dir.path().join("t.db")),
            ),
        ];
        out.into_iter()
            .map(|(k, scheme, b)| (k, scheme.to_owned(), b))
            .collect()
    }

    #[tokio::test]
    async fn readers_are_counted_and_bounded() {
        let dir = TempDir::new("sw_config");
        for (k, _, b) in files(&dir) {
            let e = build(&format!("[{k}] zero readers"), b.single_writer(0)).await;
            assert!(e.to_string().contains("single_writer"), "[{k}] {e}");
        }
        for (k, _, b) in files(&dir) {
            build(&format!("[{k}] too many readers"), b.single_writer(10_001)).await;
        }
        for (k, _, b) in files(&dir) {
            let pool = b.max_size(9).single_writer(3).build().await.unwrap();
            assert_eq!(pool.status().max_size, 4, "[{k}] one writer, three readers");
        }
    }

    #[tokio::test]
    async fn in_memory_databases_are_refused() {
        #[cfg(feature = "sqlite")]
        {
            build(
                "[sqlite] memory",
                ConfigAndPool::sqlite_memory().single_writer(2),
            )
            .await;
            let b = ConfigAndPool::from_url("sqlite::memory:?single_writer=2").unwrap();
            let e = build("[sqlite] memory URL", b).await;
            assert!(e.to_string().contains("in-memory"), "{e}");
        }
        #[cfg(feature = "turso")]
        {
            build(
                "[turso] memory",
                ConfigAndPool::turso_memory().single_writer(2),
            )
            .await;
            let b = ConfigAndPool::from_url("turso::memory:?single_writer=2").unwrap();
            build("[turso] memory URL", b).await;
        }
    }

    #[cfg(feature = "sqlite")]
    #[tokio::test]
    async fn sqlite_without_wal_is_refused() {
        let dir = TempDir::new("sw_config");
        let b = ConfigAndPool::sqlite(dir.path().join("s.db"))
            .wal(false)
            .single_writer(2);
        let e = build("[sqlite] wal off", b).await;
        assert!(e.to_string().contains("WAL"), "{e}");
    }

    #[tokio::test]
    async fn the_url_parameter() {
        let dir = TempDir::new("sw_config");
        for (k, scheme, _) in files(&dir) {
            let path = dir.path().join(format!("{k}_url.db"));
            let url = format!("{scheme}://{}", path.display());
            let pool = ConfigAndPool::from_url(&format!("{url}?single_writer=2"))
                .unwrap()
                .build()
                .await
                .unwrap_or_else(|e| panic!("[{k}] {e:?}"));
            assert_eq!(pool.status().max_size, 3, "[{k}]");
            let mut r = pool.reader().await.unwrap();
            expect_kind(
                &format!("[{k}] a write through the URL pool's reader"),
                r.execute_batch("CREATE TABLE t (a INTEGER)").await,
                ErrorKind::ReadOnly,
            );
            for bad in ["0", "x", "-1", ""] {
                let r = match ConfigAndPool::from_url(&format!("{url}?single_writer={bad}")) {
                    Ok(b) => b.build().await.map(drop),
                    Err(e) => Err(e),
                };
                expect_kind(&format!("[{k}] single_writer={bad}"), r, ErrorKind::Config);
            }
        }
    }
}
