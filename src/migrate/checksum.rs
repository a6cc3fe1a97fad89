//! A migration's checksum: SHA-256 over its text with line endings and a byte-order mark
//! normalised, so that a file checked out with CRLF line endings, or saved with a BOM, has the
//! checksum of the same file with LF endings.

use sha2::{Digest, Sha256};

/// `text` without a leading byte-order mark and with every `\r\n` and lone `\r` made `\n`.
pub(crate) fn normalise(text: &str) -> String {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' {
            if chars.peek() == Some(&'\n') {
                chars.next();
            }
            out.push('\n');
        } else {
            out.push(c);
        }
    }
    out
}

/// The lower-case hexadecimal SHA-256 of `text` once normalised (see [`normalise`]).
pub(crate) fn checksum(text: &str) -> String {
    let digest = Sha256::digest(normalise(text).as_bytes());
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// A signed 64-bit number derived from `text`: the key of Postgres's advisory lock.
pub(crate) fn key_of(text: &str) -> i64 {
    let digest = Sha256::digest(text.as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_be_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_endings_and_bom_do_not_change_the_checksum() {
        let lf = "CREATE TABLE t (id INT);\nINSERT INTO t VALUES (1);\n";
        let crlf = "CREATE TABLE t (id INT);\r\nINSERT INTO t VALUES (1);\r\n";
        let cr = "CREATE TABLE t (id INT);\rINSERT INTO t VALUES (1);\r";
        let bom = "\u{feff}CREATE TABLE t (id INT);\nINSERT INTO t VALUES (1);\n";
        assert_eq!(checksum(lf), checksum(crlf));
        assert_eq!(checksum(lf), checksum(cr));
        assert_eq!(checksum(lf), checksum(bom));
        assert_ne!(checksum(lf), checksum("CREATE TABLE t (id BIGINT);\n"));
        assert_eq!(checksum("").len(), 64);
    }

    #[test]
    fn keys_differ_by_text() {
        assert_ne!(key_of("a"), key_of("b"));
        assert_eq!(key_of("a"), key_of("a"));
    }
}
