//! `after_connect`: the hook runs once on each connection the pool opens, its error fails that
//! opening only, and what it sets is the clean state a connection goes back to.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, TestDb, expect_kind};
use crate::helpers::status_until;

/// Counts the hook's runs; fails them while `fail` is set, sleeps in them while `slow` is.
#[derive(Default)]
struct Probe {
    ran: AtomicUsize,
    fail: AtomicBool,
    slow: AtomicBool,
}

/// Whether a connection has a session of its own: not behind PgBouncer in transaction mode,
/// where the server sessions are shared by the pooler's clients (there the hook's temporary
/// table is not checked).
pub(crate) fn own_session(kind: Kind) -> bool {
    #[cfg(feature = "postgres")]
    if kind == Kind::Postgres && crate::common::pg::pgbouncer::via_bouncer() {
        return false;
    }
    let _ = kind;
    true
}

/// `CREATE TEMP TABLE IF NOT EXISTS hook_seen (n BIGINT)` as `kind` spells it.
fn hook_table_sql(kind: Kind) -> String {
    format!(
        "CREATE {} TABLE IF NOT EXISTS hook_seen (n BIGINT)",
        kind.sql().temp
    )
}

/// `$1` cast to a 64-bit integer, as `kind` spells it.
fn cast_int_sql(kind: Kind) -> String {
    format!("SELECT {}", kind.sql().cast_int("$1"))
}

/// A builder on `db`'s database whose hook reports to `probe`: it runs a script, a statement
/// with parameters and a select.
fn counted(db: &TestDb, probe: &Arc<Probe>) -> PoolBuilder {
    let p = Arc::clone(probe);
    let own = own_session(db.kind);
    let kind = db.kind;
    db.builder().after_connect(move |conn| {
        let p = Arc::clone(&p);
        Box::pin(async move {
            if p.slow.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            if p.fail.load(Ordering::SeqCst) {
                return Err(SqlMiddlewareDbError::new(
                    ErrorKind::InvalidInput,
                    "the hook says no",
                ));
            }
            if own {
                conn.execute_batch(&hook_table_sql(kind)).await?;
                conn.dml(
                    "INSERT INTO hook_seen (n) VALUES ($1)",
                    &[RowValues::Int(7)],
                )
                .await?;
            }
            let rows = conn
                .select(&cast_int_sql(kind), &[RowValues::Int(7)])
                .await?;
            assert_eq!(rows.results.len(), 1);
            p.ran.fetch_add(1, Ordering::SeqCst);
            Ok(())
        })
    })
}

/// The hook's row in its temporary table (7), read on `conn` (7 without reading it where the
/// session is not the connection's own).
async fn hook_row(kind: Kind, conn: &mut MiddlewarePoolConnection) -> i64 {
    if !own_session(kind) {
        return 7;
    }
    let (n,): (i64,) = conn
        .query("SELECT n FROM hook_seen")
        .one()
        .await
        .expect("the hook's temporary table is there");
    n
}

/// Pool of 3, 3 held at once then 10 more checkouts: 3 runs, one per connection created;
/// a connection retired at `max_lifetime` is replaced, and its replacement runs the hook; so do
/// the connections `min_idle` opens.
async fn t_runs_once_per_connection(db: &TestDb) {
    let k = db.kind.name();
    let probe = Arc::new(Probe::default());
    let pool = counted(db, &probe).max_size(3).build().await.unwrap();
    assert_eq!(probe.ran.load(Ordering::SeqCst), 0, "[{k}] lazily opened");
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(pool.get_connection().await.unwrap());
    }
    for c in &mut held {
        assert_eq!(hook_row(db.kind, c).await, 7, "[{k}]");
    }
    drop(held);
    for _ in 0..10 {
        let mut c = pool.get_connection().await.unwrap();
        assert_eq!(hook_row(db.kind, &mut c).await, 7, "[{k}]");
    }
    let st = pool.status();
    assert_eq!(st.created, 3, "[{k}] {st:?}");
    assert_eq!(
        probe.ran.load(Ordering::SeqCst),
        3,
        "[{k}] once per connection"
    );

    let probe = Arc::new(Probe::default());
    let aging = counted(db, &probe)
        .max_size(1)
        .max_lifetime(Duration::from_millis(150))
        .build()
        .await
        .unwrap();
    hook_row(db.kind, &mut aging.get_connection().await.unwrap()).await;
    tokio::time::sleep(Duration::from_millis(250)).await;
    hook_row(db.kind, &mut aging.get_connection().await.unwrap()).await;
    let st = aging.status();
    assert!(
        st.created >= 2 && st.retired_max_lifetime >= 1,
        "[{k}] {st:?}"
    );
    assert_eq!(
        probe.ran.load(Ordering::SeqCst) as u64,
        st.created,
        "[{k}] the replacement ran the hook"
    );

    let probe = Arc::new(Probe::default());
    let warm = counted(db, &probe)
        .max_size(4)
        .min_idle(2)
        .build()
        .await
        .unwrap();
    let st = status_until(&warm, |s| s.created >= 2).await;
    assert!(st.created >= 2, "[{k}] min_idle: {st:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while (probe.ran.load(Ordering::SeqCst) as u64) < st.created && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        probe.ran.load(Ordering::SeqCst) as u64,
        warm.status().created,
        "[{k}] every warm connection ran the hook"
    );
}

/// The hook's error reaches the caller of `get_connection` as the hook made it; a hook past the
/// create timeout fails the opening with `PoolTimeout`; neither leaks a slot, and the pool opens
/// a connection again once the hook succeeds.
async fn t_error_fails_that_connection(db: &TestDb) {
    let k = db.kind.name();
    let probe = Arc::new(Probe::default());
    let pool = counted(db, &probe)
        .max_size(2)
        .create_timeout(Duration::from_millis(300))
        .build()
        .await
        .unwrap();
    probe.fail.store(true, Ordering::SeqCst);
    for _ in 0..3 {
        let e = expect_kind(
            &format!("[{k}] a failing hook"),
            pool.get_connection().await,
            ErrorKind::InvalidInput,
        );
        assert!(e.message().contains("the hook says no"), "[{k}] {e:?}");
    }
    let st = status_until(&pool, |s| s.size == 0).await;
    assert_eq!(
        (st.size, st.created),
        (0, 0),
        "[{k}] nothing leaked: {st:?}"
    );

    probe.fail.store(false, Ordering::SeqCst);
    probe.slow.store(true, Ordering::SeqCst);
    let t = Instant::now();
    expect_kind(
        &format!("[{k}] a hook past the create timeout"),
        pool.get_connection().await,
        ErrorKind::PoolTimeout,
    );
    assert!(t.elapsed() < Duration::from_millis(1500), "[{k}] bounded");
    let st = status_until(&pool, |s| s.size == 0).await;
    assert_eq!(st.size, 0, "[{k}] nothing leaked: {st:?}");

    probe.slow.store(false, Ordering::SeqCst);
    let mut c = pool.get_connection().await.unwrap();
    assert_eq!(hook_row(db.kind, &mut c).await, 7, "[{k}]");
    drop(c);
    assert_eq!(probe.ran.load(Ordering::SeqCst), 1, "[{k}]");
    let st = pool.status();
    assert_eq!((st.size, st.created), (1, 1), "[{k}] {st:?}");

    // A statement of the hook that fails: the engine's error, its kind unchanged.
    hook_script_fails(
        db,
        "SELEC 1",
        "a hook statement that fails",
        ErrorKind::Syntax,
    )
    .await;
    // A hook that leaves a transaction open: the connection is not handed out inside it.
    hook_script_fails(
        db,
        "BEGIN",
        "a hook that leaves a transaction open",
        ErrorKind::TransactionState,
    )
    .await;
}

/// A pool whose hook runs `script`: the checkout fails with `kind`, and no connection stays.
async fn hook_script_fails(db: &TestDb, script: &'static str, what: &str, kind: ErrorKind) {
    let k = db.kind.name();
    let pool = db
        .builder()
        .after_connect(move |conn| Box::pin(async move { conn.execute_batch(script).await }))
        .build()
        .await
        .unwrap();
    expect_kind(&format!("[{k}] {what}"), pool.get_connection().await, kind);
    assert_eq!(status_until(&pool, |s| s.size == 0).await.size, 0, "[{k}]");
}

/// A setting, as the hook and a borrower set it and as it is read back.
fn set_sql(kind: Kind, value: &str) -> String {
    match kind {
        Kind::Postgres => format!("SET TIME ZONE '{value}'"),
        Kind::Sqlite | Kind::Turso => format!("PRAGMA cache_size = {value}"),
        // Not the time zone: the wing keeps the session in UTC for DATETIME values.
        Kind::Mysql => format!("SET SESSION group_concat_max_len = {value}"),
    }
}

async fn setting(kind: Kind, conn: &mut MiddlewarePoolConnection) -> String {
    match kind {
        Kind::Postgres => {
            let (v,): (String,) = conn
                .query("SELECT current_setting('TimeZone')")
                .one()
                .await
                .unwrap();
            v
        }
        Kind::Sqlite | Kind::Turso => {
            let (v,): (i64,) = conn
                .query("SELECT * FROM pragma_cache_size()")
                .one()
                .await
                .unwrap();
            v.to_string()
        }
        Kind::Mysql => {
            let (v,): (i64,) = conn
                .query("SELECT @@SESSION.group_concat_max_len")
                .one()
                .await
                .unwrap();
            v.to_string()
        }
    }
}

/// What the hook sets (a setting, a temporary table) is the clean state: a borrower that
/// changes the setting, or makes a temporary table of its own, is undone, and the next borrower
/// finds the hook's state again.
async fn t_hook_state_is_the_clean_state(db: &TestDb) {
    let k = db.kind.name();
    if !own_session(db.kind) {
        println!(
            "[{k}] behind a transaction-mode pooler no session is a connection's own: skipped"
        );
        return;
    }
    let (mine, theirs) = match db.kind {
        Kind::Postgres => ("Pacific/Chatham", "UTC"),
        Kind::Sqlite | Kind::Turso => ("-1234", "-999"),
        Kind::Mysql => ("12345", "999"),
    };
    let kind = db.kind;
    let probe = Arc::new(Probe::default());
    let p = Arc::clone(&probe);
    let pool = db
        .builder()
        .max_size(1)
        .after_connect(move |conn| {
            let p = Arc::clone(&p);
            Box::pin(async move {
                conn.execute_batch(&set_sql(kind, mine)).await?;
                conn.execute_batch(&hook_table_sql(kind)).await?;
                conn.dml(
                    "INSERT INTO hook_seen (n) VALUES ($1)",
                    &[RowValues::Int(7)],
                )
                .await?;
                p.ran.fetch_add(1, Ordering::SeqCst);
                Ok(())
            })
        })
        .build()
        .await
        .unwrap();

    let mut c = pool.get_connection().await.unwrap();
    assert_eq!(
        setting(kind, &mut c).await,
        mine,
        "[{k}] the hook's setting"
    );
    // A borrower changes the setting.
    c.execute_batch(&set_sql(kind, theirs)).await.unwrap();
    assert_eq!(setting(kind, &mut c).await, theirs, "[{k}]");
    drop(c);
    let mut c = pool.get_connection().await.unwrap();
    assert_eq!(
        setting(kind, &mut c).await,
        mine,
        "[{k}] the borrower's change is undone, the hook's setting is back"
    );
    assert_eq!(
        hook_row(db.kind, &mut c).await,
        7,
        "[{k}] the hook's table is there"
    );
    // A borrower makes a temporary table of its own, and changes the setting.
    let borrowed = format!("CREATE {} TABLE borrowed (x BIGINT)", kind.sql().temp);
    c.execute_batch(&borrowed).await.unwrap();
    c.execute_batch(&set_sql(kind, theirs)).await.unwrap();
    drop(c);
    let mut c = pool.get_connection().await.unwrap();
    assert_eq!(setting(kind, &mut c).await, mine, "[{k}]");
    assert_eq!(
        hook_row(db.kind, &mut c).await,
        7,
        "[{k}] the hook's table, one row"
    );
    let gone = c.query("SELECT x FROM borrowed").select().await;
    assert!(
        gone.is_err(),
        "[{k}] the borrower's table is gone: {gone:?}"
    );
    drop(c);
    let st = status_until(&pool, |s| s.available == 1).await;
    assert_eq!(st.size, 1, "[{k}] {st:?}");
    // One run per connection opened, and (Postgres, MySQL) one more per session reset.
    let ran = probe.ran.load(Ordering::SeqCst) as u64;
    match kind {
        Kind::Postgres | Kind::Mysql => assert!(ran >= st.created, "[{k}] ran {ran}, {st:?}"),
        Kind::Sqlite | Kind::Turso => assert_eq!(ran, st.created, "[{k}] {st:?}"),
    }
}

/// The hook's statements are not counted as the borrowers' in the pool's statistics.
async fn t_hook_statements_are_not_counted(db: &TestDb) {
    let k = db.kind.name();
    let probe = Arc::new(Probe::default());
    let pool = counted(db, &probe).max_size(1).build().await.unwrap();
    let mut c = pool.get_connection().await.unwrap();
    let (n,): (i64,) = c.query("SELECT 41 + 1").one().await.unwrap();
    assert_eq!(n, 42);
    drop(c);
    let s = pool.stats();
    assert_eq!(probe.ran.load(Ordering::SeqCst), 1, "[{k}]");
    assert_eq!(
        (s.statement_cache.hits, s.statement_cache.misses),
        (0, 1),
        "[{k}] only the borrower's statement: {s:?}"
    );
}

/// The hook is told the backend, and a builder of every backend takes it (also from a URL).
async fn t_hook_knows_its_backend(db: &TestDb) {
    let k = db.kind.name();
    let expected = db.kind.database_type();
    let seen = Arc::new(std::sync::Mutex::new(None));
    let s = Arc::clone(&seen);
    let pool = db
        .builder()
        .after_connect(move |conn| {
            *s.lock().unwrap() = Some(conn.database_type());
            Box::pin(async { Ok(()) })
        })
        .build()
        .await
        .unwrap();
    drop(pool.get_connection().await.unwrap());
    assert_eq!(*seen.lock().unwrap(), Some(expected), "[{k}]");
}

backend_tests! {
    async fn after_connect_runs_once_per_connection(db) { t_runs_once_per_connection(&db).await }
    async fn after_connect_error_fails_that_connection(db) { t_error_fails_that_connection(&db).await }
    async fn after_connect_state_is_the_clean_state(db) { t_hook_state_is_the_clean_state(&db).await }
    async fn after_connect_statements_are_not_counted(db) { t_hook_statements_are_not_counted(&db).await }
    async fn after_connect_knows_its_backend(db) { t_hook_knows_its_backend(&db).await }
}
