//! PostgreSQL: a session's `client_encoding` never makes the crate store another text than the
//! one bound.
//!
//! The server converts every text it receives from the client's encoding, parameters bound in
//! the binary format included, and every text it sends into it. The middleware binds and reads
//! UTF-8: under `client_encoding = 'LATIN1'` a bound `é` (two UTF-8 bytes) would be stored as
//! the two characters `Ã©`, which a UTF-8 client reads back as such. So a statement that sets
//! another encoding fails (`Unsupported`) and the session is put back to UTF-8, whichever way
//! it was set: `SET`, `SET NAMES`, `SET LOCAL`, `set_config`, a script, raw access (the next
//! call finds it before it runs), and an `after_connect` hook (the connection fails, `Config`).
//!
//! Each case, in the named and the unnamed statement mode, then binds texts through the query
//! builder, a prepared statement and a pipeline, and a client of its own reads them back: each is the text bound, or its write was refused.
//! On the old code the `SET` succeeded and `é` came back as `Ã©`. Prints `pg_encoding cases=N
//! exact=E refused=R changed=C`.
#![cfg(feature = "postgres")]

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::common::groups;
use crate::common::pg;

/// Texts whose UTF-8 bytes mean other characters in `LATIN1` (or none: the emoji).
const TEXTS: [&str; 3] = ["é ü ß", "naïve", "😀"];

/// How a case sets the encoding on its checkout.
#[derive(Debug, Clone, Copy)]
enum Set {
    Dml,
    Names,
    Local,
    Function,
    Script,
    Raw,
}

impl Set {
    const ALL: [Set; 6] = [
        Set::Dml,
        Set::Names,
        Set::Local,
        Set::Function,
        Set::Script,
        Set::Raw,
    ];

    /// Sets `LATIN1` on `c` (`Local`: inside a `Tx`, then rolled back); the error of the call
    /// that did, if any.
    async fn apply(self, c: &mut MiddlewarePoolConnection) -> Option<SqlMiddlewareDbError> {
        match self {
            Set::Dml => c.query("SET client_encoding = 'LATIN1'").dml().await.err(),
            Set::Names => c.execute_batch("SET NAMES 'LATIN1'").await.err(),
            Set::Local => {
                let mut tx = c.begin().await.expect("begin");
                let e = tx
                    .query("SET LOCAL client_encoding = 'LATIN1'")
                    .dml()
                    .await
                    .err();
                tx.rollback().await.expect("rollback");
                e
            }
            Set::Function => c
                .query("SELECT set_config('client_encoding', 'LATIN1', false)")
                .select()
                .await
                .err(),
            Set::Script => c
                .execute_batch("SET client_encoding = 'LATIN1'; SELECT 1")
                .await
                .err(),
            Set::Raw => {
                c.postgres_client()
                    .await
                    .expect("raw client")
                    .batch_execute("SET client_encoding = 'LATIN1'")
                    .await
                    .expect("raw set");
                None
            }
        }
    }
}

/// Binds every text of [`TEXTS`] with ids from `base` (query builder, prepared statement,
/// pipeline); the first error, if any.
async fn write(c: &mut MiddlewarePoolConnection, base: i64) -> Result<(), SqlMiddlewareDbError> {
    let sql = "INSERT INTO enc (id, t) VALUES ($1, $2)";
    let mut first = None;
    for (i, t) in TEXTS.iter().enumerate() {
        let id = base + i64::try_from(i).expect("small");
        let params = [RowValues::Int(id), RowValues::Text((*t).to_owned())];
        if let Err(e) = c.query(sql).params(&params).dml().await {
            first.get_or_insert(e);
        }
    }
    let mut stmt = c.prepare(sql).await?;
    for (i, t) in TEXTS.iter().enumerate() {
        let id = base + 10 + i64::try_from(i).expect("small");
        if let Err(e) = stmt
            .dml(&[RowValues::Int(id), RowValues::Text((*t).to_owned())])
            .await
        {
            first.get_or_insert(e);
        }
    }
    let sets: Vec<Vec<RowValues>> = TEXTS
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let id = base + 20 + i64::try_from(i).expect("small");
            vec![RowValues::Int(id), RowValues::Text((*t).to_owned())]
        })
        .collect();
    let sets: Vec<&[RowValues]> = sets.iter().map(Vec::as_slice).collect();
    if let Err(e) = c.pipeline(sql, &sets).await {
        first.get_or_insert(e);
    }
    first.map_or(Ok(()), Err)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_client_encoding_never_changes_what_is_stored() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let reader = pg::raw_client(&url).await;
        reader
            .batch_execute("CREATE TABLE enc (id int8 PRIMARY KEY, t text)")
            .await
            .expect("table");
        let (mut exact, mut refused, mut changed) = (0, 0, Vec::new());
        let modes = [
            sql_middleware::StatementCache::Named,
            sql_middleware::StatementCache::Unnamed,
        ];
        for (n, (mode, set)) in modes
            .into_iter()
            .flat_map(|m| Set::ALL.map(|s| (m, s)))
            .enumerate()
        {
            let pool = ConfigAndPool::postgres(&url)
                .max_size(1)
                .statement_cache(mode)
                .build()
                .await
                .expect("pool");
            let mut c = pool.get_connection().await.expect("checkout");
            let e = set.apply(&mut c).await;
            // The call that set it fails; raw access is found by the next call, before it runs.
            match (&e, set) {
                (None, Set::Raw) => {}
                (Some(e), _) if e.kind() == ErrorKind::Unsupported => {}
                (e, _) => panic!("[{mode:?} {set:?}] the call that set LATIN1 gave {e:?}"),
            }
            let base = i64::try_from(n).expect("small") * 1000;
            if let Err(e) = write(&mut c, base).await {
                assert_eq!(e.kind(), ErrorKind::Unsupported, "[{mode:?} {set:?}] {e}");
                refused += 1;
                // Found and put back: the same writes now store the texts.
                write(&mut c, base + 500).await.unwrap_or_else(|e| {
                    panic!("[{mode:?} {set:?}] after the encoding was put back: {e}")
                });
            }
            let (cs,): (String,) = c
                .query("SHOW client_encoding")
                .one()
                .await
                .expect("encoding");
            assert_eq!(cs, "UTF8", "[{mode:?} {set:?}] the encoding was left");
            drop(c);
            for row in reader
                .query("SELECT id, t FROM enc ORDER BY id", &[])
                .await
                .expect("read back")
            {
                let (id, t): (i64, String) = (row.get(0), row.get(1));
                if TEXTS[usize::try_from(id % 10).expect("index")] == t {
                    exact += 1;
                } else {
                    changed.push(format!("[{mode:?} {set:?}] id {id}: stored {t:?}"));
                }
            }
            reader
                .batch_execute("DELETE FROM enc")
                .await
                .expect("empty");
        }
        println!(
            "pg_encoding cases={} exact={exact} refused={refused} changed={}",
            Set::ALL.len() * modes.len(),
            changed.len()
        );
        assert!(
            changed.is_empty(),
            "texts stored otherwise:\n{}",
            changed.join("\n")
        );
        assert!(exact > 0, "no text was written");
    })
    .await;
}

/// An `after_connect` hook that sets another encoding fails the connection (`Config`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_after_connect_hook_that_sets_another_encoding_fails_the_connection() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let pool = ConfigAndPool::postgres(&url)
            .max_size(1)
            .after_connect(|c| {
                Box::pin(async move { c.execute_batch("SET client_encoding = 'LATIN1'").await })
            })
            .build()
            .await
            .expect("pool");
        let e = pool
            .get_connection()
            .await
            .expect_err("a hook that sets LATIN1");
        assert!(e.to_string().contains("client_encoding"), "{e}");
        println!("pg_encoding set_by=after_connect refused=1");
    })
    .await;
}

/// A pipeline whose statement sets another encoding fails (`Unsupported`) and the session is put
/// back. Its later sets were bound under the new encoding, but the pipeline is all or nothing:
/// nothing it wrote stays (inside a `Tx` the failure aborts the transaction), so nothing
/// stored is another text than the one bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pipeline_that_sets_another_encoding_fails_and_keeps_nothing() {
    let _group = groups::enter("postgres");
    pg::with_schema(|url| async move {
        let pool = ConfigAndPool::postgres(&url)
            .max_size(1)
            .build()
            .await
            .expect("pool");
        let reader = pg::raw_client(&url).await;
        reader
            .batch_execute("CREATE TABLE encp (id int8 PRIMARY KEY, t text)")
            .await
            .expect("table");
        let mut c = pool.get_connection().await.expect("checkout");
        let sql = "INSERT INTO encp (id, t) \
                   SELECT $1, $2 FROM (SELECT set_config('client_encoding', 'LATIN1', false)) AS s";
        let sets: Vec<Vec<RowValues>> = (0..3)
            .map(|i| vec![RowValues::Int(i), RowValues::Text(TEXTS[0].to_owned())])
            .collect();
        let sets: Vec<&[RowValues]> = sets.iter().map(Vec::as_slice).collect();
        let e = c
            .pipeline(sql, &sets)
            .await
            .expect_err("a pipeline that sets LATIN1");
        assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
        let (cs,): (String,) = c
            .query("SHOW client_encoding")
            .one()
            .await
            .expect("encoding");
        assert_eq!(cs, "UTF8");
        let stored: Vec<String> = reader
            .query("SELECT t FROM encp", &[])
            .await
            .expect("read back")
            .iter()
            .map(|r| r.get(0))
            .collect();
        assert!(
            stored.iter().all(|t| t == TEXTS[0]),
            "stored otherwise: {stored:?}"
        );
        println!("pg_encoding set_by=pipeline stored={}", stored.len());
    })
    .await;
}
