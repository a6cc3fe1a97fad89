//! Rows the crate decodes are handed to `FromRow::from_row_taking`, which may move each value
//! out of the row (MySQL's text) instead of copying it. On every backend and every path that
//! decodes (per call, prepared, inside a `Tx`, streamed): moved text reads the same as text read
//! in place; a column taken twice is a `ColumnNotFound` error naming it, the same on a backend
//! whose row moves nothing; a `from_row` that reads a column twice keeps working. (Derived
//! structs: `derive.rs`.)

use futures::TryStreamExt;
use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Logical, TestDb, expect_kind};
use crate::helpers::*;

/// Texts at the edges of what a row holds: empty, multibyte, a 4-byte character, long.
fn texts() -> [String; 4] {
    [
        String::new(),
        "żółw ünïcödé".to_owned(),
        "🐢 at the end 🐢".to_owned(),
        "x".repeat(60_000),
    ]
}

pub type Tuple = (i64, String, Option<String>, Vec<u8>, Option<String>, i64);

/// The table `tk`: for each text, a row with it, a NULL, a blob and a number.
pub async fn setup(db: &TestDb, conn: &mut MiddlewarePoolConnection) -> Vec<Tuple> {
    let cols = [
        ("t", Logical::Text),
        ("n", Logical::Text),
        ("b", Logical::Blob),
        ("u", Logical::Text),
        ("k", Logical::Int),
    ];
    create_table(db, conn, "tk", &cols).await;
    let mut want = Vec::new();
    for (i, t) in texts().into_iter().enumerate() {
        let id = i as i64 + 1;
        let row = (
            id,
            t.clone(),
            None,
            t.as_bytes().to_vec(),
            Some(format!("{t}·{id}")),
            id * 10,
        );
        dml(
            conn,
            &insert_sql("tk", &cols),
            &[
                RowValues::Int(id),
                RowValues::Text(row.1.clone()),
                RowValues::Null,
                RowValues::Blob(row.3.clone()),
                RowValues::Text(row.4.clone().unwrap()),
                RowValues::Int(row.5),
            ],
        )
        .await;
        want.push(row);
    }
    want
}

pub const ALL: &str = "SELECT id, t, n, b, u, k FROM tk ORDER BY id";
const ONE: &str = "SELECT id, t, n, b, u, k FROM tk WHERE id = $1";

/// Tuples, which take each column, read the same on every path.
async fn t_moved_text_reads_the_same_on_every_path(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let want = setup(db, &mut conn).await;
    let all: Vec<Tuple> = conn.query(ALL).all().await.unwrap();
    assert_eq!(all, want, "[{k}] all");
    let streamed: Vec<Tuple> = conn
        .query(ALL)
        .stream::<Tuple>()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(streamed, want, "[{k}] stream");
    for w in &want {
        let id = [RowValues::Int(w.0)];
        let one: Tuple = conn.query(ONE).params(&id).one().await.unwrap();
        assert_eq!(&one, w, "[{k}] one");
        let opt: Option<Tuple> = conn.query(ONE).params(&id).optional().await.unwrap();
        assert_eq!(opt.as_ref(), Some(w), "[{k}] optional");
    }
    {
        let mut stmt = conn.prepare(ONE).await.unwrap();
        for w in &want {
            let id = [RowValues::Int(w.0)];
            assert_eq!(
                &stmt.one::<Tuple>(&id).await.unwrap(),
                w,
                "[{k}] prepared one"
            );
        }
        let mut stmt = conn.prepare(ALL).await.unwrap();
        assert_eq!(
            stmt.all::<Tuple>(&[]).await.unwrap(),
            want,
            "[{k}] prepared all"
        );
        let streamed: Vec<Tuple> = stmt.stream::<Tuple>(&[]).try_collect().await.unwrap();
        assert_eq!(streamed, want, "[{k}] prepared stream");
    }
    let mut tx = conn.begin().await.unwrap();
    let inside: Vec<Tuple> = tx.query(ALL).all().await.unwrap();
    assert_eq!(inside, want, "[{k}] inside a Tx");
    let first: Tuple = tx
        .query(ONE)
        .params(&[RowValues::Int(2)])
        .one()
        .await
        .unwrap();
    assert_eq!(first, want[1], "[{k}] one inside a Tx");
    tx.commit().await.unwrap();
    // The other owned forms of text take the value as `String` does.
    let (t, c, v): (String, std::borrow::Cow<'static, str>, RowValues) = conn
        .query("SELECT t, t, t FROM tk WHERE id = 2")
        .one()
        .await
        .unwrap();
    assert_eq!(c, t, "[{k}] Cow");
    assert_eq!(v, RowValues::Text(t), "[{k}] RowValues");
}

/// Reads column `t` twice in `from_row`, and keeps the default `from_row_taking`.
#[derive(Debug, PartialEq)]
struct ReadsTwice(String, String);

impl FromRow for ReadsTwice {
    fn from_row<R: SqlRow>(row: &R) -> Result<Self, SqlMiddlewareDbError> {
        Ok(ReadsTwice(row.get("t")?, row.get(1)?))
    }
}

/// Takes column `t`, then reads it again by `take` (`AGAIN` = 0), `get` (1) or `value_ref` (2).
struct TakesTwice<const AGAIN: u8>;

impl<const AGAIN: u8> FromRow for TakesTwice<AGAIN> {
    fn from_row<R: SqlRow>(_: &R) -> Result<Self, SqlMiddlewareDbError> {
        unreachable!("the crate decodes the rows it fetched with from_row_taking")
    }

    fn from_row_taking<R: SqlRow>(row: &mut R) -> Result<Self, SqlMiddlewareDbError> {
        let _: String = row.take("t")?;
        match AGAIN {
            0 => row.take::<String>(1).map(drop),
            1 => row.get::<String>("T").map(drop),
            _ => row.value_ref(1).map(drop),
        }?;
        Ok(TakesTwice)
    }
}

/// A second read of a taken column is the same typed error on every backend, whether or not
/// its row moved the value; reading twice through `from_row` still works; a value taken into
/// the wrong type is a `TypeMismatch` naming the column, and the connection goes on.
async fn t_a_column_is_taken_once_on_every_backend(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    setup(db, &mut conn).await;
    let sql = "SELECT id, t FROM tk WHERE id = 2";
    let two: ReadsTwice = conn.query(sql).one().await.unwrap();
    assert_eq!(
        two,
        ReadsTwice("żółw ünïcödé".into(), "żółw ünïcödé".into()),
        "[{k}]"
    );
    let e = expect_kind(
        &format!("[{k}] taken, then taken"),
        conn.query(sql).one::<TakesTwice<0>>().await.map(drop),
        ErrorKind::ColumnNotFound,
    );
    assert!(e.message().contains("`t` was already taken"), "[{k}] {e}");
    for r in [
        conn.query(sql).one::<TakesTwice<1>>().await.map(drop),
        conn.query(sql).one::<TakesTwice<2>>().await.map(drop),
        conn.query(sql).all::<TakesTwice<1>>().await.map(drop),
        conn.query(sql)
            .stream::<TakesTwice<2>>()
            .try_collect::<Vec<_>>()
            .await
            .map(drop),
    ] {
        let e = expect_kind(
            &format!("[{k}] taken, then read"),
            r,
            ErrorKind::ColumnNotFound,
        );
        assert!(e.message().contains("`t` was already taken"), "[{k}] {e}");
    }
    let e = expect_kind(
        &format!("[{k}] text taken as a number"),
        conn.query("SELECT k, t FROM tk WHERE id = 2")
            .one::<(i64, i64)>()
            .await,
        ErrorKind::TypeMismatch,
    );
    assert!(e.message().contains("`t`"), "[{k}] names the column: {e}");
    let (n,): (i64,) = conn.query("SELECT count(*) FROM tk").one().await.unwrap();
    assert_eq!(n, 4, "[{k}] the connection goes on");
}

backend_tests! {
    async fn moved_text_reads_the_same_on_every_path(db) {
        t_moved_text_reads_the_same_on_every_path(&db).await
    }
    async fn a_column_is_taken_once_on_every_backend(db) {
        t_a_column_is_taken_once_on_every_backend(&db).await
    }
}
