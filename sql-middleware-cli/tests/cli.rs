//! The `sql-middleware` command end to end, as a user runs it: `migrate add`, `run`, `status`,
//! `revert`, a changed file, and the failures (no URL, a bad URL, a usage error), on SQLite and
//! Turso database files (no server needed).

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
