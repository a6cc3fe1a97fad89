//! Test databases on Turso (feature `testing`): a file per test in the temporary folder.

use crate::contract::TestDbRules;

/// Turso's test database rules.
pub(crate) const RULES: TestDbRules = TestDbRules {
    server: None,
    file_scheme: "turso",
};
