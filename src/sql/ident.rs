//! Identifiers given as data (a bulk load's table and columns): parsed, checked, and written
//! back always quoted, so no name can change the SQL around it.
//!
//! A name is either plain (`users`, `_tmp2`, `order` — letters, digits, `_` and `$`, not
//! starting with a digit) or double-quoted with `""` for a quote inside (`"Order Lines"`). A
//! table may be qualified by a schema (`app.users`, `"My App"."Users"`). Anything else (spaces
//! outside quotes, `;`, comments, empty names, NUL bytes, an unclosed quote) is refused with
//! [`ErrorKind::InvalidInput`] before any SQL is built.
//!
//! Written back, every part is quoted in the dialect's identifier quotes. A plain name keeps its
//! meaning: where the engine folds unquoted names to lower case, a plain part is lower-cased
//! first; elsewhere it is quoted as given.

use super::dialect::Dialect;
use crate::error::{ErrorKind, Result, SqlMiddlewareDbError};

/// One part of a name, as the caller wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Part {
    /// The name itself (without quotes, `""` undone).
    name: String,
    /// Written in double quotes: kept exactly.
    quoted: bool,
}

impl Part {
    fn write(&self, d: Dialect, out: &mut String) {
        let quote = d.ident_quote;
        out.push(quote);
        let folded;
        let name = if !self.quoted && d.folds_to_lower {
            folded = self.name.to_ascii_lowercase();
            &folded
        } else {
            &self.name
        };
        for c in name.chars() {
            if c == quote {
                out.push(quote);
            }
            out.push(c);
        }
        out.push(quote);
    }
}

fn bad(what: &str, given: &str, why: &str) -> SqlMiddlewareDbError {
    SqlMiddlewareDbError::new(
        ErrorKind::InvalidInput,
        format!(
            "{what} {given:?} is not a valid identifier: {why}; use a plain name (letters, digits, _ and $) or a double-quoted one"
        ),
    )
}

/// Parses `text` into its dot-separated parts.
fn parse(what: &str, text: &str) -> Result<Vec<Part>> {
    if text.contains('\0') {
        return Err(bad(what, text, "it contains a NUL byte"));
    }
    let mut parts = Vec::new();
    let mut rest = text;
    loop {
        let part = if let Some(after) = rest.strip_prefix('"') {
            let mut name = String::new();
            let mut chars = after.char_indices();
            let end = loop {
                match chars.next() {
                    None => return Err(bad(what, text, "a double quote is not closed")),
                    Some((i, '"')) => {
                        if after[i + 1..].starts_with('"') {
                            name.push('"');
                            chars.next();
                        } else {
                            break i + 1;
                        }
                    }
                    Some((_, c)) => name.push(c),
                }
            };
            if name.is_empty() {
                return Err(bad(what, text, "a quoted name is empty"));
            }
            rest = &after[end..];
            Part { name, quoted: true }
        } else {
            let len = rest
                .char_indices()
                .find(|&(_, c)| !(c.is_alphanumeric() || c == '_' || c == '$'))
                .map_or(rest.len(), |(i, _)| i);
            let name = &rest[..len];
            match name.chars().next() {
                None => return Err(bad(what, text, "a name is empty or starts with a symbol")),
                Some(c) if c.is_ascii_digit() || c == '$' => {
                    return Err(bad(what, text, "a plain name starts with a digit or $"));
                }
                Some(_) => {}
            }
            rest = &rest[len..];
            Part {
                name: name.to_owned(),
                quoted: false,
            }
        };
        parts.push(part);
        match rest.strip_prefix('.') {
            Some(r) => rest = r,
            None if rest.is_empty() => return Ok(parts),
            None => {
                return Err(bad(
                    what,
                    text,
                    "it holds characters outside a name (quote the name to keep them)",
                ));
            }
        }
    }
}

/// A checked table (optionally schema-qualified) and its columns, for a bulk load.
#[derive(Debug, Clone)]
pub(crate) struct BulkTarget {
    table: Vec<Part>,
    columns: Vec<Part>,
}

impl BulkTarget {
    /// Checks `table` (`name` or `schema.name`) and every column name.
    pub(crate) fn parse(table: &str, columns: &[&str]) -> Result<Self> {
        let t = parse("the table name", table)?;
        if t.len() > 2 {
            return Err(bad(
                "the table name",
                table,
                "it has more than two parts (schema.table)",
            ));
        }
        if columns.is_empty() {
            return Err(SqlMiddlewareDbError::new(
                ErrorKind::InvalidInput,
                "a bulk load needs at least one column",
            ));
        }
        let mut cols = Vec::with_capacity(columns.len());
        for c in columns {
            let mut p = parse("the column name", c)?;
            if p.len() != 1 {
                return Err(bad(
                    "the column name",
                    c,
                    "a column is one name, not a path",
                ));
            }
            cols.extend(p.pop());
        }
        Ok(Self {
            table: t,
            columns: cols,
        })
    }

    /// The number of columns.
    pub(crate) fn width(&self) -> usize {
        self.columns.len()
    }

    /// Column `k`'s name as given (for messages).
    #[cfg(feature = "_copy_in")]
    pub(crate) fn column(&self, k: usize) -> &str {
        self.columns.get(k).map_or("?", |p| p.name.as_str())
    }

    /// The quoted table, e.g. `"app"."users"`.
    pub(crate) fn table_sql(&self, d: Dialect) -> String {
        let mut out = String::new();
        for (i, p) in self.table.iter().enumerate() {
            if i > 0 {
                out.push('.');
            }
            p.write(d, &mut out);
        }
        out
    }

    /// The quoted column list without parentheses, e.g. `"id", "name"`.
    pub(crate) fn columns_sql(&self, d: Dialect) -> String {
        let mut out = String::new();
        for (i, p) in self.columns.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            p.write(d, &mut out);
        }
        out
    }

    /// `INSERT INTO t (cols) VALUES (?, …), …` with `rows` rows of anonymous `?` placeholders
    /// (for the engines that take them).
    #[cfg(feature = "_positional_params")]
    pub(crate) fn insert_sql(&self, d: Dialect, rows: usize) -> String {
        let one = {
            let mut s = String::from("(");
            for i in 0..self.width() {
                s.push_str(if i == 0 { "?" } else { ", ?" });
            }
            s.push(')');
            s
        };
        let mut out = format!(
            "INSERT INTO {} ({}) VALUES ",
            self.table_sql(d),
            self.columns_sql(d)
        );
        for i in 0..rows {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(&one);
        }
        out
    }

    /// The error for a row whose value count differs from the column count.
    pub(crate) fn wrong_width(&self, row: u64, got: usize) -> SqlMiddlewareDbError {
        SqlMiddlewareDbError::new(
            ErrorKind::ParameterCount,
            format!(
                "row {row} of the bulk load has {got} value(s) but {} column(s) were named; nothing was loaded",
                self.width()
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sql::scanner::Lexer;

    /// Double quotes, unquoted names folded to lower case (or not).
    fn quotes(folds_to_lower: bool) -> Dialect {
        Dialect {
            lexer: Lexer::Plain,
            ident_quote: '"',
            folds_to_lower,
            outside_tx_only: |_| None,
        }
    }

    fn render(t: &str, cols: &[&str], d: Dialect) -> Result<String> {
        let b = BulkTarget::parse(t, cols)?;
        Ok(format!("{} ({})", b.table_sql(d), b.columns_sql(d)))
    }

    #[test]
    fn plain_and_quoted_names_are_written_quoted() {
        assert_eq!(
            render("Users", &["id", "Name"], quotes(true)).unwrap(),
            r#""users" ("id", "name")"#
        );
        assert_eq!(
            render("Users", &["id", "Name"], quotes(false)).unwrap(),
            r#""Users" ("id", "Name")"#
        );
        assert_eq!(
            render(
                r#"app."Order ""Lines""""#,
                &[r#""a;b""#, "order"],
                quotes(true)
            )
            .unwrap(),
            r#""app"."Order ""Lines""" ("a;b", "order")"#
        );
    }

    #[test]
    fn bad_names_are_refused_with_a_typed_error() {
        for t in [
            "",
            "users; DROP TABLE x",
            "users --",
            "\"open",
            "a.b.c",
            "1abc",
            "a..b",
            "a.",
            "\"\"",
            "us\0ers",
            "users\"",
            " users",
        ] {
            let e = BulkTarget::parse(t, &["id"]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{t:?}");
        }
        for c in ["", "a b", "t.c", "x)"] {
            let e = BulkTarget::parse("t", &[c]).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::InvalidInput, "{c:?}");
        }
        assert_eq!(
            BulkTarget::parse("t", &[]).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }

    #[test]
    #[cfg(feature = "_positional_params")]
    fn insert_sql_has_one_group_per_row() {
        let b = BulkTarget::parse("t", &["a", "b"]).unwrap();
        assert_eq!(
            b.insert_sql(quotes(false), 2),
            r#"INSERT INTO "t" ("a", "b") VALUES (?, ?), (?, ?)"#
        );
    }
}
