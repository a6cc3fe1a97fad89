//! The fuzz harnesses, shared by the `cargo fuzz` targets in `fuzz/` (included there with
//! `#[path]`) and by `tests/reliability/props.rs`, which drives the same functions with
//! proptest on stable Rust in CI. Only the public API of `sql_middleware` and std are used.
//!
//! - [`translation_case`]: placeholder translation of arbitrary text never panics, keeps the
//!   length, changes only sigil bytes (`$` ↔ `?`), is idempotent, and — for text both engines
//!   read alike (see [`portable`]) — round-trips `$N → ?N → $N`.
//! - [`value_case_pure`] / [`value_case_sqlite`]: a value decoded from the fuzz bytes survives
//!   `RowValues → ValueRef → RowValues`, typed decoding of every Rust type never panics, and a
//!   round trip through a SQLite column of its type gives the same value back (or the bind is
//!   refused with `ParameterType`, as for NaN).
#![allow(dead_code)]

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use rust_decimal::Decimal;
use sql_middleware::prelude::*;
use sql_middleware::translation::{PlaceholderStyle, translate_placeholders};
use sql_middleware::{ErrorKind, FromValue};

/// Checks the translation invariants on `data` (as UTF-8, lossily). Panics on a violation.
pub fn translation_case(data: &[u8]) {
    let s = String::from_utf8_lossy(data);
    for (style, from, to) in [
        (PlaceholderStyle::Sqlite, b'$', b'?'),
        (PlaceholderStyle::Postgres, b'?', b'$'),
    ] {
        let out = translate_placeholders(&s, style);
        assert_eq!(out.len(), s.len(), "length changed for {s:?} ({style:?})");
        for (i, (a, b)) in s.bytes().zip(out.bytes()).enumerate() {
            assert!(
                a == b || (a == from && b == to),
                "byte {i} changed from {:?} to {:?} in {s:?} ({style:?}) -> {out:?}",
                a as char,
                b as char
            );
        }
        let again = translate_placeholders(&out, style);
        assert_eq!(again, out, "not idempotent on {s:?} ({style:?})");
    }
    if portable(&s) {
        let there = translate_placeholders(&s, PlaceholderStyle::Sqlite);
        let back = translate_placeholders(&there, PlaceholderStyle::Postgres);
        assert_eq!(back, s, "$N -> ?N -> $N changed {s:?} (via {there:?})");
    }
}

/// True when SQLite and PostgreSQL read `s` alike, so `$N → ?N → $N` must give it back: no `?`
/// at all, and none of the forms only one engine has: `[identifiers]` (SQLite; a subscript in
/// PostgreSQL), `E'…'` strings and `$$`/`$tag$` quotes (PostgreSQL), and no second `/*`
/// (PostgreSQL's comments nest, SQLite's do not).
fn portable(s: &str) -> bool {
    let b = s.as_bytes();
    let dollar_quote = b
        .iter()
        .enumerate()
        .any(|(i, &c)| c == b'$' && b.get(i + 1).is_some_and(|n| !n.is_ascii_digit()));
    !s.contains('?')
        && !s.contains('[')
        && !s.contains("E'")
        && !s.contains("e'")
        && !dollar_quote
        && s.matches("/*").count() <= 1
}

/// A little reader over the fuzz bytes.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((b, rest)) => {
                self.0 = rest;
                *b
            }
            None => 0,
        }
    }
    fn u64(&mut self) -> u64 {
        (0..8).fold(0, |acc, _| (acc << 8) | u64::from(self.u8()))
    }
    fn i64(&mut self) -> i64 {
        self.u64() as i64
    }
    fn bytes(&mut self) -> Vec<u8> {
        let n = usize::from(self.u8()) % 64;
        let n = n.min(self.0.len());
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        head.to_vec()
    }
    fn text(&mut self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }
}

fn json(b: &mut Bytes<'_>, depth: u8) -> serde_json::Value {
    use serde_json::Value as J;
    match b.u8() % if depth > 2 { 5 } else { 7 } {
        0 => J::Null,
        1 => J::Bool(b.u8() % 2 == 0),
        2 => J::from(b.i64()),
        3 => serde_json::Number::from_f64(f64::from_bits(b.u64()))
            .map(J::Number)
            .unwrap_or(J::Null),
        4 => J::String(b.text()),
        5 => J::Array((0..b.u8() % 4).map(|_| json(b, depth + 1)).collect()),
        _ => J::Object(
            (0..b.u8() % 4)
                .map(|_| (b.text(), json(b, depth + 1)))
                .collect(),
        ),
    }
}

/// Decodes one value (every `RowValues` kind, with edge values) from the fuzz bytes.
pub fn value_from_bytes(data: &[u8]) -> RowValues {
    let mut b = Bytes(data);
    match b.u8() % 15 {
        0 => RowValues::Null,
        1 => RowValues::Int(b.i64()),
        2 => RowValues::Float(f64::from_bits(b.u64())),
        3 => RowValues::Text(b.text()),
        4 => RowValues::Bool(b.u8() % 2 == 1),
        5 => {
            let secs = b.i64() % 8_000_000_000_000;
            let nanos = (b.u64() % 1_000_000_000) as u32;
            DateTime::from_timestamp(secs, nanos)
                .map(|t| RowValues::Timestamp(t.naive_utc()))
                .unwrap_or(RowValues::Null)
        }
        6 => {
            let secs = b.i64() % 8_000_000_000_000;
            let nanos = (b.u64() % 1_000_000_000) as u32;
            DateTime::<Utc>::from_timestamp(secs, nanos)
                .map(RowValues::TimestampTz)
                .unwrap_or(RowValues::Null)
        }
        7 => NaiveDate::from_num_days_from_ce_opt((b.i64() % 100_000_000) as i32)
            .map(RowValues::Date)
            .unwrap_or(RowValues::Null),
        8 => RowValues::Uuid(uuid::Uuid::from_u64_pair(b.u64(), b.u64())),
        9 => {
            let hi = i128::from(b.i64());
            let lo = i128::from(b.u64());
            let m = ((hi << 32) ^ lo) % 79_228_162_514_264_337_593_543_950_335;
            let scale = u32::from(b.u8()) % 29;
            RowValues::Numeric(Decimal::from_i128_with_scale(m, scale))
        }
        10 => RowValues::Blob(b.bytes()),
        11 => RowValues::JSON(json(&mut b, 0)),
        12 => chrono::NaiveTime::from_num_seconds_from_midnight_opt(
            (b.u64() % 86_400) as u32,
            (b.u64() % 1_000_000) as u32 * 1000,
        )
        .map(RowValues::Time)
        .unwrap_or(RowValues::Null),
        13 => RowValues::Interval(sql_middleware::Interval {
            months: b.i64() as i32,
            days: b.i64() as i32,
            microseconds: b.i64(),
        }),
        // Arrays of the element kinds that round-trip exactly through SQLite's JSON text.
        _ => RowValues::Array(
            (0..b.u8() % 5)
                .map(|_| match b.u8() % 5 {
                    0 => RowValues::Null,
                    1 => RowValues::Int(b.i64()),
                    2 => {
                        let f = f64::from_bits(b.u64());
                        if f.is_finite() {
                            RowValues::Float(f)
                        } else {
                            RowValues::Null
                        }
                    }
                    3 => RowValues::Text(b.text()),
                    _ => RowValues::Bool(b.u8() % 2 == 1),
                })
                .collect(),
        ),
    }
}

/// Same value, with floats compared bit for bit (NaN equals NaN, -0.0 differs from 0.0).
pub fn same(a: &RowValues, b: &RowValues) -> bool {
    match (a, b) {
        (RowValues::Float(x), RowValues::Float(y)) => x.to_bits() == y.to_bits(),
        _ => a == b,
    }
}

/// Pure conversions: borrowed view and back, and typed decoding into every Rust type the
/// crate supports (no panic; the matching type gives the value back).
pub fn value_case_pure(data: &[u8]) {
    let v = value_from_bytes(data);
    let back = v.as_value_ref().to_owned_value();
    assert!(same(&v, &back), "{v:?} -> ValueRef -> {back:?}");
    // Every decoder runs; none may panic.
    let _ = dec::<i64>(&v);
    let _ = dec::<i32>(&v);
    let _ = dec::<i16>(&v);
    let _ = dec::<i8>(&v);
    let _ = dec::<u8>(&v);
    let _ = dec::<f64>(&v);
    let _ = dec::<f32>(&v);
    let _ = dec::<bool>(&v);
    let _ = dec::<String>(&v);
    let _ = dec::<Vec<u8>>(&v);
    let _ = dec::<NaiveDateTime>(&v);
    let _ = dec::<DateTime<Utc>>(&v);
    let _ = dec::<NaiveDate>(&v);
    let _ = dec::<uuid::Uuid>(&v);
    let _ = dec::<Decimal>(&v);
    let _ = dec::<serde_json::Value>(&v);
    let _ = dec::<Option<i64>>(&v);
    let _ = dec::<chrono::NaiveTime>(&v);
    let _ = dec::<sql_middleware::Interval>(&v);
    let _ = dec::<Vec<i64>>(&v);
    let _ = dec::<Vec<Option<String>>>(&v);
    let _ = dec::<Vec<RowValues>>(&v);
    let got = dec::<RowValues>(&v).expect("RowValues decodes anything");
    assert!(same(&v, &got), "{v:?} decoded as RowValues gives {got:?}");
    match &v {
        RowValues::Int(i) => assert_eq!(dec::<i64>(&v), Some(*i)),
        RowValues::Text(t) => assert_eq!(dec::<String>(&v).as_ref(), Some(t)),
        RowValues::Bool(x) => assert_eq!(dec::<bool>(&v), Some(*x)),
        RowValues::Blob(x) => assert_eq!(dec::<Vec<u8>>(&v).as_ref(), Some(x)),
        RowValues::Uuid(u) => assert_eq!(dec::<uuid::Uuid>(&v), Some(*u)),
        RowValues::Numeric(d) => assert_eq!(dec::<Decimal>(&v), Some(*d)),
        RowValues::Date(d) => assert_eq!(dec::<NaiveDate>(&v), Some(*d)),
        RowValues::Timestamp(t) => assert_eq!(dec::<NaiveDateTime>(&v), Some(*t)),
        RowValues::TimestampTz(t) => assert_eq!(dec::<DateTime<Utc>>(&v), Some(*t)),
        RowValues::JSON(j) => assert_eq!(dec::<serde_json::Value>(&v).as_ref(), Some(j)),
        RowValues::Time(t) => assert_eq!(dec::<chrono::NaiveTime>(&v), Some(*t)),
        RowValues::Interval(i) => assert_eq!(dec::<sql_middleware::Interval>(&v), Some(*i)),
        RowValues::Array(a) => assert_eq!(dec::<Vec<RowValues>>(&v).as_ref(), Some(a)),
        _ => {}
    }
}

fn dec<T: FromValue>(v: &RowValues) -> Option<T> {
    T::from_value(v.as_value_ref()).ok()
}

/// The SQLite schema [`value_case_sqlite`] writes to: one column per kind, declared with the
/// type the crate documents for it.
pub const VALUE_TABLE: &str = "CREATE TABLE IF NOT EXISTS fz (
    k INTEGER PRIMARY KEY,
    i INTEGER, f REAL, t TEXT, bo BOOLEAN, ts TIMESTAMP, tz TIMESTAMPTZ, d DATE,
    u UUID, n DECIMAL_TEXT, b BLOB, j JSON, tm TIME, iv INTERVAL, ar ARRAY)";

fn column_of(v: &RowValues) -> &'static str {
    match v {
        RowValues::Null | RowValues::Int(_) => "i",
        RowValues::Float(_) => "f",
        RowValues::Text(_) => "t",
        RowValues::Bool(_) => "bo",
        RowValues::Timestamp(_) => "ts",
        RowValues::TimestampTz(_) => "tz",
        RowValues::Date(_) => "d",
        RowValues::Uuid(_) => "u",
        RowValues::Numeric(_) => "n",
        RowValues::Blob(_) => "b",
        RowValues::JSON(_) => "j",
        RowValues::Time(_) => "tm",
        RowValues::Interval(_) => "iv",
        RowValues::Array(_) => "ar",
        // Kinds added later are stored as text until the table has a column for them.
        _ => "t",
    }
}

/// Writes the value into its column and reads it back through the middleware. `Err` with a
/// description when the value did not survive.
pub async fn value_case_sqlite(
    conn: &mut MiddlewarePoolConnection,
    key: i64,
    data: &[u8],
) -> Result<(), String> {
    let v = value_from_bytes(data);
    let col = column_of(&v);
    let insert = format!("INSERT INTO fz (k, {col}) VALUES ($1, $2)");
    match conn
        .query(&insert)
        .params(&[key.into(), v.clone()])
        .dml()
        .await
    {
        Ok(1) => {}
        Err(e) if e.kind() == ErrorKind::ParameterType => {
            return match &v {
                RowValues::Float(f) if f.is_nan() => Ok(()),
                _ => Err(format!("bind of {v:?} refused: {e}")),
            };
        }
        other => return Err(format!("insert of {v:?}: {other:?}")),
    }
    let select = format!("SELECT {col} AS v FROM fz WHERE k = $1");
    let rs = conn
        .query(&select)
        .params(&[key.into()])
        .select()
        .await
        .map_err(|e| format!("read back of {v:?}: {e}"))?;
    let got = rs.results[0].get("v").cloned();
    let ok = match (&v, &got) {
        (_, Some(g)) if same(&v, g) => true,
        // SQLite keeps -0.0 in a REAL column as the integer 0: it reads back as 0.0.
        (RowValues::Float(x), Some(RowValues::Float(y))) => *x == 0.0 && *y == 0.0,
        // A JSON column has numeric affinity: an integral float (1.0) comes back as the
        // integer (1) — the same number, in another serde_json representation.
        (
            RowValues::JSON(serde_json::Value::Number(a)),
            Some(RowValues::JSON(serde_json::Value::Number(b))),
        ) => a.as_f64() == b.as_f64(),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{v:?} written to a {col} column reads back as {got:?}"
        ))
    }
}

/// The password and key passphrase the configuration cases plant in their inputs: no output,
/// error, `Debug` or source chain may repeat them.
pub const SECRETS: [&str; 2] = ["Pw-9f3e1c7a", "Kp-51b0d2e8"];

/// URL beginnings for [`config_url`], every backend and a few broken ones. `{pw}` and `{kp}`
/// stand for the two [`SECRETS`].
const URL_HEADS: [&str; 14] = [
    "sqlite::memory:",
    "sqlite://:memory:",
    "turso::memory:",
    "postgres://app:{pw}@127.0.0.1:1/db",
    "postgresql://app:{pw}@127.0.0.1:1/db",
    "postgres://app:{pw}@[::1:1/db",
    "postgres://app:{pw}@h:99999/db",
    "postgres://app:{pw}@h:port/db",
    "postgres://app:{pw}%zz@h/db",
    "postgres://app@h/db?password={pw}&sslpassword={kp}",
    "postgres://:{pw}@/db?host=/nonexistent",
    "host=127.0.0.1 port=1 user=app password={pw} sslpassword={kp}",
    "mysql://app:{pw}@h/db",
    "app:{pw}@h/db",
];

/// Keys for [`config_url`]: every setting the URLs know, the secret-bearing ones, and junk.
const URL_KEYS: [&str; 32] = [
    "max_size",
    "min_idle",
    "wait_timeout",
    "create_timeout",
    "recycle_timeout",
    "max_lifetime",
    "idle_timeout",
    "statement_timeout",
    "statement_cache_capacity",
    "translation",
    "busy_timeout",
    "wal",
    "foreign_keys",
    "exec_model",
    "test_before_acquire",
    "statement_cache",
    "sslmode",
    "sslrootcert",
    "sslcert",
    "sslkey",
    "connect_timeout",
    "keepalives_idle",
    "keepalives_interval",
    "tcp_user_timeout",
    "keepalives_retries",
    "port",
    "host",
    "password",
    "sslpassword",
    "application_name",
    "options",
    "passw%6Frd",
];

/// Values for [`config_url`]: the edges of every range, malformed forms and escapes, secrets.
const URL_VALUES: [&str; 36] = [
    "0",
    "1",
    "5",
    "-1",
    "250ms",
    "2m",
    "1h",
    "2147483647ms",
    "2147483648ms",
    "2147483647",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999s",
    "18446744073709551615m",
    "10000",
    "10001",
    "1.5s",
    "5 s",
    "s",
    "",
    "on",
    "maybe",
    "%",
    "%zz",
    "%+1",
    "%00",
    "%C3%28",
    "a+b",
    "verify-full",
    "require",
    "disable",
    "system",
    "/nonexistent/key.pem",
    "x%26y%3Dz",
    "'quoted value'",
    "a%20b",
];

/// A database URL built from the fuzz bytes: a head, then `key=value` parameters from the
/// lists above or raw bytes, with the [`SECRETS`] planted in it.
pub fn config_url(data: &[u8]) -> String {
    let mut b = Bytes(data);
    let mut url = URL_HEADS[usize::from(b.u8()) % URL_HEADS.len()].to_owned();
    let n = b.u8() % 6;
    for i in 0..n {
        let sep = if url.starts_with("host=") {
            " "
        } else if i == 0 && !url.contains('?') {
            "?"
        } else {
            "&"
        };
        url.push_str(sep);
        let k = b.u8();
        let v = b.u8();
        if k == 255 {
            // Raw bytes instead of a listed key.
            let len = usize::from(v % 8);
            let raw: Vec<u8> = (0..len).map(|_| b.u8()).collect();
            url.push_str(&String::from_utf8_lossy(&raw));
            continue;
        }
        let key = URL_KEYS[usize::from(k) % URL_KEYS.len()];
        url.push_str(key);
        url.push('=');
        // A secret only where it is one: a password and a key passphrase (the URL's own
        // `password`, or the key passphrase libpq calls `sslpassword`).
        url.push_str(match key {
            "password" | "passw%6Frd" if v % 2 == 0 => "{pw}",
            "sslpassword" if v % 2 == 0 => "{kp}",
            _ => URL_VALUES[usize::from(v) % URL_VALUES.len()],
        });
    }
    // Whatever bytes are left, as a tail.
    url.push_str(&String::from_utf8_lossy(b.0));
    url.replace("{pw}", SECRETS[0]).replace("{kp}", SECRETS[1])
}

/// Panics when `text` holds a secret.
fn assert_no_secret(what: &str, text: &str) {
    for s in SECRETS {
        assert!(!text.contains(s), "{what} shows a secret: {text}");
    }
}

/// Checks an error: a `Config` error (when `config` says so) whose `Display` and `Debug`, and
/// those of every error in its source chain, hold no secret.
pub fn check_error(what: &str, e: &SqlMiddlewareDbError, config: bool) {
    if config {
        assert_eq!(
            e.kind(),
            ErrorKind::Config,
            "{what}: not a Config error: {e:?}"
        );
    }
    assert_no_secret(what, &e.to_string());
    assert_no_secret(what, &format!("{e:?}"));
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        assert_no_secret(what, &s.to_string());
        assert_no_secret(what, &format!("{s:?}"));
        src = s.source();
    }
}

/// Checks a builder from any configuration input: its `Debug` shows no secret, and building it
/// (in memory, or a Postgres pool that connects lazily) never panics and fails only with a
/// `Config` error without secrets. `connect_on_build` is not built on Postgres (it would wait
/// for the unreachable server).
pub fn check_builder(what: &str, url: &str, r: Result<PoolBuilder, SqlMiddlewareDbError>) {
    let b = match r {
        Err(e) => return check_error(what, &e, true),
        Ok(b) => b,
    };
    assert_no_secret(what, &format!("{b:?}"));
    // Only a private in-memory database (a file named by a fuzzed path is never created).
    let body = url.split('?').next().unwrap_or("");
    let in_memory = matches!(
        body,
        "sqlite::memory:" | "sqlite://:memory:" | "turso::memory:" | "turso://:memory:"
    );
    let lazy = (url.starts_with("postgres") || url.starts_with("host="))
        && !url.contains("connect_on_build");
    if !(in_memory || lazy) {
        return;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        match b.build().await {
            Ok(db) => {
                assert_no_secret(what, &format!("{db:?}"));
                db.close();
            }
            Err(e) => check_error(what, &e, true),
        }
    });
}

/// One configuration case: `from_url` and the serde `Config` on inputs from the fuzz bytes
/// never panic, and nothing they return (builder, pool, error, `Debug`, source chain) shows a
/// planted secret. (`from_env` reads the process environment: see [`env_case`].)
pub fn config_case(data: &[u8]) {
    let url = config_url(data);
    check_builder("from_url", &url, ConfigAndPool::from_url(&url));
    // The Postgres entry point also takes `key=value` strings (errors surface at build).
    #[cfg(feature = "postgres")]
    check_builder("postgres()", &url, Ok(ConfigAndPool::postgres(&url)));
    #[cfg(feature = "serde")]
    serde_case(data, &url);
}

/// The serde `Config` with `url` and numeric fields from the fuzz bytes (the edges of `u64`
/// and `usize` included), from JSON; and the fuzz bytes themselves as JSON.
#[cfg(feature = "serde")]
fn serde_case(data: &[u8], url: &str) {
    const NUMBERS: [u64; 8] = [
        0,
        1,
        250,
        10_000,
        10_001,
        2_147_483_647,
        2_147_483_648,
        u64::MAX,
    ];
    let mut b = Bytes(data);
    let mut fields = vec![format!("\"url\": {}", serde_json::Value::from(url))];
    for name in [
        "max_size",
        "wait_timeout_ms",
        "create_timeout_ms",
        "recycle_timeout_ms",
        "statement_cache_capacity",
        "statement_timeout_ms",
    ] {
        let pick = b.u8();
        if pick % 3 != 0 {
            fields.push(format!(
                "\"{name}\": {}",
                NUMBERS[usize::from(pick) % NUMBERS.len()]
            ));
        }
    }
    let json = format!("{{{}}}", fields.join(", "));
    for text in [json.as_str(), &String::from_utf8_lossy(data)] {
        if let Ok(cfg) = serde_json::from_str::<sql_middleware::Config>(text) {
            assert_no_secret("Config Debug", &format!("{cfg:?}"));
            check_builder("Config::builder", &cfg.url, cfg.builder());
        }
    }
}

/// `from_env` on the `DATABASE_URL` the caller set (to a [`config_url`]): the same checks as
/// `from_url`; unset or blank, a `Config` error that says how to set it.
pub fn env_case() {
    let url = std::env::var("DATABASE_URL").unwrap_or_default();
    check_builder("from_env", &url, ConfigAndPool::from_env());
}
