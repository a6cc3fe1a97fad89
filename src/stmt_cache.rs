//! The per-connection cache of described statements of the in-process backends (SQLite and
//! Turso): keyed by the SQL text as the caller wrote it, once per translation mode (the same
//! text can mean different statements with translation on and off), and bounded by the pool's
//! `statement_cache_capacity`.

use std::collections::HashMap;
use std::sync::Arc;

use crate::translation::TranslationMode;

/// Statements of one connection, by SQL text and translation mode.
pub(crate) struct StmtCache<S> {
    slots: [HashMap<Box<str>, Arc<S>>; 2],
}

impl<S> StmtCache<S> {
    pub(crate) fn new() -> Self {
        Self {
            slots: [HashMap::new(), HashMap::new()],
        }
    }

    fn slot(mode: TranslationMode) -> usize {
        usize::from(mode == TranslationMode::Off)
    }

    /// The cached statement for `sql` under `mode`.
    #[inline]
    pub(crate) fn get(&self, sql: &str, mode: TranslationMode) -> Option<&Arc<S>> {
        self.slots[Self::slot(mode)].get(sql)
    }

    /// Caches `stmt` for `sql` under `mode`. When that mode already holds `capacity` statements
    /// (at least one), they are all dropped first: a connection that keeps preparing new SQL
    /// (built with values inlined, say) holds a bounded number of engine statements, and the
    /// statements a loop reuses are back after one miss each.
    pub(crate) fn insert(
        &mut self,
        sql: &str,
        mode: TranslationMode,
        stmt: Arc<S>,
        capacity: usize,
    ) {
        let slot = &mut self.slots[Self::slot(mode)];
        if slot.len() >= capacity.max(1) && !slot.contains_key(sql) {
            slot.clear();
        }
        slot.insert(sql.into(), stmt);
    }

    /// Every cached statement, for resetting before [`Self::clear`].
    #[cfg_attr(not(feature = "turso"), allow(dead_code))]
    pub(crate) fn values(&self) -> impl Iterator<Item = &Arc<S>> {
        self.slots.iter().flat_map(HashMap::values)
    }

    /// Forgets every statement.
    #[cfg_attr(not(feature = "turso"), allow(dead_code))]
    pub(crate) fn clear(&mut self) {
        for slot in &mut self.slots {
            slot.clear();
        }
    }

    /// How many statements are cached, over both modes.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.slots.iter().map(HashMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_within_capacity_per_mode() {
        let mut c = StmtCache::new();
        for i in 0..10 {
            c.insert(&format!("SELECT {i}"), TranslationMode::On, Arc::new(i), 4);
            assert!(c.len() <= 4, "after {i}: {}", c.len());
        }
        // The statement just inserted is always there.
        assert_eq!(c.get("SELECT 9", TranslationMode::On).map(|s| **s), Some(9));
        // The two modes are separate entries for the same text.
        c.insert("SELECT 9", TranslationMode::Off, Arc::new(90), 4);
        assert_eq!(c.get("SELECT 9", TranslationMode::On).map(|s| **s), Some(9));
        assert_eq!(
            c.get("SELECT 9", TranslationMode::Off).map(|s| **s),
            Some(90)
        );
    }

    #[test]
    fn replacing_a_cached_statement_keeps_the_others() {
        let mut c = StmtCache::new();
        for i in 0..3 {
            c.insert(&format!("SELECT {i}"), TranslationMode::On, Arc::new(i), 3);
        }
        // Full, but this text is already cached: a replacement, not a new entry.
        c.insert("SELECT 1", TranslationMode::On, Arc::new(11), 3);
        assert_eq!(c.len(), 3);
        assert_eq!(
            c.get("SELECT 1", TranslationMode::On).map(|s| **s),
            Some(11)
        );
        assert_eq!(c.get("SELECT 0", TranslationMode::On).map(|s| **s), Some(0));
    }

    #[test]
    fn zero_capacity_still_keeps_the_latest() {
        let mut c = StmtCache::new();
        c.insert("a", TranslationMode::On, Arc::new(1), 0);
        c.insert("b", TranslationMode::On, Arc::new(2), 0);
        assert_eq!(c.len(), 1);
        assert!(c.get("b", TranslationMode::On).is_some());
        c.clear();
        assert_eq!(c.len(), 0);
    }
}
