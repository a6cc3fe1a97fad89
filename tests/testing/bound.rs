//! The connection bound: test databases of one server hold at most the bound of connections at
//! once, across threads (`cargo test`) and across processes (`cargo nextest`, here made by the
//! test itself); a test that cannot get its share waits instead of failing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sql_middleware::testing::TestDatabase;

use crate::support::{self, Engine};

/// A URL of `engine`'s server whose sessions carry `tag`, so the server can count them:
/// Postgres's `application_name`; on MySQL a user of that name (made here, with the rights to
/// create and drop databases), as `information_schema.PROCESSLIST` shows sessions' users.
async fn tagged(engine: Engine, tag: &str) -> String {
    let base = support::url(engine);
    match engine {
        Engine::Mysql => {
            for host in ["%", "localhost"] {
                support::on_server(
                    engine,
                    &format!(
                        "DROP USER IF EXISTS '{tag}'@'{host}'; CREATE USER '{tag}'@'{host}'; \
                         GRANT ALL PRIVILEGES ON *.* TO '{tag}'@'{host}'"
                    ),
                )
                .await;
            }
            let (scheme, rest) = base.split_once("://").unwrap();
            let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
            format!("{scheme}://{tag}@{rest}")
        }
        _ => {
            let sep = if base.contains('?') { '&' } else { '?' };
            format!("{base}{sep}application_name={tag}")
        }
    }
}

/// Removes what [`tagged`] made.
async fn untag(engine: Engine, tag: &str) {
    if engine == Engine::Mysql {
        support::on_server(
            engine,
            &format!("DROP USER IF EXISTS '{tag}'@'%'; DROP USER IF EXISTS '{tag}'@'localhost'"),
        )
        .await;
    }
}

/// The peak of the server's sessions tagged `tag` while `stop` is false, sampled every 5 ms.
fn watch(engine: Engine, tag: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<i64> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let admin = support::admin(engine).await;
            let mut conn = admin.get_connection().await.unwrap();
            let sql = match engine {
                Engine::Mysql => format!(
                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = '{tag}'"
                ),
                _ => format!(
                    "SELECT count(*)::bigint FROM pg_stat_activity WHERE application_name = '{tag}'"
                ),
            };
            let mut peak = 0;
            while !stop.load(Ordering::Relaxed) {
                let (n,): (i64,) = conn.query(&sql).one().await.unwrap();
                peak = peak.max(n);
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            peak
        })
    })
}

/// Holds a database of `url` (a pool of 2, so 3 slots of the bound of 6: two at a time) for
/// `hold`, using both connections, and returns how many were live at once at its peak.
async fn hold_one(url: &str, live: &AtomicUsize, hold: Duration) -> usize {
    let db = TestDatabase::builder()
        .url(url)
        .connections(2)
        .max_total_connections(6)
        .build()
        .await
        .unwrap();
    let now = live.fetch_add(1, Ordering::SeqCst) + 1;
    let (mut a, mut b) = (
        db.pool().get_connection().await.unwrap(),
        db.pool().get_connection().await.unwrap(),
    );
    a.execute_batch("SELECT 1").await.unwrap();
    b.execute_batch("SELECT 1").await.unwrap();
    tokio::time::sleep(hold).await;
    drop((a, b));
    live.fetch_sub(1, Ordering::SeqCst);
    db.close().await.unwrap();
    now
}

/// Eight tests at once in one process with a bound of 6: never more than two databases (six
/// connections on the server), and all of them finish.
async fn threads_share_the_bound(engine: Engine) {
    let tag = format!("sqlmw_bound_t{}", std::process::id());
    let url = tagged(engine, &tag).await;
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch(engine, tag.clone(), Arc::clone(&stop));
    let live = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..8)
        .map(|_| {
            let (url, live) = (url.clone(), Arc::clone(&live));
            tokio::spawn(async move { hold_one(&url, &live, Duration::from_millis(150)).await })
        })
        .collect();
    let mut most = 0;
    for t in tasks {
        most = most.max(t.await.unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    let peak = watcher.join().unwrap();
    untag(engine, &tag).await;
    let engine = format!("{engine:?}").to_lowercase();
    println!(
        "bound_threads_{engine}_peak_databases={most} bound_threads_{engine}_peak_connections={peak} bound_threads_{engine}_ms={}",
        started.elapsed().as_millis()
    );
    // One database's two connections at least (other tests of the server, in other
    // processes under nextest, may hold the rest of the bound meanwhile).
    assert!(peak >= 2, "the tests ran ({peak} sessions seen)");
    assert!(most <= 2, "{most} databases at once with room for two");
    assert!(peak <= 6, "{peak} server sessions with a bound of 6");
    assert!(
        started.elapsed() >= Duration::from_millis(4 * 150),
        "they waited in turn"
    );
}

/// Six processes (this binary, running the child below) at once with a bound of 6: the server
/// never sees more than six of their sessions, and every child finishes.
async fn processes_share_the_bound(engine: Engine) {
    let tag = format!("sqlmw_bound_p{}", std::process::id());
    let url = tagged(engine, &tag).await;
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch(engine, tag.clone(), Arc::clone(&stop));
    let started = Instant::now();
    let children: Vec<_> = (0..6)
        .map(|_| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "bound::child_holds_a_database",
                    "--exact",
                    "--ignored",
                    "--test-threads=1",
                ])
                .env("SQLMW_BOUND_URL", &url)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut ok = true;
    for mut c in children {
        ok &= tokio::task::spawn_blocking(move || c.wait().unwrap().success())
            .await
            .unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let peak = watcher.join().unwrap();
    untag(engine, &tag).await;
    let engine = format!("{engine:?}").to_lowercase();
    println!(
        "bound_processes_{engine}_peak_connections={peak} bound_processes_{engine}_ms={}",
        started.elapsed().as_millis()
    );
    assert!(ok, "every child finished");
    assert!(peak >= 2, "the children ran ({peak} sessions seen)");
    assert!(peak <= 6, "{peak} server sessions with a bound of 6");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_threads_share_the_bound() {
    threads_share_the_bound(Engine::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mysql_threads_share_the_bound() {
    threads_share_the_bound(Engine::Mysql).await;
}

#[tokio::test]
async fn postgres_processes_share_the_bound() {
    processes_share_the_bound(Engine::Postgres).await;
}

#[tokio::test]
async fn mysql_processes_share_the_bound() {
    processes_share_the_bound(Engine::Mysql).await;
}

/// The child of the tests above.
#[tokio::test]
#[ignore = "run by *_processes_share_the_bound"]
async fn child_holds_a_database() {
    let url = std::env::var("SQLMW_BOUND_URL").unwrap();
    let live = AtomicUsize::new(0);
    hold_one(&url, &live, Duration::from_millis(300)).await;
}
