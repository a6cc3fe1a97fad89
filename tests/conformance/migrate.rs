//! Migrations (feature `migrate`): the `Migrator` on every engine, through the public API:
//! applying, the history and its checksums, engine-specific files, scripts the scanner splits
//! (semicolons in strings, comments, routine bodies), down files, failures (atomic where the
//! engine's DDL is transactional, dirty where it is not). Runners started together are in
//! `migrate_concurrent.rs`.

use std::time::Instant;

use sql_middleware::ErrorKind;
use sql_middleware::migrate::{LockTable, MigrationState, Migrator, Repair};
use sql_middleware::prelude::*;

use crate::backend_tests;
use crate::common::backends::{Kind, TempDir, TestDb, expect_kind};
use crate::helpers::*;

/// A routine whose body holds `;`, in each engine's own form, as engine-specific files.
const ROUTINES: &[(&str, &str)] = &[
    (
        "0004_routine.sql",
        "CREATE TRIGGER m_touch AFTER INSERT ON m_items BEGIN\n  UPDATE m_items SET note = note || ';' WHERE id = NEW.id;\nEND;\n",
    ),
    (
        "0004_routine.postgres.sql",
        "CREATE FUNCTION m_semi() RETURNS text AS $$\nBEGIN\n  RETURN 'a;b';\nEND;\n$$ LANGUAGE plpgsql;\n",
    ),
    (
        "0004_routine.mysql.sql",
        "CREATE PROCEDURE m_semi()\nBEGIN\n  SELECT 'a;b';\n  SELECT 2;\nEND;\n",
    ),
    ("0004_routine.down.sql", "DROP TRIGGER m_touch;"),
    ("0004_routine.postgres.down.sql", "DROP FUNCTION m_semi();"),
    ("0004_routine.mysql.down.sql", "DROP PROCEDURE m_semi;"),
];

fn files() -> Vec<(&'static str, &'static str)> {
    let mut f = vec![
        (
            "0001_items.sql",
            "-- the first table; with a semicolon in a comment\nCREATE TABLE m_items (id BIGINT PRIMARY KEY, note VARCHAR(100));\nINSERT INTO m_items (id, note) VALUES (1, 'a; b; ''c;''');\n/* a block comment; */\nINSERT INTO m_items (id, note) VALUES (2, 'x');\n",
        ),
        ("0001_items.down.sql", "DROP TABLE m_items;"),
        ("0002_empty.sql", ""),
        (
            "0003_comments.sql",
            "-- nothing here; only comments\n/* and; this */\n",
        ),
    ];
    f.extend_from_slice(ROUTINES);
    f
}

async fn states(m: &Migrator, conn: &mut MiddlewarePoolConnection) -> Vec<(i64, MigrationState)> {
    m.status(conn)
        .await
        .expect("status")
        .into_iter()
        .map(|s| (s.version, s.state))
        .collect()
}

async fn t_migrate_apply_status_revert(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let m = Migrator::from_files(files()).expect("files");
    assert_eq!(
        states(&m, &mut conn).await,
        [1, 2, 3, 4].map(|v| (v, MigrationState::Pending)),
        "[{k}] before"
    );
    let report = m
        .run(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("[{k}] run: {e:?}"));
    assert_eq!(report.applied, [1, 2, 3, 4], "[{k}]");
    let rs = select(&mut conn, "SELECT note FROM m_items WHERE id = 1", &[]).await;
    let note: String = rs
        .iter()
        .next()
        .expect("row")
        .try_get("note")
        .expect("note");
    assert_eq!(note, "a; b; 'c;'", "[{k}] a string with semicolons");
    let st = m.status(&mut conn).await.expect("status");
    assert!(
        st.iter().all(|s| s.state == MigrationState::Applied),
        "[{k}] {st:?}"
    );
    let row = st[0].applied.as_ref().expect("history row");
    assert!(
        row.success && row.checksum.len() == 64 && row.applied_at.ends_with('Z'),
        "[{k}] {row:?}"
    );
    assert_eq!(
        st[3].file.as_deref(),
        Some(match db.kind {
            Kind::Postgres => "0004_routine.postgres.sql",
            Kind::Mysql => "0004_routine.mysql.sql",
            Kind::Sqlite | Kind::Turso => "0004_routine.sql",
        }),
        "[{k}] the engine's own file wins"
    );
    // Again: nothing to do.
    assert!(
        m.run(&mut conn)
            .await
            .expect("second run")
            .applied
            .is_empty(),
        "[{k}]"
    );

    // Down to 1: 4 goes (its routine with it), 2 and 3 have no down file.
    let e = expect_kind(
        &format!("[{k}] no down file"),
        m.revert_to(&mut conn, 1).await,
        ErrorKind::InvalidInput,
    );
    assert!(e.message().contains("0003"), "[{k}] {e:?}");
    let m = Migrator::from_files(files().into_iter().chain([
        ("0002_empty.down.sql", ""),
        ("0003_comments.down.sql", "-- nothing"),
    ]))
    .expect("files");
    assert_eq!(
        m.revert_to(&mut conn, 1).await.expect("revert").applied,
        [4, 3, 2],
        "[{k}]"
    );
    assert_eq!(
        states(&m, &mut conn).await,
        [
            (1, MigrationState::Applied),
            (2, MigrationState::Pending),
            (3, MigrationState::Pending),
            (4, MigrationState::Pending)
        ],
        "[{k}]"
    );
    assert_eq!(
        m.revert_to(&mut conn, 0).await.expect("revert all").applied,
        [1],
        "[{k}]"
    );
    assert!(
        conn.execute_batch("SELECT note FROM m_items")
            .await
            .is_err(),
        "[{k}] table reverted"
    );
    assert_eq!(
        m.run(&mut conn).await.expect("run again").applied,
        [1, 2, 3, 4],
        "[{k}]"
    );
}

async fn t_migrate_checksums(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let lf = "CREATE TABLE m_sum (id BIGINT);\nINSERT INTO m_sum (id) VALUES (1);\n";
    let dir = TempDir::new("migrate");
    std::fs::write(dir.path().join("0001_sum.sql"), lf).expect("write");
    std::fs::write(dir.path().join("README.md"), "not a migration").expect("write");
    Migrator::from_dir(dir.path())
        .expect("dir")
        .run(&mut conn)
        .await
        .expect("run");

    // The same file with CRLF line endings and a BOM counts as unchanged.
    let crlf = format!("\u{feff}{}", lf.replace('\n', "\r\n"));
    std::fs::write(dir.path().join("0001_sum.sql"), crlf).expect("write");
    let m = Migrator::from_dir(dir.path()).expect("dir");
    assert!(
        m.run(&mut conn).await.expect("crlf run").applied.is_empty(),
        "[{k}]"
    );
    assert_eq!(
        states(&m, &mut conn).await,
        [(1, MigrationState::Applied)],
        "[{k}]"
    );

    // A changed file is refused, by name, unless the caller opts out.
    std::fs::write(dir.path().join("0001_sum.sql"), lf.replace("(1)", "(2)")).expect("write");
    std::fs::write(
        dir.path().join("0002_next.sql"),
        "CREATE TABLE m_next (id BIGINT);",
    )
    .expect("write");
    let m = Migrator::from_dir(dir.path()).expect("dir");
    assert_eq!(
        states(&m, &mut conn).await,
        [(1, MigrationState::Modified), (2, MigrationState::Pending)],
        "[{k}]"
    );
    let e = expect_kind(
        &format!("[{k}] modified"),
        m.run(&mut conn).await,
        ErrorKind::InvalidInput,
    );
    assert!(e.message().contains("0001_sum.sql"), "[{k}] {e:?}");
    let m = m.allow_modified(true);
    assert_eq!(
        m.run(&mut conn).await.expect("opted out").applied,
        [2],
        "[{k}]"
    );

    // A migration recorded without a file is missing.
    let m = Migrator::from_files([("0002_next.sql", "CREATE TABLE m_next (id BIGINT);")])
        .expect("files");
    assert_eq!(
        states(&m, &mut conn).await,
        [(1, MigrationState::Missing), (2, MigrationState::Applied)],
        "[{k}]"
    );
}

async fn t_migrate_failure(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let good = "CREATE TABLE m_part (id BIGINT);";
    let bad = (
        "0002_bad.sql",
        "CREATE TABLE m_half (id BIGINT);\nINSERT INTO m_nowhere (id) VALUES (1);\n",
    );
    let m = Migrator::from_files([("0001_ok.sql", good), bad]).expect("files");
    let e = m.run(&mut conn).await.expect_err("a failing migration");
    assert!(
        e.message().contains("0002_bad.sql") && e.message().contains("statement 2"),
        "[{k}] {e:?}"
    );
    let fixed = Migrator::from_files([
        ("0001_ok.sql", good),
        (
            "0002_bad.sql",
            "CREATE TABLE m_half (id BIGINT);\nINSERT INTO m_half (id) VALUES (1);\n",
        ),
    ])
    .expect("files");
    match db.kind {
        // Nothing of the failed migration is left: not its table, not its history row.
        Kind::Sqlite | Kind::Postgres | Kind::Turso => {
            assert_eq!(
                states(&m, &mut conn).await,
                [(1, MigrationState::Applied), (2, MigrationState::Pending)],
                "[{k}]"
            );
            assert!(
                conn.execute_batch("SELECT id FROM m_half").await.is_err(),
                "[{k}] m_half left behind"
            );
            assert_eq!(
                fixed.run(&mut conn).await.expect("fixed").applied,
                [2],
                "[{k}]"
            );
        }
        // DDL commits implicitly: the migration is dirty, with its failed statement, and the
        // next run refuses until it is repaired.
        Kind::Mysql => {
            let st = m.status(&mut conn).await.expect("status");
            assert_eq!(st[1].state, MigrationState::Dirty, "[{k}] {st:?}");
            let failed = st[1]
                .applied
                .as_ref()
                .and_then(|r| r.failed_statement.clone())
                .expect("failed statement");
            assert!(failed.contains("m_nowhere"), "[{k}] {failed}");
            let e = expect_kind(
                &format!("[{k}] dirty"),
                fixed.run(&mut conn).await,
                ErrorKind::TransactionState,
            );
            assert!(e.message().contains("m_nowhere"), "[{k}] {e:?}");
            expect_kind(
                &format!("[{k}] repair a clean one"),
                fixed.repair(&mut conn, 1, Repair::Forget).await,
                ErrorKind::InvalidInput,
            );
            batch(&mut conn, "DROP TABLE m_half").await;
            fixed
                .repair(&mut conn, 2, Repair::Forget)
                .await
                .expect("repair");
            assert_eq!(
                fixed.run(&mut conn).await.expect("after repair").applied,
                [2],
                "[{k}]"
            );
        }
    }
    assert_eq!(count(&mut conn, "m_half").await, 1, "[{k}]");
}

/// The figure: how long applying 100 small migrations takes.
async fn t_migrate_hundred(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let files: Vec<(String, String)> = (1..=100)
        .map(|v| (format!("{v:04}_t.sql"), format!("CREATE TABLE m_h{v} (id BIGINT PRIMARY KEY);\nINSERT INTO m_h{v} (id) VALUES ({v});")))
        .collect();
    let m =
        Migrator::from_files(files.iter().map(|(f, t)| (f.as_str(), t.as_str()))).expect("files");
    let started = Instant::now();
    let report = m.run(&mut conn).await.expect("run");
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    assert_eq!(report.applied.len(), 100, "[{k}]");
    println!("migrate_apply_100_ms={ms:.0} engine={k}");
}

/// A file with the no-transaction directive runs outside a transaction: what Postgres refuses
/// inside one (`CREATE INDEX CONCURRENTLY`) works, and without the directive the error says to
/// add it.
async fn t_migrate_no_transaction(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let table = ("0001_t.sql", "CREATE TABLE m_x (id BIGINT);");
    let plain = "CREATE INDEX m_i ON m_x (id);";
    let concurrent = "CREATE INDEX CONCURRENTLY m_i ON m_x (id);";
    if db.kind == Kind::Postgres {
        let m = Migrator::from_files([
            table,
            ("0002_i.postgres.sql", concurrent),
            ("0002_i.sql", plain),
        ])
        .expect("files");
        let e = m
            .run(&mut conn)
            .await
            .expect_err("CONCURRENTLY inside a transaction");
        assert!(
            e.message()
                .contains(sql_middleware::migrate::NO_TRANSACTION),
            "[{k}] {e:?}"
        );
    }
    let with = |body: &str| format!("{}\n{body}\n", sql_middleware::migrate::NO_TRANSACTION);
    let (pg, other) = (with(concurrent), with(plain));
    let m = Migrator::from_files([
        table,
        ("0002_i.postgres.sql", pg.as_str()),
        ("0002_i.sql", other.as_str()),
    ])
    .expect("files");
    let applied = m
        .run(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("[{k}] {e:?}"))
        .applied;
    assert_eq!(applied.last(), Some(&2), "[{k}]");
    assert_eq!(
        states(&m, &mut conn).await,
        [(1, MigrationState::Applied), (2, MigrationState::Applied)],
        "[{k}]"
    );
}

/// `embed_migrations!` (feature `derive`, which the tests always have) carries a folder's files
/// in the binary.
async fn t_migrate_embedded(db: &TestDb) {
    let k = db.kind.name();
    let files = sql_middleware::migrate::embed_migrations!("tests/conformance/migrations");
    assert_eq!(files.len(), 3, "[{k}]");
    assert_eq!(files[0].0, "0001_embedded.down.sql", "[{k}] sorted by name");
    let m = Migrator::from_files(files).expect("files");
    let mut conn = db.conn().await;
    assert_eq!(
        m.run(&mut conn).await.expect("run").applied,
        [1, 2],
        "[{k}]"
    );
    assert_eq!(count(&mut conn, "m_embedded").await, 2, "[{k}]");
    assert_eq!(
        m.revert_to(&mut conn, 0)
            .await
            .expect_err("0002 has no down file")
            .kind(),
        ErrorKind::InvalidInput,
        "[{k}]"
    );
}

/// Another history table, named as long as allowed (its lock's name stays within MySQL's limit,
/// and the lock table's name within the engines' identifier lengths).
async fn t_migrate_custom_table(db: &TestDb) {
    let k = db.kind.name();
    let mut conn = db.conn().await;
    let long = "h".repeat(58);
    let files = [("0001_a.sql", "CREATE TABLE m_custom (id BIGINT);")];
    for mode in [LockTable::Never, LockTable::Always] {
        let m = Migrator::from_files(files)
            .expect("files")
            .table(&long)
            .expect("58 characters")
            .lock_table(mode);
        m.run(&mut conn)
            .await
            .unwrap_or_else(|e| panic!("[{k}] {mode:?}: {e:?}"));
        assert_eq!(
            states(&m, &mut conn).await,
            [(1, MigrationState::Applied)],
            "[{k}]"
        );
    }
    for bad in ["h".repeat(59), "1abc".into(), "a-b".into(), String::new()] {
        let r = Migrator::from_files(files).expect("files").table(&bad);
        expect_kind(
            &format!("[{k}] table {bad:?}"),
            r.map(drop),
            ErrorKind::InvalidInput,
        );
    }
}

backend_tests! {
    async fn migrate_custom_table(db) { t_migrate_custom_table(&db).await }
    async fn migrate_embedded(db) { t_migrate_embedded(&db).await }
    async fn migrate_no_transaction(db) { t_migrate_no_transaction(&db).await }
    async fn migrate_apply_status_revert(db) { t_migrate_apply_status_revert(&db).await }
    async fn migrate_checksums(db) { t_migrate_checksums(&db).await }
    async fn migrate_failure(db) { t_migrate_failure(&db).await }
    async fn migrate_hundred(db) { t_migrate_hundred(&db).await }
}
