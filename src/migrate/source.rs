//! Where migrations come from and how their files are named: `<version>_<name>.sql`, with an
//! optional engine suffix (`0003_x.postgres.sql`, which wins over `0003_x.sql` on its engine)
//! and an optional down file (`0003_x.down.sql`, or `0003_x.postgres.down.sql`). The files are
//! read from a folder at run time, or given as `(file name, text)` pairs embedded at compile
//! time.

use std::collections::BTreeMap;
use std::path::Path;

use super::checksum::checksum;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// The directive that runs a migration outside a transaction, on a comment line of its own
/// before its first statement.
pub const NO_TRANSACTION: &str = "-- sql-middleware: no-transaction";

/// One migration file, as named.
#[derive(Debug, Clone)]
pub(crate) struct SourceFile {
    pub(crate) version: i64,
    pub(crate) name: String,
    pub(crate) engine: Option<String>,
    pub(crate) down: bool,
    pub(crate) file_name: String,
    pub(crate) text: String,
}

/// One migration as one engine runs it: the file that wins for the engine, and its down file.
#[derive(Debug, Clone)]
pub(crate) struct Migration {
    pub(crate) version: i64,
    pub(crate) name: String,
    pub(crate) file_name: String,
    pub(crate) up: String,
    pub(crate) checksum: String,
    pub(crate) no_transaction: bool,
    pub(crate) down: Option<(String, String)>,
}

fn bad_name(file: &str, why: &str) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::InvalidInput,
        format!("migration file {file}: {why} (expected <version>_<name>[.<engine>][.down].sql)"),
    )
}

/// What a file name says: version, name, engine suffix, and whether it is a down file.
type Parsed = (i64, String, Option<String>, bool);

/// Parses a file name; `Ok(None)` for a name that does not end in `.sql` (not a migration).
pub(crate) fn parse_name(file: &str) -> Result<Option<Parsed>> {
    let Some(stem) = file.strip_suffix(".sql") else {
        return Ok(None);
    };
    let (stem, down) = match stem.strip_suffix(".down") {
        Some(s) => (s, true),
        None => (stem, false),
    };
    let (base, engine) = match stem.split_once('.') {
        Some((b, e)) => (b, Some(e)),
        None => (stem, None),
    };
    let bad_suffix = engine.is_some_and(|e| {
        e.is_empty()
            || !e
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    });
    if bad_suffix {
        return Err(bad_name(file, "the engine suffix is not a lower-case word"));
    }
    let digits = base.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(bad_name(file, "it does not start with a version number"));
    }
    let version: i64 = base[..digits]
        .parse()
        .map_err(|_| bad_name(file, "the version does not fit in 64 bits"))?;
    let name = base[digits..]
        .strip_prefix('_')
        .ok_or_else(|| bad_name(file, "no `_` after the version"))?;
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(bad_name(
            file,
            "the name must be letters, digits, `_` or `-`",
        ));
    }
    Ok(Some((
        version,
        name.to_owned(),
        engine.map(str::to_owned),
        down,
    )))
}

/// The migration files among `(file name, text)` pairs; names not ending in `.sql` are skipped.
pub(crate) fn from_pairs<'a>(
    pairs: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> Result<Vec<SourceFile>> {
    let mut out: Vec<SourceFile> = Vec::new();
    for (file, text) in pairs {
        let Some((version, name, engine, down)) = parse_name(file)? else {
            continue;
        };
        if let Some(other) = out
            .iter()
            .find(|f| f.version == version && f.engine == engine && f.down == down)
        {
            return Err(bad_name(
                file,
                &format!("version {version} is also {}", other.file_name),
            ));
        }
        out.push(SourceFile {
            version,
            name,
            engine,
            down,
            file_name: file.to_owned(),
            text: text.to_owned(),
        });
    }
    Ok(out)
}

/// The migration files of the folder `dir` (not its subfolders).
pub(crate) fn from_dir(dir: &Path) -> Result<Vec<SourceFile>> {
    let io = |e: std::io::Error| {
        SqlMiddlewareDbError::new(
            ErrorKind::InvalidInput,
            format!("cannot read the migrations folder {}: {e}", dir.display()),
        )
    };
    let mut pairs = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        if !entry.file_type().map_err(io)?.is_file() {
            continue;
        }
        let file = entry.file_name().to_string_lossy().into_owned();
        if !file.ends_with(".sql") {
            continue;
        }
        let text = std::fs::read_to_string(entry.path()).map_err(|e| {
            SqlMiddlewareDbError::new(
                ErrorKind::InvalidInput,
                format!("cannot read migration file {file}: {e}"),
            )
        })?;
        pairs.push((file, text));
    }
    from_pairs(pairs.iter().map(|(f, t)| (f.as_str(), t.as_str())))
}

/// Whether `text` carries the [`NO_TRANSACTION`] directive before its first statement.
pub(crate) fn wants_no_transaction(text: &str) -> bool {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    for line in text.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if !line.starts_with("--") {
            return false;
        }
        if line.eq_ignore_ascii_case(NO_TRANSACTION) {
            return true;
        }
    }
    false
}

/// The file of `set` for the engine (`down` or up): the first of `suffixes` present, else the
/// one without a suffix.
fn pick<'f>(suffixes: &[&str], set: &[&'f SourceFile], down: bool) -> Option<&'f SourceFile> {
    suffixes
        .iter()
        .map(|s| Some(*s))
        .chain(std::iter::once(None))
        .find_map(|want| {
            set.iter()
                .find(|f| f.down == down && f.engine.as_deref() == want)
                .copied()
        })
}

/// The migrations one engine runs, in version order: for each version, the file with the
/// engine's first suffix present in `suffixes`, else the file without a suffix. A version with
/// files for other engines only is not a migration on this one.
pub(crate) fn resolve(files: &[SourceFile], suffixes: &[&str]) -> Result<Vec<Migration>> {
    let mut by_version: BTreeMap<i64, Vec<&SourceFile>> = BTreeMap::new();
    for f in files {
        by_version.entry(f.version).or_default().push(f);
    }
    let mut out = Vec::new();
    for (version, set) in by_version {
        if let Some(other) = set.iter().find(|f| f.name != set[0].name) {
            return Err(bad_name(
                &other.file_name,
                &format!(
                    "version {version} has two names ({} and {})",
                    set[0].name, other.name
                ),
            ));
        }
        let Some(up) = pick(suffixes, &set, false) else {
            if let Some(down) = pick(suffixes, &set, true) {
                return Err(bad_name(
                    &down.file_name,
                    "a down file without its migration",
                ));
            }
            continue;
        };
        out.push(Migration {
            version,
            name: up.name.clone(),
            file_name: up.file_name.clone(),
            checksum: checksum(&up.text),
            no_transaction: wants_no_transaction(&up.text),
            up: up.text.clone(),
            down: pick(suffixes, &set, true).map(|d| (d.file_name.clone(), d.text.clone())),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse() {
        assert_eq!(
            parse_name("0003_add_users.postgres.down.sql").unwrap(),
            Some((3, "add_users".into(), Some("postgres".into()), true))
        );
        assert_eq!(
            parse_name("12_x.sql").unwrap(),
            Some((12, "x".into(), None, false))
        );
        assert_eq!(parse_name("README.md").unwrap(), None);
        for bad in [
            "x_1.sql",
            "1x.sql",
            "1_.sql",
            "1_a b.sql",
            "1_a.Pg.sql",
            "99999999999999999999_a.sql",
        ] {
            assert!(parse_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_engine_file_wins_and_others_are_skipped() {
        let files = from_pairs([
            ("0001_a.sql", "generic"),
            ("0001_a.one.sql", "for one"),
            ("0001_a.down.sql", "down"),
            ("0002_b.two.sql", "two only"),
        ])
        .unwrap();
        let one = resolve(&files, &["one"]).unwrap();
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].up, "for one");
        assert_eq!(one[0].down.as_ref().map(|d| d.1.as_str()), Some("down"));
        let two = resolve(&files, &["two"]).unwrap();
        assert_eq!(two.iter().map(|m| m.version).collect::<Vec<_>>(), [1, 2]);
        assert_eq!(two[0].up, "generic");
        assert!(from_pairs([("1_a.sql", ""), ("01_b.sql", "")]).is_err());
        assert!(
            resolve(
                &from_pairs([("1_a.sql", ""), ("1_b.x.sql", "")]).unwrap(),
                &[]
            )
            .is_err()
        );
    }

    #[test]
    fn the_directive_is_read_before_the_first_statement_only() {
        assert!(wants_no_transaction(
            "-- an index\n-- sql-middleware: no-transaction\nCREATE INDEX CONCURRENTLY i ON t (a);"
        ));
        assert!(!wants_no_transaction(
            "SELECT 1;\n-- sql-middleware: no-transaction\n"
        ));
    }
}
