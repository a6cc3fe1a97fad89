//! The connection bound: test databases of one server hold at most the bound of connections at
//! once, across threads (`cargo test`) and across processes (`cargo nextest`, here made by the
//! test itself); a test that cannot get its share waits instead of failing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use sql_middleware::testing::TestDatabase;

use crate::support::{self, Engine};

/// A URL of `engine`'s server whose sessions carry `tag` (Postgres: `application_name`), so
/// the server can count them.
fn tagged(engine: Engine, tag: &str) -> String {
    let base = support::url(engine);
    let sep = if base.contains('?') { '&' } else { '?' };
    format!("{base}{sep}application_name={tag}")
}

/// The peak of the server's sessions tagged `tag` while `stop` is false, sampled every 5 ms.
fn watch(tag: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<i64> {
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let admin = support::admin(Engine::Postgres).await;
            let mut conn = admin.get_connection().await.unwrap();
            let sql = format!(
                "SELECT count(*)::bigint FROM pg_stat_activity WHERE application_name = '{tag}'"
            );
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
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn threads_share_the_bound() {
    let tag = format!("sqlmw_bound_t{}", std::process::id());
    let url = tagged(Engine::Postgres, &tag);
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch(tag, Arc::clone(&stop));
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
    println!(
        "bound_threads_peak_databases={most} bound_threads_peak_connections={peak} bound_threads_ms={}",
        started.elapsed().as_millis()
    );
    assert!(most <= 2, "{most} databases at once with room for two");
    assert!(peak <= 6, "{peak} server sessions with a bound of 6");
    assert!(
        started.elapsed() >= Duration::from_millis(4 * 150),
        "they waited in turn"
    );
}

/// Six processes (this binary, running the child below) at once with a bound of 6: the server
/// never sees more than six of their sessions, and every child finishes.
#[test]
fn processes_share_the_bound() {
    let tag = format!("sqlmw_bound_p{}", std::process::id());
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch(tag.clone(), Arc::clone(&stop));
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
                .env("SQLMW_BOUND_URL", tagged(Engine::Postgres, &tag))
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    stop.store(true, Ordering::Relaxed);
    let peak = watcher.join().unwrap();
    println!(
        "bound_processes_peak_connections={peak} bound_processes_ms={}",
        started.elapsed().as_millis()
    );
    assert!(peak >= 3, "the children ran ({peak} sessions seen)");
    assert!(peak <= 6, "{peak} server sessions with a bound of 6");
}

/// The child of the test above.
#[tokio::test]
#[ignore = "run by processes_share_the_bound"]
async fn child_holds_a_database() {
    let url = std::env::var("SQLMW_BOUND_URL").unwrap();
    let live = AtomicUsize::new(0);
    hold_one(&url, &live, Duration::from_millis(300)).await;
}
