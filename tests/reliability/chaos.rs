//! Reliability 4 and 5: connections killed under load (Postgres, MySQL), and many writers on
//! one database file (SQLite, Turso).
//!
//! - Postgres: backends killed under load, directly and behind PgBouncer in transaction mode
//!   (unnamed statements): only `ConnectionLost` (`OutcomeUnknown` for a session killed
//!   while its `COMMIT` was under way), nothing lost, phantom or torn. (Found: the
//!   pooler's `08P01 server connection closed` was classified as a parameter-count error.)
//! - MySQL/MariaDB: the same load, its sessions ended with `KILL <id>` from another connection
//!   (ids from `information_schema.PROCESSLIST`, the sessions on the test's database): the same
//!   promises.
//! - Postgres: a throwaway cluster restarted (`pg_ctl restart -m fast`) under load by 8 workers
//!   on a ledger: only `ConnectionLost`/`PoolTimeout` errors, nothing lost, phantom or torn, the
//!   first success within 1 s of the server accepting connections again, and an error-free
//!   final period.
//!
//! Knobs (environment):
//! - `RELIABILITY_CHAOS_SECS` (default 6): how long connections are killed; then a calm
//!   period of `RELIABILITY_CALM_SECS` (default 3) follows.
//! - `RELIABILITY_WRITERS` (default 16) × `RELIABILITY_WRITER_ROWS` (default 500) rows on a
//!   pool of 4, at busy timeouts of 5 s and 50 ms.
//! - `RELIABILITY_SEED`: replays a run (the seed is printed on failure).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common;
use crate::common::backends::{Logical, TestDb};
use crate::common::reliability::{Fate, Ledger, Rng, SeedGuard, knob_f64, knob_usize, ms};

// ---- 4. Postgres and MySQL: sessions killed under load -------------------------------------------

/// The server engine whose sessions are killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(feature = "mysql"), allow(dead_code))]
enum Engine {
    Postgres,
    Mysql,
}

impl Engine {
    /// The statement that reads the session's own id.
    fn own_id_sql(self) -> &'static str {
        match self {
            Engine::Postgres => "SELECT pg_backend_pid()::int8",
            Engine::Mysql => "SELECT CONNECTION_ID()",
        }
    }
}

/// Ends session `id` through `admin`; whether the server says it did.
async fn kill_session(admin: &ConfigAndPool, engine: Engine, id: i64) -> bool {
    let Ok(mut a) = admin.get_connection().await else {
        return false;
    };
    match engine {
        Engine::Postgres => a
            .query("SELECT pg_terminate_backend($1)")
            .params(&[id.into()])
            .one::<(bool,)>()
            .await
            .is_ok_and(|r| r.0),
        // An id that ended in between is an error (unknown thread id): not a kill.
        Engine::Mysql => a.execute_batch(&format!("KILL {id}")).await.is_ok(),
    }
}

/// The sessions on `database` (but the caller's own), as MySQL lists them; `filter` is `all`,
/// `in_transaction` (an InnoDB transaction is open) or `one` (the `pick`-th by id, modulo).
async fn mysql_sessions(
    admin: &ConfigAndPool,
    database: &str,
    filter: &str,
    pick: u64,
) -> Vec<i64> {
    let Ok(mut c) = admin.get_connection().await else {
        return Vec::new();
    };
    let sql = match filter {
        "in_transaction" => {
            "SELECT p.ID FROM information_schema.PROCESSLIST p \
             JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID \
             WHERE p.DB = $1 AND p.ID <> CONNECTION_ID() ORDER BY p.ID"
        }
        _ => {
            "SELECT ID FROM information_schema.PROCESSLIST \
             WHERE DB = $1 AND ID <> CONNECTION_ID() ORDER BY ID"
        }
    };
    let ids: Vec<(i64,)> = c
        .query(sql)
        .params(&[database.into()])
        .all()
        .await
        .unwrap_or_default();
    let ids: Vec<i64> = ids.into_iter().map(|r| r.0).collect();
    if filter == "one" && !ids.is_empty() {
        vec![ids[(pick % ids.len() as u64) as usize]]
    } else {
        ids
    }
}

#[derive(Debug, Default)]
struct WorkerLog {
    ledger: Ledger,
    ok_ops: usize,
    errors: Vec<(Instant, ErrorKind, String)>,
    first_ok_after_chaos: Option<Instant>,
    commit_kills: usize,
    /// When each operation succeeded.
    ok_times: Vec<Instant>,
}

#[cfg(feature = "postgres")]
async fn kill_where(admin: &ConfigAndPool, app: &str, filter: &str) -> usize {
    let Ok(mut c) = admin.get_connection().await else {
        return 0;
    };
    let sql = format!(
        "SELECT count(pg_terminate_backend(pid))::int8 FROM pg_stat_activity \
         WHERE application_name = $1 AND pid <> pg_backend_pid() {filter}"
    );
    c.query(&sql)
        .params(&[app.into()])
        .one::<(i64,)>()
        .await
        .map(|r| r.0 as usize)
        .unwrap_or(0)
}

/// Adds a worker's errors to the counts by kind (with a sample message of each kind), and
/// lists those from `quiet_from` on.
fn tally_errors(
    log: &WorkerLog,
    quiet_from: Instant,
    errors: &mut BTreeMap<String, usize>,
    samples: &mut BTreeMap<String, String>,
    late: &mut Vec<String>,
) {
    for (at, kind, msg) in &log.errors {
        let k = format!("{kind:?}");
        *errors.entry(k.clone()).or_default() += 1;
        samples.entry(k).or_insert_with(|| msg.clone());
        if *at >= quiet_from {
            late.push(format!("{kind:?}: {msg}"));
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn worker(
    engine: Engine,
    w: i64,
    pool: ConfigAndPool,
    admin: ConfigAndPool,
    mut rng: Rng,
    chaos_end: Instant,
    end: Instant,
) -> WorkerLog {
    let mut log = WorkerLog::default();
    let mut n = 0_i64;
    const INS: &str = "INSERT INTO ch (id, w) VALUES ($1, $2)";
    while Instant::now() < end {
        n += 1;
        let group = w * 1_000_000 + n;
        let id = |j: i64| group * 10 + j;
        let op = rng.below(10);
        let tx_rows = 1 + rng.below(4) as i64;
        let in_chaos = Instant::now() < chaos_end;
        let r: Result<(), (SqlMiddlewareDbError, bool)> = async {
            let mut c = pool.get_connection().await.map_err(|e| (e, false))?;
            match op {
                // A transaction of 1-4 rows.
                0..=4 => {
                    let rows = tx_rows;
                    let mut tx = c.begin().await.map_err(|e| (e, false))?;
                    for j in 0..rows {
                        tx.query(INS)
                            .params(&[id(j).into(), w.into()])
                            .dml()
                            .await
                            .map_err(|e| (e, false))?;
                    }
                    tx.commit().await.map_err(|e| (e, true))?;
                    log.ledger
                        .record(group, Fate::Acked, (0..rows).map(id).collect());
                    Ok(())
                }
                // An autocommit insert of two rows.
                5 | 6 => {
                    let r = c
                        .query("INSERT INTO ch (id, w) VALUES ($1, $3), ($2, $3)")
                        .params(&[id(0).into(), id(1).into(), w.into()])
                        .dml()
                        .await;
                    match r {
                        Ok(2) => {
                            log.ledger.record(group, Fate::Acked, vec![id(0), id(1)]);
                            Ok(())
                        }
                        Ok(k) => panic!("autocommit insert changed {k} rows"),
                        Err(e) => Err((e, true)),
                    }
                }
                // A read.
                7 => c
                    .query("SELECT count(*) FROM ch WHERE w = $1")
                    .params(&[w.into()])
                    .one::<(i64,)>()
                    .await
                    .map(drop)
                    .map_err(|e| (e, false)),
                // A transaction whose own session is killed around its COMMIT.
                _ => {
                    let mut tx = c.begin().await.map_err(|e| (e, false))?;
                    let (pid,): (i64,) = tx
                        .query(engine.own_id_sql())
                        .one()
                        .await
                        .map_err(|e| (e, false))?;
                    for j in 0..2 {
                        tx.query(INS)
                            .params(&[id(j).into(), w.into()])
                            .dml()
                            .await
                            .map_err(|e| (e, false))?;
                    }
                    if in_chaos {
                        let delay = Duration::from_micros(rng.below(3000));
                        let admin = admin.clone();
                        log.commit_kills += 1;
                        tokio::spawn(async move {
                            tokio::time::sleep(delay).await;
                            kill_session(&admin, engine, pid).await;
                        });
                    }
                    tx.commit().await.map_err(|e| (e, true))?;
                    log.ledger.record(group, Fate::Acked, vec![id(0), id(1)]);
                    Ok(())
                }
            }
        }
        .await;
        match r {
            Ok(()) => {
                log.ok_ops += 1;
                let now = Instant::now();
                log.ok_times.push(now);
                if now >= chaos_end && log.first_ok_after_chaos.is_none() {
                    log.first_ok_after_chaos = Some(now);
                }
            }
            Err((e, at_commit)) => {
                let rows: Vec<i64> = match op {
                    0..=4 => (0..tx_rows).map(id).collect(),
                    5 | 6 | 8 | 9 => vec![id(0), id(1)],
                    _ => vec![],
                };
                if !rows.is_empty() {
                    // An error at COMMIT (or of an autocommit write) may come after the engine
                    // committed: all rows or none. Before COMMIT, nothing may be saved.
                    let fate = if at_commit {
                        Fate::Indeterminate
                    } else {
                        Fate::Unacked
                    };
                    log.ledger.record(group, fate, rows);
                }
                log.errors.push((
                    Instant::now(),
                    e.kind(),
                    e.message().chars().take(120).collect(),
                ));
                // Back off a little so a dead pool is not hammered.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    }
    log
}

/// The kill test on `pool`, with the kills and the audit through `admin` (a direct
/// connection to the same database). `tag` names the pool's sessions: their
/// `application_name` on Postgres, their database on MySQL; `table` is the workers' table
/// `ch` as the admin names it. `label` names the figures line.
async fn killed_under_load(
    label: &str,
    engine: Engine,
    pool: ConfigAndPool,
    admin: ConfigAndPool,
    tag: &str,
    table: &str,
) {
    let (_guard, seed) = SeedGuard::new(label);
    let chaos = Duration::from_secs_f64(knob_f64("RELIABILITY_CHAOS_SECS", 6.0));
    let calm = Duration::from_secs_f64(knob_f64("RELIABILITY_CALM_SECS", 3.0));
    let workers = knob_usize("RELIABILITY_PG_WORKERS", 8) as i64;
    {
        let mut c = admin.get_connection().await.expect("admin");
        c.execute_batch(&format!(
            "CREATE TABLE {table} (id BIGINT PRIMARY KEY, w BIGINT NOT NULL)"
        ))
        .await
        .expect("create");
    }
    let mut rng = Rng::new(seed);
    let start = Instant::now();
    let chaos_end = start + chaos;
    let end = chaos_end + calm;
    let mut tasks = Vec::new();
    for w in 0..workers {
        tasks.push(tokio::spawn(worker(
            engine,
            w + 1,
            pool.clone(),
            admin.clone(),
            rng.fork(),
            chaos_end,
            end,
        )));
    }
    // The killer: every 250 ms, one backend in a transaction, one at random, or all.
    let mut kills = 0;
    let mut ticks = 0;
    let mut last_kill = start;
    let mut krng = rng.fork();
    while Instant::now() + Duration::from_millis(250) < chaos_end {
        tokio::time::sleep(Duration::from_millis(250)).await;
        ticks += 1;
        kills += match engine {
            Engine::Postgres => {
                let filter = match ticks % 3 {
                    0 => "AND state IN ('idle in transaction', 'active')".to_owned(),
                    1 => format!(
                        "AND pid = (SELECT pid FROM pg_stat_activity WHERE application_name = $1 \
                             ORDER BY pid OFFSET {} LIMIT 1)",
                        krng.below(8)
                    ),
                    _ => String::new(),
                };
                kill_where(&admin, tag, &filter).await
            }
            Engine::Mysql => {
                let filter = ["in_transaction", "one", "all"][ticks % 3];
                let mut n = 0;
                for id in mysql_sessions(&admin, tag, filter, krng.below(8)).await {
                    n += usize::from(kill_session(&admin, engine, id).await);
                }
                n
            }
        };
        last_kill = Instant::now();
    }
    let mut ledger = Ledger::default();
    let mut ok_ops = 0;
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    let mut samples: BTreeMap<String, String> = BTreeMap::new();
    let mut late_errors = Vec::new();
    let mut recovery = Duration::ZERO;
    let mut commit_kills = 0;
    let quiet_from = end - calm / 2;
    for t in tasks {
        let log = t.await.expect("worker panicked");
        ok_ops += log.ok_ops;
        commit_kills += log.commit_kills;
        tally_errors(
            &log,
            quiet_from,
            &mut errors,
            &mut samples,
            &mut late_errors,
        );
        match log.first_ok_after_chaos {
            Some(t) => recovery = recovery.max(t.saturating_duration_since(last_kill)),
            None => late_errors.push("a worker never succeeded after the chaos".into()),
        }
        ledger.absorb(log.ledger);
    }
    let found: BTreeSet<i64> = {
        let mut c = admin.get_connection().await.expect("verifier");
        let rows: Vec<(i64,)> = c
            .query(&format!("SELECT id FROM {table}"))
            .all()
            .await
            .expect("read");
        rows.into_iter().map(|r| r.0).collect()
    };
    let audit = ledger.audit(&found);
    let unexpected: Vec<&String> = errors
        .keys()
        // A session killed while its COMMIT was under way: `OutcomeUnknown`.
        .filter(|k| !matches!(k.as_str(), "ConnectionLost" | "OutcomeUnknown"))
        .collect();
    let status = pool.status();
    println!(
        "{label} secs={:.1} calm_secs={:.1} workers={workers} kills={kills} commit_kills={commit_kills} \
             ops_ok={ok_ops} errors={errors:?} acked_rows={} found={} lost={} phantom={} \
             indeterminate={} (committed={} absent={}) torn={} recovery_ms={} errors_in_last_{:.1}s={} pool_size={}/{}",
        chaos.as_secs_f64(),
        calm.as_secs_f64(),
        audit.acked_rows,
        audit.acked_found,
        audit.lost.len(),
        audit.phantom.len(),
        audit.indeterminate,
        audit.indeterminate_committed,
        audit.indeterminate_absent,
        audit.torn.len(),
        recovery.as_millis(),
        (calm / 2).as_secs_f64(),
        late_errors.len(),
        status.size,
        status.max_size,
    );
    assert!(kills > 0, "nothing was killed");
    assert!(ok_ops > 0);
    assert!(
        audit.lost.is_empty(),
        "acknowledged rows lost: {:?}",
        audit.lost
    );
    assert!(
        audit.phantom.is_empty(),
        "phantom rows: {:?}",
        audit.phantom
    );
    assert!(
        audit.unknown_rows.is_empty(),
        "rows nobody wrote: {:?}",
        audit.unknown_rows
    );
    assert!(
        audit.torn.is_empty(),
        "half-committed transactions: {:?}",
        audit.torn
    );
    assert!(
        late_errors.is_empty(),
        "errors in the calm period's last {:?}: {late_errors:?}",
        calm / 2
    );
    assert!(
        unexpected.is_empty(),
        "error kinds other than ConnectionLost: {errors:?}, e.g. {samples:?}"
    );
    assert!(status.size <= status.max_size);
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_connections_killed_under_load() {
    let _group = common::groups::enter("chaos");
    common::pg::with_schema(|url| async move {
        let (pool, admin, app) = pg_pools(&url, &url, sql_middleware::StatementCache::Named).await;
        killed_under_load("pg_chaos", Engine::Postgres, pool, admin, &app, "ch").await
    })
    .await;
}

/// A pool on `url` (in `mode`, its sessions named by a fresh `application_name`, returned
/// third) and an admin pool on `admin`.
#[cfg(feature = "postgres")]
async fn pg_pools(
    url: &str,
    admin: &str,
    mode: sql_middleware::StatementCache,
) -> (ConfigAndPool, ConfigAndPool, String) {
    let app = format!("sqlmw_chaos_{}", common::backends::unique_hex());
    let pool = ConfigAndPool::postgres(url)
        .statement_cache(mode)
        .application_name(&app)
        .max_size(8)
        .wait_timeout(Duration::from_secs(5))
        .create_timeout(Duration::from_secs(5))
        .build()
        .await
        .expect("pool");
    let admin = ConfigAndPool::postgres(admin)
        .max_size(4)
        .build()
        .await
        .expect("admin pool");
    (pool, admin, app)
}

/// MySQL/MariaDB: sessions of a pool of 8 ended with `KILL <id>` under load by 8 workers. The
/// admin pool connects to the server's own default database, so it never lists itself.
#[cfg(feature = "mysql")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mysql_connections_killed_under_load() {
    let _group = common::groups::enter("chaos");
    let database = common::mysql::MyDatabase::create().await;
    let pool = ConfigAndPool::mysql(&database.url)
        .max_size(8)
        .wait_timeout(Duration::from_secs(5))
        .create_timeout(Duration::from_secs(5))
        .build()
        .await
        .expect("pool");
    let admin = ConfigAndPool::mysql(&common::mysql::base_url())
        .max_size(4)
        .build()
        .await
        .expect("admin pool");
    // The admin names the table with its database.
    let table = format!("`{}`.ch", database.name);
    let run = std::panic::AssertUnwindSafe(killed_under_load(
        "mysql_chaos",
        Engine::Mysql,
        pool,
        admin,
        &database.name,
        &table,
    ));
    let outcome = futures::FutureExt::catch_unwind(run).await;
    database.drop_database().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// The same through PgBouncer in transaction mode (unnamed statements): the server connections
/// behind the pooler are killed; the pooler reports it to its clients.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_connections_killed_behind_pgbouncer() {
    let _group = common::groups::enter("chaos");
    let base = common::pg::base_url();
    let db = format!("sqlmw_t_{}", common::pg::random_hex());
    let admin_client = common::pg::raw_client(&base).await;
    admin_client
        .batch_execute(&format!("CREATE DATABASE \"{db}\""))
        .await
        .expect("create the test database");
    let direct = {
        let mut cfg: tokio_postgres::Config = base.parse().expect("test URL");
        cfg.dbname(&db);
        let host = match cfg.get_hosts().first() {
            Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
            Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
            None => "127.0.0.1".to_owned(),
        };
        format!(
            "host={host} port={} user={} dbname={db}",
            cfg.get_ports().first().copied().unwrap_or(5432),
            cfg.get_user().unwrap_or("postgres")
        )
    };
    let through = common::pg::pgbouncer::shared().url(&db);
    let run = std::panic::AssertUnwindSafe(async {
        let (pool, admin, app) =
            pg_pools(&through, &direct, sql_middleware::StatementCache::Unnamed).await;
        killed_under_load(
            "pg_chaos_pgbouncer",
            Engine::Postgres,
            pool,
            admin,
            &app,
            "ch",
        )
        .await
    });
    let outcome = futures::FutureExt::catch_unwind(run).await;
    let _ = admin_client
        .batch_execute(&format!("DROP DATABASE IF EXISTS \"{db}\" WITH (FORCE)"))
        .await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

// ---- 5. SQLite and Turso: many writers, one file -------------------------------------------------

#[derive(Debug, Default)]
struct WriterLog {
    acked: Vec<i64>,
    indeterminate: Vec<i64>,
    increments_acked: i64,
    increments_indeterminate: i64,
    busy: usize,
    busy_too_early: Vec<Duration>,
    other_errors: Vec<String>,
}

async fn writer(
    w: i64,
    pool: ConfigAndPool,
    rows: i64,
    busy_timeout: Duration,
    mut rng: Rng,
) -> WriterLog {
    let mut log = WriterLog::default();
    let mut i = 0;
    let mut attempts = 0;
    while i < rows {
        attempts += 1;
        if attempts > rows * 50 {
            log.other_errors.push("too many retries".into());
            break;
        }
        let id = w * 1_000_000 + i;
        let rmw = rng.chance(0.2);
        let started = Instant::now();
        let mut at_commit = false;
        let r: Result<(), SqlMiddlewareDbError> = async {
            let mut c = pool.get_connection().await?;
            let mut tx = c.begin().await?;
            tx.query("INSERT INTO wr (id, w) VALUES ($1, $2)")
                .params(&[id.into(), w.into()])
                .dml()
                .await?;
            if rmw {
                // Read, then write what was read plus one: lost updates show in the total.
                let (v,): (i64,) = tx.query("SELECT v FROM counter WHERE id = 1").one().await?;
                tx.query("UPDATE counter SET v = $1 WHERE id = 1")
                    .params(&[(v + 1).into()])
                    .dml()
                    .await?;
            }
            at_commit = true;
            tx.commit().await
        }
        .await;
        match r {
            Ok(()) => {
                log.acked.push(id);
                if rmw {
                    log.increments_acked += 1;
                }
                i += 1;
            }
            Err(e) if e.kind() == ErrorKind::Busy => {
                log.busy += 1;
                let waited = started.elapsed();
                if waited + Duration::from_millis(5) < busy_timeout {
                    log.busy_too_early.push(waited);
                }
                if at_commit {
                    log.indeterminate.push(id);
                    if rmw {
                        log.increments_indeterminate += 1;
                    }
                    // The row may exist now: move on to the next id.
                    i += 1;
                }
            }
            Err(e) => {
                log.other_errors.push(format!("{e}"));
                if at_commit {
                    log.indeterminate.push(id);
                    i += 1;
                }
            }
        }
    }
    log
}

async fn t_writers(db: &TestDb) {
    let (_guard, seed) = SeedGuard::new(&format!("writers/{}", db.kind.name()));
    let writers = knob_usize("RELIABILITY_WRITERS", 16) as i64;
    let rows = knob_usize("RELIABILITY_WRITER_ROWS", 500) as i64;
    let int = db.ty(Logical::Int);
    let mut rng = Rng::new(seed);
    for (round, busy_timeout) in [Duration::from_secs(5), Duration::from_millis(50)]
        .into_iter()
        .enumerate()
    {
        {
            let mut c = db.conn().await;
            c.execute_batch(&format!(
                "DROP TABLE IF EXISTS wr; DROP TABLE IF EXISTS counter;
                 CREATE TABLE wr (id {int} PRIMARY KEY, w {int} NOT NULL);
                 CREATE TABLE counter (id {int} PRIMARY KEY, v {int} NOT NULL);
                 INSERT INTO counter (id, v) VALUES (1, 0);"
            ))
            .await
            .expect("setup");
        }
        let pool = db
            .builder()
            .max_size(4)
            .busy_timeout(busy_timeout)
            .wait_timeout(Duration::from_secs(30))
            .build()
            .await
            .expect("writer pool");
        let started = Instant::now();
        let tasks: Vec<_> = (0..writers)
            .map(|w| tokio::spawn(writer(w, pool.clone(), rows, busy_timeout, rng.fork())))
            .collect();
        let mut acked = BTreeSet::new();
        let mut indeterminate = BTreeSet::new();
        let (mut inc_acked, mut inc_ind, mut busy) = (0, 0, 0);
        let mut too_early = Vec::new();
        let mut other = Vec::new();
        for t in tasks {
            let log = t.await.expect("writer panicked");
            acked.extend(log.acked);
            indeterminate.extend(log.indeterminate);
            inc_acked += log.increments_acked;
            inc_ind += log.increments_indeterminate;
            busy += log.busy;
            too_early.extend(log.busy_too_early);
            other.extend(log.other_errors);
        }
        let elapsed = started.elapsed();
        let mut c = db.conn().await;
        let found: BTreeSet<i64> = c
            .query("SELECT id FROM wr")
            .all::<(i64,)>()
            .await
            .expect("read")
            .into_iter()
            .map(|r| r.0)
            .collect();
        let (counter,): (i64,) = c
            .query("SELECT v FROM counter WHERE id = 1")
            .one()
            .await
            .expect("counter");
        let lost: Vec<i64> = acked.difference(&found).copied().collect();
        let phantom: Vec<i64> = found
            .iter()
            .filter(|id| !acked.contains(id) && !indeterminate.contains(id))
            .copied()
            .collect();
        let lost_updates = (inc_acked - counter).max(0);
        println!(
            "writers backend={} busy_timeout_ms={} writers={writers} rows_each={rows} pool=4 \
             acked={} found={} lost={} phantom={} indeterminate={} rmw_acked={inc_acked} \
             counter={counter} lost_updates={lost_updates} busy_errors={busy} \
             busy_before_timeout={} other_errors={} elapsed_ms={}",
            db.kind.name(),
            busy_timeout.as_millis(),
            acked.len(),
            found.len(),
            lost.len(),
            phantom.len(),
            indeterminate.len(),
            too_early.len(),
            other.len(),
            elapsed.as_millis()
        );
        assert!(
            lost.is_empty(),
            "[round {round}] acknowledged rows lost: {lost:?}"
        );
        assert!(
            phantom.is_empty(),
            "[round {round}] phantom rows: {phantom:?}"
        );
        assert!(
            counter >= inc_acked && counter <= inc_acked + inc_ind,
            "[round {round}] counter {counter}, acknowledged increments {inc_acked} \
             (+{inc_ind} indeterminate): lost or phantom updates"
        );
        assert!(
            other.is_empty(),
            "[round {round}] errors other than Busy: {:?}",
            &other[..other.len().min(5)]
        );
        assert!(
            too_early.is_empty(),
            "[round {round}] Busy raised before the {busy_timeout:?} timeout: {:?}",
            too_early.iter().map(|d| ms(*d)).collect::<Vec<_>>()
        );
        assert_eq!(
            acked.len() as i64,
            writers * rows - indeterminate.len() as i64
        );
        drop(c);
    }
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_writers_lose_nothing() {
    let _group = common::groups::enter("chaos");
    let db = common::engines::sqlite::test_db().await;
    t_writers(&db).await
}

#[cfg(feature = "turso")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turso_writers_lose_nothing() {
    let _group = common::groups::enter("chaos");
    let db = common::engines::turso::test_db().await;
    t_writers(&db).await
}

/// A connection opened while another process-level connection holds the database lock waits
/// for the busy timeout like any statement, instead of failing the checkout at once with
/// `Busy`. (Under load the pool opens connections at any time: after a discarded connection,
/// or when a waiter gave up while one was being created.)
#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_new_connection_waits_for_a_held_lock() {
    let _group = common::groups::enter("chaos");
    use sql_middleware::drivers::rusqlite;
    let db = common::engines::sqlite::test_db().await;
    {
        let mut c = db.conn().await;
        c.execute_batch("CREATE TABLE lk (id INTEGER PRIMARY KEY)")
            .await
            .expect("create");
    }
    let path = {
        let mut c = db.conn().await;
        c.with_blocking_sqlite(|c| Ok(c.path().unwrap_or_default().to_owned()))
            .await
            .expect("path")
    };
    // Only the raw holder may have the file open when it takes the exclusive lock.
    db.db.close();
    let hold = Duration::from_millis(300);
    let (locked_tx, locked_rx) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        let c = rusqlite::Connection::open(&path).expect("raw open");
        c.execute_batch(
            "PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE; INSERT INTO lk VALUES (1);",
        )
        .expect("exclusive lock");
        locked_tx.send(()).expect("signal");
        std::thread::sleep(hold);
        c.execute_batch("COMMIT").expect("commit");
        drop(c);
    });
    locked_rx.recv().expect("holder started");
    let fresh = db
        .builder()
        .max_size(1)
        .busy_timeout(Duration::from_secs(5))
        .build()
        .await
        .expect("fresh pool");
    let t = Instant::now();
    let mut step = "get_connection";
    let r = async {
        let mut c = fresh.get_connection().await?;
        step = "SELECT";
        c.query("SELECT count(*) FROM lk").one::<(i64,)>().await
    }
    .await;
    let waited = t.elapsed();
    holder.join().expect("holder");
    println!(
        "sqlite_open_under_lock held_ms={} busy_timeout_ms=5000 step={step} result={} waited_ms={}",
        hold.as_millis(),
        match &r {
            Ok((n,)) => format!("ok(rows={n})"),
            Err(e) => format!("{:?}", e.kind()),
        },
        waited.as_millis()
    );
    match r {
        Ok((1,)) => {}
        other => panic!(
            "{step} while a lock was held for {hold:?} (busy timeout 5 s) gave {other:?} \
             after {waited:?}: opening a connection must wait for the lock like any statement"
        ),
    }
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_server_restarted_under_load() {
    let _group = common::groups::enter("chaos");
    let cluster = common::pg::cluster::start_restartable_cluster().unwrap_or_else(|e| {
        panic!(
            "the restart test starts its own PostgreSQL cluster and needs the server binaries \
             (initdb, pg_ctl) in PATH or /usr/lib/postgresql/*/bin: {e}"
        )
    });
    let (_guard, seed) = SeedGuard::new("pg_restart");
    let workers = knob_usize("RELIABILITY_PG_WORKERS", 8) as i64;
    let before = Duration::from_secs_f64(knob_f64("RELIABILITY_RESTART_BEFORE_SECS", 1.5));
    let calm = Duration::from_secs_f64(knob_f64("RELIABILITY_CALM_SECS", 3.0));
    let pool = ConfigAndPool::postgres(&cluster.url)
        .max_size(8)
        .wait_timeout(Duration::from_secs(2))
        .create_timeout(Duration::from_secs(2))
        .build()
        .await
        .expect("pool");
    {
        let mut c = pool.get_connection().await.expect("setup");
        c.execute_batch("CREATE TABLE ch (id int8 PRIMARY KEY, w int8 NOT NULL)")
            .await
            .expect("create");
    }
    let mut rng = Rng::new(seed);
    let start = Instant::now();
    // Workers run through the restart (a few seconds at most) and a calm period after it.
    let end = start + before + Duration::from_secs(8) + calm;
    let mut tasks = Vec::new();
    for w in 0..workers {
        tasks.push(tokio::spawn(worker(
            Engine::Postgres,
            w + 1,
            pool.clone(),
            pool.clone(),
            rng.fork(),
            // No kills: the restart is the outage.
            start,
            end,
        )));
    }
    tokio::time::sleep(before).await;
    let down = Instant::now();
    let url = cluster.url.clone();
    tokio::task::spawn_blocking(move || cluster.restart().map(|()| cluster))
        .await
        .expect("restart task")
        .unwrap_or_else(|e| panic!("restarting {url}: {e}"));
    let ready = Instant::now();
    let mut ledger = Ledger::default();
    let mut ok_ops = 0;
    let mut errors: BTreeMap<String, usize> = BTreeMap::new();
    let mut samples: BTreeMap<String, String> = BTreeMap::new();
    let mut late_errors = Vec::new();
    let mut first_ok_after_ready: Option<Instant> = None;
    let mut ok_before_restart = 0;
    let quiet_from = end - calm / 2;
    for t in tasks {
        let log = t.await.expect("worker panicked");
        ok_ops += log.ok_ops;
        ok_before_restart += log.ok_times.iter().filter(|t| **t < down).count();
        if let Some(t) = log.ok_times.iter().find(|t| **t >= ready) {
            first_ok_after_ready = Some(first_ok_after_ready.map_or(*t, |f| f.min(*t)));
        }
        tally_errors(
            &log,
            quiet_from,
            &mut errors,
            &mut samples,
            &mut late_errors,
        );
        ledger.absorb(log.ledger);
    }
    let found: BTreeSet<i64> = {
        let mut c = pool.get_connection().await.expect("verifier");
        let rows: Vec<(i64,)> = c.query("SELECT id FROM ch").all().await.expect("read");
        rows.into_iter().map(|r| r.0).collect()
    };
    let audit = ledger.audit(&found);
    let recovery = first_ok_after_ready.map(|t| t - ready);
    let unexpected: Vec<&String> = errors
        .keys()
        .filter(|k| {
            !matches!(
                k.as_str(),
                "ConnectionLost" | "PoolTimeout" | "OutcomeUnknown"
            )
        })
        .collect();
    println!(
        "pg_restart workers={workers} restart_ms={} ops_ok={ok_ops} ok_before_restart={ok_before_restart} \
         errors={errors:?} acked_rows={} found={} lost={} phantom={} indeterminate={} \
         (committed={} absent={}) torn={} first_ok_after_ready_ms={} errors_in_last_{:.1}s={}",
        (ready - down).as_millis(),
        audit.acked_rows,
        audit.acked_found,
        audit.lost.len(),
        audit.phantom.len(),
        audit.indeterminate,
        audit.indeterminate_committed,
        audit.indeterminate_absent,
        audit.torn.len(),
        recovery.map_or(-1, |d| d.as_millis() as i64),
        (calm / 2).as_secs_f64(),
        late_errors.len(),
    );
    assert!(ok_before_restart > 0, "no work before the restart");
    assert!(
        audit.lost.is_empty(),
        "acknowledged rows lost: {:?}",
        audit.lost
    );
    assert!(
        audit.phantom.is_empty(),
        "phantom rows: {:?}",
        audit.phantom
    );
    assert!(
        audit.unknown_rows.is_empty(),
        "rows nobody wrote: {:?}",
        audit.unknown_rows
    );
    assert!(
        audit.torn.is_empty(),
        "half-committed transactions: {:?}",
        audit.torn
    );
    assert!(
        unexpected.is_empty(),
        "error kinds other than ConnectionLost/PoolTimeout: {errors:?}, e.g. {samples:?}"
    );
    let recovery = recovery.expect("no success after the server came back");
    assert!(
        recovery <= Duration::from_secs(1),
        "first success {recovery:?} after the server accepted connections again"
    );
    assert!(
        late_errors.is_empty(),
        "errors in the final {:?}: {late_errors:?}",
        calm / 2
    );
}
