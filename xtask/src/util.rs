//! Small helpers every module may use: the error type and `bail!`, reading and writing files
//! (JSON included), dates without a date crate, number formatting, repository paths.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Deserialize;

/// The error of every xtask command: a message for a human, printed as is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

/// Shorthand for `Err(Error(format!(..)))`.
#[macro_export]
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::util::Error(format!($($arg)*)))
    };
}

/// Result of every xtask command.
pub type Result<T> = std::result::Result<T, Error>;

/// Reads a file into a string, with the path in the error.
pub fn read_to_string(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| Error(format!("cannot read {}: {e}", path.display())))
}

/// Writes a file, creating its folder, with the path in the error.
pub fn write(path: &Path, contents: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error(format!("cannot create {}: {e}", dir.display())))?;
    }
    std::fs::write(path, contents)
        .map_err(|e| Error(format!("cannot write {}: {e}", path.display())))
}

/// Reads a JSON file if it exists; a file that exists but does not parse is an error.
pub fn read_optional_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<Option<T>> {
    if !path.exists() {
        return Ok(None);
    }
    let text = read_to_string(path)?;
    serde_json::from_str(&text)
        .map(Some)
        .map_err(|e| Error(format!("{}: invalid: {e}", path.display())))
}

/// The civil date (year, month, day) of a count of days since 1970-01-01
/// (Howard Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Seconds since the epoch, now.
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// `YYYY-MM-DD` (UTC) of a Unix time.
pub fn date_of(unix: i64) -> String {
    let (y, m, d) = civil_from_days(unix.div_euclid(86_400));
    format!("{y:04}-{m:02}-{d:02}")
}

/// `YYYY-MM-DD HH:MM UTC` of a Unix time.
pub fn datetime_of(unix: i64) -> String {
    let secs = unix.rem_euclid(86_400);
    format!(
        "{} {:02}:{:02} UTC",
        date_of(unix),
        secs / 3600,
        (secs % 3600) / 60
    )
}

/// Today's date, UTC.
pub fn today() -> String {
    date_of(unix_now())
}

/// A duration in nanoseconds with a unit that keeps 3–4 significant digits.
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "—".into();
    }
    let a = ns.abs();
    if a >= 1e9 {
        format!("{:.3} s", ns / 1e9)
    } else if a >= 1e6 {
        format!("{:.3} ms", ns / 1e6)
    } else if a >= 1e4 {
        format!("{:.1} µs", ns / 1e3)
    } else if a >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else if a >= 100.0 {
        format!("{ns:.0} ns")
    } else {
        format!("{ns:.1} ns")
    }
}

/// A ratio such as `1.23×`.
pub fn fmt_ratio(r: f64) -> String {
    if !r.is_finite() {
        "—".into()
    } else if r >= 10.0 {
        format!("{r:.1}×")
    } else if r >= 0.1 {
        format!("{r:.2}×")
    } else {
        format!("{r:.3}×")
    }
}

/// A signed percentage such as `+12.3%`.
pub fn fmt_pct(fraction: f64) -> String {
    if fraction.is_finite() {
        format!("{:+.1}%", fraction * 100.0)
    } else {
        "—".into()
    }
}

/// The repository root: the parent of this crate's manifest folder.
pub fn repo_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent()
        .map_or_else(|| here.to_path_buf(), Path::to_path_buf)
}

/// CRITERION_HOME: `$CRITERION_HOME` (a relative path is taken from the repository root), else
/// `<repo>/bench_results`.
pub fn criterion_home(root: &Path) -> PathBuf {
    let p = match std::env::var_os("CRITERION_HOME") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => root.join("bench_results"),
    };
    // Relative to the repository root, as the benches resolve it (sql_middleware_bench::dataset).
    root.join(p)
}

/// A relative link from the folder `from` to the file `to` (both under one root), with `/`.
pub fn rel_link(from: &Path, to: &Path) -> String {
    let from: Vec<_> = from.components().collect();
    let to_c: Vec<_> = to.components().collect();
    let common = from.iter().zip(&to_c).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<String> = vec!["..".into(); from.len() - common];
    parts.extend(
        to_c[common..]
            .iter()
            .map(|c| c.as_os_str().to_string_lossy().into_owned()),
    );
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(951_782_400), "2000-02-29");
        assert_eq!(date_of(1_795_305_600), "2026-11-22");
        assert_eq!(datetime_of(1_795_305_600 + 3_723), "2026-11-22 01:02 UTC");
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_ns(2_481.0), "2.48 µs");
        assert_eq!(fmt_ns(25_371.0), "25.4 µs");
        assert_eq!(fmt_ns(512.4), "512 ns");
        assert_eq!(fmt_ns(8_651_911.9), "8.652 ms");
        assert_eq!(fmt_pct(0.123), "+12.3%");
        assert_eq!(fmt_ratio(f64::NAN), "—");
    }

    #[test]
    fn links() {
        assert_eq!(
            rel_link(Path::new("/r/b/micro"), Path::new("/r/b/x.svg")),
            "../x.svg"
        );
        assert_eq!(
            rel_link(Path::new("/r/b"), Path::new("/r/b/x.svg")),
            "x.svg"
        );
    }
}
