//! Test databases on SQLite (feature `testing`): a file per test in the temporary folder.

use crate::contract::TestDbRules;

/// SQLite's test database rules.
pub(crate) const RULES: TestDbRules = TestDbRules {
    server: None,
    file_scheme: "sqlite",
};
