//! Bulk loads on the SQLite family: how many rows one multi-row `INSERT` carries.

/// SQLite's default limit on parameters per statement (`SQLITE_MAX_VARIABLE_NUMBER`), which
/// Turso shares.
const MAX_VARIABLES: usize = 32_766;
/// Rows per multi-row `INSERT`: past a few dozen, longer statements gain nothing.
const ROWS_PER_STATEMENT: usize = 32;

/// Rows per full statement for `width` columns.
pub(crate) fn rows_per_statement(width: usize) -> usize {
    (MAX_VARIABLES / width.max(1)).clamp(1, ROWS_PER_STATEMENT)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_respect_the_parameter_limit() {
        assert_eq!(rows_per_statement(13), ROWS_PER_STATEMENT);
        assert_eq!(rows_per_statement(2_000), 16);
        assert_eq!(rows_per_statement(40_000), 1);
    }
}
