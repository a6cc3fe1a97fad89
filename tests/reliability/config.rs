//! Reliability 28.1: every configuration input is checked. Each numeric setting, at the edges
//! of its range and past them, through each input that can set it (the builder, the URL, the
//! serde `Config`, a Postgres `key=value` string), on every backend (MySQL included): the pool is built and
//! serves a checkout, or the build fails with a `Config` error naming the setting, never a
//! panic (in the caller, while the pool is built, in a timer or on a blocking thread, where it
//! would come back as `Other`). One duration rule for the whole URL (a unit, or libpq's bare
//! seconds, `connect_timeout` included), and RFC 3986 percent-decoding of `sqlite://` paths,
//! checked on generated file names. The fuzz target over `from_url`, `from_env` and the serde
//! `Config` runs in `props.rs`.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use sql_middleware::prelude::*;

use crate::common;
use crate::common::backends::{Kind, TempDir};

/// How a case sets its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    Builder,
    Url,
    #[cfg(feature = "serde")]
    Serde,
}

/// Durations at and past the edges: zero, 1 ms, 2^31 - 1 ms, one more, a year, `u64::MAX` ms,
/// `Duration::MAX`.
fn durations() -> Vec<Duration> {
    vec![
        Duration::ZERO,
        Duration::from_millis(1),
        Duration::from_millis(i32::MAX as u64),
        Duration::from_millis(i32::MAX as u64 + 1),
        Duration::from_secs(365 * 24 * 3600),
        Duration::from_millis(u64::MAX),
        Duration::MAX,
    ]
}

const COUNTS: [usize; 6] = [0, 1, 4, 10_000, 10_001, usize::MAX];

const DURATION_SETTINGS: [&str; 8] = [
    "wait_timeout",
    "create_timeout",
    "recycle_timeout",
    "max_lifetime",
    "idle_timeout",
    "statement_timeout",
    "connect_on_build",
    "busy_timeout",
];

const COUNT_SETTINGS: [&str; 3] = ["max_size", "min_idle", "statement_cache_capacity"];

/// A setting's value, as each input spells it.
#[derive(Debug, Clone, Copy)]
enum Value {
    D(Duration),
    N(usize),
}

impl Value {
    /// The URL's form; `None` when the URL cannot say it (past `u64::MAX` ms).
    fn url(self) -> Option<String> {
        match self {
            Value::D(d) => u64::try_from(d.as_millis())
                .ok()
                .map(|ms| format!("{ms}ms")),
            Value::N(n) => Some(n.to_string()),
        }
    }
}

fn with_param(url: &str, key: &str, value: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}{key}={value}")
}

fn set(b: PoolBuilder, key: &str, v: Value) -> PoolBuilder {
    match (key, v) {
        ("wait_timeout", Value::D(d)) => b.wait_timeout(d),
        ("create_timeout", Value::D(d)) => b.create_timeout(d),
        ("recycle_timeout", Value::D(d)) => b.recycle_timeout(d),
        ("max_lifetime", Value::D(d)) => b.max_lifetime(d),
        ("idle_timeout", Value::D(d)) => b.idle_timeout(d),
        ("statement_timeout", Value::D(d)) => b.statement_timeout(d),
        ("connect_on_build", Value::D(d)) => b.connect_on_build(d),
        ("busy_timeout", Value::D(d)) => b.busy_timeout(d),
        ("max_size", Value::N(n)) => b.max_size(n),
        ("min_idle", Value::N(n)) => b.min_idle(n),
        ("statement_cache_capacity", Value::N(n)) => b.statement_cache_capacity(n),
        _ => unreachable!("{key}"),
    }
}

/// The builder of a case, or `None` when `input` cannot set `key` to `v`.
fn case_builder(
    kind: Kind,
    input: Input,
    key: &str,
    v: Value,
) -> Option<Result<PoolBuilder, SqlMiddlewareDbError>> {
    match input {
        Input::Builder => Some(Ok(set(kind.base_builder(), key, v))),
        Input::Url => {
            let value = v.url()?;
            Some(ConfigAndPool::from_url(&with_param(
                &kind.base_url(),
                key,
                &value,
            )))
        }
        #[cfg(feature = "serde")]
        Input::Serde => {
            let field = match key {
                "wait_timeout" | "create_timeout" | "recycle_timeout" | "statement_timeout" => {
                    format!("{key}_ms")
                }
                "max_size" | "statement_cache_capacity" => key.to_owned(),
                _ => return None,
            };
            let number = match v {
                Value::D(d) => u64::try_from(d.as_millis()).ok()?,
                Value::N(n) => u64::try_from(n).ok()?,
            };
            let json = format!(
                "{{\"url\": {}, \"{field}\": {number}}}",
                serde_json::Value::from(kind.base_url())
            );
            let cfg: sql_middleware::Config = serde_json::from_str(&json).ok()?;
            Some(cfg.builder())
        }
    }
}

/// What a case did wrong, if anything: a panic, an `Other` error (a panic on a blocking thread
/// or in a task), or a build error that is not `Config` or does not name the setting.
async fn run_case(b: Result<PoolBuilder, SqlMiddlewareDbError>, key: &str) -> Option<String> {
    let db = match b {
        Ok(b) => b.build().await,
        Err(e) => Err(e),
    };
    let db = match db {
        Ok(db) => db,
        Err(e) if e.kind() == ErrorKind::Config && e.to_string().contains(key) => return None,
        Err(e) => return Some(format!("build failed without naming `{key}`: {e}")),
    };
    let r = tokio::time::timeout(Duration::from_secs(20), async {
        let mut c = db.get_connection().await?;
        let one: (i64,) = c.query("SELECT 1").one().await?;
        Ok::<_, SqlMiddlewareDbError>(one.0)
    })
    .await;
    db.close();
    match r {
        Err(_) => Some("a checkout and SELECT 1 took over 20 s".to_owned()),
        Ok(Err(e)) if e.kind() == ErrorKind::Other => Some(format!("Other error: {e}")),
        // A 1 ms create timeout or statement limit may fail the checkout or the statement:
        // that is the setting doing its job.
        Ok(_) => None,
    }
}

/// Runs one case on a runtime of its own, catching a panic anywhere in it.
fn guarded(kind: Kind, input: Input, key: &str, v: Value) -> Option<Result<(), String>> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let out = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let b = case_builder(kind, input, key, v)?;
        Some(rt.block_on(run_case(b, key)))
    }));
    rt.shutdown_timeout(Duration::from_secs(5));
    match out {
        Ok(None) => None,
        Ok(Some(None)) => Some(Ok(())),
        Ok(Some(Some(why))) => Some(Err(why)),
        Err(p) => Some(Err(format!(
            "panicked: {}",
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default()
        ))),
    }
}

fn inputs() -> Vec<Input> {
    vec![
        Input::Builder,
        Input::Url,
        #[cfg(feature = "serde")]
        Input::Serde,
    ]
}

#[test]
fn extreme_values_are_config_errors_never_panics() {
    let _group = common::groups::enter("config");
    let (mut cases, mut bad) = (0, Vec::new());
    for kind in Kind::built() {
        for input in inputs() {
            let values = DURATION_SETTINGS
                .iter()
                .filter(|k| **k != "busy_timeout" || !matches!(kind, Kind::Postgres | Kind::Mysql))
                .flat_map(|k| durations().into_iter().map(move |d| (*k, Value::D(d))))
                .chain(
                    COUNT_SETTINGS
                        .iter()
                        .flat_map(|k| COUNTS.iter().map(move |n| (*k, Value::N(*n)))),
                );
            for (key, v) in values {
                match guarded(kind, input, key, v) {
                    None => {}
                    Some(Ok(())) => cases += 1,
                    Some(Err(why)) => {
                        cases += 1;
                        bad.push(format!("{} {input:?} {key}={v:?}: {why}", kind.name()));
                    }
                }
            }
        }
    }
    println!("config_extremes cases={cases} wrong={}", bad.len());
    assert!(
        bad.is_empty(),
        "{} of {cases} cases:\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// A Postgres `key=value` string with the driver's own numeric settings at their edges.
#[cfg(feature = "postgres")]
#[test]
fn key_value_strings_at_the_edges() {
    let _group = common::groups::enter("config");
    let mut bad = Vec::new();
    let values = [
        "0",
        "-1",
        "2147483648",
        "9223372036854775807",
        "99999999999999999999",
    ];
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    for key in [
        "connect_timeout",
        "keepalives_idle",
        "keepalives_interval",
        "tcp_user_timeout",
        "keepalives_retries",
        "port",
    ] {
        for v in values {
            let s = format!("host=127.0.0.1 port=1 user=app dbname=db {key}={v}");
            let out = std::panic::catch_unwind(AssertUnwindSafe(|| {
                rt.block_on(async {
                    match ConfigAndPool::postgres(&s).build().await {
                        Ok(db) => {
                            db.close();
                            Ok(())
                        }
                        Err(e) if e.kind() == ErrorKind::Config => Ok(()),
                        Err(e) => Err(format!("{e}")),
                    }
                })
            }));
            match out {
                Ok(Ok(())) => {}
                Ok(Err(e)) => bad.push(format!("{key}={v}: {e}")),
                Err(_) => bad.push(format!("{key}={v}: panicked")),
            }
        }
    }
    println!("config_key_value cases=36 wrong={}", bad.len());
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The one duration rule: a unit, or bare seconds, for the pool's settings and the driver's
/// (`connect_timeout`) alike.
#[test]
fn one_duration_rule_for_the_whole_url() {
    let _group = common::groups::enter("config");
    let mut wrong = Vec::new();
    let mut check = |url: &str, want: &str| match ConfigAndPool::from_url(url) {
        Ok(b) if format!("{b:?}").contains(want) => {}
        Ok(b) => wrong.push(format!("{url}: no `{want}` in {b:?}")),
        Err(e) => wrong.push(format!("{url}: {e}")),
    };
    #[cfg(feature = "sqlite")]
    {
        check("sqlite::memory:?wait_timeout=5", "wait_timeout: 5s");
        check("sqlite::memory:?wait_timeout=250ms", "wait_timeout: 250ms");
        check("sqlite::memory:?busy_timeout=2", "busy_timeout: 2s");
        check(
            "sqlite::memory:?max_lifetime=1h",
            "max_lifetime: Some(3600s)",
        );
    }
    #[cfg(feature = "postgres")]
    {
        check(
            "postgres://app@h/db?connect_timeout=5&wait_timeout=5",
            "connect_timeout: Some(5s)",
        );
        check(
            "postgres://app@h/db?connect_timeout=5&wait_timeout=5",
            "wait_timeout: 5s",
        );
        check(
            "postgres://app@h/db?connect_timeout=250ms",
            "connect_timeout: Some(250ms)",
        );
        check(
            "postgres://app@h/db?keepalives_idle=2m",
            "keepalives_idle: 120s",
        );
    }
    println!("config_duration_rule wrong={}", wrong.len());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Characters a generated file name draws from: unreserved, sub-delimiters (legal raw in a
/// path), and some that must be escaped.
const NAME_CHARS: &[char] = &[
    'a', 'Z', '0', '-', '_', '.', '~', '+', '!', '$', '\'', '(', ')', '*', ',', ';', '=', '@', ' ',
    '%', '#', '&', 'é', '€',
];

/// The sub-delimiters and unreserved characters a URL may carry raw in its path.
fn raw_ok(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-_.~+!$'()*,;=@".contains(c)
}

#[cfg(feature = "sqlite")]
#[test]
fn sqlite_paths_are_percent_decoded_as_rfc_3986_says() {
    let _group = common::groups::enter("config");
    let (mut rng, seed) = {
        let seed = common::reliability::seed_for("config/sqlite_paths");
        (common::reliability::Rng::new(seed), seed)
    };
    let dir = TempDir::new("cfg_paths");
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let cases = common::reliability::knob_usize("RELIABILITY_PROP_CASES", 4000) / 40;
    let mut wrong = Vec::new();
    for i in 0..cases {
        let len = 1 + rng.below(10) as usize;
        let mut name = format!("f{i}_");
        let mut url_name = name.clone();
        for _ in 0..len {
            let c = NAME_CHARS[rng.below(NAME_CHARS.len() as u64) as usize];
            name.push(c);
            if raw_ok(c) && rng.chance(0.5) {
                url_name.push(c);
            } else {
                url_name.push_str(&common::pg::percent_encode(&c.to_string()));
            }
        }
        let url = format!(
            "sqlite://{}/{url_name}",
            common::pg::percent_encode(&dir.path().display().to_string()).replace("%2F", "/")
        );
        let opened = rt.block_on(async {
            let db = ConfigAndPool::from_url(&url)?.max_size(1).build().await?;
            let mut c = db.get_connection().await?;
            c.execute_batch("CREATE TABLE t (a INTEGER)").await?;
            drop(c);
            db.close();
            Ok::<_, SqlMiddlewareDbError>(())
        });
        match opened {
            Err(e) => wrong.push(format!("{url}: {e}")),
            Ok(()) if !dir.path().join(&name).exists() => {
                wrong.push(format!("{url} did not open the file {name:?}"))
            }
            Ok(()) => {}
        }
    }
    // A bad escape is an error, never another file.
    for bad in ["%zz", "%+1", "%00", "%C3%28", "%4"] {
        if ConfigAndPool::from_url(&format!("sqlite://x{bad}.db")).is_ok() {
            wrong.push(format!("sqlite://x{bad}.db was accepted"));
        }
    }
    println!(
        "config_sqlite_paths seed={seed} cases={cases} wrong={}",
        wrong.len()
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
