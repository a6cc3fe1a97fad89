//! Where the setup time of a Postgres test database goes: each step `TestDatabase::build` takes
//! for a migrated database (the template exists), timed on its own, next to the whole build.
//! Figures are `key=value` lines (`--nocapture` shows them): the median and the 90th
//! percentile of several runs, in milliseconds. It runs only when asked (`--ignored`).

use std::time::{Duration, Instant};

use sql_middleware::prelude::*;

use crate::support::{self, Engine};

/// The median and 90th percentile of `times`, in milliseconds.
pub fn median_p90(times: &mut [Duration]) -> (f64, f64) {
    times.sort();
    let at = |q: f64| {
        let i = ((times.len() as f64 - 1.0) * q).round() as usize;
        times[i].as_secs_f64() * 1000.0
    };
    (at(0.5), at(0.9))
}

async fn connect(url: &str) -> ConfigAndPool {
    let pool = ConfigAndPool::from_url(url)
        .unwrap()
        .max_size(1)
        .build()
        .await
        .unwrap();
    let mut conn = pool.get_connection().await.unwrap();
    conn.execute_batch("SELECT 1").await.unwrap();
    drop(conn);
    pool
}

async fn run(admin: &ConfigAndPool, sql: &str) {
    let mut conn = admin.get_connection().await.unwrap();
    conn.execute_batch(sql).await.unwrap();
}

fn with_database(url: &str, db: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let (scheme, rest) = base.split_once("://").unwrap();
    let authority = rest.split('/').next().unwrap();
    match query {
        Some(q) => format!("{scheme}://{authority}/{db}?{q}"),
        None => format!("{scheme}://{authority}/{db}"),
    }
}

/// A measurement, not a check (and its `FILE_COPY` runs checkpoint the server): run it with
/// `cargo test --all-features --test testing -- --ignored timing:: --nocapture`.
#[tokio::test]
#[ignore = "a measurement: run with --ignored"]
async fn postgres_setup_breakdown() {
    let url = support::url(Engine::Postgres);
    let tpl = format!("sqlmw_bench_tpl_{}", std::process::id());
    let admin = connect(&url).await;
    run(&admin, &format!("DROP DATABASE IF EXISTS \"{tpl}\"")).await;
    run(&admin, &format!("CREATE DATABASE \"{tpl}\"")).await;
    let t = connect(&with_database(&url, &tpl)).await;
    let mut conn = t.get_connection().await.unwrap();
    support::migrator().run(&mut conn).await.unwrap();
    drop(conn);
    t.close();
    drop(t);
    // Warm the crate's own template.
    support::builder(Engine::Postgres)
        .build()
        .await
        .unwrap()
        .close()
        .await
        .unwrap();

    let version: i64 = {
        let mut conn = admin.get_connection().await.unwrap();
        let (v,): (i64,) = conn
            .query("SELECT current_setting('server_version_num')::bigint")
            .one()
            .await
            .unwrap();
        v
    };
    let runs = 15;
    let mut file_copy_t = vec![];
    let (mut connect_t, mut exists_t, mut create_t, mut first_t, mut build_t, mut drop_t) =
        (vec![], vec![], vec![], vec![], vec![], vec![]);
    for i in 0..runs {
        let started = Instant::now();
        let a = connect(&url).await;
        connect_t.push(started.elapsed());

        let started = Instant::now();
        let mut conn = a.get_connection().await.unwrap();
        let sql = format!("SELECT 1::bigint FROM pg_database WHERE datname = '{tpl}'");
        let found: Option<(i64,)> = conn.query(&sql).optional().await.unwrap();
        assert!(found.is_some());
        drop(conn);
        exists_t.push(started.elapsed());

        let name = format!("sqlmw_bench_{}_{i}", std::process::id());
        let started = Instant::now();
        run(
            &a,
            &format!("CREATE DATABASE \"{name}\" TEMPLATE \"{tpl}\""),
        )
        .await;
        create_t.push(started.elapsed());

        let started = Instant::now();
        let db = connect(&with_database(&url, &name)).await;
        first_t.push(started.elapsed());
        db.close();
        drop(db);

        let started = Instant::now();
        run(&a, &format!("DROP DATABASE \"{name}\" WITH (FORCE)")).await;
        drop_t.push(started.elapsed());
        a.close();

        let started = Instant::now();
        let db = support::builder(Engine::Postgres).build().await.unwrap();
        build_t.push(started.elapsed());
        db.close().await.unwrap();
    }
    // The other strategy (Postgres 15 and later), in a loop of its own: its checkpoints slow
    // down what runs next.
    if version >= 150_000 {
        for i in 0..runs {
            let other = format!("sqlmw_bench_{}_{i}_fc", std::process::id());
            let started = Instant::now();
            run(
                &admin,
                &format!("CREATE DATABASE \"{other}\" TEMPLATE \"{tpl}\" STRATEGY = FILE_COPY"),
            )
            .await;
            file_copy_t.push(started.elapsed());
            run(&admin, &format!("DROP DATABASE \"{other}\"")).await;
        }
    }
    run(&admin, &format!("DROP DATABASE \"{tpl}\"")).await;
    for (key, times) in [
        ("admin_connect", &mut connect_t),
        ("template_exists", &mut exists_t),
        ("create_from_template", &mut create_t),
        ("create_from_template_file_copy", &mut file_copy_t),
        ("first_connection", &mut first_t),
        ("drop", &mut drop_t),
        ("testdatabase_build", &mut build_t),
    ] {
        if times.is_empty() {
            continue;
        }
        let (median, p90) = median_p90(times);
        println!("pg_setup_{key}_ms median={median:.1} p90={p90:.1} runs={runs}");
    }
}
