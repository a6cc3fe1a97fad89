//! What a statement does to the session of the SQLite-family connection it runs on, as the
//! engine reports it while preparing the statement (SQLite's authorizer): the pragmas it assigns,
//! temporary objects it creates, databases it attaches, transaction control. The wing records
//! these as [`Effects`], and the pool puts the session back (or discards the connection) when the
//! checkout ends.
//!
//! Pragmas fall in four groups:
//! - per-connection settings the wing puts back by assigning the fresh connection's value
//!   ([`RESTORABLE`], one bit each);
//! - pragmas that only read, act on the database file, or change what every connection sees
//!   anyway (introspection, `user_version`, `optimize`, the process-wide heap limits): nothing
//!   to undo on this connection;
//! - `journal_mode`, which applications often assign to the mode the pool set already: the
//!   connection's mode is compared with a fresh one's when it goes back;
//! - everything else that is assigned (`locking_mode`, `case_sensitive_like`,
//!   and any pragma not listed here): the connection is discarded, since the wing does not know
//!   how to put it back exactly.
//!
//! Temporary objects and attached databases cannot be undone by a setting: when a checkout may
//! have made them, the connection is compared with a fresh one when it goes back, and
//! discarded unless equal (a statement that failed, or a later `DROP`, leaves nothing).

/// Per-connection pragmas put back by assigning the value a fresh connection of the pool has.
/// Each has a bit in [`Effects`] (its index). Every one reads back as an integer.
pub(crate) const RESTORABLE: [&str; 30] = [
    "foreign_keys",
    "synchronous",
    "query_only",
    "busy_timeout",
    "cache_size",
    "recursive_triggers",
    "automatic_index",
    "temp_store",
    "defer_foreign_keys",
    "reverse_unordered_selects",
    "ignore_check_constraints",
    "legacy_alter_table",
    "trusted_schema",
    "cell_size_check",
    "cache_spill",
    "checkpoint_fullfsync",
    "fullfsync",
    "read_uncommitted",
    "short_column_names",
    "full_column_names",
    "count_changes",
    "empty_result_callbacks",
    "wal_autocheckpoint",
    "journal_size_limit",
    "mmap_size",
    "threads",
    "analysis_limit",
    "writable_schema",
    "secure_delete",
    "max_page_count",
];

/// Pragmas whose assignment (or argument) leaves nothing on this connection that a fresh one
/// would not have: they read, act on the database file (which every connection shares), or
/// change process-wide limits that a new connection would share too.
const NOTHING_TO_UNDO: [&str; 34] = [
    "analyze",
    "application_id",
    "auto_vacuum",
    "collation_list",
    "compile_options",
    "data_version",
    "database_list",
    "default_cache_size",
    "encoding",
    "foreign_key_check",
    "foreign_key_list",
    "freelist_count",
    "function_list",
    "hard_heap_limit",
    "incremental_vacuum",
    "index_info",
    "index_list",
    "index_xinfo",
    "integrity_check",
    "module_list",
    "optimize",
    "page_count",
    "page_size",
    "pragma_list",
    "quick_check",
    "schema_version",
    "shrink_memory",
    "soft_heap_limit",
    "stats",
    "table_info",
    "table_list",
    "table_xinfo",
    "user_version",
    "wal_checkpoint",
];

/// What statements did to a connection's session: a set of bits, merged with `|`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Effects(pub(crate) u64);

impl Effects {
    /// Nothing that outlives the statement.
    pub(crate) const NONE: Effects = Effects(0);
    /// The restorable pragmas (bits `0..RESTORABLE.len()`).
    pub(crate) const PRAGMAS: u64 = (1 << RESTORABLE.len()) - 1;
    /// A pragma assignment the wing cannot put back: the connection is discarded.
    pub(crate) const OTHER_SETTING: u64 = 1 << 56;
    /// A temporary table, index, trigger, view or virtual table was created.
    pub(crate) const TEMP: u64 = 1 << 57;
    /// A database was attached or detached.
    pub(crate) const ATTACH: u64 = 1 << 58;
    /// Transaction control or a savepoint.
    pub(crate) const TX: u64 = 1 << 59;
    /// The schema changed (DDL): statement descriptions may be stale.
    pub(crate) const SCHEMA: u64 = 1 << 60;
    /// The engine authorized at least one action (the statement was prepared, not served
    /// from a cache).
    pub(crate) const SEEN: u64 = 1 << 61;
    /// Raw access: the engine connection was handed out, and what it did is not all known.
    pub(crate) const RAW: u64 = 1 << 62;
    /// `journal_mode` was assigned (often to the mode the pool set already): the connection's
    /// mode is compared with a fresh one's.
    pub(crate) const JOURNAL_MODE: u64 = 1 << 55;

    /// What only a new connection undoes, if it is there when the checkout ends (a statement
    /// that failed, or a later `DROP`/`DETACH`, may have left nothing).
    const STATE: u64 = Self::TEMP | Self::ATTACH | Self::RAW | Self::JOURNAL_MODE;

    /// Both sets.
    #[inline]
    #[must_use]
    pub(crate) fn with(self, other: Effects) -> Effects {
        Effects(self.0 | other.0)
    }

    /// Whether any of `bits` is set.
    #[inline]
    pub(crate) fn has(self, bits: u64) -> bool {
        self.0 & bits != 0
    }

    /// The connection must be discarded: a setting was assigned that the wing cannot put back.
    pub(crate) fn discards(self) -> bool {
        self.has(Self::OTHER_SETTING)
    }

    /// What no setting undoes may be there (temporary objects, attached databases, anything
    /// raw access did): the connection is compared with a fresh one, and discarded unless equal.
    pub(crate) fn needs_state_check(self) -> bool {
        self.has(Self::STATE)
    }

    /// The restorable pragmas assigned, by index into [`RESTORABLE`].
    pub(crate) fn pragmas(self) -> impl Iterator<Item = usize> {
        let bits = self.0 & Self::PRAGMAS;
        (0..RESTORABLE.len()).filter(move |i| bits & (1 << i) != 0)
    }

    /// This set without the bits that only describe the statement (`SEEN`, `TX`, `SCHEMA`):
    /// what the session keeps.
    #[must_use]
    pub(crate) fn lasting(self) -> Effects {
        Effects(self.0 & !(Self::SEEN | Self::TX | Self::SCHEMA))
    }
}

/// What `PRAGMA [schema.]name [= value | (value)]` does to the session, as reported by the
/// engine: `assigned` when the statement has a value or argument, `schema` when qualified.
pub(crate) fn pragma_effects(name: &str, assigned: bool, schema: Option<&str>) -> Effects {
    if !assigned {
        // A read: `PRAGMA name` changes nothing.
        return Effects::NONE;
    }
    let is = |n: &&str| n.eq_ignore_ascii_case(name);
    if NOTHING_TO_UNDO.iter().any(is) {
        return Effects::NONE;
    }
    if name.eq_ignore_ascii_case("journal_mode")
        && schema.is_none_or(|s| s.eq_ignore_ascii_case("main"))
    {
        return Effects(Effects::JOURNAL_MODE);
    }
    match RESTORABLE.iter().position(is) {
        // Put back for `main` only: a setting of another schema is not restored.
        Some(i) if schema.is_none_or(|s| s.eq_ignore_ascii_case("main")) => Effects(1 << i),
        _ => Effects(Effects::OTHER_SETTING),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pragmas_are_read_restored_or_discarded() {
        assert_eq!(pragma_effects("cache_size", false, None), Effects::NONE);
        let e = pragma_effects("Cache_Size", true, None);
        assert_eq!(e.pragmas().collect::<Vec<_>>(), vec![4]);
        assert!(!e.discards());
        assert!(
            pragma_effects("cache_size", true, Some("main"))
                .pragmas()
                .count()
                == 1
        );
        assert!(pragma_effects("cache_size", true, Some("temp")).discards());
        let j = pragma_effects("journal_mode", true, None);
        assert!(j.needs_state_check() && !j.discards());
        assert!(pragma_effects("locking_mode", true, None).discards());
        assert!(pragma_effects("case_sensitive_like", true, None).discards());
        assert!(pragma_effects("no_such_pragma", true, None).discards());
        assert_eq!(pragma_effects("table_info", true, None), Effects::NONE);
        assert_eq!(pragma_effects("user_version", true, None), Effects::NONE);
    }

    #[test]
    fn bits_do_not_overlap() {
        assert!(RESTORABLE.len() < 55);
        assert_eq!(
            Effects::PRAGMAS & (Effects::STATE | Effects::OTHER_SETTING),
            0
        );
        let e = Effects(Effects::SEEN | Effects::TX | Effects::TEMP);
        assert_eq!(e.lasting(), Effects(Effects::TEMP));
        assert!(e.needs_state_check() && !e.discards());
    }
}
