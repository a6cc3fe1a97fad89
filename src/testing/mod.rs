//! Test databases (feature `testing`): each test gets a pool on a fresh database of its own,
//! with the migrations applied and fixtures loaded, dropped when the test ends (kept, on
//! request, when it fails). [`TestDatabase`] is the API; `#[sql_middleware::test]` the
//! attribute built on it (through [`run_test`]).
//!
//! | engine | what a test gets |
//! |---|---|
//! | PostgreSQL | a database copied from a template that already has the migrations (`CREATE DATABASE … TEMPLATE …`); the template is named by the migrations' fingerprint, so changed migrations build a new one |
//! | MySQL, MariaDB | a database of its own (`utf8mb4`, binary collation), migrated |
//! | SQLite, Turso | a file of its own in the temporary folder, migrated |
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), sql_middleware::SqlMiddlewareDbError> {
//! use sql_middleware::migrate::Migrator;
//! use sql_middleware::testing::TestDatabase;
//!
//! let migrator = Migrator::from_files([("0001_t.sql", "CREATE TABLE t (x INTEGER);")])?;
//! let db = TestDatabase::builder()
//!     .url("sqlite::memory:")
//!     .migrations(migrator)
//!     .fixture("rows.sql", "INSERT INTO t VALUES (1), (2);")
//!     .build()
//!     .await?;
//! let mut conn = db.pool().get_connection().await?;
//! let (n,): (i64,) = conn.query("SELECT COUNT(*) FROM t").one().await?;
//! assert_eq!(n, 2);
//! drop(conn);
//! db.close().await?;
//! # Ok(()) }
//! ```
//!
//! Names encode the machine and the owning process; a database (or file) whose process of this
//! machine no longer runs is an orphan, removed by the next test database made on that server
//! (see [`TestDatabase::remove_orphans`]). The connections of all test databases on one
//! server, across the threads of `cargo test` and the processes of `cargo nextest`, stay under
//! a bound ([`TestDatabaseBuilder::max_total_connections`]); a test that cannot get its share
//! waits. The guide ([`crate::guide::testing_your_application`]) has the details.

mod bound;
mod names;
mod run;
mod slots;
mod target;
mod template;

use std::time::{Duration, Instant};

use crate::config::ConfigAndPool;
use crate::contract::TestDbSql;
use crate::error::Result;
use crate::migrate::Migrator;

pub use run::{TestResult, run_test};
use slots::Slots;

/// The variable a test database's URL is read from unless [`TestDatabaseBuilder::url_env`]
/// names another.
pub const URL_ENV: &str = "DATABASE_URL";

/// Set to `1` (or `true`), the databases of failed tests are kept and their names printed.
pub const KEEP_ENV: &str = "SQL_MIDDLEWARE_TEST_KEEP";

/// The bound on the connections of all test databases on one server, unless
/// [`TestDatabaseBuilder::max_total_connections`] sets it.
pub const MAX_CONNECTIONS_ENV: &str = "SQL_MIDDLEWARE_TEST_MAX_CONNECTIONS";

/// The bound when nothing sets it (lowered to what the server has free).
pub const DEFAULT_MAX_CONNECTIONS: usize = 32;

/// The size of a test database's pool unless [`TestDatabaseBuilder::connections`] sets it.
pub const DEFAULT_CONNECTIONS: usize = 2;

/// How to make a [`TestDatabase`]: [`TestDatabase::builder`].
#[derive(Debug)]
#[must_use = "call .build().await to create the database"]
pub struct TestDatabaseBuilder {
    url: Option<String>,
    env: Option<String>,
    migrator: Option<Migrator>,
    fixtures: Vec<(String, String)>,
    keep_on_failure: Option<bool>,
    connections: usize,
    max_total: Option<usize>,
}

impl TestDatabaseBuilder {
    /// The server (or engine) to test on, by URL: `postgres://…`, `mysql://…`, `mariadb://…`
    /// (the user must be allowed to create databases; the URL's own database is used only to
    /// create and drop the test's), `sqlite:…` or `turso:…` (any path or `:memory:`: the test
    /// gets a file of its own either way). Its query parameters apply to the test's pool. With
    /// [`Self::url_env`] too, this is the fallback when the variable is unset.
    pub fn url(mut self, url: impl Into<String>) -> Self {
        self.url = Some(url.into());
        self
    }

    /// Reads the URL from the variable `var` (when set and not empty) instead of
    /// [`URL_ENV`].
    pub fn url_env(mut self, var: impl Into<String>) -> Self {
        self.env = Some(var.into());
        self
    }

    /// Applies these migrations to the database (on Postgres, to its template, once).
    pub fn migrations(mut self, migrator: Migrator) -> Self {
        self.migrator = Some(migrator);
        self
    }

    /// Runs the SQL script `sql` (named `name` in errors) after the migrations; fixtures run in
    /// the order given.
    pub fn fixture(mut self, name: impl Into<String>, sql: impl Into<String>) -> Self {
        self.fixtures.push((name.into(), sql.into()));
        self
    }

    /// Keeps the database of a failed test and prints its name (default: the [`KEEP_ENV`]
    /// variable).
    pub fn keep_on_failure(mut self, keep: bool) -> Self {
        self.keep_on_failure = Some(keep);
        self
    }

    /// The size of the test's pool (default [`DEFAULT_CONNECTIONS`]; at least 1).
    pub fn connections(mut self, n: usize) -> Self {
        self.connections = n.max(1);
        self
    }

    /// The bound on the connections all test databases of one server hold at once, across
    /// threads and processes (default: [`MAX_CONNECTIONS_ENV`], else
    /// [`DEFAULT_MAX_CONNECTIONS`]; lowered to what the server has free). Each database
    /// counts its pool and one connection for its creation and removal.
    pub fn max_total_connections(mut self, n: usize) -> Self {
        self.max_total = Some(n.max(2));
        self
    }

    fn resolve_url(&self) -> Result<String> {
        let var = match (&self.env, &self.url) {
            (Some(v), _) => Some(v.as_str()),
            (None, None) => Some(URL_ENV),
            (None, Some(_)) => None,
        };
        if let Some(var) = var {
            if let Some(url) = std::env::var(var).ok().filter(|u| !u.trim().is_empty()) {
                return Ok(url);
            }
        }
        self.url.clone().ok_or_else(|| {
            target::config(format!(
                "no test database URL: set {} or give one",
                var.unwrap_or(URL_ENV)
            ))
        })
    }

    /// Creates the database, applies the migrations and loads the fixtures. Waits while the
    /// test databases of the server hold their bound of connections.
    pub async fn build(self) -> Result<TestDatabase> {
        let started = Instant::now();
        let url = self.resolve_url()?;
        let rules = target::rules_of(&url)?;
        let keep = self.keep_on_failure.unwrap_or_else(|| {
            std::env::var(KEEP_ENV).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
        });
        let name = names::fresh();
        let (db_url, slots, admin_url, templated) = if let Some(sql) = &rules.server {
            let key = target::server_key(&url);
            let bound = bound::for_server(sql, &key, &url, self.max_total).await?;
            let slots = slots::acquire(&key, self.connections + 1, bound).await?;
            let templated = create_on_server(sql, &url, &name, self.migrator.as_ref()).await?;
            (
                target::with_database(&url, &name)?,
                slots,
                Some(url),
                templated,
            )
        } else {
            bound::sweep_files_once();
            let file = target::file_url(rules.file_scheme, &url, &name)?;
            (file, Slots::none(), None, false)
        };
        let mut db = TestDatabase {
            db: None,
            url: db_url.clone(),
            ended: false,
            name,
            server: rules.server,
            admin_url,
            keep_on_failure: keep,
            setup: Duration::ZERO,
            _slots: slots,
        };
        let pool = ConfigAndPool::from_url(&db_url)?
            .max_size(self.connections)
            .build()
            .await?;
        db.db = Some(pool.clone());
        let migrate = self.migrator.as_ref().filter(|_| !templated);
        if migrate.is_some() || !self.fixtures.is_empty() {
            let mut conn = pool.get_connection().await?;
            if let Some(m) = migrate {
                m.run(&mut conn).await?;
            }
            for (file, sql) in &self.fixtures {
                conn.execute_batch(sql)
                    .await
                    .map_err(|e| target::config(format!("fixture {file} failed: {e}")))?;
            }
        }
        db.setup = started.elapsed();
        Ok(db)
    }
}

/// Creates database `name` on the server of `url`; from the migrations' template where the
/// engine copies databases (built when missing). Returns whether the migrations are applied.
async fn create_on_server(
    sql: &TestDbSql,
    url: &str,
    name: &str,
    migrator: Option<&Migrator>,
) -> Result<bool> {
    let admin = target::admin(url).await?;
    let made = match (migrator, &sql.template) {
        (Some(m), Some(tpl)) => match template::ensure(url, sql, tpl, &admin, m).await {
            Ok(from) => {
                let create = target::named(tpl.create_from, name).replace("{template}", &from);
                target::run_retrying(&admin, &create).await.map(|()| true)
            }
            Err(e) => Err(e),
        },
        _ => target::run_retrying(&admin, &target::named(sql.create, name))
            .await
            .map(|()| false),
    };
    admin.close();
    made
}

/// A fresh database for one test, and its pool; see the [module docs](self).
///
/// End it with [`close`](Self::close) (or [`finish`](Self::finish)). One dropped without
/// that is removed on a thread of its own, or kept when the thread is unwinding from a panic
/// and keeping failed tests' databases is on.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), sql_middleware::SqlMiddlewareDbError> {
/// use sql_middleware::testing::TestDatabase;
///
/// let db = TestDatabase::builder()
///     .url("turso::memory:")
///     .fixture("t.sql", "CREATE TABLE t (x INTEGER)")
///     .keep_on_failure(true)
///     .build()
///     .await?;
/// let file = db.location();
/// assert!(std::path::Path::new(&file).exists());
/// // The test failed: its database stays, marked kept, and `finish` says where.
/// assert_eq!(db.finish(true).await?, Some(file.clone()));
/// assert!(std::path::Path::new(&file).exists());
/// # std::fs::remove_file(&file).ok();
/// # std::fs::remove_file(file.replace(".db", ".kept")).ok();
/// // Orphans are databases of processes of this machine that are gone: none here.
/// let removed = TestDatabase::remove_orphans("turso::memory:").await?;
/// assert!(removed.iter().all(|n| !file.contains(n.as_str())));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct TestDatabase {
    db: Option<ConfigAndPool>,
    url: String,
    ended: bool,
    name: String,
    server: Option<TestDbSql>,
    admin_url: Option<String>,
    keep_on_failure: bool,
    setup: Duration,
    _slots: Slots,
}

impl TestDatabase {
    /// A builder; the URL comes from [`URL_ENV`] unless [`TestDatabaseBuilder::url`] or
    /// [`TestDatabaseBuilder::url_env`] says otherwise.
    pub fn builder() -> TestDatabaseBuilder {
        TestDatabaseBuilder {
            url: None,
            env: None,
            migrator: None,
            fixtures: Vec::new(),
            keep_on_failure: None,
            connections: DEFAULT_CONNECTIONS,
            max_total: None,
        }
    }

    /// The pool on the test's database.
    ///
    /// # Panics
    ///
    /// Never: a `TestDatabase` has its pool from the moment [`TestDatabaseBuilder::build`]
    /// returns it until it is closed (which consumes it).
    pub fn pool(&self) -> &ConfigAndPool {
        match &self.db {
            Some(db) => db,
            None => unreachable!("a built TestDatabase has a pool"),
        }
    }

    /// The database's name (on SQLite and Turso, the file's name without `.db`).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The URL of the test's database (the given URL naming it, or its file), for code that
    /// makes pools or connections of its own. It carries the given URL's password, if any.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Where the database is, to inspect a kept one: its name on a server, its file's path
    /// otherwise.
    pub fn location(&self) -> String {
        if self.server.is_some() {
            self.name.clone()
        } else {
            target::file_path(&self.name).display().to_string()
        }
    }

    /// How long [`TestDatabaseBuilder::build`] took (creation, migrations, fixtures).
    pub fn setup_time(&self) -> Duration {
        self.setup
    }

    /// Closes the pool and drops the database.
    pub async fn close(self) -> Result<()> {
        self.finish(false).await.map(|_| ())
    }

    /// Ends the test's database: drops it, or, when `failed` and keeping failed tests'
    /// databases is on, keeps it (protected from orphan removal), prints where it is, and
    /// returns that.
    pub async fn finish(mut self, failed: bool) -> Result<Option<String>> {
        let job = self.job(failed);
        job.run().await
    }

    /// Removes the test databases (or SQLite and Turso files) on the server of `url` whose
    /// process of this machine no longer runs, and returns their names. A kept database, one
    /// whose process still runs, and one made on another machine stay.
    pub async fn remove_orphans(url: &str) -> Result<Vec<String>> {
        bound::remove_orphans(target::rules_of(url)?, url).await
    }

    fn job(&mut self, failed: bool) -> Cleanup {
        self.ended = true;
        Cleanup {
            db: self.db.take(),
            name: self.name.clone(),
            server: self.server,
            admin_url: self.admin_url.clone(),
            keep: failed && self.keep_on_failure,
        }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if self.ended {
            return;
        }
        let job = self.job(std::thread::panicking());
        // Not on this thread's runtime (if any): it may be the one unwinding, or be blocked.
        let cleaner = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| target::config(e.to_string()))?;
            rt.block_on(job.run())
        });
        match cleaner.join() {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => eprintln!(
                "sql-middleware: cannot drop test database {}: {e}",
                self.name
            ),
            Err(_) => eprintln!("sql-middleware: cannot drop test database {}", self.name),
        }
    }
}

/// What ending one test database takes, free of the [`TestDatabase`] (so it can run on
/// another thread).
struct Cleanup {
    db: Option<ConfigAndPool>,
    name: String,
    server: Option<TestDbSql>,
    admin_url: Option<String>,
    keep: bool,
}

impl Cleanup {
    async fn run(self) -> Result<Option<String>> {
        let keep = self.keep && self.db.is_some();
        if let (Some(url), Some(sql)) = (&self.admin_url, &self.server) {
            let admin = target::admin(url).await?;
            let r = match &self.db {
                Some(db) if keep => target::mark_kept_server(sql, &admin, db, &self.name).await,
                _ => {
                    if let Some(db) = &self.db {
                        db.close();
                    }
                    target::drop_server(sql, &admin, &self.name).await
                }
            };
            if let Some(db) = &self.db {
                db.close();
            }
            admin.close();
            r?;
        } else {
            if let Some(db) = self.db {
                db.close();
            }
            if keep {
                target::mark_kept_file(&self.name)?;
            } else {
                target::remove_files(&self.name)?;
            }
        }
        if !keep {
            return Ok(None);
        }
        let place = if self.admin_url.is_some() {
            self.name.clone()
        } else {
            target::file_path(&self.name).display().to_string()
        };
        eprintln!("sql-middleware: kept the database of the failed test: {place}");
        Ok(Some(place))
    }
}
