//! Reliability 28.3: TLS is never weaker than asked (Postgres, feature `postgres-tls`). A
//! throwaway cluster accepts plain text and TLS over TCP alike, so a downgrade would succeed if
//! the pool allowed it. For each way of asking for TLS (the URL's `sslmode`, a
//! `tokio_postgres::Config`'s, the builder's, a replica's URL or `key=value` string), with
//! something weaker given elsewhere for the same pool, every session the pool opens (primary
//! checkouts, readers on the replica and on the primary, a `Listener`) is found encrypted in
//! `pg_stat_ssl`, seen from an administrative connection on the cluster's unix socket. Cancel
//! requests use the same connector as the pool's connections (the server does not report how
//! a cancel request arrived).

use sql_middleware::SslMode;
use sql_middleware::prelude::*;

use crate::common;

/// One way to configure a pool: the primary's builder and its replicas.
struct Setup {
    name: &'static str,
    /// The weakest mode given anywhere must not be what the sessions get.
    build: fn(&str, &str, u16) -> PoolBuilder,
}

/// The cluster's `postgres` database as `app`, with more of a query string.
fn url(app: &str, port: u16, q: &str) -> String {
    format!("postgres://postgres@localhost:{port}/postgres?application_name={app}{q}")
}

fn setups() -> Vec<Setup> {
    vec![
        Setup {
            name: "url require, replica url disable",
            build: |app, _, port| {
                ConfigAndPool::postgres(&url(app, port, "&sslmode=require")).replica(&url(
                    app,
                    port,
                    "&sslmode=disable",
                ))
            },
        },
        Setup {
            name: "url require, replica key=value disable",
            build: |app, _, port| {
                ConfigAndPool::postgres(&url(app, port, "&sslmode=require")).replica(&format!(
                    "host=localhost port={port} user=postgres dbname=postgres \
                     application_name={app} sslmode=disable"
                ))
            },
        },
        Setup {
            name: "tokio_postgres::Config require, replica url disable",
            build: |app, _, port| {
                let mut cfg = tokio_postgres::Config::new();
                cfg.host("localhost")
                    .port(port)
                    .user("postgres")
                    .dbname("postgres")
                    .application_name(app)
                    .ssl_mode(tokio_postgres::config::SslMode::Require);
                ConfigAndPool::postgres_config(cfg).replica(&url(app, port, "&sslmode=disable"))
            },
        },
        Setup {
            name: "url disable, replica url require",
            build: |app, _, port| {
                ConfigAndPool::postgres(&url(app, port, "&sslmode=disable")).replica(&url(
                    app,
                    port,
                    "&sslmode=require",
                ))
            },
        },
        Setup {
            name: "url require, builder disable",
            build: |app, _, port| {
                ConfigAndPool::postgres(&url(app, port, "&sslmode=require"))
                    .ssl_mode(SslMode::Disable)
                    .replica(&url(app, port, ""))
            },
        },
        Setup {
            name: "url prefer with the CA, replica url verify-full",
            build: |app, ca, port| {
                ConfigAndPool::postgres(&url(
                    app,
                    port,
                    &format!("&sslmode=prefer&sslrootcert={ca}"),
                ))
                .replica(&url(app, port, "&sslmode=verify-full"))
            },
        },
    ]
}

#[cfg(feature = "postgres-tls")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_session_of_a_pool_is_weaker_than_its_strictest_sslmode() {
    let _group = common::groups::enter("tls_floor");
    let server = common::pg::tls::start_with(true).unwrap_or_else(|e| panic!("{e}"));
    let admin = common::pg::raw_client(&server.cluster.socket_url).await;
    let ca = common::pg::percent_encode(&server.ca.display().to_string());
    let (mut sessions, mut wrong) = (0, Vec::new());
    for (i, setup) in setups().iter().enumerate() {
        let app = format!("sqlmw_tls_floor_{i}");
        let r = async {
            let db = (setup.build)(&app, &ca, server.cluster.port)
                .max_size(2)
                .replica_fallback(false)
                .build()
                .await?;
            let mut w = db.get_connection().await?;
            w.execute_batch("SELECT 1").await?;
            let mut r = db.reader().await?;
            r.execute_batch("SELECT 1").await?;
            let mut l = db.listener().await?;
            l.listen("sqlmw_tls_floor").await?;
            let rows = admin
                .query(
                    "SELECT s.ssl FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) \
                     WHERE a.application_name = $1",
                    &[&app],
                )
                .await
                .expect("pg_stat_ssl");
            let plain = rows.iter().filter(|r| !r.get::<_, bool>(0)).count();
            drop((w, r, l));
            db.close();
            Ok::<_, SqlMiddlewareDbError>((rows.len(), plain))
        }
        .await;
        match r {
            Err(e) => wrong.push(format!("{}: {e}", setup.name)),
            Ok((n, plain)) => {
                sessions += n;
                if n < 3 {
                    wrong.push(format!("{}: only {n} sessions seen", setup.name));
                }
                if plain > 0 {
                    wrong.push(format!(
                        "{}: {plain} of {n} sessions in plain text",
                        setup.name
                    ));
                }
            }
        }
    }
    println!(
        "tls_floor setups={} sessions={sessions} wrong={}",
        setups().len(),
        wrong.len()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
