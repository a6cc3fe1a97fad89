//! The per-connection cache of prepared statements, the same on every backend: keyed by the SQL
//! text as the caller wrote it, once per translation mode (the same text can mean different
//! statements with translation on and off), bounded by the pool's `statement_cache_capacity`,
//! evicting the least recently used statement when full, and counting what it does. A failed
//! prepare is never inserted.

use std::collections::HashMap;
use std::sync::Arc;

use crate::translation::TranslationMode;

/// What a connection's statement cache has done since the connection was opened (see
/// [`crate::MiddlewarePoolConnection::statement_cache_stats`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StatementCacheStats {
    /// Lookups that found the statement prepared.
    pub hits: u64,
    /// Lookups that did not (the statement was then prepared, and cached if that worked).
    pub misses: u64,
    /// Statements dropped, least recently used first, to stay within the capacity.
    pub evictions: u64,
    /// Statements cached now.
    pub cached: usize,
    /// The most it keeps (the pool's `statement_cache_capacity`).
    pub capacity: usize,
}

type CacheCounters = StatementCacheStats;

/// Hashing with foldhash (seeded per process): the keys are the application's SQL texts, and
/// SipHash would cost a per-call lookup several times more.
type Map<S> = HashMap<Arc<str>, Entry<S>, foldhash::fast::RandomState>;

struct Entry<S> {
    stmt: Arc<S>,
    /// The entry's key again, for the cache's `last` to share.
    key: Arc<str>,
    /// The cache's clock when the statement was last looked up or inserted.
    used: u64,
}

/// Statements of one connection, by SQL text and translation mode.
pub(crate) struct StmtCache<S> {
    slots: [Map<S>; 2],
    clock: u64,
    counters: CacheCounters,
    /// The entry the last hit found (its slot, its key and its statement), until anything
    /// else is looked up, inserted or removed: a loop that runs one statement compares its
    /// text once instead of hashing it and probing the map. Its entry is the most recently
    /// used one for as long as it is set, so skipping the entry's `used` stamp on such a hit
    /// changes no eviction.
    last: Option<(usize, Arc<str>, Arc<S>)>,
}

impl<S> StmtCache<S> {
    pub(crate) fn new() -> Self {
        Self {
            slots: [Map::default(), Map::default()],
            clock: 0,
            counters: CacheCounters::default(),
            last: None,
        }
    }

    fn slot(mode: TranslationMode) -> usize {
        usize::from(mode == TranslationMode::Off)
    }

    /// The cached statement for `sql` under `mode`, marked as just used; the lookup is counted,
    /// as a hit or a miss.
    #[allow(
        dead_code,
        reason = "the embedded engines' wings count their lookups themselves (find, count): a build with only those does not call it"
    )]
    #[inline]
    pub(crate) fn get(&mut self, sql: &str, mode: TranslationMode) -> Option<&Arc<S>> {
        let hit = self.find(sql, mode).is_some();
        self.count(hit);
        self.last.as_ref().filter(|_| hit).map(|(_, _, stmt)| stmt)
    }

    /// [`Self::get`] without counting: for a caller that may still go on to `get` (a wing's
    /// [`cached`](crate::contract::Wing::cached) before its `prepare`), and counts a hit it
    /// keeps itself with [`Self::count`], so that every lookup is counted once.
    #[inline]
    pub(crate) fn find(&mut self, sql: &str, mode: TranslationMode) -> Option<&Arc<S>> {
        self.clock += 1;
        let slot = Self::slot(mode);
        if self
            .last
            .as_ref()
            .is_some_and(|(s, k, _)| *s == slot && **k == *sql)
        {
            return self.last.as_ref().map(|(_, _, stmt)| stmt);
        }
        let clock = self.clock;
        let e = self.slots[slot].get_mut(sql)?;
        e.used = clock;
        let (k, stmt) = (Arc::clone(&e.key), Arc::clone(&e.stmt));
        Some(&self.last.insert((slot, k, stmt)).2)
    }

    /// Counts one lookup, a hit or a miss.
    #[inline]
    pub(crate) fn count(&mut self, hit: bool) {
        if hit {
            self.counters.hits += 1;
        } else {
            self.counters.misses += 1;
        }
    }

    /// Caches `stmt` for `sql` under `mode`. When the cache already holds `capacity` statements
    /// (at least one) over both modes, the least recently used one is dropped first, so a
    /// connection that keeps preparing new SQL (built with values inlined, say) holds a bounded
    /// number of engine statements while the statements a loop reuses stay.
    /// Returns the statement evicted, for engines that close it on the server themselves.
    pub(crate) fn insert(
        &mut self,
        sql: &str,
        mode: TranslationMode,
        stmt: Arc<S>,
        capacity: usize,
    ) -> Option<Arc<S>> {
        self.clock += 1;
        self.last = None;
        let slot = Self::slot(mode);
        let evicted = if !self.slots[slot].contains_key(sql) && self.len() >= capacity.max(1) {
            self.evict_oldest()
        } else {
            None
        };
        let key: Arc<str> = sql.into();
        self.slots[slot].insert(
            Arc::clone(&key),
            Entry {
                stmt,
                key,
                used: self.clock,
            },
        );
        evicted
    }

    fn evict_oldest(&mut self) -> Option<Arc<S>> {
        let oldest = self
            .slots
            .iter()
            .enumerate()
            .flat_map(|(i, m)| m.iter().map(move |(k, e)| (e.used, i, k)))
            .min_by_key(|(used, _, _)| *used)
            .map(|(_, i, k)| (i, k.clone()));
        let (i, k) = oldest?;
        self.counters.evictions += 1;
        self.slots[i].remove(&k).map(|e| e.stmt)
    }

    /// Every cached statement (Turso: to reset them before [`Self::clear`]; Postgres: to pick
    /// those a session reset makes stale).
    #[allow(
        dead_code,
        reason = "an engine that never walks its cache does not use it"
    )]
    pub(crate) fn values(&self) -> impl Iterator<Item = &Arc<S>> {
        self.slots.iter().flat_map(HashMap::values).map(|e| &e.stmt)
    }

    /// Forgets the statement for `sql` under `mode` (not counted as an eviction).
    #[allow(
        dead_code,
        reason = "only an engine that forgets single statements uses it"
    )]
    pub(crate) fn remove(&mut self, sql: &str, mode: TranslationMode) {
        self.last = None;
        self.slots[Self::slot(mode)].remove(sql);
    }

    /// Forgets every statement (not counted as evictions).
    pub(crate) fn clear(&mut self) {
        self.last = None;
        for slot in &mut self.slots {
            slot.clear();
        }
    }

    /// How many statements are cached, over both modes.
    pub(crate) fn len(&self) -> usize {
        self.slots.iter().map(HashMap::len).sum()
    }

    /// Hits, misses and evictions so far, with the current size and `capacity`.
    pub(crate) fn stats(&self, capacity: usize) -> StatementCacheStats {
        StatementCacheStats {
            cached: self.len(),
            capacity,
            ..self.counters
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ON: TranslationMode = TranslationMode::On;
    const OFF: TranslationMode = TranslationMode::Off;

    #[test]
    fn stays_within_capacity_over_both_modes() {
        let mut c = StmtCache::new();
        for i in 0..10 {
            let mode = if i % 2 == 0 { ON } else { OFF };
            c.insert(&format!("SELECT {i}"), mode, Arc::new(i), 4);
            assert!(c.len() <= 4, "after {i}: {}", c.len());
        }
        // The statement just inserted is always there.
        assert_eq!(c.get("SELECT 9", OFF).map(|s| **s), Some(9));
        // The two modes are separate entries for the same text.
        c.insert("SELECT 9", ON, Arc::new(90), 4);
        assert_eq!(c.get("SELECT 9", OFF).map(|s| **s), Some(9));
        assert_eq!(c.get("SELECT 9", ON).map(|s| **s), Some(90));
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let mut c = StmtCache::new();
        c.insert("a", ON, Arc::new(1), 2);
        c.insert("b", ON, Arc::new(2), 2);
        // `a` is used again, so `b` is the oldest when `c` needs room.
        assert!(c.get("a", ON).is_some());
        c.insert("c", ON, Arc::new(3), 2);
        assert!(c.get("a", ON).is_some(), "the statement in use was evicted");
        assert!(c.get("b", ON).is_none());
        assert!(c.get("c", ON).is_some());
        let n = c.stats(0);
        assert_eq!((n.hits, n.misses, n.evictions), (3, 1, 1));
    }

    #[test]
    fn a_hot_statement_survives_a_stream_of_one_off_statements() {
        // The old policy (clear everything when full) lost the hot statement every few inserts.
        let mut c = StmtCache::new();
        for i in 0..20 {
            if c.get("hot", ON).is_none() {
                c.insert("hot", ON, Arc::new(-1), 4);
            }
            c.insert(&format!("SELECT {i}"), ON, Arc::new(i), 4);
        }
        let n = c.stats(0);
        assert_eq!((n.hits, n.misses), (19, 1), "{n:?}");
        assert_eq!(c.len(), 4);
    }

    #[test]
    fn replacing_a_cached_statement_keeps_the_others() {
        let mut c = StmtCache::new();
        for i in 0..3 {
            c.insert(&format!("SELECT {i}"), ON, Arc::new(i), 3);
        }
        // Full, but this text is already cached: a replacement, not a new entry.
        c.insert("SELECT 1", ON, Arc::new(11), 3);
        assert_eq!(c.len(), 3);
        assert_eq!(c.get("SELECT 1", ON).map(|s| **s), Some(11));
        assert_eq!(c.get("SELECT 0", ON).map(|s| **s), Some(0));
        assert_eq!(c.stats(0).evictions, 0);
    }

    #[test]
    fn repeated_hits_keep_counts_and_eviction_order() {
        let mut c = StmtCache::new();
        c.insert("a", ON, Arc::new(1), 2);
        c.insert("b", ON, Arc::new(2), 2);
        // `b` again and again (the last hit's shortcut), then `a`: `b` is now the oldest.
        for _ in 0..3 {
            assert_eq!(c.get("b", ON).map(|s| **s), Some(2));
        }
        assert_eq!(c.get("a", ON).map(|s| **s), Some(1));
        assert_eq!(c.get("a", ON).map(|s| **s), Some(1));
        // The same text in the other mode is another entry.
        assert!(c.get("a", OFF).is_none());
        c.insert("c", ON, Arc::new(3), 2);
        assert!(c.get("b", ON).is_none(), "the oldest was not evicted");
        assert_eq!(c.get("a", ON).map(|s| **s), Some(1));
        let n = c.stats(0);
        assert_eq!((n.hits, n.misses, n.evictions), (6, 2, 1), "{n:?}");
        // Removing or clearing forgets the last hit too.
        c.remove("a", ON);
        assert!(c.get("a", ON).is_none());
        assert!(c.get("c", ON).is_some());
        c.clear();
        assert!(c.get("c", ON).is_none());
        // A replacement is found, not the statement it replaced.
        c.insert("d", ON, Arc::new(4), 2);
        assert_eq!(c.get("d", ON).map(|s| **s), Some(4));
        c.insert("d", ON, Arc::new(40), 2);
        assert_eq!(c.get("d", ON).map(|s| **s), Some(40));
    }

    #[test]
    fn zero_capacity_still_keeps_the_latest() {
        let mut c = StmtCache::new();
        c.insert("a", ON, Arc::new(1), 0);
        c.insert("b", ON, Arc::new(2), 0);
        assert_eq!(c.len(), 1);
        assert!(c.get("b", ON).is_some());
        c.clear();
        assert_eq!(c.len(), 0);
    }
}
