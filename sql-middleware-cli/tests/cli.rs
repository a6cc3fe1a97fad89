//! The `sql-middleware` command end to end, as a user runs it: `migrate add`, `run`, `status`,
//! `revert`, a changed file, and the failures (no URL, a bad URL, a usage error), on SQLite and
//! Turso database files, and on PostgreSQL and MySQL/MariaDB servers (see `server_url`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct Scratch(PathBuf);

impl Scratch {
    fn new(tag: &str) -> Scratch {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let p =
            std::env::temp_dir().join(format!("sqlmw_cli_{tag}_{}_{nanos}", std::process::id()));
        std::fs::create_dir_all(&p).expect("scratch dir");
        Scratch(p)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn cli(dir: &Path, url: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_sql-middleware"));
    c.current_dir(dir).args(args).env_remove("DATABASE_URL");
    if let Some(u) = url {
        c.env("DATABASE_URL", u);
    }
    c.output().expect("run sql-middleware")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[track_caller]
fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

#[track_caller]
fn fails(o: &Output, code: i32, says: &str) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout: {}\nstderr: {}",
        text(&o.stdout),
        text(&o.stderr)
    );
    assert!(
        text(&o.stderr).contains(says),
        "stderr should say {says:?}: {}",
        text(&o.stderr)
    );
}

fn flow(scheme: &str) {
    let s = Scratch::new(scheme);
    let url = format!("{scheme}://{}", s.0.join("app.db").display());
    let url = Some(url.as_str());
    let d = &s.0;

    ok(&cli(d, None, &["migrate", "add", "create_items", "--down"]));
    ok(&cli(d, None, &["migrate", "add", "more", "--down"]));
    let m = d.join("migrations");
    let first = "CREATE TABLE items (id BIGINT PRIMARY KEY, note TEXT);\nINSERT INTO items VALUES (1, 'a; b');\n";
    std::fs::write(m.join("0001_create_items.sql"), first).expect("write");
    std::fs::write(m.join("0001_create_items.down.sql"), "DROP TABLE items;").expect("write");
    std::fs::write(m.join("0002_more.sql"), "-- only a comment; nothing else\n").expect("write");

    let status = ok(&cli(d, url, &["migrate", "status"]));
    assert!(
        status.contains("0001 create_items") && status.contains("pending"),
        "{status}"
    );
    let out = ok(&cli(d, url, &["migrate", "run"]));
    assert!(
        out.contains("applying 0001 create_items") && out.contains("2 migrations applied"),
        "{out}"
    );
    let out = ok(&cli(d, url, &["migrate", "run"]));
    assert!(out.contains("0 migrations applied"), "{out}");
    let status = ok(&cli(d, url, &["migrate", "status"]));
    assert_eq!(
        status.matches(" applied ").count() + status.matches(" applied\n").count(),
        2,
        "{status}"
    );

    // A changed file is refused, by name; CRLF line endings are no change.
    std::fs::write(m.join("0001_create_items.sql"), first.replace('\n', "\r\n")).expect("write");
    ok(&cli(d, url, &["migrate", "run"]));
    std::fs::write(
        m.join("0001_create_items.sql"),
        first.replace("'a; b'", "'c'"),
    )
    .expect("write");
    fails(
        &cli(d, url, &["migrate", "run"]),
        1,
        "0001_create_items.sql",
    );
    let status = ok(&cli(d, url, &["migrate", "status"]));
    assert!(status.contains("modified"), "{status}");
    std::fs::write(m.join("0001_create_items.sql"), first).expect("write");

    // Revert the latest, then everything.
    let out = ok(&cli(d, url, &["migrate", "revert"]));
    assert!(out.contains("reverted 0002 more"), "{out}");
    let out = ok(&cli(d, url, &["migrate", "revert", "--to", "0"]));
    assert!(out.contains("reverted 0001 create_items"), "{out}");
    fails(&cli(d, url, &["migrate", "revert"]), 1, "nothing to revert");
    let status = ok(&cli(d, url, &["migrate", "status"]));
    assert_eq!(status.matches("pending").count(), 2, "{status}");

    // A repair of a clean migration is refused.
    ok(&cli(d, url, &["migrate", "run"]));
    fails(
        &cli(d, url, &["migrate", "repair", "1", "--forget"]),
        1,
        "not dirty",
    );
}

#[test]
fn sqlite_end_to_end() {
    flow("sqlite");
}

#[test]
fn turso_end_to_end() {
    flow("turso");
}

#[test]
fn failures_exit_non_zero_with_a_message() {
    let s = Scratch::new("fail");
    let d = &s.0;
    fails(
        &cli(d, None, &["migrate", "bogus"]),
        2,
        "unknown migrate command",
    );
    fails(
        &cli(d, None, &["migrate", "run", "--to", "3"]),
        2,
        "unknown option",
    );
    fails(
        &cli(d, None, &["migrate", "add", "bad name!"]),
        1,
        "must be letters",
    );
    ok(&cli(d, None, &["migrate", "add", "x"]));
    fails(&cli(d, None, &["migrate", "run"]), 1, "DATABASE_URL");
    fails(
        &cli(d, Some("nosuch://x"), &["migrate", "run"]),
        1,
        "bad DATABASE_URL",
    );
    fails(
        &cli(
            d,
            Some("sqlite://db.sqlite"),
            &["migrate", "run", "--dir", "nowhere"],
        ),
        1,
        "no migrations folder",
    );
    // A server that is not there: the message never repeats the URL or its password.
    let o = cli(
        d,
        Some("postgres://u:s3cret@127.0.0.1:1/db?connect_timeout=2"),
        &["migrate", "status"],
    );
    fails(&o, 1, "cannot");
    assert!(!text(&o.stderr).contains("s3cret") && !text(&o.stdout).contains("s3cret"));
    std::fs::write(d.join("migrations").join("1_x.sql"), "SELECT 1;").expect("write");
    fails(
        &cli(d, Some("sqlite://db.sqlite"), &["migrate", "run"]),
        1,
        "version 1 is also",
    );
}

// ---- On a server: PostgreSQL and MySQL/MariaDB ----
//
// The server is found as the main crate's tests find it: `SQL_MIDDLEWARE_PG_URL` /
// `SQL_MIDDLEWARE_MYSQL_URL` when set (and then that server or a failure), otherwise the local
// default. Without a server the test fails with a message saying how to provide one; it never
// skips. Each test works in a database of its own, created first and dropped at the end.

const PG_URL_ENV: &str = "SQL_MIDDLEWARE_PG_URL";
const MYSQL_URL_ENV: &str = "SQL_MIDDLEWARE_MYSQL_URL";

#[derive(Clone, Copy, PartialEq)]
enum Server {
    Postgres,
    Mysql,
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

/// `url` with its database (the last path segment) replaced by `db`; the query string stays.
fn url_with_database(url: &str, db: &str) -> String {
    let (head, query) = match url.find('?') {
        Some(i) => (&url[..i], &url[i..]),
        None => (url, ""),
    };
    let after_scheme = head.find("://").map_or(0, |i| i + 3);
    let base = match head[after_scheme..].find('/') {
        Some(i) => &head[..after_scheme + i],
        None => head,
    };
    format!("{base}/{db}{query}")
}

async fn admin_batch(url: &str, sql: &str) -> Result<(), String> {
    use sql_middleware::prelude::*;
    let db = ConfigAndPool::from_url(url)
        .map_err(|e| e.message().to_owned())?
        .max_size(1)
        .build()
        .await
        .map_err(|e| e.message().to_owned())?;
    let mut conn = db
        .get_connection()
        .await
        .map_err(|e| e.message().to_owned())?;
    conn.execute_batch(sql)
        .await
        .map_err(|e| e.message().to_owned())
}

async fn count(url: &str, sql: &str) -> i64 {
    use sql_middleware::prelude::*;
    let db = ConfigAndPool::from_url(url)
        .expect("url")
        .max_size(1)
        .build()
        .await
        .expect("pool");
    let mut conn = db.get_connection().await.expect("connection");
    let (n,): (i64,) = conn.query(sql).one().await.expect(sql);
    n
}

/// The server's base URL: the environment variable's, or the first local default that answers.
fn server_url(server: Server) -> String {
    let (env, defaults): (&str, &[&str]) = match server {
        Server::Postgres => (
            PG_URL_ENV,
            &[
                "postgres://postgres@127.0.0.1:5432/postgres",
                "postgres://root@127.0.0.1:5432/postgres",
            ],
        ),
        Server::Mysql => (MYSQL_URL_ENV, &["mysql://root@127.0.0.1:3306/test"]),
    };
    let rt = runtime();
    let probe = |u: &str| rt.block_on(admin_batch(u, "SELECT 1"));
    if let Some(u) = std::env::var(env).ok().filter(|v| !v.trim().is_empty()) {
        let u = u.trim().to_owned();
        if let Err(e) = probe(&u) {
            panic!(
                "{env} is set, but that server is not usable: {e}\nFix the URL or unset {env} to use the local default."
            );
        }
        return u;
    }
    let mut tried = Vec::new();
    for u in defaults {
        match probe(u) {
            Ok(()) => return (*u).to_owned(),
            Err(e) => tried.push(format!("  - {u}: {e}")),
        }
    }
    panic!(
        "no server for this test. Tried:\n{}\nSet {env} to the URL of a server whose user may create databases, or start the local server.",
        tried.join("\n")
    );
}

/// A database of the test's own on the server, dropped when the test ends (even on failure).
struct ServerDb {
    server: Server,
    admin: String,
    name: String,
    url: String,
}

impl ServerDb {
    fn create(server: Server) -> ServerDb {
        let admin = server_url(server);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let name = format!("sqlmw_cli_{}_{nanos}", std::process::id());
        runtime()
            .block_on(admin_batch(&admin, &format!("CREATE DATABASE {name}")))
            .expect("create the test database");
        let url = url_with_database(&admin, &name);
        ServerDb {
            server,
            admin,
            name,
            url,
        }
    }
}

impl Drop for ServerDb {
    fn drop(&mut self) {
        let sql = match self.server {
            Server::Postgres => format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name),
            Server::Mysql => format!("DROP DATABASE IF EXISTS {}", self.name),
        };
        if let Err(e) = runtime().block_on(admin_batch(&self.admin, &sql)) {
            eprintln!("could not drop the test database {}: {e}", self.name);
        }
    }
}

fn server_flow(server: Server) {
    let s = Scratch::new(if server == Server::Postgres {
        "pg"
    } else {
        "my"
    });
    let db = ServerDb::create(server);
    let url = Some(db.url.as_str());
    let d = &s.0;
    let rt = runtime();
    let tables = |name: &str| {
        let sql = match server {
            Server::Postgres => format!(
                "SELECT count(*)::BIGINT FROM information_schema.tables WHERE table_catalog = current_database() AND table_name = '{name}'"
            ),
            Server::Mysql => format!(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = '{name}'"
            ),
        };
        rt.block_on(count(&db.url, &sql))
    };

    let out = ok(&cli(d, None, &["migrate", "add", "create_items", "--down"]));
    assert!(out.contains("0001_create_items.down.sql"), "{out}");
    ok(&cli(d, None, &["migrate", "add", "add_tags", "--down"]));
    let m = d.join("migrations");
    std::fs::write(
        m.join("0001_create_items.sql"),
        "CREATE TABLE items (id BIGINT PRIMARY KEY, note TEXT);\nINSERT INTO items VALUES (1, 'a; b');\n",
    )
    .expect("write");
    std::fs::write(m.join("0001_create_items.down.sql"), "DROP TABLE items;").expect("write");
    std::fs::write(
        m.join("0002_add_tags.sql"),
        "CREATE TABLE tags (id BIGINT PRIMARY KEY);\nINSERT INTO tags VALUES (7);\n",
    )
    .expect("write");
    std::fs::write(m.join("0002_add_tags.down.sql"), "DROP TABLE tags;").expect("write");

    let status = ok(&cli(d, url, &["migrate", "status"]));
    assert_eq!(status.matches("pending").count(), 2, "{status}");
    let out = ok(&cli(d, url, &["migrate", "run"]));
    assert!(
        out.contains("applying 0001 create_items")
            && out.contains("applied 0002 add_tags")
            && out.contains("2 migrations applied"),
        "{out}"
    );
    assert_eq!(tables("items") + tables("tags"), 2);
    let out = ok(&cli(d, url, &["migrate", "run"]));
    assert!(out.contains("0 migrations applied"), "{out}");
    let status = ok(&cli(d, url, &["migrate", "status"]));
    assert!(
        status.contains("0001 create_items") && !status.contains("pending"),
        "{status}"
    );
    assert_eq!(status.matches(" applied ").count(), 2, "{status}");

    // A broken migration: a table, then a statement the server refuses.
    ok(&cli(d, None, &["migrate", "add", "broken"]));
    std::fs::write(
        m.join("0003_broken.sql"),
        "CREATE TABLE half (id BIGINT);\nINSERT INTO no_such_table VALUES (1);\n",
    )
    .expect("write");
    let o = cli(d, url, &["migrate", "run"]);
    fails(&o, 1, "migrate run failed");
    assert!(
        text(&o.stderr).contains("no_such_table"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        text(&o.stdout).contains("applying 0003 broken"),
        "{}",
        text(&o.stdout)
    );
    let status = ok(&cli(d, url, &["migrate", "status"]));
    match server {
        Server::Postgres => {
            // Transactional DDL: nothing of it is left, and it is still pending.
            assert!(
                status.contains("0003 broken") && status.contains("pending"),
                "{status}"
            );
            assert_eq!(tables("half"), 0, "the failed migration left its table");
        }
        Server::Mysql => {
            // DDL commits as it goes: the migration is dirty, and says where it stopped.
            assert!(status.contains("DIRTY"), "{status}");
            assert!(
                status.contains("failed at: INSERT INTO no_such_table"),
                "{status}"
            );
            assert_eq!(tables("half"), 1, "the statement before the failure stays");
            fails(&cli(d, url, &["migrate", "run"]), 1, "dirty");
            fails(&cli(d, url, &["migrate", "revert"]), 1, "dirty");
            let out = ok(&cli(d, url, &["migrate", "repair", "3", "--forget"]));
            assert!(out.contains("repaired 0003 (forgotten)"), "{out}");
            let status = ok(&cli(d, url, &["migrate", "status"]));
            assert!(
                !status.contains("DIRTY") && status.contains("pending"),
                "{status}"
            );
            admin_ok(&rt, &db.url, "DROP TABLE half");
        }
    }
    std::fs::write(
        m.join("0003_broken.sql"),
        "CREATE TABLE half (id BIGINT);\nINSERT INTO half VALUES (1);\n",
    )
    .expect("write");
    let out = ok(&cli(d, url, &["migrate", "run"]));
    assert!(out.contains("1 migration applied"), "{out}");
    assert_eq!(rt.block_on(count(&db.url, "SELECT count(*) FROM half")), 1);

    // Revert: a migration without a down file stops it, by name.
    fails(&cli(d, url, &["migrate", "revert"]), 1, "0003");
    std::fs::write(m.join("0003_broken.down.sql"), "DROP TABLE half;").expect("write");
    let out = ok(&cli(d, url, &["migrate", "revert"]));
    assert!(
        out.contains("reverted 0003 broken") && out.contains("1 migration reverted"),
        "{out}"
    );
    let out = ok(&cli(d, url, &["migrate", "revert", "--to", "0"]));
    assert!(
        out.contains("reverted 0002 add_tags")
            && out.contains("reverted 0001 create_items")
            && out.contains("2 migrations reverted"),
        "{out}"
    );
    assert_eq!(tables("items") + tables("tags") + tables("half"), 0);
    let status = ok(&cli(d, url, &["migrate", "status"]));
    assert_eq!(status.matches("pending").count(), 3, "{status}");
    fails(&cli(d, url, &["migrate", "revert"]), 1, "nothing to revert");
}

#[track_caller]
fn admin_ok(rt: &tokio::runtime::Runtime, url: &str, sql: &str) {
    if let Err(e) = rt.block_on(admin_batch(url, sql)) {
        panic!("{sql}: {e}");
    }
}

#[test]
fn postgres_end_to_end() {
    server_flow(Server::Postgres);
}

#[test]
fn mysql_end_to_end() {
    server_flow(Server::Mysql);
}
