#![allow(dead_code)]
//! PostgreSQL provisioning for the integration tests, split by job:
//!
//! - this module: finding the server ([`base_url`]) and, with the crate's feature `testing`
//!   (the suites), a database per test made by the crate's `TestDatabase` ([`PgSchema`],
//!   [`with_schema`]), so tests can run in parallel without seeing each other's tables;
//! - [`cluster`]: throwaway clusters (started with `initdb` and `pg_ctl`), restartable ones,
//!   ones with files and settings of their own, and a primary with a streaming standby;
//! - `tls` (feature `postgres-tls`): a throwaway cluster that speaks TLS;
//! - [`pgbouncer`]: a PgBouncer in transaction mode in front of the test server;
//! - `pgaf` (unix): a pg_auto_failover formation for the HA tests.
//!
//! Include it from a test binary through a `common/mod.rs` containing `pub mod pg;`, or with
//! `#[path = "common/pg/mod.rs"] mod pg;` beside `#[path = "common/unwind.rs"] mod unwind;`
//! (the benches do, which make schemas of their own with [`url_with_search_path`]). Apart from
//! [`PgSchema`] it depends only on `std`, `tokio`, `tokio-postgres` and (for `tls`) `rcgen`,
//! never on the library under test.

use std::sync::OnceLock;
use std::time::Duration;

use tokio_postgres::NoTls;

pub mod cluster;
#[cfg(unix)]
pub mod pgaf;
pub mod pgbouncer;
/// Ports for the servers the harnesses start, the same source as the rest of `common` uses
/// (compiled a second time here in the tests, as `unique.rs` is).
#[path = "../ports.rs"]
#[allow(clippy::duplicate_mod, dead_code)]
mod ports;
#[cfg(feature = "postgres-tls")]
pub mod tls;
/// Names unique to this process, the same source as the tests' `backends` use. In the tests this
/// file is compiled a second time here (the lint below), because examples and benches include
/// this module by path without the rest of `common`.
#[path = "../unique.rs"]
#[allow(clippy::duplicate_mod)]
mod unique;

/// Environment variable that names the PostgreSQL server to test against.
pub const PG_URL_ENV: &str = "SQL_MIDDLEWARE_PG_URL";

/// How long one connectivity probe may take before the candidate counts as unreachable.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Environment variable that, set to `1`, skips the local server and starts a throwaway cluster:
/// it exercises the path taken on machines that have the PostgreSQL binaries but no server.
pub const PG_THROWAWAY_ENV: &str = "SQL_MIDDLEWARE_PG_THROWAWAY";

/// Base URL of a reachable PostgreSQL server (a connect string usable by
/// `tokio_postgres::Config::from_str`).
///
/// Resolved once per process, in this order (with `SQL_MIDDLEWARE_PG_TLS=1`, instead: the unix
/// socket of a TLS cluster started for the process, see `tls.rs`):
///  1. the environment variable `SQL_MIDDLEWARE_PG_URL`, if set and non-empty; if that server
///     cannot be reached this panics instead of falling through to the other sources;
///  2. the local default server: the unix socket in `/var/run/postgresql`, then
///     `127.0.0.1:5432`, as user `postgres` and then as user `root` (database `postgres`);
///  3. a throwaway cluster started with `initdb` + `pg_ctl`/`postgres` found in `PATH` or
///     `/usr/lib/postgresql/*/bin` (see [`cluster::start_throwaway_cluster`]);
///  4. otherwise it panics with instructions for providing a server. It never skips silently.
///
/// A candidate counts only if a connection succeeds within about 2 seconds and the user may
/// create databases (feature `testing`, the suites) or schemas in the database (the benches).
/// The outcome, including a failure, is cached: every later call returns the same URL or panics
/// with the same message.
///
/// This function is synchronous and safe to call from inside a tokio runtime: probes run on a
/// short-lived separate thread with its own current-thread runtime.
pub fn base_url() -> String {
    static BASE: OnceLock<Result<String, String>> = OnceLock::new();
    match BASE.get_or_init(resolve_base_url) {
        Ok(url) => url.clone(),
        Err(message) => panic!("{message}"),
    }
}

/// Environment variable that, set to `1`, runs the Postgres tests over TLS (`tls.rs`).
pub const PG_TLS_ENV: &str = "SQL_MIDDLEWARE_PG_TLS";

/// In the TLS mode (`SQL_MIDDLEWARE_PG_TLS=1`), the base server is a TLS cluster started for
/// the process, reached through its unix socket (plain text) by the tests' admin connections.
fn tls_base() -> Option<Result<String, String>> {
    if !std::env::var(PG_TLS_ENV).is_ok_and(|v| v == "1") {
        return None;
    }
    #[cfg(feature = "postgres-tls")]
    {
        Some(tls::try_shared().map(|s| s.cluster.socket_url.clone()))
    }
    #[cfg(not(feature = "postgres-tls"))]
    {
        Some(Err(format!(
            "{PG_TLS_ENV}=1 needs the `postgres-tls` feature: run with --all-features"
        )))
    }
}

/// In the TLS mode, the URL tests connect with: `verify-full` to `localhost` (see `tls.rs`).
fn tls_test_url() -> Option<String> {
    #[cfg(feature = "postgres-tls")]
    if tls::via_tls() {
        return Some(tls::shared().verify_full_url());
    }
    None
}

/// Runs the resolution steps documented on [`base_url`].
fn resolve_base_url() -> Result<String, String> {
    if let Some(base) = tls_base() {
        return base;
    }
    if let Some(url) = std::env::var(PG_URL_ENV)
        .ok()
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty())
    {
        return match probe(&url, PROBE_TIMEOUT) {
            Ok(()) => {
                eprintln!(
                    "[pg tests] using PostgreSQL from {PG_URL_ENV}: {}",
                    redact(&url)
                );
                Ok(url)
            }
            Err(e) => Err(format!(
                "{PG_URL_ENV} is set to {:?}, but that PostgreSQL server is not usable: {e}\n\
                 Fix the URL (format: postgres://user@host:port/db, the user must be allowed to \
                 create databases, or schemas for the benches) or unset {PG_URL_ENV} to let the tests find or start a local server.",
                redact(&url)
            )),
        };
    }

    let mut tried = Vec::new();
    let force_throwaway = std::env::var(PG_THROWAWAY_ENV).is_ok_and(|v| v == "1");
    let candidates = if force_throwaway {
        tried.push(format!(
            "  - local server: skipped because {PG_THROWAWAY_ENV}=1"
        ));
        Vec::new()
    } else {
        local_candidates()
    };
    for url in candidates {
        match probe(&url, PROBE_TIMEOUT) {
            Ok(()) => {
                eprintln!("[pg tests] using the local PostgreSQL server at {url}");
                return Ok(url);
            }
            Err(e) => tried.push(format!("  - {url}: {e}")),
        }
    }

    match cluster::try_start_throwaway_cluster() {
        Ok(url) => return Ok(url),
        Err(e) => tried.push(format!("  - throwaway cluster: {e}")),
    }

    Err(format!(
        "no PostgreSQL server is available for the integration tests.\n\
         Tried:\n{}\n\
         Provide one of these:\n\
         \x20 * set {PG_URL_ENV}=postgres://user@host:port/db for a running server on which that \
         user may create databases (schemas for the benches), or\n\
         \x20 * install the PostgreSQL server binaries (initdb, pg_ctl, postgres) so a throwaway \
         cluster can be started (Debian/Ubuntu: `apt-get install postgresql`).",
        tried.join("\n")
    ))
}

/// The connect strings tried for the machine's default local server, in order.
fn local_candidates() -> Vec<String> {
    let mut candidates = Vec::new();
    for user in ["postgres", "root"] {
        candidates.push(format!(
            "postgres://{user}@%2Fvar%2Frun%2Fpostgresql/postgres"
        ));
        candidates.push(format!("postgres://{user}@127.0.0.1:5432/postgres"));
    }
    candidates
}

/// Checks that `url` accepts a connection within `timeout` and that its user may create what
/// the tests need ([`base_url`]).
///
/// Runs on a separate thread with its own current-thread runtime, so it can be called from
/// synchronous code that itself runs inside a tokio runtime.
fn probe(url: &str, timeout: Duration) -> Result<(), String> {
    let url = url.to_owned();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot build the probe runtime: {e}"))?;
        runtime.block_on(async {
            match tokio::time::timeout(timeout, probe_async(&url)).await {
                Ok(result) => result,
                Err(_) => Err(format!("no answer within {timeout:?}")),
            }
        })
    })
    .join()
    .unwrap_or_else(|_| Err("the probe thread panicked".to_owned()))
}

/// The async body of [`probe`].
async fn probe_async(url: &str) -> Result<(), String> {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .map_err(|e| error_text(&e))?;
    let connection = tokio::spawn(connection);
    // The suites (feature `testing`) make a database per test, the benches a schema.
    let (ask, what) = if cfg!(feature = "testing") {
        (
            "SELECT rolcreatedb OR rolsuper FROM pg_roles WHERE rolname = current_user",
            "databases",
        )
    } else {
        (
            "SELECT has_database_privilege(current_user, current_database(), 'CREATE')",
            "schemas in this database",
        )
    };
    let row = client
        .query_one(ask, &[])
        .await
        .map_err(|e| error_text(&e))?;
    let can_create: bool = row.get(0);
    drop(client);
    let _ = connection.await;
    if can_create {
        Ok(())
    } else {
        Err(format!("connected, but the user may not create {what}"))
    }
}

/// Formats an error together with its chain of sources (tokio-postgres puts the useful part,
/// such as "Connection refused", in the source).
fn error_text(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Hides the password of a `postgres://user:password@host` URL or a `password=` key.
fn redact(url: &str) -> String {
    for scheme in ["postgres://", "postgresql://"] {
        if let Some(rest) = url.strip_prefix(scheme) {
            let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
            if let Some(at) = rest[..authority_end].rfind('@')
                && let Some(colon) = rest[..at].find(':')
            {
                return format!("{scheme}{}:***{}", &rest[..colon], &rest[at..]);
            }
            return url.to_owned();
        }
    }
    url.split(' ')
        .map(|part| {
            if part.starts_with("password=") {
                "password=***"
            } else {
                part
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// 16 random lowercase hex digits, from std only (see `unique.rs`, shared with the tests'
/// `backends`).
pub fn random_hex() -> String {
    unique::unique_hex()
}

/// Percent-encodes everything except RFC 3986 unreserved characters.
pub fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len() * 3);
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Returns `base` with the libpq `options` parameter set so that every connection made from the
/// result uses `schema` as its `search_path`.
///
/// Works for URL (`postgres://...`) and key/value (`host=... user=...`) connect strings; in URL
/// form existing `options` are kept and extended. In key/value form an existing `options` key is
/// overridden.
pub fn url_with_search_path(base: &str, schema: &str) -> String {
    let option = format!("-c search_path={schema}");
    if base.starts_with("postgres://") || base.starts_with("postgresql://") {
        let encoded = percent_encode(&option);
        match base.split_once('?') {
            None => format!("{base}?options={encoded}"),
            Some((head, query)) => {
                let mut found = false;
                let mut params: Vec<String> = query
                    .split('&')
                    .filter(|p| !p.is_empty())
                    .map(|p| match p.strip_prefix("options=") {
                        Some(existing) => {
                            found = true;
                            format!("options={existing}%20{encoded}")
                        }
                        None => p.to_owned(),
                    })
                    .collect();
                if !found {
                    params.push(format!("options={encoded}"));
                }
                format!("{head}?{}", params.join("&"))
            }
        }
    } else {
        format!("{base} options='{option}'")
    }
}

/// An isolated database for one test on the [`base_url`] server: the crate's own
/// `TestDatabase` (feature `testing`), so the suites use what they ship. It is reached directly,
/// through the TLS cluster's `verify-full` URL (`SQL_MIDDLEWARE_PG_TLS=1`) or through PgBouncer
/// (`SQL_MIDDLEWARE_PG_VIA_PGBOUNCER=1`: a transaction-mode pooler cannot keep a session's
/// `search_path`, so a schema would not do there).
///
/// Call [`PgSchema::drop_schema`], or use [`with_schema`], which always does; one dropped
/// without either is removed all the same.
#[cfg(feature = "testing")]
pub struct PgSchema {
    /// The connect string of the test's sessions.
    pub url: String,
    /// The database's name (`sqlmw_t_…`, needs no quoting).
    pub schema: String,
    db: std::sync::Mutex<Option<sql_middleware::testing::TestDatabase>>,
}

#[cfg(feature = "testing")]
impl PgSchema {
    /// Creates a fresh, uniquely named database on the [`base_url`] server (over TLS in the TLS
    /// mode). Panics on failure.
    pub async fn create() -> PgSchema {
        let on = tls_test_url().unwrap_or_else(base_url);
        let db = sql_middleware::testing::TestDatabase::builder()
            .url(on)
            .connections(4)
            .build()
            .await
            .unwrap_or_else(|e| panic!("cannot create a test database: {e}"));
        let url = if pgbouncer::via_bouncer() {
            pgbouncer::shared().url(db.name())
        } else {
            db.url().to_owned()
        };
        PgSchema {
            url,
            schema: db.name().to_owned(),
            db: std::sync::Mutex::new(Some(db)),
        }
    }

    /// Drops the database (ending its sessions). Idempotent. Panics if the drop fails.
    pub async fn drop_schema(&self) {
        if let Err(e) = self.try_drop().await {
            panic!("cannot drop test database {}: {e}", self.schema);
        }
    }

    /// Drops the database, reporting failures instead of panicking.
    async fn try_drop(&self) -> Result<(), String> {
        let db = self.db.lock().unwrap_or_else(|p| p.into_inner()).take();
        match db {
            Some(db) => db.close().await.map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }
}

/// Runs `body(url)` with a fresh [`PgSchema`] and always drops its database afterwards, even
/// when the body panics: the panic is caught, the body's future is dropped (closing its
/// connections), the database is dropped, and then the panic is resumed.
#[cfg(feature = "testing")]
pub async fn with_schema<F, Fut>(body: F)
where
    F: FnOnce(String) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let schema = PgSchema::create().await;
    let url = schema.url.clone();
    let outcome = super::unwind::run_catching(body, url).await;
    match outcome {
        Ok(()) => schema.drop_schema().await,
        Err(panic) => {
            if let Err(e) = schema.try_drop().await {
                eprintln!(
                    "[pg tests] cannot drop test database {} after a panic: {e}",
                    schema.schema
                );
            }
            std::panic::resume_unwind(panic);
        }
    }
}

/// Connects with plain `tokio_postgres` (no TLS) to `url` and spawns the connection task on the
/// current tokio runtime. Handy for assertions from outside the middleware. Panics if the
/// connection fails.
pub async fn raw_client(url: &str) -> tokio_postgres::Client {
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {}: {}", redact(url), error_text(&e)));
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            eprintln!("[pg tests] raw_client connection error: {}", error_text(&e));
        }
    });
    client
}
