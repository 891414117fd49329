//! The bounded `ETag` cache behind conditional requests.
//!
//! A GET we may repeat (a poll's search, a pull request read, its lists)
//! remembers the answer's `ETag` and body. The next identical GET sends
//! `If-None-Match`; GitHub answers 304 when nothing changed, which costs no
//! rate-limit budget, and we serve the remembered body.
//!
//! The cache is bounded twice — by entry count and by total bytes (keys,
//! `ETag`s, bodies, `Link`s) — and evicts the least recently used entry first,
//! so a daemon polling many repositories for weeks keeps a fixed memory
//! footprint. The recency order is `hashlink`'s `LruCache` (the crate sqlx
//! already brings in); this module only keeps the byte count beside it.

use std::sync::Mutex;

use bytes::Bytes;
use hashlink::LruCache;

/// A remembered answer.
#[derive(Debug, Clone)]
pub(crate) struct CachedAnswer {
    /// The `ETag` to send back as `If-None-Match`.
    pub etag: String,
    /// The answer's body.
    pub body: Bytes,
    /// The answer's `Link` header (pagination), if it had one.
    pub link: Option<String>,
}

#[derive(Debug)]
struct State {
    /// Answers by request key, least recently used first.
    entries: LruCache<String, CachedAnswer>,
    /// Total size of the entries, as [`ConditionalCache::size_of`] counts it.
    bytes: usize,
}

/// A least-recently-used map from request key to answer, bounded by entries
/// and by bytes.
#[derive(Debug)]
pub(crate) struct ConditionalCache {
    max_entries: usize,
    max_bytes: usize,
    state: Mutex<State>,
}

impl ConditionalCache {
    /// A cache holding at most `max_entries` answers and `max_bytes` of bodies.
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        Self {
            max_entries,
            max_bytes,
            state: Mutex::new(State {
                entries: LruCache::new_unbounded(),
                bytes: 0,
            }),
        }
    }

    /// The answer remembered for `key`, marking it recently used.
    pub fn get(&self, key: &str) -> Option<CachedAnswer> {
        let mut state = self.state.lock().expect("conditional cache lock");
        state.entries.get(key).cloned()
    }

    /// Remembers `answer` for `key`, evicting the oldest entries to stay within
    /// bounds. An answer larger than a quarter of the byte bound is not kept
    /// (one huge diff must not flush every poll's entry).
    pub fn insert(&self, key: String, answer: CachedAnswer) {
        let size = Self::size_of(&key, &answer);
        let mut state = self.state.lock().expect("conditional cache lock");
        if let Some(previous) = state.entries.remove(&key) {
            state.bytes -= Self::size_of(&key, &previous);
        }
        if self.max_entries == 0 || size > self.max_bytes / 4 {
            return;
        }
        while state.entries.len() >= self.max_entries || state.bytes + size > self.max_bytes {
            let Some((oldest_key, oldest)) = state.entries.remove_lru() else {
                break;
            };
            state.bytes -= Self::size_of(&oldest_key, &oldest);
        }
        state.bytes += size;
        state.entries.insert(key, answer);
    }

    /// How many entries and bytes are held.
    pub fn usage(&self) -> (usize, usize) {
        let state = self.state.lock().expect("conditional cache lock");
        (state.entries.len(), state.bytes)
    }

    fn size_of(key: &str, answer: &CachedAnswer) -> usize {
        key.len()
            + answer.etag.len()
            + answer.body.len()
            + answer.link.as_ref().map_or(0, String::len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(body: &str) -> CachedAnswer {
        CachedAnswer {
            etag: "\"e\"".to_owned(),
            body: Bytes::from(body.to_owned()),
            link: None,
        }
    }

    #[test]
    fn evicts_the_least_recently_used_entry_past_the_entry_bound() {
        let cache = ConditionalCache::new(2, 1 << 20);
        cache.insert("a".into(), answer("1"));
        cache.insert("b".into(), answer("2"));
        assert!(cache.get("a").is_some());
        cache.insert("c".into(), answer("3"));
        assert!(cache.get("b").is_none(), "b was least recently used");
        assert!(cache.get("a").is_some() && cache.get("c").is_some());
        assert_eq!(cache.usage().0, 2);
    }

    #[test]
    fn stays_within_the_byte_bound() {
        let cache = ConditionalCache::new(100, 400);
        for index in 0..20 {
            cache.insert(format!("key{index}"), answer(&"x".repeat(60)));
            assert!(cache.usage().1 <= 400);
        }
        assert!(cache.get("key19").is_some());
        assert!(cache.get("key0").is_none());
    }

    #[test]
    fn refuses_an_answer_too_big_for_a_quarter_of_the_budget() {
        let cache = ConditionalCache::new(100, 400);
        cache.insert("small".into(), answer("1"));
        cache.insert("huge".into(), answer(&"x".repeat(200)));
        assert!(cache.get("huge").is_none());
        assert!(cache.get("small").is_some());
    }

    #[test]
    fn replacing_and_removing_keep_the_byte_count_exact() {
        let cache = ConditionalCache::new(10, 10_000);
        cache.insert("a".into(), answer("12345"));
        cache.insert("a".into(), answer("1"));
        let (entries, bytes) = cache.usage();
        assert_eq!(entries, 1);
        assert_eq!(bytes, 1 + 3 + 1);
        cache.insert("a".into(), answer(&"y".repeat(3_000)));
        assert_eq!(
            cache.usage(),
            (0, 0),
            "an oversized replacement drops the old entry"
        );
    }
}
