//! One helper, written once against `impl Executor`, runs on a connection, a transaction and a
//! savepoint; and the public futures and types a tokio user moves between tasks are `Send`.

use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Logical, TestDb};
use crate::helpers::*;

async fn save(db: &mut impl Executor, id: i64) -> Result<u64, SqlMiddlewareDbError> {
    db.query("INSERT INTO ex (id, v) VALUES ($1, 'x')")
        .params(&[RowValues::Int(id)])
        .dml()
        .await
}

async fn count_prepared(db: &mut impl Executor) -> i64 {
    let mut st = db.prepare("SELECT count(*) FROM ex").await.unwrap();
    let (n,): (i64,) = st.one(&[]).await.unwrap();
    n
}

async fn t_one_helper_for_every_executor(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "ex", &[("v", Logical::Text)]).await;
    save(&mut conn, 1).await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    save(&mut tx, 2).await.unwrap();
    {
        let mut sp = tx.savepoint().await.unwrap();
        save(&mut sp, 3).await.unwrap();
        assert_eq!(
            count_prepared(&mut sp).await,
            3,
            "[{k}] inside the savepoint"
        );
        sp.execute_batch("INSERT INTO ex (id, v) VALUES (4, 'y')")
            .await
            .unwrap();
        sp.rollback().await.unwrap();
    }
    let (a, b): ([RowValues; 1], [RowValues; 1]) = ([5.into()], [6.into()]);
    tx.pipeline("INSERT INTO ex (id, v) VALUES ($1, 'p')", &[&a, &b])
        .await
        .unwrap();
    tx.commit().await.unwrap();
    assert_eq!(
        count_prepared(&mut conn).await,
        4,
        "[{k}] committed: 1, 2, 5, 6"
    );
}

/// Compile-time: the futures of the public API are `Send` (they can be spawned on a
/// multi-thread runtime), and so are the types a task owns.
#[allow(dead_code)]
fn public_futures_are_send(pool: ConfigAndPool, mut conn: MiddlewarePoolConnection) {
    fn send<T: Send>(_: &T) {}
    send(&pool);
    send(&conn);
    send(&pool.get_connection());
    send(&conn.execute_batch("SELECT 1"));
    send(&conn.prepare("SELECT 1"));
    send(&conn.query("SELECT 1").select());
    send(&conn.query("SELECT 1").one::<(i64,)>());
    send(&conn.begin());
    send(&save(&mut conn, 1));
}

backend_tests! {
    async fn one_helper_for_every_executor(db) { t_one_helper_for_every_executor(&db).await }
}
