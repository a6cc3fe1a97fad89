//! `#[derive(FromRow)]` against every backend: named fields by column name (any order, any
//! case), tuple structs by position, `rename`, `default` (missing column and NULL),
//! `try_from` (with its error), `flatten`.

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Logical, TestDb, expect_kind};
use crate::helpers::*;

#[derive(Debug, PartialEq, FromRow)]
struct Name {
    first: String,
    #[sql(rename = "last_name")]
    last: String,
}

#[derive(Debug, PartialEq, FromRow)]
struct Person {
    id: i64,
    #[sql(flatten)]
    name: Name,
    #[sql(try_from = "i64")]
    age: u8,
    #[sql(default)]
    nick: String,
    #[sql(default)]
    missing: Option<i64>,
}

#[derive(Debug, PartialEq, FromRow)]
struct ByPosition(i64, String);

async fn t_derived_rows(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(
        db,
        &mut conn,
        "dr",
        &[
            ("first", Logical::Text),
            ("last_name", Logical::Text),
            ("age", Logical::Int),
            ("nick", Logical::Text),
        ],
    )
    .await;
    batch(
        &mut conn,
        "INSERT INTO dr (id, first, last_name, age, nick) VALUES (1, 'Ada', 'Lovelace', 36, 'countess');
         INSERT INTO dr (id, first, last_name, age, nick) VALUES (2, 'Alan', 'Turing', 41, NULL);
         INSERT INTO dr (id, first, last_name, age, nick) VALUES (3, 'Too', 'Old', 300, NULL)",
    )
    .await;
    // Columns in another order and case than the fields.
    let people: Vec<Person> = conn
        .query("SELECT NICK, age, last_name, first, id FROM dr WHERE id < 3 ORDER BY id")
        .all()
        .await
        .unwrap_or_else(|e| panic!("[{k}] derived rows: {e:?}"));
    assert_eq!(
        people,
        [
            Person {
                id: 1,
                name: Name {
                    first: "Ada".into(),
                    last: "Lovelace".into()
                },
                age: 36,
                nick: "countess".into(),
                missing: None,
            },
            Person {
                id: 2,
                name: Name {
                    first: "Alan".into(),
                    last: "Turing".into()
                },
                age: 41,
                nick: String::new(),
                missing: None,
            },
        ],
        "[{k}]"
    );
    let e = expect_kind(
        &format!("[{k}] a value try_from refuses"),
        conn.query("SELECT id, first, last_name, age, nick FROM dr WHERE id = 3")
            .one::<Person>()
            .await,
        ErrorKind::TypeMismatch,
    );
    assert!(e.message().contains("age"), "[{k}] names the column: {e}");
    let by_pos: ByPosition = conn
        .query("SELECT id, first FROM dr WHERE id = 1")
        .one()
        .await
        .unwrap();
    assert_eq!(by_pos, ByPosition(1, "Ada".into()), "[{k}]");
    // A required column that is missing is an error naming it.
    let e = expect_kind(
        &format!("[{k}] missing column"),
        conn.query("SELECT id FROM dr WHERE id = 1")
            .one::<Person>()
            .await,
        ErrorKind::ColumnNotFound,
    );
    assert!(e.message().contains("first"), "[{k}] {e}");
}

/// Fields named in another case than the columns: each column read once, so taken.
#[derive(Debug, PartialEq, FromRow)]
struct Once {
    #[sql(rename = "T")]
    text: String,
    n: Option<String>,
    #[sql(default)]
    u: Option<String>,
    #[sql(try_from = "i64")]
    k: u32,
}

/// Two fields of one column (names match case-insensitively): read twice, so not taken.
#[derive(Debug, PartialEq, FromRow)]
struct Twice {
    t: String,
    #[sql(rename = "T")]
    again: String,
}

/// A flattened struct reads the whole row: the outer struct keeps `from_row`.
#[derive(Debug, PartialEq, FromRow)]
struct Outer {
    t: String,
    #[sql(flatten)]
    inner: Twice,
}

/// What `from_row_taking` a derived struct gets: each column taken when each is read once
/// (fields named in another case than the columns, `default`, `try_from`), and `from_row`'s
/// reads when two fields name one column or a field is flattened (see `taking.rs`).
async fn t_derived_structs_take_only_what_they_read_once(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let want = crate::taking::setup(db, &mut conn).await;
    let once: Vec<Once> = conn.query(crate::taking::ALL).all().await.unwrap();
    let expected: Vec<Once> = want
        .iter()
        .map(|w| Once {
            text: w.1.clone(),
            n: None,
            u: w.4.clone(),
            k: u32::try_from(w.5).unwrap(),
        })
        .collect();
    assert_eq!(once, expected, "[{k}] derived, taken");
    let twice: Twice = conn
        .query("SELECT t FROM tk WHERE id = 3")
        .one()
        .await
        .unwrap();
    assert_eq!((&twice.t, &twice.again), (&want[2].1, &want[2].1), "[{k}]");
    let outer: Outer = conn
        .query("SELECT t FROM tk WHERE id = 3")
        .one()
        .await
        .unwrap();
    assert_eq!((&outer.t, &outer.inner), (&want[2].1, &twice), "[{k}]");
}

backend_tests! {
    async fn derived_rows(db) { t_derived_rows(&db).await }
    async fn derived_structs_take_only_what_they_read_once(db) {
        t_derived_structs_take_only_what_they_read_once(&db).await
    }
}
