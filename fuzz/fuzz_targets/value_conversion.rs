//! Value conversion on arbitrary bytes: a `RowValues` built from the input survives the
//! borrowed view and typed decoding (no panic; the matching type gives it back), and a round
//! trip through a SQLite column of its type (in memory) gives the same value.
#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use sql_middleware::prelude::*;

#[path = "../../tests/common/fuzz_harness.rs"]
mod fuzz_harness;

struct Db {
    rt: tokio::runtime::Runtime,
    conn: MiddlewarePoolConnection,
    _pool: ConfigAndPool,
    key: i64,
}

fn db() -> &'static Mutex<Db> {
    static DB: OnceLock<Mutex<Db>> = OnceLock::new();
    DB.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let (pool, conn) = rt.block_on(async {
            let pool = ConfigAndPool::sqlite_memory()
                .max_size(1)
                .build()
                .await
                .expect("pool");
            let mut conn = pool.get_connection().await.expect("connection");
            conn.execute_batch(fuzz_harness::VALUE_TABLE)
                .await
                .expect("table");
            (pool, conn)
        });
        Mutex::new(Db {
            rt,
            conn,
            _pool: pool,
            key: 0,
        })
    })
}

fuzz_target!(|data: &[u8]| {
    fuzz_harness::value_case_pure(data);
    let mut guard = db().lock().unwrap_or_else(|p| p.into_inner());
    let db = &mut *guard;
    db.key += 1;
    let key = db.key;
    if let Err(e) = db
        .rt
        .block_on(fuzz_harness::value_case_sqlite(&mut db.conn, key, data))
    {
        panic!("{e}");
    }
});
