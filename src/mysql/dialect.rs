//! MySQL's SQL, as the neutral readers follow it, and its placeholders: `$N` (or `?N`)
//! rewritten to the positional `?` the server takes.

use std::borrow::Cow;

use crate::error::{ErrorKind, SqlMiddlewareDbError};
use crate::sql::dialect::{Dialect, is, is_any};
use crate::sql::scanner::{Kind, Lexer, QuoteModes, tokens};

/// Backslash escapes, `#` comments and executable comments; identifiers in backticks (double
/// quotes make strings), matched as given; statements that commit implicitly only outside a
/// transaction. This is MySQL under the default `sql_mode`; a session whose mode changes how
/// quotes read has the dialect [`of_session`] gives.
pub(crate) const DIALECT: Dialect = Dialect {
    lexer: Lexer::Backslashes(QuoteModes::DEFAULT),
    ident_quote: '`',
    folds_to_lower: false,
    outside_tx_only,
};

/// The dialect of a session whose `sql_mode` reads quotes as `quotes` (`NO_BACKSLASH_ESCAPES`,
/// `ANSI_QUOTES`).
pub(crate) const fn of_session(quotes: QuoteModes) -> Dialect {
    Dialect {
        lexer: Lexer::Backslashes(quotes),
        ..DIALECT
    }
}

/// How a session whose `sql_mode` (a comma-separated list, as `@@session.sql_mode` reads) is
/// `mode` reads quotes.
pub(crate) fn quotes_of(mode: &str) -> QuoteModes {
    let has = |flag: &str| mode.split(',').any(|m| m.trim().eq_ignore_ascii_case(flag));
    QuoteModes {
        no_backslash_escapes: has("NO_BACKSLASH_ESCAPES"),
        ansi_quotes: has("ANSI_QUOTES"),
    }
}

/// MySQL and MariaDB commit the open transaction before (and after) these statements, so inside
/// a `Tx` they would end it half-way: schema changes (`CREATE`, `ALTER`, `DROP`, `RENAME`,
/// `TRUNCATE`; not `CREATE`/`DROP TEMPORARY TABLE`), `LOCK`/`UNLOCK TABLES`, account changes
/// (`GRANT`, `REVOKE`, `… USER`, `SET PASSWORD`), table maintenance (`ANALYZE`, `OPTIMIZE`,
/// `REPAIR`, `CHECK`, `CACHE INDEX`, `LOAD INDEX`), `FLUSH`, `RESET`, plugins and replication
/// control.
fn outside_tx_only(h: &[&str]) -> Option<String> {
    let second = h.get(1);
    let named = |n: usize| {
        let words: Vec<String> = h.iter().take(n).map(|w| w.to_ascii_uppercase()).collect();
        Some(format!("{} (MySQL commits it implicitly)", words.join(" ")))
    };
    if is_any(h.first(), &["CREATE", "DROP"]) {
        // `CREATE [OR REPLACE] TEMPORARY TABLE` and `DROP TEMPORARY TABLE` stay inside (not
        // MariaDB's `TEMPORARY SEQUENCE`, which commits).
        let temp =
            h.windows(2).skip(1).take(3).any(|w| {
                w[0].eq_ignore_ascii_case("TEMPORARY") && w[1].eq_ignore_ascii_case("TABLE")
            });
        return (!temp).then(|| named(2)).flatten();
    }
    if is_any(
        h.first(),
        &[
            "ALTER", "RENAME", "TRUNCATE", "GRANT", "REVOKE", "FLUSH", "RESET",
        ],
    ) || is_any(
        h.first(),
        &["ANALYZE", "OPTIMIZE", "REPAIR", "INSTALL", "UNINSTALL"],
    ) {
        return named(2);
    }
    let pair = |a: &str, b: &[&str]| is(h.first(), a) && is_any(second, b);
    if pair("LOCK", &["TABLES", "TABLE", "INSTANCE"])
        || pair("UNLOCK", &["TABLES", "TABLE", "INSTANCE"])
        || pair("CHECK", &["TABLE"])
        || pair("CACHE", &["INDEX"])
        || pair("LOAD", &["INDEX"])
        || pair("SET", &["PASSWORD"])
        || pair("START", &["SLAVE", "REPLICA"])
        || pair("STOP", &["SLAVE", "REPLICA"])
        || pair("CHANGE", &["MASTER", "REPLICATION"])
    {
        return named(2);
    }
    None
}

/// A statement as MySQL takes it (see [`to_mysql`]).
#[derive(Debug)]
pub(crate) struct MysqlText<'a> {
    /// The text, with positional `?` placeholders.
    pub(crate) text: Cow<'a, str>,
    /// The parameter each `?` binds (`None`: in order).
    pub(crate) order: Option<Box<[u16]>>,
    /// How many parameters the statement takes.
    pub(crate) params: usize,
}

/// `$N` placeholders of `sql` (and `?N` ones) rewritten to MySQL's positional `?`, with the
/// parameter each `?` takes: `order[k]` is the 0-based index of the parameter the k-th `?`
/// binds, so `$2 … $1` and a repeated `$1` bind correctly. Also the number of parameters the
/// statement takes: the highest `N`. Without `$N`/`?N` placeholders the text is kept (MySQL's
/// own `?` then bind in order), and the order is `None`; so it is when the rewritten `?`s take
/// the parameters in order. Mixing `$N` with bare `?` is an
/// [`InvalidInput`](crate::ErrorKind::InvalidInput) error. `d` is the session's dialect (see
/// [`of_session`]): where its strings end decides which `$N` are placeholders.
pub(crate) fn to_mysql(sql: &str, d: Dialect) -> crate::error::Result<MysqlText<'_>> {
    let bytes = sql.as_bytes();
    if !bytes.contains(&b'$') && !bytes.contains(&b'?') {
        return Ok(MysqlText {
            text: Cow::Borrowed(sql),
            order: None,
            params: 0,
        });
    }
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut order: Vec<u16> = Vec::new();
    let mut bare = 0usize;
    let mut highest = 0usize;
    for t in tokens(sql, d) {
        match t.kind {
            Kind::Placeholder => {
                let n: usize = sql[t.start + 1..t.end].parse().unwrap_or(usize::MAX);
                if n == 0 || n > usize::from(u16::MAX) {
                    return Err(SqlMiddlewareDbError::new(
                        if n == 0 {
                            ErrorKind::InvalidInput
                        } else {
                            ErrorKind::ParameterCount
                        },
                        format!(
                            "placeholder {} is out of range: placeholders run from $1 to ${}",
                            &sql[t.start..t.end],
                            u16::MAX
                        ),
                    ));
                }
                highest = highest.max(n);
                order.push((n - 1) as u16);
                let s = out.get_or_insert_with(|| String::with_capacity(sql.len()));
                s.push_str(&sql[copied..t.start]);
                s.push('?');
                copied = t.end;
            }
            Kind::Param if bytes[t.start] == b'?' => bare += 1,
            _ => {}
        }
    }
    if !order.is_empty() && bare > 0 {
        return Err(SqlMiddlewareDbError::new(
            ErrorKind::InvalidInput,
            "the statement mixes $N placeholders with bare ? ones; use one style",
        ));
    }
    let Some(mut s) = out else {
        return Ok(MysqlText {
            text: Cow::Borrowed(sql),
            order: None,
            params: bare,
        });
    };
    s.push_str(&sql[copied..]);
    let in_order =
        order.len() == highest && order.iter().enumerate().all(|(k, &i)| usize::from(i) == k);
    let order = (!in_order).then(|| order.into_boxed_slice());
    Ok(MysqlText {
        text: Cow::Owned(s),
        order,
        params: highest,
    })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    use crate::sql::props::{config, script_in};

    /// What the hall lets through a `Tx` without scanning it never needs to run outside one
    /// here.
    #[test]
    fn plain_dml_at_a_glance_needs_no_refusal() {
        crate::sql::props::glance_passes_no_refused(DIALECT);
    }

    #[test]
    fn mysql_placeholders_are_positional_with_their_order() {
        let t = |sql| {
            let m = to_mysql(sql, DIALECT).unwrap();
            (m.text.into_owned(), m.order, m.params)
        };
        let (sql, order, n) = t("SELECT $2, '$1', `$1`, $1, $2 -- $3");
        assert_eq!(sql, "SELECT ?, '$1', `$1`, ?, ? -- $3");
        assert_eq!(order.as_deref(), Some(&[1u16, 0, 1][..]));
        assert_eq!(n, 2);
        let (sql, order, n) = t("INSERT INTO t VALUES ($1, $2)");
        assert_eq!(sql, "INSERT INTO t VALUES (?, ?)");
        assert!(order.is_none());
        assert_eq!(n, 2);
        // MySQL strings escape with a backslash, and `#` starts a comment.
        let (sql, _, n) = t("SELECT 'it\\'s $1', \"$2\" # $3\n, $1");
        assert_eq!(sql, "SELECT 'it\\'s $1', \"$2\" # $3\n, ?");
        assert_eq!(n, 1);
        let (sql, order, n) = t("SELECT ? + ?");
        assert_eq!((sql.as_str(), order, n), ("SELECT ? + ?", None, 2));
        assert!(to_mysql("SELECT $1, ?", DIALECT).is_err());
        assert!(to_mysql("SELECT $0", DIALECT).is_err());
        // A gap: $1 is never used, and the statement still takes two parameters.
        let (_, order, n) = t("SELECT $2");
        assert_eq!((order.as_deref(), n), (Some(&[1u16][..]), 2));
    }

    #[test]
    fn the_sessions_sql_mode_decides_where_strings_end() {
        let modes = |m: &str| of_session(quotes_of(m));
        let t = |sql, d| to_mysql(sql, d).unwrap().text.into_owned();
        // Under NO_BACKSLASH_ESCAPES `'C:\'` is a whole string: the `$1` after it is a
        // placeholder, and the `'$2'` after that a string.
        let nbe = modes("STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES");
        assert_eq!(t("SELECT 'C:\\', $1, '$2'", nbe), "SELECT 'C:\\', ?, '$2'");
        // With backslash escapes the same text is one string that runs on.
        assert_eq!(t("SELECT 'it\\'s', $1", DIALECT), "SELECT 'it\\'s', ?");
        assert_eq!(
            t("SELECT 'C:\\', $1, '$2'", DIALECT),
            "SELECT 'C:\\', $1, '?'"
        );
        // Under ANSI_QUOTES `"a\"` is an identifier that ends at its second quote.
        let ansi = modes("REAL_AS_FLOAT,PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,ANSI");
        assert_eq!(
            t("SELECT \"a\\\" FROM t WHERE x = $1", ansi),
            "SELECT \"a\\\" FROM t WHERE x = ?"
        );
        assert_eq!(quotes_of(""), QuoteModes::DEFAULT);
        assert_eq!(
            quotes_of("ansi_quotes,no_backslash_escapes"),
            QuoteModes {
                no_backslash_escapes: true,
                ansi_quotes: true
            }
        );
    }

    proptest! {
        #![proptest_config(config())]

        /// MySQL's `?` are positional: each `$N` the scanner finds becomes one `?`, and nothing
        /// else changes.
        #[test]
        fn placeholders_become_positional(
            (d, sql) in crate::sql::props::backslash_lexer().prop_flat_map(|l| (Just(l), script_in(l)))
        ) {
            let Lexer::Backslashes(quotes) = d else { unreachable!("a MySQL lexer") };
            let d = of_session(quotes);
            let found = tokens(&sql, d).filter(|t| t.kind == Kind::Placeholder).count();
            let bare = tokens(&sql, d)
                .filter(|t| t.kind == Kind::Param && sql.as_bytes()[t.start] == b'?')
                .count();
            match to_mysql(&sql, d) {
                Ok(MysqlText { text: out, order, .. }) => {
                    let marks = tokens(&out, d)
                        .filter(|t| t.kind == Kind::Param && out.as_bytes()[t.start] == b'?')
                        .count();
                    prop_assert_eq!(marks, found + bare);
                    prop_assert!(tokens(&out, d).all(|t| t.kind != Kind::Placeholder));
                    if let Some(o) = order {
                        prop_assert_eq!(o.len(), found);
                    }
                }
                Err(_) => prop_assert!(found > 0 && bare > 0),
            }
        }
    }
}
