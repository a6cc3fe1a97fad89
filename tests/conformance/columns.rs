//! What a statement gives back: columns by name (also after the schema changed under a cached
//! statement), user `FromRow` types, and the affected-row count of DML and DDL.

use sql_middleware::prelude::*;
use sql_middleware::{ErrorKind, SqlRow};

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb, expect_kind};
use crate::helpers::*;

// ---------------------------------------------------------------------------------------------
// columns by name
// ---------------------------------------------------------------------------------------------

#[derive(Debug, PartialEq)]
struct Ab {
    a: i64,
    b: i64,
}

impl FromRow for Ab {
    fn from_row<R: SqlRow>(row: &R) -> Result<Self, SqlMiddlewareDbError> {
        Ok(Ab {
            a: row.get("a")?,
            b: row.get("b")?,
        })
    }
}

async fn t_columns_by_name(db: &TestDb) {
    let mut conn = db.conn().await;
    let int = db.ty(Logical::Int);
    let text = db.ty(Logical::Text);
    batch(
        &mut conn,
        &format!("CREATE TABLE cn (a {int}, b {int}, c {text})"),
    )
    .await;
    dml(
        &mut conn,
        "INSERT INTO cn (a, b, c) VALUES (10, 20, 'x')",
        &[],
    )
    .await;
    let k = db.kind.name();
    for round in 0..25 {
        let rs = select(&mut conn, "SELECT 1 AS a, 2 AS b", &[]).await;
        let r = &rs.results[0];
        assert_eq!(
            (r.get("a"), r.get("b")),
            (Some(&RowValues::Int(1)), Some(&RowValues::Int(2))),
            "[{k}] round {round}"
        );

        let rs = select(&mut conn, "SELECT 2 AS b, 1 AS a", &[]).await;
        let r = &rs.results[0];
        assert_eq!(r.get("a"), Some(&RowValues::Int(1)), "[{k}] round {round}");
        assert_eq!(r.get("b"), Some(&RowValues::Int(2)), "[{k}] round {round}");
        assert_eq!(r.column_names().collect::<Vec<_>>(), ["b", "a"], "[{k}]");

        let rs = select(&mut conn, "SELECT c, b, a FROM cn", &[]).await;
        let r = &rs.results[0];
        assert_eq!(r.get("a"), Some(&RowValues::Int(10)), "[{k}] round {round}");
        assert_eq!(r.get("b"), Some(&RowValues::Int(20)), "[{k}] round {round}");
        assert_eq!(
            r.get("c"),
            Some(&RowValues::Text("x".into())),
            "[{k}] round {round}"
        );
        assert_eq!(
            r.get("A"),
            Some(&RowValues::Int(10)),
            "[{k}] case-insensitive lookup"
        );

        let rs = select(&mut conn, "SELECT b AS a, a AS b FROM cn", &[]).await;
        let r = &rs.results[0];
        assert_eq!(r.get("a"), Some(&RowValues::Int(20)), "[{k}] round {round}");
        assert_eq!(r.get("b"), Some(&RowValues::Int(10)), "[{k}] round {round}");

        let rs = select(&mut conn, "SELECT c FROM cn", &[]).await;
        assert_eq!(
            rs.results[0].get("a"),
            None,
            "[{k}] no column a in this result"
        );

        // Typed decoding by name follows each statement's own columns as well.
        let ab: Ab = conn.query("SELECT 2 AS b, 1 AS a").one().await.unwrap();
        assert_eq!(ab, Ab { a: 1, b: 2 }, "[{k}] round {round}");
        let ab: Ab = conn.query("SELECT c, b, a FROM cn").one().await.unwrap();
        assert_eq!(ab, Ab { a: 10, b: 20 }, "[{k}] round {round}");
        let ab: Vec<Ab> = conn
            .query("SELECT a AS b, b AS a FROM cn")
            .all()
            .await
            .unwrap();
        assert_eq!(ab, [Ab { a: 20, b: 10 }], "[{k}] round {round}");
    }
}

/// A cached statement must not keep the column names of a table that has since been re-created
/// with its columns in another order (a migration between two runs of the same SQL text).
async fn t_columns_follow_schema_change(db: &TestDb) {
    let mut conn = db.conn().await;
    let int = db.ty(Logical::Int);
    batch(&mut conn, &format!("CREATE TABLE sc (a {int}, b {int})")).await;
    dml(&mut conn, "INSERT INTO sc (a, b) VALUES (1, 2)", &[]).await;
    let rs = select(&mut conn, "SELECT * FROM sc", &[]).await;
    assert_eq!(rs.results[0].get("a"), Some(&RowValues::Int(1)));
    let ab: Ab = conn.query("SELECT * FROM sc").one().await.unwrap();
    assert_eq!(ab, Ab { a: 1, b: 2 });

    batch(
        &mut conn,
        &format!("DROP TABLE sc; CREATE TABLE sc (b {int}, a {int})"),
    )
    .await;
    dml(&mut conn, "INSERT INTO sc (a, b) VALUES (1, 2)", &[]).await;

    let k = db.kind.name();
    let rs = conn
        .query("SELECT * FROM sc")
        .select()
        .await
        .unwrap_or_else(|e| panic!("[{k}] SELECT * after the table was re-created: {e:?}"));
    assert_eq!(
        rs.column_names().collect::<Vec<_>>(),
        ["b", "a"],
        "[{k}] column names after the table was re-created"
    );
    assert_eq!(
        rs.results[0].get("a"),
        Some(&RowValues::Int(1)),
        "[{k}] get(a)"
    );
    assert_eq!(
        rs.results[0].get("b"),
        Some(&RowValues::Int(2)),
        "[{k}] get(b)"
    );
    let ab: Ab = conn
        .query("SELECT * FROM sc")
        .one()
        .await
        .unwrap_or_else(|e| panic!("[{k}] one::<Ab> after the table was re-created: {e:?}"));
    assert_eq!(ab, Ab { a: 1, b: 2 }, "[{k}] typed decode by name");
}

// ---------------------------------------------------------------------------------------------
// user FromRow types
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
struct Item {
    id: i64,
    name: String,
    price: f64,
    note: Option<String>,
}

impl FromRow for Item {
    fn from_row<R: SqlRow>(row: &R) -> Result<Self, SqlMiddlewareDbError> {
        Ok(Item {
            id: row.get("id")?,
            name: row.get("name")?,
            price: row.get("price")?,
            note: row.get("note")?,
        })
    }
}

async fn t_from_row(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    create_table(
        db,
        &mut conn,
        "items",
        &[
            ("name", Logical::Text),
            ("price", Logical::Float),
            ("note", Logical::Text),
        ],
    )
    .await;
    let items = [
        Item {
            id: 1,
            name: "apple".into(),
            price: 0.5,
            note: None,
        },
        Item {
            id: 2,
            name: "pear".into(),
            price: 0.75,
            note: Some("ripe".into()),
        },
        Item {
            id: 3,
            name: "fig".into(),
            price: 2.0,
            note: Some(String::new()),
        },
    ];
    for it in &items {
        dml(
            &mut conn,
            "INSERT INTO items (id, name, price, note) VALUES ($1, $2, $3, $4)",
            &[
                it.id.into(),
                it.name.as_str().into(),
                it.price.into(),
                it.note.clone().into(),
            ],
        )
        .await;
    }
    // Columns deliberately in another order than the struct's fields.
    let by_id = "SELECT note, price, name, id FROM items WHERE id = $1";
    let one: Item = conn.query(by_id).params(&[2.into()]).one().await.unwrap();
    assert_eq!(one, items[1], "[{k}] one()");
    let some: Option<Item> = conn
        .query(by_id)
        .params(&[1.into()])
        .optional()
        .await
        .unwrap();
    assert_eq!(some.as_ref(), Some(&items[0]), "[{k}] optional() Some");
    let none: Option<Item> = conn
        .query(by_id)
        .params(&[9.into()])
        .optional()
        .await
        .unwrap();
    assert_eq!(none, None, "[{k}] optional() None");
    expect_kind(
        &format!("[{k}] one() None"),
        conn.query(by_id).params(&[9.into()]).one::<Item>().await,
        ErrorKind::NoRows,
    );
    let all: Vec<Item> = conn
        .query("SELECT price, id, note, name FROM items ORDER BY id")
        .all()
        .await
        .unwrap();
    assert_eq!(all, items, "[{k}] all()");
    let empty: Vec<Item> = conn
        .query("SELECT price, id, note, name FROM items WHERE id > $1")
        .params(&[100.into()])
        .all()
        .await
        .unwrap();
    assert!(empty.is_empty());
    let rs = select(&mut conn, "SELECT * FROM items ORDER BY id DESC", &[]).await;
    let decoded: Vec<Item> = rs.decode().unwrap();
    assert_eq!(
        decoded,
        items.iter().rev().cloned().collect::<Vec<_>>(),
        "[{k}] ResultSet::decode"
    );
    let mut st = conn
        .prepare("SELECT id, name, price, note FROM items WHERE price > $1 ORDER BY id")
        .await
        .unwrap();
    let cheap: Vec<Item> = st.all(&[0.6.into()]).await.unwrap();
    assert_eq!(cheap, items[1..], "[{k}] prepared all()");
    // A struct field without a column is an error naming it, not a default.
    let e = expect_kind(
        &format!("[{k}] missing column"),
        conn.query("SELECT id, name, price FROM items WHERE id = 1")
            .one::<Item>()
            .await,
        ErrorKind::ColumnNotFound,
    );
    assert!(e.message().contains("note"), "[{k}] {e}");
}

// ---------------------------------------------------------------------------------------------
// DML counts
// ---------------------------------------------------------------------------------------------

async fn t_dml_counts(db: &TestDb) {
    let mut conn = db.conn().await;
    let k = db.kind.name();
    create_table(db, &mut conn, "dc", &[("v", Logical::Int)]).await;
    let n = dml(
        &mut conn,
        "INSERT INTO dc (id, v) VALUES ($1, $2), ($3, $4), ($5, $6)",
        &[
            1.into(),
            10.into(),
            2.into(),
            20.into(),
            3.into(),
            20.into(),
        ],
    )
    .await;
    assert_eq!(n, 3, "[{k}] insert 3");
    assert_eq!(
        dml(
            &mut conn,
            "UPDATE dc SET v = v + 1 WHERE v = $1",
            &[20.into()]
        )
        .await,
        2,
        "[{k}] update 2"
    );
    assert_eq!(
        dml(&mut conn, "DELETE FROM dc WHERE v = $1", &[999.into()]).await,
        0,
        "[{k}] delete none"
    );
    // The count is of the rows the statement matched, also where it leaves a value as it was
    // (MySQL counts only changed rows unless the client asks for found rows).
    assert_eq!(
        dml(&mut conn, "UPDATE dc SET v = v WHERE id = $1", &[1.into()]).await,
        1,
        "[{k}] update of a row to the value it had"
    );
    let rs = select(&mut conn, "SELECT id, v FROM dc ORDER BY id", &[]).await;
    assert_eq!(rs.len(), 3);
    assert_eq!(rs.rows_affected, 0, "[{k}] rows_affected of a plain SELECT");
    assert_eq!(
        dml(&mut conn, "SELECT id FROM dc", &[]).await,
        0,
        "[{k}] dml() of a plain SELECT"
    );

    if db.kind == Kind::Mysql {
        return mysql_returning(db, &mut conn).await;
    }

    // select() of DML with RETURNING: the rows, and the count.
    let rs = select(
        &mut conn,
        "UPDATE dc SET v = 0 WHERE v = $1 RETURNING id",
        &[21.into()],
    )
    .await;
    let mut ids: Vec<i64> = rs.iter().map(|r| r.try_get::<i64>("id").unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [2, 3], "[{k}] RETURNING rows");
    assert_eq!(
        rs.rows_affected, 2,
        "[{k}] rows_affected of UPDATE .. RETURNING"
    );
    assert_eq!(
        dml(&mut conn, "DELETE FROM dc WHERE v = 0 RETURNING id", &[]).await,
        2,
        "[{k}] dml() of DELETE .. RETURNING"
    );
    assert_eq!(count(&mut conn, "dc").await, 1);

    // select() of DML without RETURNING: no rows, the count.
    let rs = select(&mut conn, "INSERT INTO dc (id, v) VALUES (4, 40)", &[]).await;
    assert_eq!(
        (rs.len(), rs.rows_affected),
        (0, 1),
        "[{k}] select() of INSERT"
    );

    // one() of DML .. RETURNING reads the first row, and the statement still runs to the end.
    dml(
        &mut conn,
        "INSERT INTO dc (id, v) VALUES (5, 50), (6, 50), (7, 50)",
        &[],
    )
    .await;
    let (id,): (i64,) = conn
        .query("UPDATE dc SET v = 51 WHERE v = 50 RETURNING id")
        .one()
        .await
        .unwrap();
    assert!((5..=7).contains(&id), "[{k}] RETURNING id {id}");
    let (n,): (i64,) = conn
        .query("SELECT COUNT(*) FROM dc WHERE v = 51")
        .one()
        .await
        .unwrap();
    assert_eq!(
        n, 3,
        "[{k}] one() of UPDATE .. RETURNING must update every matching row"
    );
}

/// The RETURNING half of `dml_counts` on MySQL: MariaDB has `INSERT … RETURNING` and
/// `DELETE … RETURNING` but no `UPDATE … RETURNING`; MySQL has none (a syntax error). The
/// table holds ids 1, 2, 3 with v = 10, 21, 21.
async fn mysql_returning(db: &TestDb, conn: &mut Conn) {
    let k = db.kind.name();
    if !db.is_mariadb().await {
        let e = expect_kind(
            &format!("[{k}] RETURNING on MySQL"),
            conn.query("DELETE FROM dc WHERE v = 21 RETURNING id")
                .select()
                .await,
            ErrorKind::Syntax,
        );
        assert!(e.driver_code().is_some(), "[{k}] {e:?}");
        return;
    }
    expect_kind(
        &format!("[{k}] UPDATE .. RETURNING on MariaDB"),
        conn.query("UPDATE dc SET v = 0 WHERE v = 21 RETURNING id")
            .select()
            .await,
        ErrorKind::Syntax,
    );
    // select() of DML with RETURNING: the rows, and the count.
    let rs = select(
        conn,
        "DELETE FROM dc WHERE v = $1 RETURNING id",
        &[21.into()],
    )
    .await;
    let mut ids: Vec<i64> = rs.iter().map(|r| r.try_get::<i64>("id").unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [2, 3], "[{k}] RETURNING rows");
    assert_eq!(
        rs.rows_affected, 2,
        "[{k}] rows_affected of DELETE .. RETURNING"
    );
    assert_eq!(
        dml(
            conn,
            "INSERT INTO dc (id, v) VALUES (2, 0), (3, 0) RETURNING id",
            &[]
        )
        .await,
        2,
        "[{k}] dml() of INSERT .. RETURNING"
    );
    assert_eq!(count(conn, "dc").await, 3);

    // select() of DML without RETURNING: no rows, the count.
    let rs = select(conn, "INSERT INTO dc (id, v) VALUES (4, 40)", &[]).await;
    assert_eq!(
        (rs.len(), rs.rows_affected),
        (0, 1),
        "[{k}] select() of INSERT"
    );

    // one() of DML .. RETURNING reads the first row, and the statement still runs to the end.
    dml(
        conn,
        "INSERT INTO dc (id, v) VALUES (5, 50), (6, 50), (7, 50)",
        &[],
    )
    .await;
    let (id,): (i64,) = conn
        .query("DELETE FROM dc WHERE v = 50 RETURNING id")
        .one()
        .await
        .unwrap();
    assert!((5..=7).contains(&id), "[{k}] RETURNING id {id}");
    let (n,): (i64,) = conn
        .query("SELECT COUNT(*) FROM dc WHERE v = 50")
        .one()
        .await
        .unwrap();
    assert_eq!(
        n, 0,
        "[{k}] one() of DELETE .. RETURNING must delete every matching row"
    );
}

/// A statement that changes no rows reports 0, even right after one that changed some: DDL
/// must not report the count of the previous DML statement.
async fn t_dml_count_of_ddl(db: &TestDb) {
    let k = db.kind.name();
    let int = db.ty(Logical::Int);
    let mut conn = db.conn().await;
    create_table(db, &mut conn, "dd", &[("v", Logical::Int)]).await;
    assert_eq!(
        dml(
            &mut conn,
            "INSERT INTO dd (id, v) VALUES (1, 1), (2, 2)",
            &[]
        )
        .await,
        2
    );
    assert_eq!(
        dml(&mut conn, &format!("CREATE TABLE dd2 (x {int})"), &[]).await,
        0,
        "[{k}] dml() of CREATE TABLE right after an INSERT of 2 rows"
    );
    assert_eq!(dml(&mut conn, "UPDATE dd SET v = v + 1", &[]).await, 2);
    let rs = select(&mut conn, &format!("CREATE TABLE dd3 (x {int})"), &[]).await;
    assert_eq!(
        rs.rows_affected, 0,
        "[{k}] select() of CREATE TABLE right after an UPDATE of 2 rows"
    );
    assert_eq!(
        dml(&mut conn, "DROP TABLE dd2", &[]).await,
        0,
        "[{k}] dml() of DROP TABLE"
    );
}

backend_tests! {
    async fn columns_by_name(db) { t_columns_by_name(&db).await }
    async fn columns_follow_schema_change(db) { t_columns_follow_schema_change(&db).await }
    async fn from_row(db) { t_from_row(&db).await }
    async fn dml_counts(db) { t_dml_counts(&db).await }
    async fn dml_count_of_ddl(db) { t_dml_count_of_ddl(&db).await }
}
