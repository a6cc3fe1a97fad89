//! Bad input, per backend: every case runs a bad call, checks the exact `ErrorKind` (and, for
//! errors raised by the engine, that `driver_code()` is set), then checks that `SELECT 1` on the
//! SAME connection still works. All cases run even when some fail; the test then lists them.

use sql_middleware::ErrorKind;
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, Logical, TestDb};
use crate::common::expect::{Code, check, still_works, verdict};

type Conn = MiddlewarePoolConnection;

struct Report {
    backend: &'static str,
    cases: usize,
    ok: usize,
    failures: Vec<String>,
}

impl Report {
    fn new(db: &TestDb) -> Self {
        Report {
            backend: db.kind.name(),
            cases: 0,
            ok: 0,
            failures: Vec::new(),
        }
    }

    /// Records one case: its verdict, then the health check on the same connection.
    async fn case(&mut self, name: &str, verdict: Result<(), String>, conn: &mut Conn) {
        self.cases += 1;
        let health = still_works(conn).await;
        let mut problems = Vec::new();
        if let Err(e) = verdict {
            problems.push(e);
        }
        if let Err(e) = health {
            problems.push(e);
        }
        if problems.is_empty() {
            self.ok += 1;
        } else {
            let mut text = problems.join(" / ");
            if text.len() > 700 {
                let mut end = 700;
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                text.truncate(end);
                text.push_str("...");
            }
            self.failures.push(format!("  {name}: {text}"));
        }
    }

    fn finish(self, min_cases: usize) {
        println!(
            "bad_input backend={} cases={} ok={}",
            self.backend, self.cases, self.ok
        );
        assert!(
            self.failures.is_empty(),
            "[{}] {} of {} bad-input case(s) failed:\n{}",
            self.backend,
            self.failures.len(),
            self.cases,
            self.failures.join("\n")
        );
        assert!(
            self.cases >= min_cases,
            "[{}] only {} cases ran (expected at least {min_cases})",
            self.backend,
            self.cases
        );
    }
}

async fn count_where(conn: &mut Conn, sql: &str) -> Result<i64, String> {
    conn.query(sql)
        .one::<(i64,)>()
        .await
        .map(|(n,)| n)
        .map_err(|e| format!("{sql}: {e:?}"))
}

/// How a table-driven case runs its SQL.
#[derive(Debug, Clone, Copy)]
enum Via {
    Select,
    Dml,
    Batch,
    Prepare,
}

struct SqlCase {
    name: &'static str,
    sql: String,
    params: Vec<RowValues>,
    via: Via,
    kind: ErrorKind,
    code: Code,
}

fn case(
    name: &'static str,
    sql: impl Into<String>,
    params: Vec<RowValues>,
    via: Via,
    kind: ErrorKind,
    code: Code,
) -> SqlCase {
    SqlCase {
        name,
        sql: sql.into(),
        params,
        via,
        kind,
        code,
    }
}

async fn run_sql_case(conn: &mut Conn, c: &SqlCase) -> Result<(), String> {
    let q = conn.query(&c.sql).params(&c.params);
    match c.via {
        Via::Select => verdict(q.select().await, c.kind, c.code),
        Via::Dml => verdict(q.dml().await, c.kind, c.code),
        Via::Batch => verdict(conn.execute_batch(&c.sql).await, c.kind, c.code),
        Via::Prepare => verdict(conn.prepare(&c.sql).await.map(drop), c.kind, c.code),
    }
}

async fn setup(db: &TestDb, conn: &mut Conn) {
    let int = db.ty(Logical::Int);
    let text = db.ty(Logical::Text);
    // On SQLite and Turso a column takes any value, so "a value the column cannot take" is made
    // explicit with a CHECK on its storage class; Postgres and MySQL reject it by the column's
    // type.
    let x = match db.kind {
        Kind::Sqlite | Kind::Turso => {
            format!("x {int} CHECK (x IS NULL OR typeof(x) = 'integer')")
        }
        Kind::Postgres | Kind::Mysql => format!("x {int}"),
    };
    // MySQL has no deferred constraints (its foreign key is checked at each statement), and
    // takes a foreign key at table level only.
    let fk = match db.kind {
        Kind::Mysql => {
            format!("parent_id {int}, FOREIGN KEY (parent_id) REFERENCES fk_parent (id)")
        }
        Kind::Sqlite | Kind::Postgres | Kind::Turso => {
            format!("parent_id {int} REFERENCES fk_parent (id) DEFERRABLE INITIALLY DEFERRED")
        }
    };
    conn.execute_batch(&format!(
        "CREATE TABLE bi (id {int} PRIMARY KEY, {x}, t {text}, nn {text} NOT NULL DEFAULT 'd');
         CREATE TABLE fk_parent (id {int} PRIMARY KEY);
         CREATE TABLE fk_child (
             id {int} PRIMARY KEY,
             {fk}
         );
         INSERT INTO bi (id, x, t) VALUES (1, 10, 'ten');
         INSERT INTO fk_parent (id) VALUES (1);"
    ))
    .await
    .unwrap_or_else(|e| panic!("[{}] setup failed: {e:?}", db.kind.name()));
}

async fn t_bad_input(db: &TestDb) {
    let mut conn = db.conn().await;
    setup(db, &mut conn).await;
    let mut rep = Report::new(db);
    let k = db.kind;

    // ---- table-driven statement cases --------------------------------------------------------
    let ins2 = "INSERT INTO bi (id, x) VALUES ($1, $2)";
    let long_ident = format!("SELECT * FROM t_{}", "x".repeat(100_000));
    let long_sql = format!("SELECT '{}' AS s FROM", "y".repeat(2_000_000));
    let cases = vec![
        case(
            "too few parameters",
            ins2,
            vec![2.into()],
            Via::Dml,
            ErrorKind::ParameterCount,
            Code::Any,
        ),
        case(
            "too many parameters",
            ins2,
            vec![2.into(), 2.into(), 2.into()],
            Via::Dml,
            ErrorKind::ParameterCount,
            Code::Any,
        ),
        case(
            "no parameters for $1",
            "SELECT t FROM bi WHERE id = $1",
            vec![],
            Via::Select,
            ErrorKind::ParameterCount,
            Code::Any,
        ),
        case(
            "parameter for a statement without placeholders",
            "SELECT t FROM bi",
            vec![1.into()],
            Via::Select,
            ErrorKind::ParameterCount,
            Code::Any,
        ),
        // Text into an integer column: SQLite/Turso through the CHECK on typeof(x) (an engine
        // error); Postgres cannot bind text to bigint (ParameterType, raised before the server);
        // MySQL in strict mode refuses the value (1366 "Incorrect integer value"): the value
        // of a parameter is wrong for its column, ParameterType as on Postgres.
        match k {
            Kind::Postgres | Kind::Mysql => case(
                "text into an int column",
                ins2,
                vec![3.into(), "abc".into()],
                Via::Dml,
                ErrorKind::ParameterType,
                Code::Any,
            ),
            Kind::Sqlite | Kind::Turso => case(
                "text into an int column",
                ins2,
                vec![3.into(), "abc".into()],
                Via::Dml,
                ErrorKind::CheckViolation,
                Code::Driver,
            ),
        },
        case(
            "invalid SQL",
            "SELEC 1",
            vec![],
            Via::Select,
            ErrorKind::Syntax,
            Code::Driver,
        ),
        case(
            "incomplete SQL",
            "SELECT * FROM",
            vec![],
            Via::Select,
            ErrorKind::Syntax,
            Code::Driver,
        ),
        case(
            "invalid SQL via prepare",
            "SELECT FROM WHERE",
            vec![],
            Via::Prepare,
            ErrorKind::Syntax,
            Code::Driver,
        ),
        case(
            "unknown table",
            "SELECT * FROM no_such_table",
            vec![],
            Via::Select,
            ErrorKind::UndefinedObject,
            Code::Driver,
        ),
        case(
            "unknown column",
            "SELECT no_such_column FROM bi",
            vec![],
            Via::Select,
            ErrorKind::UndefinedObject,
            Code::Driver,
        ),
        case(
            "unknown function",
            "SELECT no_such_function(1)",
            vec![],
            Via::Select,
            ErrorKind::UndefinedObject,
            Code::Driver,
        ),
        case(
            "duplicate key",
            "INSERT INTO bi (id, x) VALUES (1, 1)",
            vec![],
            Via::Dml,
            ErrorKind::UniqueViolation,
            Code::Driver,
        ),
        case(
            "NULL into NOT NULL",
            "INSERT INTO bi (id, nn) VALUES ($1, $2)",
            vec![5.into(), RowValues::Null],
            Via::Dml,
            ErrorKind::NotNullViolation,
            Code::Driver,
        ),
        case(
            "syntax error in the second statement of a script",
            "INSERT INTO bi (id, x) VALUES (50, 1); SELEC 2",
            vec![],
            Via::Batch,
            ErrorKind::Syntax,
            Code::Driver,
        ),
        // Postgres truncates a long identifier and finds no such table; MySQL refuses a name
        // longer than 64 characters before looking it up (1103 "Incorrect table name", in
        // SQLSTATE class 42, syntax or access rule violation).
        match k {
            Kind::Mysql => case(
                "very long identifier (100k chars)",
                long_ident,
                vec![],
                Via::Select,
                ErrorKind::Syntax,
                Code::Driver,
            ),
            Kind::Sqlite | Kind::Postgres | Kind::Turso => case(
                "very long identifier (100k chars)",
                long_ident,
                vec![],
                Via::Select,
                ErrorKind::UndefinedObject,
                Code::Driver,
            ),
        },
        case(
            "very long SQL (2 MB) with a syntax error at the end",
            long_sql,
            vec![],
            Via::Select,
            ErrorKind::Syntax,
            Code::Driver,
        ),
        // An empty statement is a programming error, not an empty result.
        case(
            "empty SQL string",
            "",
            vec![],
            Via::Select,
            ErrorKind::InvalidInput,
            Code::Any,
        ),
        case(
            "SQL of only a comment",
            "  -- nothing here\n",
            vec![],
            Via::Dml,
            ErrorKind::InvalidInput,
            Code::Any,
        ),
        // Two statements in query(): an error, never a silent run of the first one only.
        // SQLite/Turso: the middleware refuses it; Postgres: the server refuses to prepare it
        // (42601 "cannot insert multiple commands"), classified as InvalidInput like the others.
        case(
            "two statements in query()",
            "SELECT 1; SELECT 2",
            vec![],
            Via::Select,
            ErrorKind::InvalidInput,
            Code::Any,
        ),
    ];
    for c in &cases {
        let v = run_sql_case(&mut conn, c).await;
        rep.case(c.name, v, &mut conn).await;
    }
    // The failed script above left nothing behind.
    let v = match count_where(&mut conn, "SELECT COUNT(*) FROM bi WHERE id = 50").await {
        Ok(0) => Ok(()),
        other => Err(format!("row 50 of the failed script: {other:?}")),
    };
    rep.case("failed script is atomic", v, &mut conn).await;

    // Two DML statements in dml(): an error, and neither row is written.
    let r = conn
        .query("INSERT INTO bi (id, x) VALUES (100, 1); INSERT INTO bi (id, x) VALUES (101, 1)")
        .dml()
        .await;
    let v = verdict(r, ErrorKind::InvalidInput, Code::Any);
    let written = count_where(&mut conn, "SELECT COUNT(*) FROM bi WHERE id >= 100").await;
    let v = match (v, written) {
        (Ok(()), Ok(0)) => Ok(()),
        (Ok(()), w) => Err(format!("rows written by the refused statements: {w:?}")),
        (Err(e), w) => Err(format!("{e}; rows 100/101 written: {w:?} (expected 0)")),
    };
    rep.case("two DML statements in dml()", v, &mut conn).await;

    // ---- NUL bytes -------------------------------------------------------------------------
    // SQLite would ignore everything after a NUL; the middleware refuses it before the engine.
    let r = conn.query("SELECT 1\0; DROP TABLE bi").select().await;
    let mut v = verdict(r, ErrorKind::InvalidInput, Code::Middleware);
    if v.is_ok() {
        v = count_where(&mut conn, "SELECT COUNT(*) FROM bi")
            .await
            .map(drop);
    }
    rep.case("NUL byte in query SQL", v, &mut conn).await;
    let r = conn.prepare("SELECT 2\0").await.map(drop);
    rep.case(
        "NUL byte in prepared SQL",
        verdict(r, ErrorKind::InvalidInput, Code::Middleware),
        &mut conn,
    )
    .await;
    let r = conn.execute_batch("SELECT 1;\0 DROP TABLE bi").await;
    let mut v = verdict(r, ErrorKind::InvalidInput, Code::Middleware);
    if v.is_ok() {
        v = count_where(&mut conn, "SELECT COUNT(*) FROM bi")
            .await
            .map(drop);
    }
    rep.case("NUL byte in execute_batch SQL", v, &mut conn)
        .await;
    // A NUL character inside a text parameter. SQLite, Turso and MySQL store it: the value must
    // come back whole (a C-string API would truncate it at the NUL). Postgres text cannot hold
    // it: the bind is refused (SQLSTATE 22021), classified as ParameterType.
    let r = conn
        .query("INSERT INTO bi (id, t) VALUES ($1, $2)")
        .params(&[6.into(), "a\0b".into()])
        .dml()
        .await;
    let v = match db.kind {
        Kind::Postgres => verdict(r, ErrorKind::ParameterType, Code::Any),
        Kind::Sqlite | Kind::Turso | Kind::Mysql => match r {
            Ok(1) => match conn
                .query("SELECT t FROM bi WHERE id = 6")
                .one::<(String,)>()
                .await
            {
                Ok((t,)) if t == "a\0b" => Ok(()),
                other => Err(format!("text with a NUL read back as {other:?}")),
            },
            other => Err(format!("insert of text with a NUL gave {other:?}")),
        },
    };
    rep.case("NUL character in a text parameter", v, &mut conn)
        .await;

    // ---- NaN ---------------------------------------------------------------------------------
    let r = conn
        .query("SELECT $1 AS f")
        .translation(TranslationMode::On)
        .params(&[RowValues::Float(f64::NAN)]);
    let v = match db.kind {
        // SQLite (and Turso) would store NaN as NULL, MySQL's DOUBLE has no NaN: refused up
        // front.
        Kind::Sqlite | Kind::Turso | Kind::Mysql => {
            verdict(r.select().await, ErrorKind::ParameterType, Code::Middleware)
        }
        // Postgres float8 has a NaN and round-trips it: documented as accepted.
        Kind::Postgres => {
            drop(r);
            let int = db.ty(Logical::Float);
            let _ = conn
                .execute_batch(&format!("CREATE TABLE nan_t (f {int})"))
                .await;
            match conn
                .query("INSERT INTO nan_t (f) VALUES ($1)")
                .params(&[RowValues::Float(f64::NAN)])
                .dml()
                .await
            {
                Ok(1) => match conn.query("SELECT f FROM nan_t").one::<(f64,)>().await {
                    Ok((f,)) if f.is_nan() => Ok(()),
                    other => Err(format!("NaN read back as {other:?}")),
                },
                other => Err(format!("NaN insert on Postgres gave {other:?}")),
            }
        }
    };
    rep.case("NaN parameter", v, &mut conn).await;

    // ---- decoding ---------------------------------------------------------------------------
    let null_int = format!("SELECT {} AS n", k.sql().cast_int("NULL"));
    let r = conn.query(&null_int).one::<(i64,)>().await;
    rep.case(
        "NULL decoded into i64",
        verdict(r, ErrorKind::TypeMismatch, Code::Middleware),
        &mut conn,
    )
    .await;
    let r = conn
        .query("SELECT t FROM bi WHERE id = 1")
        .one::<(i64,)>()
        .await;
    let v = check(r, ErrorKind::TypeMismatch, Code::Middleware).and_then(|e| {
        if e.message().contains("`t`") {
            Ok(())
        } else {
            Err(format!("message does not name column `t`: {e}"))
        }
    });
    rep.case("text decoded into i64", v, &mut conn).await;

    let rs = conn
        .query("SELECT id, t, x FROM bi WHERE id = 1")
        .select()
        .await;
    let row = match rs {
        Ok(rs) if rs.len() == 1 => Some(rs.results[0].clone()),
        other => {
            rep.failures
                .push(format!("  reading the decode row: {other:?}"));
            None
        }
    };
    if let Some(row) = row {
        let decode_cases: Vec<(&str, Result<(), String>)> = vec![
            (
                "unknown column name in try_get",
                verdict(
                    row.try_get::<i64>("no_such"),
                    ErrorKind::ColumnNotFound,
                    Code::Middleware,
                ),
            ),
            (
                "column index out of range in try_get",
                verdict(
                    row.try_get::<i64>(3_usize),
                    ErrorKind::ColumnNotFound,
                    Code::Middleware,
                ),
            ),
            (
                "text decoded into JSON",
                verdict(
                    row.try_get::<serde_json::Value>("t"),
                    ErrorKind::TypeMismatch,
                    Code::Middleware,
                ),
            ),
            (
                "text decoded into Uuid",
                verdict(
                    row.try_get::<uuid::Uuid>("t"),
                    ErrorKind::TypeMismatch,
                    Code::Middleware,
                ),
            ),
            (
                "text decoded into a timestamp",
                verdict(
                    row.try_get::<chrono::NaiveDateTime>("t"),
                    ErrorKind::TypeMismatch,
                    Code::Middleware,
                ),
            ),
            (
                "int decoded into String",
                verdict(
                    row.try_get::<String>("x"),
                    ErrorKind::TypeMismatch,
                    Code::Middleware,
                ),
            ),
        ];
        for (name, v) in decode_cases {
            rep.case(name, v, &mut conn).await;
        }
    }
    let r = conn.query("SELECT 300 AS v").one::<(i8,)>().await;
    rep.case(
        "300 decoded into i8",
        verdict(r, ErrorKind::TypeMismatch, Code::Middleware),
        &mut conn,
    )
    .await;
    let r = conn.query("SELECT 2 AS v").one::<(bool,)>().await;
    rep.case(
        "2 decoded into bool",
        verdict(r, ErrorKind::TypeMismatch, Code::Middleware),
        &mut conn,
    )
    .await;
    let r = conn
        .query("SELECT id FROM bi WHERE id = $1")
        .params(&[(-1).into()])
        .one::<(i64,)>()
        .await;
    rep.case(
        "one() on an empty result",
        verdict(r, ErrorKind::NoRows, Code::Middleware),
        &mut conn,
    )
    .await;

    // Text that is not valid UTF-8. SQLite can hold it; reading it as text is a decode error.
    // Postgres cannot hold it: the server refuses to produce it (SQLSTATE 22021).
    // TURSO DIFFERS BY DESIGN: Turso converts invalid UTF-8 to U+FFFD inside the engine before
    // the middleware sees the value, so the read succeeds with a replacement character.
    // MYSQL DIFFERS BY DESIGN: the server converts every text result to the connection's
    // character set and replaces a byte it cannot convert with `?` (and a warning).
    let v = match db.kind {
        Kind::Sqlite => {
            let a = verdict(
                conn.query("SELECT CAST(x'ff' AS TEXT) AS bad")
                    .select()
                    .await,
                ErrorKind::TypeMismatch,
                Code::Any,
            );
            let b = verdict(
                conn.query("SELECT CAST(x'ff' AS TEXT) AS bad")
                    .one::<(String,)>()
                    .await,
                ErrorKind::TypeMismatch,
                Code::Any,
            );
            a.and(b)
        }
        Kind::Turso => match conn
            .query("SELECT CAST(x'ff' AS TEXT) AS bad")
            .one::<(String,)>()
            .await
        {
            Ok((s,)) if s == "\u{fffd}" => Ok(()),
            other => Err(format!(
                "Turso replaces invalid UTF-8 with U+FFFD; got {other:?}"
            )),
        },
        Kind::Mysql => match conn
            .query("SELECT CONVERT(x'ff' USING utf8mb4) AS bad")
            .one::<(String,)>()
            .await
        {
            Ok((s,)) if s == "?" => Ok(()),
            other => Err(format!(
                "MySQL replaces an unconvertible byte with '?'; got {other:?}"
            )),
        },
        // Postgres refuses to produce it: SQLSTATE 22021. No parameter is bound, so the kind
        // does not name one (`Other`; the same code for a text parameter is `ParameterType`).
        Kind::Postgres => check(
            conn.query("SELECT convert_from('\\xff'::bytea, 'UTF8') AS bad")
                .select()
                .await,
            ErrorKind::Other,
            Code::Driver,
        )
        .and_then(|e| match e.driver_code() {
            Some("22021") => Ok(()),
            other => Err(format!("expected SQLSTATE 22021, got {other:?}")),
        }),
    };
    rep.case("invalid UTF-8 read as text", v, &mut conn).await;

    // Division by zero. SQLite and Turso define x/0 as NULL (no error), and so does MySQL in a
    // SELECT (with a warning; strict mode makes it an error only when writing); Postgres raises
    // 22012.
    let r = conn.query("SELECT 1 / 0 AS q").select().await;
    let v = match db.kind {
        Kind::Sqlite | Kind::Turso | Kind::Mysql => match r {
            Ok(rs) if rs.results.len() == 1 && rs.results[0].get("q") == Some(&RowValues::Null) => {
                Ok(())
            }
            other => Err(format!("expected one NULL row, got {other:?}")),
        },
        Kind::Postgres => {
            check(r, ErrorKind::Other, Code::Driver).and_then(|e| match e.driver_code() {
                Some("22012") => Ok(()),
                other => Err(format!("expected SQLSTATE 22012, got {other:?}")),
            })
        }
    };
    rep.case("division by zero", v, &mut conn).await;

    // ---- backend-specific raw access --------------------------------------------------------
    #[cfg(feature = "sqlite")]
    {
        let v = match db.kind {
            Kind::Sqlite => verdict(
                conn.with_blocking_sqlite(|c| {
                    c.execute("INSERT INTO no_such_table VALUES (1)", [])
                })
                .await,
                ErrorKind::UndefinedObject,
                Code::Driver,
            ),
            _ => verdict(
                conn.with_blocking_sqlite(|_| Ok(())).await,
                ErrorKind::Unsupported,
                Code::Middleware,
            ),
        };
        rep.case(
            "with_blocking_sqlite (error inside / wrong backend)",
            v,
            &mut conn,
        )
        .await;
    }
    #[cfg(feature = "postgres")]
    if db.kind != Kind::Postgres {
        let v = verdict(
            conn.postgres_client().await.map(drop),
            ErrorKind::Unsupported,
            Code::Middleware,
        );
        rep.case("postgres_client on another backend", v, &mut conn)
            .await;
    }
    #[cfg(feature = "turso")]
    if db.kind != Kind::Turso {
        let v = verdict(
            conn.turso_connection().await.map(drop),
            ErrorKind::Unsupported,
            Code::Middleware,
        );
        rep.case("turso_connection on another backend", v, &mut conn)
            .await;
    }

    // ---- transactions -----------------------------------------------------------------------
    {
        let mut tx = conn.begin().await.expect("begin");
        let first = tx
            .query("INSERT INTO bi (id, x) VALUES (200, 1)")
            .dml()
            .await;
        let failed = tx.query("SELECT * FROM no_such_table").select().await;
        let after = tx.query("SELECT 1").select().await;
        let after_prepared = tx.prepare("SELECT 1").await.map(drop);
        let commit = tx.commit().await;
        let v = (|| {
            first.map_err(|e| format!("first insert: {e:?}"))?;
            // (Its kind is checked by the "unknown table" case above.)
            failed
                .map(drop)
                .err()
                .ok_or("SELECT from a missing table succeeded")?;
            verdict(after, ErrorKind::TransactionAborted, Code::Middleware)?;
            verdict(
                after_prepared,
                ErrorKind::TransactionAborted,
                Code::Middleware,
            )?;
            verdict(commit, ErrorKind::TransactionAborted, Code::Any)
        })();
        let v = match (
            v,
            count_where(&mut conn, "SELECT COUNT(*) FROM bi WHERE id = 200").await,
        ) {
            (Err(e), _) => Err(e),
            (Ok(()), Ok(0)) => Ok(()),
            (Ok(()), other) => Err(format!("row of the aborted tx: {other:?}")),
        };
        rep.case(
            "statements and commit after the tx was aborted",
            v,
            &mut conn,
        )
        .await;
    }
    {
        let mut tx = conn.begin().await.expect("begin");
        let first = tx
            .query("INSERT INTO bi (id, x) VALUES (201, 1)")
            .dml()
            .await;
        let nested = tx.execute_batch("BEGIN").await;
        let after = tx.query("SELECT 1").select().await;
        let rollback = tx.rollback().await;
        let v = (|| {
            first.map_err(|e| format!("first insert: {e:?}"))?;
            verdict(nested, ErrorKind::TransactionState, Code::Any)?;
            verdict(after, ErrorKind::TransactionAborted, Code::Middleware)?;
            rollback.map_err(|e| format!("rollback: {e:?}"))
        })();
        let v = match (
            v,
            count_where(&mut conn, "SELECT COUNT(*) FROM bi WHERE id = 201").await,
        ) {
            (Err(e), _) => Err(e),
            (Ok(()), Ok(0)) => Ok(()),
            (Ok(()), other) => Err(format!("row of the rolled-back tx: {other:?}")),
        };
        rep.case("nested BEGIN via execute_batch inside a Tx", v, &mut conn)
            .await;
    }
    if db.kind == Kind::Mysql {
        // MySQL has no deferred foreign keys: the violating INSERT fails at once, which aborts
        // the transaction as any failed statement does; the commit is refused and nothing is
        // saved.
        let mut tx = conn.begin().await.expect("begin");
        let a = tx
            .query("INSERT INTO fk_child (id, parent_id) VALUES (1, 1)")
            .dml()
            .await;
        let b = tx
            .query("INSERT INTO fk_child (id, parent_id) VALUES (2, 999)")
            .dml()
            .await;
        let commit = tx.commit().await;
        let v = (|| {
            a.map_err(|e| format!("valid child: {e:?}"))?;
            verdict(b, ErrorKind::ForeignKeyViolation, Code::Driver)?;
            verdict(commit, ErrorKind::TransactionAborted, Code::Any)
        })();
        let v = match (
            v,
            count_where(&mut conn, "SELECT COUNT(*) FROM fk_child").await,
        ) {
            (Err(e), _) => Err(e),
            (Ok(()), Ok(0)) => Ok(()),
            (Ok(()), other) => Err(format!("rows after the refused commit: {other:?}")),
        };
        rep.case("FK violation inside a Tx (checked at once)", v, &mut conn)
            .await;
        let v = match conn
            .query("INSERT INTO fk_child (id, parent_id) VALUES (3, 1)")
            .dml()
            .await
        {
            Ok(1) => {
                let mut other = db.conn().await;
                match count_where(&mut other, "SELECT COUNT(*) FROM fk_child").await {
                    Ok(1) => Ok(()),
                    x => Err(format!("other connection sees {x:?} rows, expected 1")),
                }
            }
            x => Err(format!("insert after the refused commit: {x:?}")),
        };
        rep.case("autocommit after the refused FK commit", v, &mut conn)
            .await;
    } else {
        // A deferred foreign key is checked at COMMIT: the commit fails and nothing is saved.
        let mut tx = conn.begin().await.expect("begin");
        let a = tx
            .query("INSERT INTO fk_child (id, parent_id) VALUES (1, 1)")
            .dml()
            .await;
        let b = tx
            .query("INSERT INTO fk_child (id, parent_id) VALUES (2, 999)")
            .dml()
            .await;
        let commit = tx.commit().await;
        let v = (|| {
            a.map_err(|e| format!("valid child: {e:?}"))?;
            b.map_err(|e| format!("deferred child must be accepted until COMMIT: {e:?}"))?;
            verdict(commit, ErrorKind::ForeignKeyViolation, Code::Driver)
        })();
        let v = match (
            v,
            count_where(&mut conn, "SELECT COUNT(*) FROM fk_child").await,
        ) {
            (Err(e), _) => Err(e),
            (Ok(()), Ok(0)) => Ok(()),
            (Ok(()), other) => Err(format!("rows after the failed commit: {other:?}")),
        };
        rep.case("commit of a deferred FK violation", v, &mut conn)
            .await;
        // ... and the connection is outside any transaction afterwards: this autocommits.
        let v = match conn
            .query("INSERT INTO fk_child (id, parent_id) VALUES (3, 1)")
            .dml()
            .await
        {
            Ok(1) => {
                let mut other = db.conn().await;
                match count_where(&mut other, "SELECT COUNT(*) FROM fk_child").await {
                    Ok(1) => Ok(()),
                    x => Err(format!("other connection sees {x:?} rows, expected 1")),
                }
            }
            x => Err(format!("insert after the failed commit: {x:?}")),
        };
        rep.case(
            "autocommit after the failed deferred-FK commit",
            v,
            &mut conn,
        )
        .await;
    }

    // ---- pool -------------------------------------------------------------------------------
    {
        let pool = db.builder().max_size(2).build().await.expect("second pool");
        let mut held = pool.get_connection().await.expect("checkout");
        pool.close();
        let r = pool.get_connection().await;
        rep.case(
            "get_connection on a closed pool",
            verdict(r, ErrorKind::PoolClosed, Code::Middleware),
            &mut held,
        )
        .await;
    }

    rep.finish(24);
}

backend_tests! {
    async fn bad_input(db) { t_bad_input(&db).await }
}
