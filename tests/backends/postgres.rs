//! Postgres-only promises: the type matrix, one round trip per cached autocommit query,
//! pool hygiene after dirty or abandoned connections, commit truth, and the throwaway-cluster path.
#![cfg(feature = "postgres")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use chrono::{NaiveDate, TimeZone, Utc};
use rust_decimal::Decimal;
use sql_middleware::StatementCache;
use sql_middleware::prelude::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::common::groups;
use crate::common::pg;

async fn pool(url: &str, max: usize) -> ConfigAndPool {
    ConfigAndPool::postgres(url)
        .max_size(max)
        .wait_timeout(Duration::from_secs(5))
        .build()
        .await
        .expect("pool")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn type_matrix_round_trips_every_type_and_null() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 2).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch(
            "CREATE TABLE m (
                i2 int2, i4 int4, i8 int8, f4 float4, f8 float8, num numeric,
                t text, vc varchar(20), ch char(3), nm name, b bool, by bytea,
                js json, jb jsonb, d date, ts timestamp, tz timestamptz, u uuid)",
        )
        .await
        .unwrap();
        let ts = NaiveDate::from_ymd_opt(2024, 2, 29)
            .unwrap()
            .and_hms_micro_opt(13, 14, 15, 123_456)
            .unwrap();
        let tz = Utc.with_ymd_and_hms(2023, 12, 31, 23, 59, 59).unwrap();
        let uuid = uuid::Uuid::from_u128(0x1234_5678_9abc_def0_1234_5678_9abc_def0);
        let json = serde_json::json!({"a": [1, 2, {"b": null}], "ü": "✓"});
        let insert =
            "INSERT INTO m VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18)";
        // Natural kinds, plus lossless conversions to the declared types:
        // Int -> float8 and numeric, Float -> float4, midnight Timestamp -> date, Text -> json/uuid.
        let params = vec![
            RowValues::Int(-32768),
            RowValues::Int(i32::MAX as i64),
            RowValues::Int(i64::MIN),
            RowValues::Float(1.5),
            RowValues::Int(1 << 53),
            RowValues::Int(12345),
            RowValues::Text("héllo ✓".into()),
            RowValues::Text("varchar".into()),
            RowValues::Text("abc".into()),
            RowValues::Text("a_name".into()),
            RowValues::Bool(true),
            RowValues::Blob(vec![0, 1, 254, 255]),
            RowValues::Text(json.to_string()),
            RowValues::JSON(json.clone()),
            RowValues::Timestamp(
                NaiveDate::from_ymd_opt(2024, 1, 2)
                    .unwrap()
                    .and_hms_opt(0, 0, 0)
                    .unwrap(),
            ),
            RowValues::Timestamp(ts),
            RowValues::TimestampTz(tz),
            RowValues::Text(uuid.to_string()),
        ];
        assert_eq!(c.query(insert).params(&params).dml().await.unwrap(), 1);
        let nulls = vec![RowValues::Null; 18];
        assert_eq!(c.query(insert).params(&nulls).dml().await.unwrap(), 1);

        let rs = c
            .query("SELECT * FROM m ORDER BY i2 NULLS LAST")
            .select()
            .await
            .unwrap();
        let r = &rs.results[0];
        let expect = [
            ("i2", RowValues::Int(-32768)),
            ("i4", RowValues::Int(i32::MAX as i64)),
            ("i8", RowValues::Int(i64::MIN)),
            ("f4", RowValues::Float(1.5)),
            ("f8", RowValues::Float((1u64 << 53) as f64)),
            ("num", RowValues::Numeric(Decimal::from(12345))),
            ("t", RowValues::Text("héllo ✓".into())),
            ("vc", RowValues::Text("varchar".into())),
            ("ch", RowValues::Text("abc".into())),
            ("nm", RowValues::Text("a_name".into())),
            ("b", RowValues::Bool(true)),
            ("by", RowValues::Blob(vec![0, 1, 254, 255])),
            ("js", RowValues::JSON(json.clone())),
            ("jb", RowValues::JSON(json.clone())),
            (
                "d",
                RowValues::Date(NaiveDate::from_ymd_opt(2024, 1, 2).unwrap()),
            ),
            ("ts", RowValues::Timestamp(ts)),
            ("tz", RowValues::TimestampTz(tz)),
            ("u", RowValues::Uuid(uuid)),
        ];
        for (col, v) in &expect {
            assert_eq!(r.get(col), Some(v), "column {col}");
        }
        let null_row = &rs.results[1];
        for (col, _) in &expect {
            assert_eq!(
                null_row.get(col),
                Some(&RowValues::Null),
                "NULL in column {col}"
            );
        }
        // Typed decoding goes by the column's type too.
        let (i2, f4, num, d, u): (i16, f32, Decimal, NaiveDate, uuid::Uuid) = c
            .query("SELECT i2, f4, num, d, u FROM m WHERE i2 IS NOT NULL")
            .one()
            .await
            .unwrap();
        assert_eq!(
            (i2, f4, num, d, u),
            (
                -32768,
                1.5,
                Decimal::from(12345),
                NaiveDate::from_ymd_opt(2024, 1, 2).unwrap(),
                uuid
            )
        );
        println!("type_matrix types=18 rows=2 mismatches=0");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lossy_binds_are_typed_errors_naming_the_parameter() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 1).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch("CREATE TABLE l (i4 int4, f4 float4, d date, i8 int8)")
            .await
            .unwrap();
        let cases: Vec<(&str, RowValues)> = vec![
            ("INSERT INTO l (i4) VALUES ($1)", RowValues::Int(1 << 40)),
            ("INSERT INTO l (f4) VALUES ($1)", RowValues::Float(0.1)),
            (
                "INSERT INTO l (d) VALUES ($1)",
                RowValues::Timestamp(
                    NaiveDate::from_ymd_opt(2024, 1, 1)
                        .unwrap()
                        .and_hms_opt(1, 0, 0)
                        .unwrap(),
                ),
            ),
            (
                "INSERT INTO l (i8) VALUES ($1)",
                RowValues::Text("12".into()),
            ),
            ("INSERT INTO l (i8) VALUES ($1)", RowValues::Float(0.5)),
        ];
        for (sql, v) in &cases {
            let e = c
                .query(sql)
                .params(std::slice::from_ref(v))
                .dml()
                .await
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::ParameterType, "{sql} {v:?}: {e}");
            assert!(
                e.to_string().contains("parameter"),
                "message names the parameter: {e}"
            );
            let (one,): (i32,) = c.query("SELECT 1").one().await.unwrap();
            assert_eq!(one, 1);
        }
        let n: (i64,) = c.query("SELECT count(*) FROM l").one().await.unwrap();
        assert_eq!(n.0, 0);
        println!("lossy_binds cases={} rejected={}", cases.len(), cases.len());
    })
    .await;
}

/// Counts the frontend messages that end a round trip (`Sync`, simple `Query`) and `Parse`.
/// While `hold` is set, the proxy forwards nothing from the server to the client.
#[derive(Default)]
struct Counts {
    syncs: AtomicU64,
    queries: AtomicU64,
    parses: AtomicU64,
    hold: AtomicBool,
}

/// Forwards the server's bytes to the client, pausing while `counts.hold` is set.
async fn pump_server_to_client(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    counts: Arc<Counts>,
) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        while counts.hold.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            return;
        }
    }
}

async fn pump_client_to_server(
    mut from: impl AsyncReadExt + Unpin,
    mut to: impl AsyncWriteExt + Unpin,
    counts: Arc<Counts>,
) {
    // The startup packet has no type byte.
    let mut len = [0u8; 4];
    if from.read_exact(&mut len).await.is_err() {
        return;
    }
    let n = u32::from_be_bytes(len) as usize;
    let mut body = vec![0u8; n - 4];
    if from.read_exact(&mut body).await.is_err() {
        return;
    }
    if to.write_all(&len).await.is_err() || to.write_all(&body).await.is_err() {
        return;
    }
    loop {
        let mut head = [0u8; 5];
        if from.read_exact(&mut head).await.is_err() {
            return;
        }
        match head[0] {
            b'S' => counts.syncs.fetch_add(1, Ordering::SeqCst),
            b'Q' => counts.queries.fetch_add(1, Ordering::SeqCst),
            b'P' => counts.parses.fetch_add(1, Ordering::SeqCst),
            _ => 0,
        };
        let n = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; n - 4];
        if from.read_exact(&mut body).await.is_err() {
            return;
        }
        if to.write_all(&head).await.is_err() || to.write_all(&body).await.is_err() {
            return;
        }
    }
}

/// A loopback proxy in front of the test server that counts protocol messages.
async fn counting_proxy(target: tokio_postgres::Config) -> (u16, Arc<Counts>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let counts = Arc::new(Counts::default());
    let c2 = Arc::clone(&counts);
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let counts = Arc::clone(&c2);
            let host = target.get_hosts()[0].clone();
            let tport = target.get_ports().first().copied().unwrap_or(5432);
            tokio::spawn(async move {
                let (cr, cw) = client.into_split();
                match host {
                    tokio_postgres::config::Host::Tcp(h) => {
                        let server = tokio::net::TcpStream::connect((h.as_str(), tport))
                            .await
                            .unwrap();
                        let (sr, sw) = server.into_split();
                        tokio::spawn(pump_server_to_client(sr, cw, Arc::clone(&counts)));
                        pump_client_to_server(cr, sw, counts).await;
                    }
                    tokio_postgres::config::Host::Unix(dir) => {
                        let path = dir.join(format!(".s.PGSQL.{tport}"));
                        let server = tokio::net::UnixStream::connect(path).await.unwrap();
                        let (sr, sw) = server.into_split();
                        tokio::spawn(pump_server_to_client(sr, cw, Arc::clone(&counts)));
                        pump_client_to_server(cr, sw, counts).await;
                    }
                }
            });
        }
    });
    (port, counts)
}

/// A one-connection pool that reaches the test server through [`counting_proxy`].
async fn proxied_pool(url: &str) -> (ConfigAndPool, Arc<Counts>) {
    let target: tokio_postgres::Config = url.parse().unwrap();
    let (port, counts) = counting_proxy(target.clone()).await;
    let mut via = tokio_postgres::Config::new();
    via.host("127.0.0.1")
        .port(port)
        .user(target.get_user().unwrap());
    via.dbname(target.get_dbname().unwrap_or("postgres"));
    if let Some(o) = target.get_options() {
        via.options(o);
    }
    // The proxy reads the protocol's messages, so the session stays plain text even where the
    // server offers TLS and the build has it (`prefer` would take it).
    let db = ConfigAndPool::postgres_config(via)
        .ssl_mode(sql_middleware::SslMode::Disable)
        .max_size(1)
        .build()
        .await
        .unwrap();
    (db, counts)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cached_autocommit_select_is_one_round_trip() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let (db, counts) = proxied_pool(&url).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch("CREATE TABLE rt (id int8 PRIMARY KEY, v text); INSERT INTO rt SELECT g, 'v' || g FROM generate_series(1, 100) g")
            .await
            .unwrap();
        let sql = "SELECT id, v FROM rt WHERE id = $1";
        c.query(sql).params(&[1.into()]).select().await.unwrap(); // warm: prepare once
        let (s0, q0, p0) = (
            counts.syncs.load(Ordering::SeqCst),
            counts.queries.load(Ordering::SeqCst),
            counts.parses.load(Ordering::SeqCst),
        );
        const RUNS: u64 = 50;
        for i in 0..RUNS as i64 {
            let rs = c.query(sql).params(&[RowValues::Int(i % 100 + 1)]).select().await.unwrap();
            assert_eq!(rs.results.len(), 1);
        }
        let mut stmt = c.prepare(sql).await.unwrap();
        for i in 0..RUNS as i64 {
            let (id, _v): (i64, String) = stmt.one(&[RowValues::Int(i + 1)]).await.unwrap();
            assert_eq!(id, i + 1);
        }
        let syncs = counts.syncs.load(Ordering::SeqCst) - s0;
        let queries = counts.queries.load(Ordering::SeqCst) - q0;
        let parses = counts.parses.load(Ordering::SeqCst) - p0;
        println!("round_trips queries={} syncs={syncs} simple_queries={queries} parses={parses}", 2 * RUNS);
        assert_eq!(syncs, 2 * RUNS, "one round trip per autocommit query");
        assert_eq!(queries, 0, "no BEGIN/COMMIT around single statements");
        assert_eq!(parses, 0, "no re-prepare of a cached statement");
    })
    .await;
}

/// A prepared statement held while another session changes its result type: the server
/// refuses the cached plan once, the statement is prepared again, and the handle runs the new
/// one from then on: one round trip per call again, no parse per call. (Found: the handle kept
/// the refused statement, so every later call was refused, prepared again and retried.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_statement_follows_a_result_type_change_once() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let (db, counts) = proxied_pool(&url).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch("CREATE TABLE rc (id int8 PRIMARY KEY, v text); INSERT INTO rc SELECT g, 'v' || g FROM generate_series(1, 10) g")
            .await
            .unwrap();
        let mut stmt = c.prepare("SELECT * FROM rc WHERE id = $1").await.unwrap();
        let (id, _): (i64, String) = stmt.one(&[RowValues::Int(1)]).await.unwrap();
        assert_eq!(id, 1);
        pg::raw_client(&url)
            .await
            .batch_execute("ALTER TABLE rc ADD COLUMN w int8 DEFAULT 7")
            .await
            .unwrap();
        // The first call after the change: refused, prepared again, run.
        let rs = stmt.select(&[RowValues::Int(2)]).await.unwrap();
        assert_eq!(rs.column_names().count(), 3, "the new column is seen");
        let (s0, p0) = (
            counts.syncs.load(Ordering::SeqCst),
            counts.parses.load(Ordering::SeqCst),
        );
        const RUNS: u64 = 20;
        for i in 0..RUNS as i64 {
            let (id, _, w): (i64, String, i64) =
                stmt.one(&[RowValues::Int(i % 10 + 1)]).await.unwrap();
            assert_eq!((id, w), (i % 10 + 1, 7));
        }
        let syncs = counts.syncs.load(Ordering::SeqCst) - s0;
        let parses = counts.parses.load(Ordering::SeqCst) - p0;
        assert_eq!(syncs, RUNS, "one round trip per call after the change");
        assert_eq!(parses, 0, "the held statement is not prepared again on every call");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dirty_and_aborted_connections_are_never_handed_out() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 1).await;
        {
            let mut c = db.get_connection().await.unwrap();
            c.execute_batch("CREATE TABLE d (id int8 PRIMARY KEY)")
                .await
                .unwrap();
        }
        let mut scenarios = 0;
        // 1. A transaction dropped with a write in it.
        {
            let mut c = db.get_connection().await.unwrap();
            let mut tx = c.begin().await.unwrap();
            tx.query("INSERT INTO d VALUES (1)").dml().await.unwrap();
            drop(tx);
            scenarios += 1;
        }
        // 2. An aborted transaction (error inside), dropped.
        {
            let mut c = db.get_connection().await.unwrap();
            let mut tx = c.begin().await.unwrap();
            tx.query("INSERT INTO d VALUES (2)").dml().await.unwrap();
            assert!(tx.query("SELECT 1/0").select().await.is_err());
            drop(tx);
            scenarios += 1;
        }
        // 3. A raw BEGIN inside a batch, left open.
        {
            let mut c = db.get_connection().await.unwrap();
            c.execute_batch("BEGIN; INSERT INTO d VALUES (3)")
                .await
                .unwrap();
            scenarios += 1;
        }
        // 4. A transaction dropped outside any runtime.
        {
            let db2 = db.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let mut c = rt.block_on(db2.get_connection()).unwrap();
                let mut tx = rt.block_on(c.begin()).unwrap();
                rt.block_on(tx.query("INSERT INTO d VALUES (4)").dml())
                    .unwrap();
                drop(rt);
                assert!(tokio::runtime::Handle::try_current().is_err());
                drop(tx);
                drop(c);
            })
            .join()
            .unwrap();
            scenarios += 1;
        }
        // The next checkout is idle: no transaction id assigned, not aborted, nothing saved.
        let mut c = db.get_connection().await.unwrap();
        let (xid,): (Option<i64>,) = c
            .query("SELECT txid_current_if_assigned()::text::int8")
            .one()
            .await
            .unwrap();
        assert_eq!(xid, None, "the connection must not be inside a transaction");
        let (n,): (i64,) = c.query("SELECT count(*) FROM d").one().await.unwrap();
        assert_eq!(n, 0, "no write of a dropped transaction is visible");
        let status = db.status();
        assert!(status.size <= 1);
        println!(
            "pg_hygiene scenarios={scenarios} dirty_checkouts=0 size={}",
            status.size
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_query_is_cancelled_not_queued_behind() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 1).await;
        // Same connection, reused after a timeout.
        let mut c = db.get_connection().await.unwrap();
        let r = tokio::time::timeout(
            Duration::from_millis(200),
            c.query("SELECT pg_sleep(5)").select(),
        )
        .await;
        assert!(r.is_err(), "the sleep must time out");
        let t = Instant::now();
        let (one,): (i32,) = c.query("SELECT 1").one().await.unwrap();
        assert_eq!(one, 1);
        let same_conn = t.elapsed();
        // Next borrower, after the connection went back with a query running.
        let r = tokio::time::timeout(
            Duration::from_millis(200),
            c.query("SELECT pg_sleep(5)").select(),
        )
        .await;
        assert!(r.is_err());
        drop(c);
        let t = Instant::now();
        let mut c = db.get_connection().await.unwrap();
        let (one,): (i32,) = c.query("SELECT 1").one().await.unwrap();
        assert_eq!(one, 1);
        let next_borrower = t.elapsed();
        println!(
            "abandoned_query same_conn_ms={} next_borrower_ms={}",
            same_conn.as_millis(),
            next_borrower.as_millis()
        );
        assert!(same_conn < Duration::from_secs(2), "{same_conn:?}");
        assert!(next_borrower < Duration::from_secs(2), "{next_borrower:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_after_error_is_an_error_and_saves_nothing() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 2).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch("CREATE TABLE ct (id int8 PRIMARY KEY)")
            .await
            .unwrap();
        let mut tx = c.begin().await.unwrap();
        tx.query("INSERT INTO ct VALUES (1)").dml().await.unwrap();
        let e = tx
            .query("INSERT INTO ct VALUES (1)")
            .dml()
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UniqueViolation);
        assert_eq!(e.driver_code(), Some("23505"));
        let e = tx.commit().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::TransactionAborted);
        let mut other = db.get_connection().await.unwrap();
        let (n,): (i64,) = other.query("SELECT count(*) FROM ct").one().await.unwrap();
        assert_eq!(n, 0);
        // A server-side abort seen only through a batch is caught too.
        let mut tx = c.begin().await.unwrap();
        tx.query("INSERT INTO ct VALUES (2)").dml().await.unwrap();
        assert!(tx.execute_batch("SELECT 1/0").await.is_err());
        assert!(tx.commit().await.is_err());
        let (n,): (i64,) = other.query("SELECT count(*) FROM ct").one().await.unwrap();
        assert_eq!(n, 0);
    })
    .await;
}

/// `pipeline()` sends every request before it waits for the first answer: with the server's
/// answers held back by the proxy, all the requests still reach the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipeline_sends_every_request_before_the_first_answer() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let (db, counts) = proxied_pool(&url).await;
        let mut c = db.get_connection().await.unwrap();
        let sql = "SELECT $1::int8 + 1 AS x";
        c.query(sql).params(&[1.into()]).select().await.unwrap(); // warm: prepared and cached
        const N: u64 = 50;
        let s0 = counts.syncs.load(Ordering::SeqCst);
        counts.hold.store(true, Ordering::SeqCst);
        let run = tokio::spawn(async move {
            let sets: Vec<[RowValues; 1]> = (0..N as i64).map(|i| [RowValues::Int(i)]).collect();
            let refs: Vec<&[RowValues]> = sets.iter().map(|s| &s[..]).collect();
            c.pipeline(sql, &refs).await
        });
        let deadline = Instant::now() + Duration::from_secs(10);
        let mut sent = 0;
        while Instant::now() < deadline {
            sent = counts.syncs.load(Ordering::SeqCst) - s0;
            if sent >= N {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let answered_early = run.is_finished();
        counts.hold.store(false, Ordering::SeqCst);
        let out = run.await.unwrap().unwrap();
        println!("pipeline requests={N} sent_before_any_answer={sent}");
        assert!(
            !answered_early,
            "the pipeline finished while every answer was held back"
        );
        assert_eq!(sent, N, "requests sent before the first answer");
        assert_eq!(out.len(), N as usize);
        for (i, rs) in out.iter().enumerate() {
            assert_eq!(rs.results[0].get("x"), Some(&RowValues::Int(i as i64 + 1)));
        }
    })
    .await;
}

/// A serialization failure (40001) and a deadlock (40P01) come back as their own kinds, so a
/// caller can tell "retry the transaction" from other errors.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serialization_failures_and_deadlocks_are_typed() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 2).await;
        let mut a = db.get_connection().await.unwrap();
        let mut b = db.get_connection().await.unwrap();
        a.execute_batch(
            "CREATE TABLE sf (id int8 PRIMARY KEY, v int8 NOT NULL); INSERT INTO sf VALUES (1, 0), (2, 0)",
        )
        .await
        .unwrap();

        // Repeatable read: the row changed after this transaction took its snapshot.
        let mut tx = a.begin().await.unwrap();
        tx.execute_batch("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            .await
            .unwrap();
        let (v,): (i64,) = tx.query("SELECT v FROM sf WHERE id = 1").one().await.unwrap();
        assert_eq!(v, 0);
        b.query("UPDATE sf SET v = 1 WHERE id = 1").dml().await.unwrap();
        let e = tx
            .query("UPDATE sf SET v = 2 WHERE id = 1")
            .dml()
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::SerializationFailure, "{e}");
        assert_eq!(e.driver_code(), Some("40001"));
        tx.rollback().await.unwrap();

        // Two transactions that each wait for the other's row lock.
        let mut t1 = a.begin().await.unwrap();
        let mut t2 = b.begin().await.unwrap();
        t1.query("UPDATE sf SET v = 10 WHERE id = 1").dml().await.unwrap();
        t2.query("UPDATE sf SET v = 20 WHERE id = 2").dml().await.unwrap();
        let (r1, r2) = tokio::join!(
            t1.query("UPDATE sf SET v = 11 WHERE id = 2").dml(),
            t2.query("UPDATE sf SET v = 21 WHERE id = 1").dml(),
        );
        let kinds = [&r1, &r2].map(|r| r.as_ref().err().map(|e| e.kind()));
        assert!(
            matches!(
                kinds,
                [Some(ErrorKind::Deadlock), None] | [None, Some(ErrorKind::Deadlock)]
            ),
            "expected exactly one deadlock: {r1:?} {r2:?}"
        );
        let e = r1.as_ref().err().or(r2.as_ref().err()).unwrap();
        assert_eq!(e.driver_code(), Some("40P01"));
        t1.rollback().await.unwrap();
        t2.rollback().await.unwrap();
        let (n,): (i64,) = a
            .query("SELECT count(*) FROM sf WHERE v <> 0 AND id = 2")
            .one()
            .await
            .unwrap();
        assert_eq!(n, 0, "rolled-back transactions left changes");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_queries_return_in_order() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 1).await;
        let mut c = db.get_connection().await.unwrap();
        let sets: Vec<[RowValues; 1]> = (0..200).map(|i| [RowValues::Int(i)]).collect();
        let refs: Vec<&[RowValues]> = sets.iter().map(|s| &s[..]).collect();
        let out = c.pipeline("SELECT $1::int8 * 3 AS x", &refs).await.unwrap();
        assert_eq!(out.len(), 200);
        for (i, rs) in out.iter().enumerate() {
            assert_eq!(rs.results[0].get("x"), Some(&RowValues::Int(i as i64 * 3)));
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn application_name_and_raw_client() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = ConfigAndPool::postgres(&url)
            .application_name("sqlmw-test-app")
            .max_size(1)
            .build()
            .await
            .unwrap();
        let mut c = db.get_connection().await.unwrap();
        let (name,): (String,) = c
            .query("SELECT current_setting('application_name')")
            .one()
            .await
            .unwrap();
        assert_eq!(name, "sqlmw-test-app");
        let client = c.postgres_client().await.unwrap();
        let row = client.query_one("SELECT 7::int4", &[]).await.unwrap();
        assert_eq!(row.get::<_, i32>(0), 7);
    })
    .await;
}

/// The provisioning path for machines with the PostgreSQL binaries but no running server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throwaway_cluster_serves_the_middleware() {
    let _group = groups::enter("postgres");
    let Some(url) = pg::cluster::start_throwaway_cluster() else {
        panic!(
            "PostgreSQL server binaries (initdb, pg_ctl) are needed for this test: install them (Debian: apt-get install postgresql)"
        );
    };
    let db = pool(&url, 2).await;
    let mut c = db.get_connection().await.unwrap();
    c.execute_batch("CREATE TABLE tc (id int8 PRIMARY KEY, v text)")
        .await
        .unwrap();
    let mut tx = c.begin().await.unwrap();
    tx.query("INSERT INTO tc VALUES ($1, $2)")
        .params(&[1.into(), "a".into()])
        .dml()
        .await
        .unwrap();
    tx.commit().await.unwrap();
    let (v,): (String,) = c
        .query("SELECT v FROM tc WHERE id = $1")
        .params(&[1.into()])
        .one()
        .await
        .unwrap();
    assert_eq!(v, "a");
    println!("throwaway_cluster url={url} ok=1");
}

async fn next(l: &mut sql_middleware::Listener) -> sql_middleware::Notification {
    tokio::time::timeout(Duration::from_secs(10), l.recv())
        .await
        .expect("a notification within 10 s")
        .expect("the listener is running")
}

/// `LISTEN`/`NOTIFY`: notifications arrive; after the listener's backend is killed it
/// reconnects, listens again, and no notification sent after that is missed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listener_survives_a_killed_backend() {
    let _group = groups::enter("postgres");
    let url = pg::base_url();
    let db = pool(&url, 2).await;
    let channel = format!("sqlmw_ch_{}", pg::random_hex());
    let mut listener = db.listener().await.expect("listener");
    listener.listen(&channel).await.expect("listen");
    let notify = |payload: String| {
        let (db, channel) = (db.clone(), channel.clone());
        async move {
            let mut c = db.get_connection().await.expect("checkout");
            c.query("SELECT pg_notify($1, $2)")
                .params(&[channel.into(), payload.into()])
                .select()
                .await
                .expect("notify");
        }
    };
    notify("one".into()).await;
    let n = next(&mut listener).await;
    assert_eq!(
        (n.channel.as_str(), n.payload.as_str()),
        (channel.as_str(), "one")
    );

    // Kill the listener's backend.
    let pid = listener.backend_pid();
    terminate(&db, pid).await;
    let t = Instant::now();
    while listener.reconnects() == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the listener never reconnected"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_ne!(listener.backend_pid(), pid, "a new connection");
    // Everything sent after the reconnection arrives, in order.
    for i in 0..5 {
        notify(format!("after-{i}")).await;
    }
    for i in 0..5 {
        let n = next(&mut listener).await;
        assert_eq!(n.payload, format!("after-{i}"));
    }
    listener.unlisten(&channel).await.expect("unlisten");
    notify("ignored".into()).await;
    assert!(
        tokio::time::timeout(Duration::from_millis(300), listener.recv())
            .await
            .is_err(),
        "nothing after UNLISTEN"
    );
    println!(
        "listener reconnects={} reconnect_ms={}",
        listener.reconnects(),
        t.elapsed().as_millis()
    );
}

/// `after_connect` runs on a `Listener`'s connection, and again on the connection it makes
/// after its backend is killed; a hook that fails makes `listener()` fail with its error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_connect_runs_on_the_listener_connection() {
    let _group = groups::enter("postgres");
    let url = pg::base_url();
    let pids: Arc<std::sync::Mutex<Vec<i64>>> = Arc::default();
    let seen = Arc::clone(&pids);
    let db = ConfigAndPool::postgres(&url)
        .max_size(2)
        .after_connect(move |conn| {
            let seen = Arc::clone(&seen);
            Box::pin(async move {
                let rows = conn.select("SELECT pg_backend_pid()", &[]).await?;
                let (pid,): (i64,) = rows.decode()?.remove(0);
                seen.lock().unwrap().push(pid);
                Ok(())
            })
        })
        .build()
        .await
        .expect("pool");
    let listener = db.listener().await.expect("listener");
    let pid = listener.backend_pid();
    assert_eq!(
        *pids.lock().unwrap(),
        [i64::from(pid)],
        "the listener's own"
    );
    terminate(&db, pid).await;
    let t = Instant::now();
    while listener.reconnects() == 0 {
        assert!(t.elapsed() < Duration::from_secs(10), "no reconnection");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let again = i64::from(listener.backend_pid());
    assert_ne!(again, i64::from(pid));
    let pids = pids.lock().unwrap().clone();
    assert!(pids.contains(&again), "the reconnection ran it: {pids:?}");
    // The admin connection ran a function (`pg_terminate_backend`): its session was reset when
    // it went back, and the hook ran again on it.
    let mut distinct = pids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        3,
        "two listener connections, one admin: {pids:?}"
    );

    let refusing = ConfigAndPool::postgres(&url)
        .after_connect(|_| {
            Box::pin(async {
                Err(SqlMiddlewareDbError::new(
                    sql_middleware::ErrorKind::InvalidInput,
                    "no listener today",
                ))
            })
        })
        .build()
        .await
        .expect("pool");
    let e = refusing.listener().await.expect_err("the hook refused");
    assert_eq!(e.kind(), sql_middleware::ErrorKind::InvalidInput, "{e:?}");
    assert!(e.message().contains("no listener today"), "{e:?}");
}

/// Behind PgBouncer in transaction mode, named prepared statements break the way the README
/// says: a statement prepared on one server connection is run later on another (the first is
/// busy in someone else's transaction), where it does not exist (`26000`). The unnamed mode
/// runs the same sequence, and leaves no prepared statement on the server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_statements_fail_behind_a_transaction_pooler_and_unnamed_ones_work() {
    let _group = groups::enter("postgres");
    // A PgBouncer of its own for each mode, with two server connections.
    let run = |mode: StatementCache| {
        let url = crate::common::pg::pgbouncer::dedicated(2).base_db_url();
        async move {
            let db = ConfigAndPool::postgres(&url)
                .max_size(2)
                .statement_cache(mode)
                .build()
                .await
                .expect("pool through PgBouncer");
            let mut a = db.get_connection().await.expect("a");
            let mut b = db.get_connection().await.expect("b");
            // Prepared (in named mode) and run on the pooler's only server connection.
            let (x,): (i32,) = a.query("SELECT 1").one().await?;
            // B's transaction holds that server connection...
            let mut tx = b.begin().await?;
            let (y,): (i32,) = tx.query("SELECT 2").one().await?;
            // ...so A's next run goes to a second one.
            let z = a.query("SELECT 1").one::<(i32,)>().await;
            tx.commit().await?;
            let (z,) = z?;
            let (left,): (i64,) = a
                .query("SELECT count(*) FROM pg_prepared_statements")
                .one()
                .await?;
            Ok::<_, SqlMiddlewareDbError>((x + y + z, left))
        }
    };
    let named = run(StatementCache::Named).await;
    let e = named.expect_err("named statements through a transaction-mode pooler");
    assert_eq!(e.driver_code(), Some("26000"), "{e:?}");
    let (sum, left) = run(StatementCache::Unnamed).await.expect("unnamed mode");
    assert_eq!(sum, 4);
    assert_eq!(left, 0, "no prepared statement left on the server");
    println!("pgbouncer_modes named_error=26000 unnamed_ok=1 prepared_left=0");
}

/// The Postgres types beyond the core kinds, as parameters and as results against the real
/// server: arrays of the scalar types (with NULL elements), `interval`, `time`, `timetz`,
/// `inet`/`cidr`, `money`, `citext`, an enum and domains; and each read back as the server's
/// own text form says it should be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extended_types_round_trip_as_parameters_and_results() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 2).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch(
            "CREATE EXTENSION IF NOT EXISTS citext SCHEMA public;
             CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
             CREATE DOMAIN posint AS int8 CHECK (VALUE > 0);
             CREATE DOMAIN email AS text CHECK (VALUE LIKE '%@%');
             CREATE DOMAIN blobby AS bytea;
             CREATE TABLE x (
                 id int8 PRIMARY KEY,
                 ia int8[], ta text[], fa float8[], ba bool[], na numeric[], da date[], ua uuid[],
                 iv interval, tm time, tt timetz, ip inet, net cidr, m money,
                 ci public.citext, mo mood, p posint, e email, bl blobby)",
        )
        .await
        .unwrap();
        let uuid = uuid::Uuid::from_u128(7);
        let d = NaiveDate::from_ymd_opt(2024, 2, 29).unwrap();
        let interval = sql_middleware::Interval {
            months: 14,
            days: -3,
            microseconds: 4_500_000,
        };
        let time = chrono::NaiveTime::from_hms_micro_opt(13, 14, 15, 250_000).unwrap();
        let params = vec![
            RowValues::Int(1),
            RowValues::array([Some(1_i64), None, Some(i64::MIN)]),
            RowValues::array(["a", "b,c", "✓ \"q\""]),
            RowValues::array([1.5_f64, -0.25]),
            RowValues::array([true, false]),
            RowValues::array([Decimal::new(12345, 2)]),
            RowValues::array([d]),
            RowValues::array([uuid]),
            RowValues::Interval(interval),
            RowValues::Time(time),
            RowValues::Text("03:04:05-05:30".into()),
            RowValues::Text("192.168.0.1".into()),
            RowValues::Text("10.0.0.0/8".into()),
            RowValues::Numeric(Decimal::new(-123456, 2)),
            RowValues::Text("MiXeD".into()),
            RowValues::Text("happy".into()),
            RowValues::Int(42),
            RowValues::Text("a@b".into()),
            RowValues::Blob(vec![0, 255]),
        ];
        let insert = "INSERT INTO x VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12,$13,$14,$15,$16,$17,$18,$19)";
        assert_eq!(c.query(insert).params(&params).dml().await.unwrap(), 1);
        let mut nulls = vec![RowValues::Null; 19];
        nulls[0] = RowValues::Int(2);
        assert_eq!(c.query(insert).params(&nulls).dml().await.unwrap(), 1);

        let rs = c.query("SELECT * FROM x ORDER BY id").select().await.unwrap();
        let expect = [
            ("ia", RowValues::Array(vec![RowValues::Int(1), RowValues::Null, RowValues::Int(i64::MIN)])),
            ("ta", RowValues::array(["a", "b,c", "✓ \"q\""])),
            ("fa", RowValues::array([1.5_f64, -0.25])),
            ("ba", RowValues::array([true, false])),
            ("na", RowValues::array([Decimal::new(12345, 2)])),
            ("da", RowValues::array([d])),
            ("ua", RowValues::array([uuid])),
            ("iv", RowValues::Interval(interval)),
            ("tm", RowValues::Time(time)),
            ("tt", RowValues::Text("03:04:05-05:30".into())),
            ("ip", RowValues::Text("192.168.0.1".into())),
            ("net", RowValues::Text("10.0.0.0/8".into())),
            ("m", RowValues::Numeric(Decimal::new(-123456, 2))),
            ("ci", RowValues::Text("MiXeD".into())),
            ("mo", RowValues::Text("happy".into())),
            ("p", RowValues::Int(42)),
            ("e", RowValues::Text("a@b".into())),
            ("bl", RowValues::Blob(vec![0, 255])),
        ];
        for (col, v) in &expect {
            assert_eq!(rs.results[0].get(col), Some(v), "column {col}");
            assert_eq!(rs.results[1].get(col), Some(&RowValues::Null), "NULL in {col}");
        }
        // The server's own text form agrees with what was bound.
        let (iv, tt, ip, m, ci): (String, String, String, String, bool) = c
            .query("SELECT iv::text, tt::text, format($$%s$$, ip), m::numeric::text, ci OPERATOR(public.=) 'mixed' FROM x WHERE id = 1")
            .one()
            .await
            .unwrap();
        assert_eq!(iv, "1 year 2 mons -3 days +00:00:04.5");
        assert_eq!(tt, "03:04:05-05:30");
        assert_eq!(ip, "192.168.0.1");
        assert_eq!(m, "-1234.56");
        assert!(ci, "citext compares case-insensitively");
        // Typed decoding of the new kinds.
        let (ia, ta, iv2, tm): (Vec<Option<i64>>, Vec<String>, sql_middleware::Interval, chrono::NaiveTime) = c
            .query("SELECT ia, ta, iv, tm FROM x WHERE id = 1")
            .one()
            .await
            .unwrap();
        assert_eq!(ia, [Some(1), None, Some(i64::MIN)]);
        assert_eq!(ta, ["a", "b,c", "✓ \"q\""]);
        assert_eq!(iv2, interval);
        assert_eq!(tm, time);
        // Text in the server's text form binds to the other types too.
        let (v,): (sql_middleware::Interval,) = c
            .query("SELECT $1::interval")
            .params(&[RowValues::Text(interval.to_string())])
            .one()
            .await
            .unwrap();
        assert_eq!(v, interval);
        // Bad input is a typed error, never a panic: a value outside an enum, a domain's CHECK,
        // an address that is not one, money with fractions of a cent, a nested array.
        let bad: [(&str, RowValues, ErrorKind); 5] = [
            ("INSERT INTO x (id, mo) VALUES (9, $1)", RowValues::Text("meh".into()), ErrorKind::ParameterType),
            ("INSERT INTO x (id, p) VALUES (9, $1)", RowValues::Int(-1), ErrorKind::CheckViolation),
            ("INSERT INTO x (id, ip) VALUES (9, $1)", RowValues::Text("999.1.1.1".into()), ErrorKind::ParameterType),
            ("INSERT INTO x (id, m) VALUES (9, $1)", RowValues::Numeric(Decimal::new(1, 3)), ErrorKind::ParameterType),
            ("INSERT INTO x (id, ia) VALUES (9, $1)", RowValues::Array(vec![RowValues::array([1_i64])]), ErrorKind::ParameterType),
        ];
        for (sql, v, kind) in bad {
            let r = c.query(sql).params(std::slice::from_ref(&v)).dml().await;
            assert_eq!(r.map(drop).unwrap_err().kind(), kind, "{sql} with {v:?}");
        }
    })
    .await;
}

// ---- issue 25: the session is reset unless provably clean, and the reset breaks nothing ----

/// Everything of a session a borrower can change and the next one could see: every setting
/// (`pg_settings`), the role, temporary objects (relations and functions in the temp schema),
/// session advisory locks, LISTEN registrations, `PREPARE`d statements and open cursors.
async fn session_fingerprint(c: &mut MiddlewarePoolConnection) -> String {
    let (s,): (String,) = c
        .query(
            "SELECT concat_ws(' | ',
                (SELECT string_agg(name || '=' || setting, ',' ORDER BY name) FROM pg_settings),
                'role=' || current_user || '/' || session_user,
                'temp_rel=' || (SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()),
                'temp_fn=' || (SELECT count(*) FROM pg_proc WHERE pronamespace = pg_my_temp_schema()),
                'locks=' || (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()),
                'listen=' || (SELECT count(*) FROM pg_listening_channels()),
                'prepared=' || (SELECT count(*) FROM pg_prepared_statements WHERE from_sql),
                'cursors=' || (SELECT count(*) FROM pg_cursors))",
        )
        .one()
        .await
        .expect("fingerprint");
    s
}

/// Session changes the SQL text does not show (inside a `DO` block, inside a function, through
/// `set_config` or advisory locks) and temporary objects made by forms a text scan misses: the
/// next borrower's session equals a fresh one on every path. An advisory lock is not held by
/// the idle pooled connection either (checked from another connection).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hidden_session_changes_never_reach_the_next_borrower() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        // Advisory lock keys of this test alone.
        let key: i64 = 0x5e55_0000 + 3 * i64::from(std::process::id() % 100_000);
        let db = pool(&url, 1).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch(&format!(
            "CREATE FUNCTION tune() RETURNS int LANGUAGE plpgsql AS $f$
                 BEGIN PERFORM set_config('work_mem', '1234kB', false); RETURN 1; END $f$;
             CREATE FUNCTION hold() RETURNS int LANGUAGE sql AS $f$
                 SELECT 1 FROM (SELECT pg_advisory_lock({key})) l $f$;
             CREATE TABLE base (a int)"
        ))
        .await
        .unwrap();
        let fresh = session_fingerprint(&mut c).await;
        drop(c);
        let batch = format!(
            "SELECT pg_advisory_lock({}); DO $$BEGIN EXECUTE 'SET work_mem = ''2345kB'''; END$$",
            key + 1
        );
        let try_lock = format!("SELECT pg_try_advisory_lock({}), lower('X')", key + 2);
        let cases: &[(&str, &str)] = &[
            ("query.dml", "DO $$BEGIN PERFORM set_config('statement_timeout', '4321ms', false); END$$"),
            ("query.select", "SELECT tune()"),
            ("query.one", "SELECT hold()"),
            ("query.dml", "CREATE TEMP VIEW tv AS SELECT 1 AS a"),
            ("query.dml", "CREATE OR REPLACE TEMP VIEW tv2 AS SELECT 1 AS a"),
            ("query.dml", "CREATE TABLE pg_temp.tx (a int)"),
            ("query.dml", "SELECT 1 AS a INTO TEMP tt"),
            ("query.dml", "CREATE TEMPORARY SEQUENCE sq"),
            ("query.dml", "CREATE FUNCTION pg_temp.tf() RETURNS int LANGUAGE sql AS 'SELECT 1'"),
            ("prepare", "SELECT set_config('search_path', 'pg_catalog', false)"),
            ("execute_batch", &batch),
            ("query.select", &try_lock),
            ("query.dml", "LISTEN somewhere"),
            ("query.dml", "PREPARE p1 AS SELECT 1"),
        ];
        let raw = pg::raw_client(&url).await;
        let locks = format!(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objid::text::int8 IN ({key}, {}, {})",
            key + 1,
            key + 2
        );
        let mut leaked = Vec::new();
        let mut held = 0;
        for (path, sql) in cases {
            let mut c = db.get_connection().await.unwrap();
            match *path {
                "query.dml" => {
                    c.query(sql).dml().await.unwrap();
                }
                "query.select" => {
                    c.query(sql).select().await.unwrap();
                }
                "query.one" => {
                    let (_,): (i32,) = c.query(sql).one().await.unwrap();
                }
                "prepare" => {
                    let mut st = c.prepare(sql).await.unwrap();
                    st.select(&[]).await.unwrap();
                }
                "execute_batch" => c.execute_batch(sql).await.unwrap(),
                _ => unreachable!(),
            }
            let changed = session_fingerprint(&mut c).await;
            assert_ne!(changed, fresh, "{sql}: no change, so this case checks nothing");
            drop(c);
            // The only connection, back from the pool: wait for it, then look at its session.
            let mut next = db.get_connection().await.unwrap();
            let seen = session_fingerprint(&mut next).await;
            drop(next);
            if seen != fresh {
                leaked.push(format!("{path} `{sql}`"));
            }
            // Once the pooled connection is idle, nobody holds an advisory lock of the test.
            drop(db.get_connection().await.unwrap());
            let n: i64 = raw.query_one(&locks, &[]).await.unwrap().get(0);
            held += n;
        }
        println!(
            "hidden_session_changes cases={} leaked={} idle_advisory_locks={held}",
            cases.len(),
            leaked.len()
        );
        assert!(leaked.is_empty(), "session changes reached the next borrower: {leaked:?}");
        assert_eq!(held, 0, "an idle pooled connection holds an advisory lock");
    })
    .await;
}

/// The types of [`user_types_work`]: an enum, a domain, a composite, and arrays of them.
const USER_TYPES: &str = "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
     CREATE DOMAIN posint AS int8 CHECK (VALUE > 0);
     CREATE TYPE pair AS (a int4, b text);
     CREATE TABLE ut (id int8 PRIMARY KEY, mo mood, mos mood[], p posint, ps posint[], c pair, cs pair[]);
     INSERT INTO ut VALUES (1, 'happy', '{sad,ok}', 5, '{6,7}', ROW(1, 'x'), ARRAY[ROW(2, 'y')::pair])";

/// Reads every user-defined type of [`USER_TYPES`] (each statement prepared on its own, so each
/// type is looked up by the driver), as a parameter and as a result. `prefix` qualifies the
/// names. Returns how many reads worked.
async fn user_types_work(c: &mut MiddlewarePoolConnection, prefix: &str) -> Result<usize, String> {
    let mut ok = 0;
    let (mo,): (String,) = c
        .query(&format!("SELECT mo FROM {prefix}ut WHERE mo = $1"))
        .params(&["happy".into()])
        .one()
        .await
        .map_err(|e| format!("enum: {e:?}"))?;
    ok += usize::from(mo == "happy");
    let rs = c
        .query(&format!("SELECT mos FROM {prefix}ut"))
        .select()
        .await
        .map_err(|e| format!("enum array: {e:?}"))?;
    ok += usize::from(rs.results[0].get("mos") == Some(&RowValues::array(["sad", "ok"])));
    let (p,): (i64,) = c
        .query(&format!("SELECT p FROM {prefix}ut WHERE p = $1"))
        .params(&[RowValues::Int(5)])
        .one()
        .await
        .map_err(|e| format!("domain: {e:?}"))?;
    ok += usize::from(p == 5);
    let rs = c
        .query(&format!("SELECT ps FROM {prefix}ut"))
        .select()
        .await
        .map_err(|e| format!("domain array: {e:?}"))?;
    ok += usize::from(rs.results[0].get("ps") == Some(&RowValues::array([6_i64, 7])));
    // A composite has no RowValues kind: its statement prepares (the driver looks the type
    // up), and reading it says to cast it; its fields read as usual.
    let e = c
        .query(&format!("SELECT c, cs FROM {prefix}ut"))
        .select()
        .await
        .map(drop)
        .expect_err("a composite column has no RowValues kind");
    if e.kind() != ErrorKind::TypeMismatch {
        return Err(format!("composite: {e:?}"));
    }
    ok += 1;
    let (a, b): (i32, String) = c
        .query(&format!(
            "SELECT (c).a, (cs[1]).b FROM {prefix}ut WHERE c = $1::text::{prefix}pair"
        ))
        .params(&["(1,x)".into()])
        .one()
        .await
        .map_err(|e| format!("composite fields: {e:?}"))?;
    ok += usize::from((a, b.as_str()) == (1, "y"));
    Ok(ok)
}

/// The reset that returns a borrower's session to the pool's never breaks the driver's own
/// prepared statements: user-defined types (an enum, a domain, a composite and arrays of
/// them) are looked up and read by the next borrower. (Found: the reset's `DISCARD ALL`
/// deallocated the statements tokio-postgres prepared for its type lookups, and every later
/// lookup failed with `26000 prepared statement "sN" does not exist`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_defined_types_work_after_a_session_reset() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 1).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch(USER_TYPES).await.unwrap();
        // The driver learns the enum (and prepares its type lookups).
        let (mo,): (String,) = c.query("SELECT mo FROM ut").one().await.unwrap();
        assert_eq!(mo, "happy");
        let mut worked = 0;
        for round in 0..3 {
            // A session change: the connection is reset when it goes back.
            c.query("SET work_mem = '2MB'").dml().await.unwrap();
            drop(c);
            c = db.get_connection().await.unwrap();
            worked += user_types_work(&mut c, "")
                .await
                .unwrap_or_else(|e| panic!("after reset {round}: {e}"));
        }
        let s = db.stats();
        println!(
            "user_types_after_reset resets=3 reads_ok={worked} created={} discarded={}",
            s.created, s.discarded
        );
        assert_eq!(worked, 18);
        assert_eq!(s.created, 1, "the reset keeps the connection: {s:?}");
    })
    .await;
}

/// Behind PgBouncer in transaction mode, the unnamed mode reads user-defined types too: the
/// driver's type lookups happen only inside the describe's own transaction, so they never run
/// on a server connection where their statements do not exist, and nothing is left prepared on
/// the server. (Found: a statement over a domain, described on a second server connection,
/// failed with `26000 prepared statement "sN" does not exist`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_defined_types_work_behind_a_transaction_pooler_in_unnamed_mode() {
    let _group = groups::enter("postgres");
    let schema = format!("ut_{}", pg::random_hex());
    let direct = pg::raw_client(&pg::base_url()).await;
    direct
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; SET search_path = {schema}; {USER_TYPES}"
        ))
        .await
        .unwrap();
    let prefix = format!("{schema}.");
    let url = crate::common::pg::pgbouncer::dedicated(2).base_db_url();
    let outcome = async {
        let db = ConfigAndPool::postgres(&url)
            .max_size(2)
            .statement_cache(StatementCache::Unnamed)
            .build()
            .await
            .expect("pool through PgBouncer");
        let mut a = db.get_connection().await.expect("a");
        let mut b = db.get_connection().await.expect("b");
        // A learns the enum on the pooler's only server connection...
        let (mo,): (String,) = a
            .query(&format!("SELECT mo FROM {prefix}ut"))
            .one()
            .await
            .map_err(|e| format!("first enum read: {e:?}"))?;
        // ...B's transaction holds that one, so A's next statements go to a second.
        let mut tx = b.begin().await.map_err(|e| format!("{e:?}"))?;
        let (_,): (i32,) = tx
            .query("SELECT 2")
            .one()
            .await
            .map_err(|e| format!("{e:?}"))?;
        let r = user_types_work(&mut a, &prefix).await;
        tx.commit().await.map_err(|e| format!("{e:?}"))?;
        let worked = r?;
        // And again on whichever server connection comes next.
        let again = user_types_work(&mut b, &prefix).await?;
        let (left,): (i64,) = a
            .query("SELECT count(*) FROM pg_prepared_statements")
            .one()
            .await
            .map_err(|e| format!("{e:?}"))?;
        Ok::<_, String>((mo, worked + again, left))
    }
    .await;
    let _ = direct
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await;
    let (mo, worked, left) = outcome.unwrap_or_else(|e| panic!("{e}"));
    println!("user_types_behind_pgbouncer reads_ok={worked} prepared_left={left}");
    assert_eq!(mo, "happy");
    assert_eq!(worked, 12);
    assert_eq!(left, 0, "nothing left prepared on the server");
}

/// `22003` raised by arithmetic in the SQL itself, with no parameter bound, is not a parameter
/// error; neither is bad text cast in the SQL (`22P02`). A bound value the server cannot take
/// still is `ParameterType`. (Found: `SELECT 2147483647::int4 + 1` was `ParameterType`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_raised_by_the_sql_itself_do_not_name_the_parameters() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 1).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch("CREATE TYPE mood AS ENUM ('sad', 'ok'); CREATE TABLE e (m mood, i int4)")
            .await
            .unwrap();
        let mut wrong = Vec::new();
        for (sql, code) in [
            ("SELECT 2147483647::int4 + 1", "22003"),
            ("SELECT 'abc'::int4", "22P02"),
            ("INSERT INTO e (i) VALUES (2147483647 + 1)", "22003"),
            ("SELECT 'meh'::mood", "22P02"),
        ] {
            let e = c.query(sql).select().await.map(drop).unwrap_err();
            assert_eq!(e.driver_code(), Some(code), "{sql}: {e:?}");
            if matches!(
                e.kind(),
                ErrorKind::ParameterType | ErrorKind::ParameterCount
            ) {
                wrong.push(format!("{sql}: {:?}", e.kind()));
            }
        }
        // A bound value the server refuses while binding it names the parameter.
        let e = c
            .query("INSERT INTO e (m) VALUES ($1)")
            .params(&["meh".into()])
            .dml()
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::ParameterType, "{e:?}");
        println!("sql_raised_errors cases=4 parameter_kinds={}", wrong.len());
        assert!(wrong.is_empty(), "{wrong:?}");
    })
    .await;
}

/// A pipeline whose statement writes through a function is all or nothing: one failing set
/// leaves no row. (Found: `SELECT add_row($1)` was taken for a read, ran without a transaction,
/// and the rows of the sets before the failure stayed committed.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipeline_writing_through_a_function_is_all_or_nothing() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 1).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch(
            "CREATE TABLE pf (v int8 PRIMARY KEY);
             CREATE FUNCTION add_row(x int8) RETURNS int8 LANGUAGE sql AS
                 'INSERT INTO pf VALUES (x) RETURNING v'",
        )
        .await
        .unwrap();
        let sets: [[RowValues; 1]; 3] = [[1.into()], [2.into()], [1.into()]];
        let refs: Vec<&[RowValues]> = sets.iter().map(|s| &s[..]).collect();
        let e = c.pipeline("SELECT add_row($1)", &refs).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::UniqueViolation, "{e:?}");
        let (n,): (i64,) = c.query("SELECT count(*) FROM pf").one().await.unwrap();
        println!("pipeline_through_function sets=3 failing=1 rows_left={n}");
        assert_eq!(n, 0, "the sets before the failure were rolled back");
    })
    .await;
}

/// An ordinary statement error never costs a connection: errors while preparing, binding and
/// running, with every terminal, leave the pool's one connection in use (none discarded,
/// none created anew).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statement_errors_never_cost_a_connection() {
    use futures::TryStreamExt;
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 1).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch("CREATE TABLE se (id int4 PRIMARY KEY); INSERT INTO se VALUES (1)")
            .await
            .unwrap();
        drop(c);
        let failing: [(&str, Vec<RowValues>); 6] = [
            ("SELEC 1", vec![]),                                   // prepare
            ("SELECT * FROM nowhere", vec![]),                     // prepare
            ("SELECT id FROM se WHERE id = $1", vec!["x".into()]), // bind
            ("SELECT id FROM se WHERE id = $1", vec![]),           // bind (count)
            ("INSERT INTO se VALUES (1) RETURNING id", vec![]),    // step
            ("SELECT id / 0 FROM se", vec![]),                     // step
        ];
        let mut errors = 0;
        for (sql, p) in &failing {
            for terminal in [
                "select", "dml", "optional", "all", "stream", "prepared", "pipeline",
            ] {
                let mut c = db.get_connection().await.unwrap();
                let r: Result<(), SqlMiddlewareDbError> = match terminal {
                    "select" => c.query(sql).params(p).select().await.map(drop),
                    "dml" => c.query(sql).params(p).dml().await.map(drop),
                    "optional" => c.query(sql).params(p).optional::<(i32,)>().await.map(drop),
                    "all" => c.query(sql).params(p).all::<(i32,)>().await.map(drop),
                    "stream" => c
                        .query(sql)
                        .params(p)
                        .stream::<(i32,)>()
                        .try_collect::<Vec<_>>()
                        .await
                        .map(drop),
                    "prepared" => match c.prepare(sql).await {
                        Ok(mut st) => st.select(p).await.map(drop),
                        Err(e) => Err(e),
                    },
                    _ => c.pipeline(sql, &[p, p]).await.map(drop),
                };
                assert!(r.is_err(), "{terminal} `{sql}` succeeded");
                errors += 1;
                // The same connection serves the next statement.
                let (one,): (i32,) = c.query("SELECT 1").one().await.unwrap();
                assert_eq!(one, 1);
            }
        }
        let s = db.stats();
        println!(
            "statement_errors errors={errors} created={} discarded={}",
            s.created, s.discarded
        );
        assert_eq!((s.created, s.discarded), (1, 0), "{s:?}");
    })
    .await;
}

/// A raw write made after a `Tx` was dropped uncommitted is not lost: raw access first rolls
/// the abandoned transaction back, so the write commits on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_write_after_a_dropped_tx_is_kept() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let db = pool(&url, 1).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch("CREATE TABLE rw (v int4)").await.unwrap();
        {
            let mut tx = c.begin().await.unwrap();
            tx.query("INSERT INTO rw VALUES (1)").dml().await.unwrap();
        }
        let n = c
            .postgres_client()
            .await
            .unwrap()
            .execute("INSERT INTO rw VALUES (2)", &[])
            .await
            .unwrap();
        assert_eq!(n, 1);
        let (rows, v): (i64, i32) = c
            .query("SELECT count(*), max(v) FROM rw")
            .one()
            .await
            .unwrap();
        drop(c);
        let other: i64 = pg::raw_client(&url)
            .await
            .query_one("SELECT count(*) FROM rw WHERE v = 2", &[])
            .await
            .unwrap()
            .get(0);
        println!("raw_after_dropped_tx rows={rows} seen_elsewhere={other}");
        assert_eq!((rows, v, other), (1, 2, 1));
    })
    .await;
}

/// Plain statements (DML and queries without function calls, or calling only built-ins that
/// leave the session alone) pay one round trip each and no reset when the connection goes
/// back: nothing else crosses the wire.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_statements_pay_no_extra_round_trip() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let (db, counts) = proxied_pool(&url).await;
        let mut c = db.get_connection().await.unwrap();
        c.execute_batch("CREATE TABLE pl (id int8 PRIMARY KEY, v text)")
            .await
            .unwrap();
        drop(c);
        let plain: [(&str, Vec<RowValues>); 7] = [
            (
                "INSERT INTO pl (id, v) VALUES ($1, $2)",
                vec![1.into(), "a".into()],
            ),
            ("UPDATE pl SET v = upper(v) WHERE id = $1", vec![1.into()]),
            (
                "SELECT count(*), max(id), coalesce(min(v), 'x'), lower(v) FROM pl GROUP BY v",
                vec![],
            ),
            (
                "WITH x AS (SELECT id FROM pl) SELECT length(v), now() FROM pl JOIN x USING (id)",
                vec![],
            ),
            ("VALUES (abs(-1), round(2.5))", vec![]),
            ("TABLE pl", vec![]),
            ("DELETE FROM pl WHERE id = $1", vec![1.into()]),
        ];
        // Warm: each statement prepared once.
        let mut c = db.get_connection().await.unwrap();
        for (sql, p) in &plain {
            c.query(sql).params(p).dml().await.unwrap();
        }
        drop(c);
        let (s0, q0) = (
            counts.syncs.load(Ordering::SeqCst),
            counts.queries.load(Ordering::SeqCst),
        );
        const ROUNDS: u64 = 5;
        for _ in 0..ROUNDS {
            let mut c = db.get_connection().await.unwrap();
            for (sql, p) in &plain {
                c.query(sql).params(p).dml().await.unwrap();
            }
            drop(c);
        }
        // The last return has finished (nothing is cleaning the one connection).
        drop(db.get_connection().await.unwrap());
        let syncs = counts.syncs.load(Ordering::SeqCst) - s0;
        let queries = counts.queries.load(Ordering::SeqCst) - q0;
        println!(
            "plain_round_trips statements={} syncs={syncs} simple_queries={queries}",
            ROUNDS * plain.len() as u64
        );
        assert_eq!(
            syncs,
            ROUNDS * plain.len() as u64,
            "one round trip per statement"
        );
        assert_eq!(
            queries, 0,
            "no reset or transaction control for plain statements"
        );
    })
    .await;
}

/// Ends the server process `pid` (a listener's backend) from a pooled connection.
async fn terminate(db: &ConfigAndPool, pid: i32) {
    let mut c = db.get_connection().await.expect("admin");
    c.query("SELECT pg_terminate_backend($1)")
        .params(&[i64::from(pid).into()])
        .select()
        .await
        .expect("terminate");
}
