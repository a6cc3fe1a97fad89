//! Reliability 28.2: no data in errors. On every backend, generated values (text and numbers,
//! fresh each case) are bound into statements that fail in the ways that echo data: a unique
//! violation (Postgres' `DETAIL: Key (email)=(…) already exists`), a check and a not-null
//! violation (`DETAIL: Failing row contains (…)`), a foreign key to a missing row, failed casts
//! of a bound value (`invalid input syntax for type integer: "…"`, `value "…" is out of range`,
//! JSON, dates; a STRICT column on SQLite), a value bound to the wrong type, a wrong parameter
//! count, and decoding a row's text as a number. For every error, the `Display` and `Debug` of
//! the error and of each error in its `source()` chain must hold none of the case's values,
//! while the `Display` still names the cause (the constraint or column) and, on Postgres, the
//! full server text stays reachable through `unredacted_message()`.
//!
//! Postgres connect errors name their cause class in `Display` (refused, a missing database,
//! TLS), not only "error connecting to server".

use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common;
use crate::common::backends::Kind;
use crate::common::reliability::{Rng, knob_usize, seed_for};

/// Every text an error shows to a logger: `Display` and `Debug` of it and of its sources.
fn shown(e: &SqlMiddlewareDbError) -> String {
    let mut out = format!("{e}\n{e:?}");
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        out.push_str(&format!("\n{s}\n{s:?}"));
        src = s.source();
    }
    out
}

/// One failing call and what its error must name.
struct Case {
    what: &'static str,
    result: Result<(), SqlMiddlewareDbError>,
    /// A word the `Display` must hold (the constraint's column or name), lower-cased.
    names: Option<&'static str>,
}

async fn run(
    c: &mut MiddlewarePoolConnection,
    sql: &str,
    p: &[RowValues],
) -> Result<(), SqlMiddlewareDbError> {
    c.query(sql).params(p).dml().await.map(|_| ())
}

async fn select(
    c: &mut MiddlewarePoolConnection,
    sql: &str,
    p: &[RowValues],
) -> Result<(), SqlMiddlewareDbError> {
    c.query(sql).params(p).select().await.map(|_| ())
}

fn schema(kind: Kind) -> &'static str {
    match kind {
        Kind::Postgres => {
            "CREATE TABLE lk_parent (id BIGINT PRIMARY KEY);
             CREATE TABLE lk (id BIGINT PRIMARY KEY, email TEXT UNIQUE,
                              n BIGINT CONSTRAINT lk_n_nonnegative CHECK (n >= 0),
                              nn TEXT NOT NULL, parent BIGINT REFERENCES lk_parent(id),
                              d DATE, small SMALLINT);"
        }
        // MySQL keys no TEXT column without a prefix length, reads an inline REFERENCES
        // without acting on it, and names a CHECK only at table level: both are declared on
        // the table.
        Kind::Mysql => {
            "CREATE TABLE lk_parent (id BIGINT PRIMARY KEY);
             CREATE TABLE lk (id BIGINT PRIMARY KEY, email VARCHAR(255) UNIQUE,
                              n BIGINT, nn TEXT NOT NULL, parent BIGINT, d DATE,
                              small SMALLINT,
                              CONSTRAINT lk_n_nonnegative CHECK (n >= 0),
                              FOREIGN KEY (parent) REFERENCES lk_parent (id));"
        }
        Kind::Sqlite | Kind::Turso => {
            "PRAGMA foreign_keys = ON;
             CREATE TABLE lk_parent (id INTEGER PRIMARY KEY);
             CREATE TABLE lk (id INTEGER PRIMARY KEY, email TEXT UNIQUE,
                              n INTEGER CONSTRAINT lk_n_nonnegative CHECK (n >= 0),
                              nn TEXT NOT NULL, parent INTEGER REFERENCES lk_parent(id),
                              d TEXT, small INTEGER);"
        }
    }
}

/// The failing calls of one case, with `text` and `number` as the data that must not show.
async fn cases(
    c: &mut MiddlewarePoolConnection,
    kind: Kind,
    i: i64,
    text: &str,
    number: i64,
) -> Vec<Case> {
    let t = || RowValues::Text(text.to_owned());
    let mut out = Vec::new();
    let insert = "INSERT INTO lk (id, email, n, nn, parent) VALUES ($1, $2, $3, $4, $5)";
    run(
        c,
        insert,
        &[
            RowValues::Int(i),
            t(),
            RowValues::Int(number),
            t(),
            RowValues::Null,
        ],
    )
    .await
    .expect("the case's first row");
    out.push(Case {
        what: "unique violation",
        result: run(
            c,
            insert,
            &[
                RowValues::Int(i + 1_000_000),
                t(),
                RowValues::Int(1),
                t(),
                RowValues::Null,
            ],
        )
        .await,
        names: Some("email"),
    });
    out.push(Case {
        what: "primary key violation",
        result: run(
            c,
            insert,
            &[
                RowValues::Int(i),
                RowValues::Null,
                RowValues::Int(number),
                t(),
                RowValues::Null,
            ],
        )
        .await,
        names: None,
    });
    out.push(Case {
        what: "check violation",
        result: run(
            c,
            insert,
            &[
                RowValues::Int(i + 2_000_000),
                RowValues::Null,
                RowValues::Int(-number),
                t(),
                RowValues::Null,
            ],
        )
        .await,
        names: Some("lk_n_nonnegative"),
    });
    out.push(Case {
        what: "not-null violation",
        result: run(
            c,
            insert,
            &[
                RowValues::Int(i + 3_000_000),
                t(),
                RowValues::Int(number),
                RowValues::Null,
                RowValues::Null,
            ],
        )
        .await,
        names: Some("nn"),
    });
    out.push(Case {
        what: "foreign key violation",
        result: run(
            c,
            insert,
            &[
                RowValues::Int(i + 4_000_000),
                RowValues::Null,
                RowValues::Int(1),
                t(),
                RowValues::Int(number),
            ],
        )
        .await,
        names: None,
    });
    out.push(Case {
        what: "a wrong parameter count",
        result: run(c, "UPDATE lk SET nn = $1 WHERE id = $2", &[t()]).await,
        names: None,
    });
    out.push(Case {
        what: "decoding a text as a number",
        result: async {
            let _: (i64,) = c
                .query("SELECT nn FROM lk WHERE id = $1")
                .params(&[RowValues::Int(i)])
                .one()
                .await?;
            Ok(())
        }
        .await,
        names: Some("nn"),
    });
    match kind {
        // MySQL in strict mode refuses a value it cannot store, quoting it: "Incorrect integer
        // value: '…' for column", "Incorrect date value: '…'"; and a number too large for its
        // column ("Out of range value for column").
        Kind::Mysql => {
            for (what, sql, v) in [
                (
                    "a text stored in an integer column",
                    "UPDATE lk SET n = $1 WHERE id = $2",
                    t(),
                ),
                (
                    "a text stored in a date column",
                    "UPDATE lk SET d = $1 WHERE id = $2",
                    t(),
                ),
                (
                    "an out-of-range value stored",
                    "UPDATE lk SET small = $1 WHERE id = $2",
                    RowValues::Int(number),
                ),
            ] {
                out.push(Case {
                    what,
                    result: run(c, sql, &[v, RowValues::Int(i)]).await,
                    names: None,
                });
            }
        }
        Kind::Postgres => {
            // SQLite and Turso store a text in an integer column as it is.
            out.push(Case {
                what: "a text bound to an integer parameter",
                result: run(
                    c,
                    "UPDATE lk SET n = $1 WHERE id = $2",
                    &[t(), RowValues::Int(i)],
                )
                .await,
                names: None,
            });
            for (what, sql, v) in [
                ("a failed cast to integer", "SELECT $1::text::int", t()),
                ("a failed cast to date", "SELECT $1::text::date", t()),
                ("a failed cast to jsonb", "SELECT $1::text::jsonb", t()),
                (
                    "an out-of-range cast",
                    "SELECT $1::text::int2",
                    RowValues::Text(number.to_string()),
                ),
                (
                    "a NUL-free bad byte sequence",
                    "SELECT convert_from(decode($1, 'hex'), 'UTF8')",
                    RowValues::Text(format!("{:x}ff", number)),
                ),
            ] {
                out.push(Case {
                    what,
                    result: select(c, sql, &[v]).await,
                    names: None,
                });
            }
            out.push(Case {
                what: "an out-of-range value stored",
                result: run(
                    c,
                    "UPDATE lk SET small = $1::text::bigint WHERE id = $2",
                    &[RowValues::Text(number.to_string()), RowValues::Int(i)],
                )
                .await,
                names: None,
            });
        }
        Kind::Sqlite => {
            c.execute_batch("CREATE TABLE IF NOT EXISTS lk_strict (a INTEGER) STRICT")
                .await
                .expect("a STRICT table");
            out.push(Case {
                what: "a text stored in a STRICT integer column",
                result: run(c, "INSERT INTO lk_strict (a) VALUES ($1)", &[t()]).await,
                names: None,
            });
        }
        Kind::Turso => {}
    }
    out
}

backend_tests! {
    let _group = common::groups::enter("leaks");

    async fn errors_never_show_bound_values_or_row_data(db) {
        let mut c = db.conn().await;
        c.execute_batch(schema(db.kind)).await.expect("schema");
        let seed = seed_for(&format!("leaks/{}", db.kind.name()));
        let mut rng = Rng::new(seed);
        let n = (knob_usize("RELIABILITY_PROP_CASES", 4000) / 200).max(5);
        let (mut errors, mut leaked, mut unnamed, mut succeeded) = (0, Vec::new(), Vec::new(), Vec::new());
        let mut reachable = 0;
        for i in 1..=n as i64 {
            let text = format!("Mk{:012x}", rng.next_u64() & 0xffff_ffff_ffff);
            let number = 7_000_000_000 + (rng.next_u64() % 1_000_000_000) as i64;
            for case in cases(&mut c, db.kind, i, &text, number).await {
                let e = match case.result {
                    Ok(()) => {
                        succeeded.push(case.what);
                        continue;
                    }
                    Err(e) => e,
                };
                errors += 1;
                let seen = shown(&e);
                if seen.contains(&text) || seen.contains(&number.to_string()) {
                    leaked.push(format!("{} ({:?}): {seen}", case.what, e.kind()));
                }
                if let Some(word) = case.names {
                    if !e.to_string().to_ascii_lowercase().contains(word) {
                        unnamed.push(format!("{}: {e}", case.what));
                    }
                }
                if e.unredacted_message().is_some_and(|m| m.contains(&text) || m.contains(&number.to_string())) {
                    reachable += 1;
                }
            }
        }
        println!(
            "leaks backend={} seed={seed} cases={n} errors={errors} leaked={} unnamed={} \
             unexpected_successes={} data_behind_the_accessor={reachable}",
            db.kind.name(),
            leaked.len(),
            unnamed.len(),
            succeeded.len()
        );
        assert!(leaked.is_empty(), "{} errors show data:\n{}", leaked.len(), leaked.join("\n---\n"));
        assert!(unnamed.is_empty(), "errors that do not name their cause:\n{}", unnamed.join("\n"));
        assert!(succeeded.is_empty(), "calls that should have failed: {succeeded:?}");
        if db.kind == Kind::Postgres {
            assert!(reachable > 0, "the server's full text is not reachable through unredacted_message()");
        }
    }
}

/// Postgres connect errors name their cause in `Display`.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connect_errors_name_their_cause() {
    let _group = common::groups::enter("leaks");
    let base = common::pg::base_url();
    let mut wrong = Vec::new();
    let missing_db = {
        let (head, query) = base
            .split_once('?')
            .map_or((base.as_str(), ""), |(h, q)| (h, q));
        let head = match head.rfind('/') {
            Some(i) if i > head.find("://").map_or(0, |j| j + 2) => &head[..i],
            _ => head,
        };
        let sep = if query.is_empty() { "" } else { "?" };
        format!("{head}/sqlmw_no_such_db{sep}{query}")
    };
    for (url, want) in [
        (
            "postgres://app@127.0.0.1:1/db?connect_timeout=5".to_owned(),
            "refused",
        ),
        (missing_db, "does not exist"),
    ] {
        let r = async {
            let db = ConfigAndPool::postgres(&url).max_size(1).build().await?;
            db.get_connection().await.map(|_| ())
        }
        .await;
        match r {
            Ok(()) => wrong.push(format!("{want}: connected")),
            Err(e) if e.to_string().to_ascii_lowercase().contains(want) => {}
            Err(e) => wrong.push(format!("{want}: {e}")),
        }
    }
    println!("leaks_connect_errors cases=2 wrong={}", wrong.len());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// A failed password authentication names its cause class ("authentication") in `Display`,
/// and no error in the chain shows the password that was tried. Against a throwaway cluster
/// that asks TCP clients for a SCRAM password.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_password_names_authentication_and_never_the_password() {
    let _group = common::groups::enter("leaks");
    let cluster = tokio::task::spawn_blocking(|| {
        common::pg::cluster::start_cluster_with(&common::pg::cluster::ClusterSetup {
            settings: vec![("password_encryption".into(), "scram-sha-256".into())],
            hba: Some("local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n".into()),
            ..Default::default()
        })
    })
    .await
    .expect("start task")
    .unwrap_or_else(|e| panic!("a throwaway cluster is needed for this test: {e}"));
    let admin = common::pg::raw_client(&cluster.socket_url).await;
    admin
        .batch_execute("CREATE ROLE app LOGIN PASSWORD 'right-horse-battery'")
        .await
        .expect("role");
    let tried = "wrong-staple-8c1f";
    let url = format!(
        "postgres://app:{tried}@127.0.0.1:{}/postgres?connect_timeout=5&sslmode=disable",
        cluster.port
    );
    let r = async {
        let db = ConfigAndPool::postgres(&url).max_size(1).build().await?;
        db.get_connection().await.map(|_| ())
    }
    .await;
    let e = r.expect_err("a wrong password connected");
    let text = shown(&e);
    println!(
        "leaks_authentication kind={:?} display={:?}",
        e.kind(),
        e.to_string()
    );
    assert!(
        e.to_string()
            .to_ascii_lowercase()
            .contains("authentication"),
        "the error does not name authentication: {e}"
    );
    assert!(
        !text.contains(tried),
        "the password shows in the error: {text}"
    );
    // The right password connects, so the failure above was the password's.
    let ok = format!(
        "postgres://app:right-horse-battery@127.0.0.1:{}/postgres?connect_timeout=5&sslmode=disable",
        cluster.port
    );
    let db = ConfigAndPool::postgres(&ok)
        .max_size(1)
        .build()
        .await
        .expect("pool");
    db.get_connection().await.expect("the right password");
}
