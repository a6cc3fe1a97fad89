//! The one SQL lexer. It knows every quoting form of the three dialects and splits SQL text
//! into tokens with byte spans, without allocating:
//!
//! - single-quoted strings with doubled quotes (`'it''s'`), and (PostgreSQL) `E'…'` strings in
//!   which a backslash escapes the next byte;
//! - double-quoted and backticked identifiers (a doubled quote escapes), and (SQLite)
//!   `[bracketed]` identifiers; in PostgreSQL `arr[$1]` is a subscript;
//! - `--` line comments and `/* … */` block comments, which nest in PostgreSQL and end at the
//!   first `*/` in SQLite;
//! - (PostgreSQL) dollar-quoted bodies, `$$ … $$` and `$tag$ … $tag$` (a tag does not start
//!   with a digit);
//! - placeholders `$N` and `?N`, and SQLite's other parameters (`?`, `:name`, `@name`,
//!   `$name`);
//! - words (keywords, identifiers, numbers; a sigil glued to an identifier, as in `foo$1`,
//!   belongs to it), `;`, NUL bytes, white space and other punctuation.
//!
//! Where the engines' lexers differ, each [`Lexer`] reads text exactly as its engines' lexer does, so
//! that what the scanner calls a comment or a literal is one to the engine too: a keyword the
//! scanner hides is a keyword the engine never runs.
//!
//! An unterminated string, identifier, comment or dollar quote runs to the end of the input.
//! Tokens cover the input exactly: concatenating their spans gives it back.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A run of white space.
    Space,
    /// `-- …` up to and including the end of the line.
    LineComment,
    /// `/* … */` (in PostgreSQL, nested comments included).
    BlockComment,
    /// `'…'` or `E'…'`.
    Str,
    /// `"…"`, `` `…` `` or (SQLite) `[…]`.
    QuotedIdent,
    /// `$$ … $$` or `$tag$ … $tag$`.
    DollarBody,
    /// `$N` or `?N`: the sigil, then one or more ASCII digits.
    Placeholder,
    /// SQLite's other parameters: a bare `?`, `:name`, `@name`, `$name`.
    Param,
    /// A keyword, identifier or number.
    Word,
    /// `;`.
    Semi,
    /// A NUL byte outside any literal.
    Nul,
    /// Any other byte.
    Punct,
}

impl Kind {
    /// White space or a comment: nothing the engine runs.
    pub(crate) fn is_blank(self) -> bool {
        matches!(self, Kind::Space | Kind::LineComment | Kind::BlockComment)
    }
}

/// One token: its kind and its span `start..end` in the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) kind: Kind,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

/// The lexical rules the scanner follows where engines' lexers differ. Each engine's
/// [`Dialect`](super::Dialect) names the rules its own lexer has, so that what the scanner calls
/// a comment or a literal is one to the engine too.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Lexer {
    /// `[…]` is a quoted identifier; block comments do not nest; there are no `E'…'` strings
    /// and no dollar quotes (`$name` is a parameter).
    Plain,
    /// `[…]` is an array subscript; block comments nest; `E'…'` strings (a backslash escapes
    /// the next byte) and dollar-quoted bodies.
    DollarQuotes,
    /// [`Lexer::DollarQuotes`], and a backslash escapes the next byte in a plain `'…'` string
    /// too: PostgreSQL in a session whose `standard_conforming_strings` is off. With the
    /// standard rules a string such as `'it\'s'` would end early there, and the rest of it be
    /// read as code.
    DollarQuotesBackslashStrings,
    /// `'…'` and `"…"` are strings in which a backslash escapes the next byte (as far as the
    /// session's [`QuoteModes`] keep them so); `#` starts a line comment, and `--` does only
    /// when white space (or the end) follows; block comments do not nest, and the text of an
    /// executable comment (`/*! … */`, `/*M! … */`) is code; `[` is punctuation.
    Backslashes(QuoteModes),
}

/// How a session of a [`Lexer::Backslashes`] engine reads quotes, which a session setting
/// decides (MySQL's `sql_mode`). The server's default may set either flag, and so may any
/// statement of a session, so the scanner follows the session's modes as the connection last
/// read them: with the wrong rules, a string ending in a backslash (`'C:\'` with backslash
/// escapes off) would run on over the rest of the statement, hiding its placeholders and
/// statements from the middleware.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub(crate) struct QuoteModes {
    /// A backslash in a string is a plain byte; only a doubled quote escapes
    /// (`NO_BACKSLASH_ESCAPES`).
    pub(crate) no_backslash_escapes: bool,
    /// `"…"` quotes an identifier (a doubled `"` escapes; a backslash is a plain byte, as in
    /// every identifier), not a string (`ANSI_QUOTES`).
    pub(crate) ansi_quotes: bool,
}

impl QuoteModes {
    /// The engine's defaults: backslash escapes, and double quotes make strings.
    pub(crate) const DEFAULT: QuoteModes = QuoteModes {
        no_backslash_escapes: false,
        ansi_quotes: false,
    };
}

/// The tokens of `sql` under the lexical rules `lexer` (a [`Lexer`] or a whole
/// [`Dialect`](super::Dialect)).
pub(crate) fn tokens(sql: &str, lexer: impl Into<Lexer>) -> Tokens<'_> {
    let lexer = lexer.into();
    // The backslash engines' rules, whatever the session's quote modes; the modes only where
    // those rules apply.
    let my = std::mem::discriminant(&lexer)
        == std::mem::discriminant(&Lexer::Backslashes(QuoteModes::DEFAULT));
    let modes = match lexer {
        Lexer::Backslashes(q) => q,
        _ => QuoteModes::DEFAULT,
    };
    let pg_escapes = lexer == Lexer::DollarQuotesBackslashStrings;
    Tokens {
        b: sql.as_bytes(),
        i: 0,
        pg: pg_escapes || lexer == Lexer::DollarQuotes,
        pg_escapes,
        my,
        my_escapes: my && !modes.no_backslash_escapes,
        my_ansi: my && modes.ansi_quotes,
        in_exec: false,
        glued: false,
    }
}

/// An iterator over the tokens of SQL text; see [`tokens`].
#[derive(Debug, Clone)]
pub(crate) struct Tokens<'a> {
    b: &'a [u8],
    i: usize,
    /// [`Lexer::DollarQuotes`] rules where they differ from [`Lexer::Plain`] ones.
    pg: bool,
    /// With `pg`: a backslash escapes the next byte in a plain `'…'` string too.
    pg_escapes: bool,
    /// [`Lexer::Backslashes`] rules where they differ from [`Lexer::Plain`] ones.
    my: bool,
    /// With `my`: a backslash in a string escapes the next byte.
    my_escapes: bool,
    /// With `my`: `"…"` quotes an identifier.
    my_ansi: bool,
    /// Inside a MySQL executable comment (`/*! … */`): its closing `*/` is a comment delimiter.
    in_exec: bool,
    /// The previous token (a word, placeholder, parameter or lone `$`) ended in an identifier
    /// byte: a sigil or quote right after it belongs to it (`foo$1`, `$1$2`, `$?1`, `x'…'`), as
    /// in the engines' lexers. After a literal, a comment or a dollar-quoted body nothing is
    /// glued, though its last byte may be `$`.
    glued: bool,
}

impl Iterator for Tokens<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let b = self.b;
        let start = self.i;
        let c = *b.get(start)?;
        let next = b.get(start + 1).copied();
        let (kind, end) = match c {
            b'"' if self.my_ansi => (Kind::QuotedIdent, skip_quoted(b, start + 1, c)),
            b'\'' | b'"' if self.my => {
                (Kind::Str, skip_my_string(b, start + 1, c, self.my_escapes))
            }
            b'#' if self.my => (Kind::LineComment, skip_past(b, start + 1, b'\n')),
            b'-' if self.my
                && next == Some(b'-')
                && b.get(start + 2).is_some_and(|c| !c.is_ascii_whitespace()) =>
            {
                (Kind::Punct, start + 1)
            }
            // The delimiters of an executable comment are blank; the text between them is code.
            b'/' if self.my && next == Some(b'*') && executable_comment(b, start + 2) => {
                self.in_exec = true;
                (Kind::BlockComment, executable_comment_end(b, start + 2))
            }
            b'*' if self.in_exec && next == Some(b'/') => {
                self.in_exec = false;
                (Kind::BlockComment, start + 2)
            }
            b'[' if self.my => (Kind::Punct, start + 1),
            b'\'' => (Kind::Str, skip_string(b, start + 1, self.pg_escapes)),
            b'E' | b'e' if self.pg && next == Some(b'\'') && !self.glued => {
                (Kind::Str, skip_string(b, start + 2, true))
            }
            b'"' | b'`' => (Kind::QuotedIdent, skip_quoted(b, start + 1, c)),
            b'[' if !self.pg => (Kind::QuotedIdent, skip_past(b, start + 1, b']')),
            b'-' if next == Some(b'-') => (Kind::LineComment, skip_past(b, start + 2, b'\n')),
            b'/' if next == Some(b'*') => (
                Kind::BlockComment,
                skip_block_comment(b, start + 2, self.pg),
            ),
            b';' => (Kind::Semi, start + 1),
            0 => (Kind::Nul, start + 1),
            b'$' | b'?' | b':' | b'@' if self.glued => (Kind::Punct, start + 1),
            b'$' | b'?' => {
                let end = digits_end(b, start + 1);
                if end > start + 1 {
                    (Kind::Placeholder, end)
                } else if c == b'$' {
                    match if self.pg {
                        dollar_quote_end(b, start)
                    } else {
                        None
                    } {
                        Some(end) => (Kind::DollarBody, end),
                        None => name_param(b, start),
                    }
                } else {
                    (Kind::Param, start + 1)
                }
            }
            b':' | b'@' => name_param(b, start),
            c if c.is_ascii_whitespace() => {
                let mut end = start + 1;
                while end < b.len() && b[end].is_ascii_whitespace() {
                    end += 1;
                }
                (Kind::Space, end)
            }
            c if is_ident_byte(c) => {
                let mut end = start + 1;
                while end < b.len() && is_ident_byte(b[end]) {
                    end += 1;
                }
                (Kind::Word, end)
            }
            _ => (Kind::Punct, start + 1),
        };
        self.i = end;
        self.glued = matches!(
            kind,
            Kind::Word | Kind::Placeholder | Kind::Param | Kind::Punct
        ) && is_ident_byte(b[end - 1]);
        Some(Token { kind, start, end })
    }
}

/// `:name`, `@name` or `$name` (SQLite's named parameters), or a lone sigil.
fn name_param(b: &[u8], start: usize) -> (Kind, usize) {
    let mut end = start + 1;
    while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_' || b[end] >= 0x80) {
        end += 1;
    }
    if end > start + 1 {
        (Kind::Param, end)
    } else {
        (Kind::Punct, start + 1)
    }
}

/// Identifier characters: a sigil right after one of these belongs to the identifier
/// (PostgreSQL allows `$` inside identifiers).
#[inline]
const fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
}

/// First index at or after `start` that is not an ASCII digit.
#[inline]
fn digits_end(bytes: &[u8], start: usize) -> usize {
    let mut i = start;
    while i < bytes.len() && bytes[i].is_ascii_digit() {
        i += 1;
    }
    i
}

/// Index just past the first `close` at or after `start` (or the end of input).
#[inline]
fn skip_past(bytes: &[u8], start: usize, close: u8) -> usize {
    match bytes.get(start..) {
        Some(rest) => rest
            .iter()
            .position(|&c| c == close)
            .map_or(bytes.len(), |p| start + p + 1),
        None => bytes.len(),
    }
}

/// Skips the body of a single-quoted literal starting at `start` (just after the opening
/// quote). `''` is an escaped quote; with `backslash_escapes` (PostgreSQL `E'…'`), a backslash
/// escapes the next byte. Returns the index just past the closing quote, or the end of input.
fn skip_string(bytes: &[u8], start: usize, backslash_escapes: bool) -> usize {
    let len = bytes.len();
    let mut i = start;
    while i < len {
        match bytes[i] {
            b'\'' => {
                if bytes.get(i + 1) == Some(&b'\'') {
                    i += 2;
                } else {
                    return i + 1;
                }
            }
            b'\\' if backslash_escapes => i += 2,
            _ => i += 1,
        }
    }
    len
}

/// Skips the body of a MySQL string quoted with `quote` (`'` or `"`), starting just after the
/// opening quote: a doubled quote escapes the next byte, and so does a backslash when
/// `backslash_escapes`. Returns the index just past the closing quote, or the end of input.
fn skip_my_string(bytes: &[u8], start: usize, quote: u8, backslash_escapes: bool) -> usize {
    let len = bytes.len();
    let mut i = start;
    while i < len {
        match bytes[i] {
            b'\\' if backslash_escapes => i += 2,
            c if c == quote => {
                if bytes.get(i + 1) == Some(&quote) {
                    i += 2;
                } else {
                    return i + 1;
                }
            }
            _ => i += 1,
        }
    }
    len
}

/// Whether the block comment whose body starts at `start` (just after `/*`) is one MySQL runs:
/// `/*!` or MariaDB's `/*M!`.
fn executable_comment(bytes: &[u8], start: usize) -> bool {
    match bytes.get(start) {
        Some(b'!') => true,
        Some(b'M') => bytes.get(start + 1) == Some(&b'!'),
        _ => false,
    }
}

/// The end of an executable comment's opening (`/*!`, `/*M!`, and the version digits after
/// it): its text is scanned as code.
fn executable_comment_end(bytes: &[u8], start: usize) -> usize {
    let bang = if bytes[start] == b'M' {
        start + 2
    } else {
        start + 1
    };
    digits_end(bytes, bang)
}

/// Skips a quoted identifier body (`"…"` or `` `…` ``) where a doubled quote is an escape.
/// Returns the index just past the closing quote, or the end of input.
fn skip_quoted(bytes: &[u8], start: usize, quote: u8) -> usize {
    let len = bytes.len();
    let mut i = start;
    loop {
        i = skip_past(bytes, i, quote);
        if i < len && bytes[i] == quote {
            // Doubled quote: escaped, keep going.
            i += 1;
        } else {
            return i;
        }
    }
}

/// Skips a block comment body starting just after the opening `/*`: to the matching `*/` when
/// comments `nest` (PostgreSQL), else to the first `*/` (SQLite). Returns the index just past
/// it, or the end of input.
fn skip_block_comment(bytes: &[u8], start: usize, nest: bool) -> usize {
    let len = bytes.len();
    let mut depth = 1usize;
    let mut i = start;
    while i < len {
        match (bytes[i], bytes.get(i + 1)) {
            (b'/', Some(b'*')) if nest => {
                depth += 1;
                i += 2;
            }
            (b'*', Some(b'/')) => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    len
}

/// If a dollar-quote opening delimiter (`$$` or `$tag$`, where the tag is an identifier not
/// starting with a digit) starts at `start`, returns the index just past the matching closing
/// delimiter (or the end of input when it is unterminated). `None` when `start` does not open
/// a dollar quote.
fn dollar_quote_end(bytes: &[u8], start: usize) -> Option<usize> {
    let len = bytes.len();
    let mut i = start + 1;
    if i < len && bytes[i] != b'$' {
        // A tag starts with a letter, underscore or non-ASCII byte.
        let first = bytes[i];
        if !(first.is_ascii_alphabetic() || first == b'_' || first >= 0x80) {
            return None;
        }
        while i < len && bytes[i] != b'$' {
            let c = bytes[i];
            if !(c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80) {
                return None;
            }
            i += 1;
        }
    }
    if i >= len {
        return None;
    }
    // `bytes[start..=i]` is the delimiter, e.g. `$fn$`.
    let delim = &bytes[start..=i];
    let mut j = i + 1;
    while let Some(p) = bytes[j..].iter().position(|&c| c == b'$') {
        let at = j + p;
        if bytes[at..].starts_with(delim) {
            return Some(at + delim.len());
        }
        j = at + 1;
    }
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(sql: &str, d: Lexer) -> Vec<(Kind, &str)> {
        tokens(sql, d)
            .filter(|t| t.kind != Kind::Space)
            .map(|t| (t.kind, &sql[t.start..t.end]))
            .collect()
    }

    #[test]
    fn every_quoting_form() {
        use Kind::*;
        let shared = "SELECT 'a''b;', \"e\"\"f;\" -- k;\n x$1, $2, ?3, ?, :p, @q, $r;";
        let want = vec![
            (Word, "SELECT"),
            (Str, "'a''b;'"),
            (Punct, ","),
            (QuotedIdent, "\"e\"\"f;\""),
            (LineComment, "-- k;\n"),
            (Word, "x$1"),
            (Punct, ","),
            (Placeholder, "$2"),
            (Punct, ","),
            (Placeholder, "?3"),
            (Punct, ","),
            (Param, "?"),
            (Punct, ","),
            (Param, ":p"),
            (Punct, ","),
            (Param, "@q"),
            (Punct, ","),
            (Param, "$r"),
            (Semi, ";"),
        ];
        assert_eq!(kinds(shared, Lexer::Plain), want);
        assert_eq!(kinds(shared, Lexer::DollarQuotes), want);

        let lite = "`g;` [h;] /* l /* m; */ n;";
        assert_eq!(
            kinds(lite, Lexer::Plain),
            vec![
                (QuotedIdent, "`g;`"),
                (QuotedIdent, "[h;]"),
                (BlockComment, "/* l /* m; */"),
                (Word, "n"),
                (Semi, ";"),
            ]
        );
        let pg = "E'c\\'d;' $$i;$$ $t$j;$t$ /* l /* m; */ n; */;";
        assert_eq!(
            kinds(pg, Lexer::DollarQuotes),
            vec![
                (Str, "E'c\\'d;'"),
                (DollarBody, "$$i;$$"),
                (DollarBody, "$t$j;$t$"),
                (BlockComment, "/* l /* m; */ n; */"),
                (Semi, ";"),
            ]
        );
        // SQLite reads the PostgreSQL-only forms as its own lexer does.
        assert_eq!(
            kinds("E'c\\'d $i;", Lexer::Plain),
            vec![
                (Word, "E"),
                (Str, "'c\\'"),
                (Word, "d"),
                (Param, "$i"),
                (Semi, ";"),
            ]
        );
    }

    #[test]
    fn brackets_are_subscripts_where_dollars_quote() {
        let k = kinds("SELECT a[$1]; x", Lexer::DollarQuotes);
        assert!(k.contains(&(Kind::Placeholder, "$1")));
        assert!(k.contains(&(Kind::Semi, ";")));
    }

    #[test]
    fn a_digit_is_no_dollar_tag_and_e_must_stand_alone() {
        let k = kinds("$1$ x", Lexer::DollarQuotes);
        assert_eq!(k[0], (Kind::Placeholder, "$1"));
        // Two dollar-quoted bodies back to back: the closing `$` glues nothing.
        let k = kinds("$$ a $$$$ b $$; c", Lexer::DollarQuotes);
        assert_eq!(
            &k[..3],
            &[
                (Kind::DollarBody, "$$ a $$"),
                (Kind::DollarBody, "$$ b $$"),
                (Kind::Semi, ";")
            ]
        );
        let k = kinds("SELECT name'x'", Lexer::DollarQuotes);
        assert_eq!(k[1], (Kind::Word, "name"));
        assert_eq!(k[2], (Kind::Str, "'x'"));
    }

    #[test]
    fn unterminated_constructs_run_to_the_end_and_spans_cover_the_input() {
        for (sql, d) in [
            ("'abc", Lexer::Plain),
            ("\"abc", Lexer::Plain),
            ("/* a /* b */", Lexer::DollarQuotes),
            ("/* a", Lexer::Plain),
            ("$$ body", Lexer::DollarQuotes),
            ("$t$ x $t", Lexer::DollarQuotes),
            ("[abc", Lexer::Plain),
            ("E'\\", Lexer::DollarQuotes),
        ] {
            let toks: Vec<Token> = tokens(sql, d).collect();
            assert_eq!(toks.len(), 1, "{sql}: {toks:?}");
            assert_eq!((toks[0].start, toks[0].end), (0, sql.len()), "{sql}");
        }
        let sql = "é€ SELECT\0'x';";
        let mut at = 0;
        for t in tokens(sql, Lexer::Plain) {
            assert_eq!(t.start, at);
            at = t.end;
        }
        assert_eq!(at, sql.len());
        assert!(tokens(sql, Lexer::Plain).any(|t| t.kind == Kind::Nul));
    }
}
