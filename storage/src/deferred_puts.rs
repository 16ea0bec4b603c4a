//! Deferred index updates of blind puts, applied a group at a time so that their index
//! searches overlap.
//!
//! A put of a key the record cache does not hold (a blind put: a write-only load's every put)
//! has no index hint, so it searches the sorted run for the key's slot: three dependent reads
//! (the group's samples, the sample ends, the block's keys and entries), each likely a miss,
//! waited for one after another. In the NoSync put profile at pipeline 32 that search was 17% of
//! the shard's CPU (docs/BENCHMARKS.md, twenty-third session). The batch prefetch cannot start
//! it early, because a put's key is known only once the put is decoded, and decoding puts ahead
//! cost more than it saved (eighteenth and twenty-first sessions).
//!
//! So the put appends its record at once (its LSN, its place in the log and its acknowledgement
//! do not change) and leaves its index update here, up to [`DEFERRED_PUTS_MAX`] of them. They
//! are applied, in order, before anything else looks at the state: every borrow of the store's
//! state except the put path's own goes through `StateCell` (`state.rs`), which applies them
//! first, and a put that cannot be deferred (a delete, a put of a cached key, a batch's
//! read-modify-write) applies them before its own change. A group is applied in steps, each
//! taken for every key before the next (`Index::find_overlapped`): the group level, then the
//! block, then the slot (each step asking for the lines the next reads), then the replaced
//! record's dead bit; each put then goes straight to its slot. The misses of the group's
//! searches overlap instead of following one another. Searching each key again after
//! prefetching its lines, instead of keeping the slot, gained nothing (docs/BENCHMARKS.md).
//!
//! A deferred update cannot fail: a put is deferred only if its key is valid and the index's
//! key arena has room for it and every other deferred key even if all of them are new keys.
//! That keeps the store's rule that nothing is appended for a write the index refuses.

use crate::constants::DEFERRED_PUTS_MAX;
use crate::index::{Index, IndexEntry};
use crate::segments::SegmentTable;
use crate::stats::Counters;

/// Puts appended to the log whose index updates wait to be applied as a group.
#[derive(Debug)]
pub(crate) struct DeferredPuts {
    /// The keys one after another.
    keys: Vec<u8>,
    /// Per put: where its key ends in `keys`, and its new entry.
    puts: Vec<(usize, IndexEntry)>,
}

impl DeferredPuts {
    pub fn new() -> DeferredPuts {
        DeferredPuts {
            keys: Vec::with_capacity(DEFERRED_PUTS_MAX * 32),
            puts: Vec::with_capacity(DEFERRED_PUTS_MAX),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.puts.is_empty()
    }

    pub fn is_full(&self) -> bool {
        self.puts.len() >= DEFERRED_PUTS_MAX
    }

    /// Whether a put of `key` may wait here: the index is sure to take it after every key
    /// already here, were all of them new.
    pub fn admits(&self, index: &Index, key: &[u8]) -> bool {
        index.accepts(key, self.keys.len())
    }

    pub fn push(&mut self, key: &[u8], entry: IndexEntry) {
        debug_assert!(!self.is_full());
        self.keys.extend_from_slice(key);
        self.puts.push((self.keys.len(), entry));
    }

    /// Applies the deferred index updates in the order their puts were appended, marking each
    /// replaced record dead in `segments`, and leaves this empty.
    pub fn apply<F>(
        &mut self,
        index: &mut Index,
        segments: &mut SegmentTable<F>,
        counters: &mut Counters,
    ) {
        if self.is_empty() {
            return;
        }
        let n = self.puts.len();
        let hints = index.find_overlapped((0..n).map(|i| self.key(i)));
        // The replaced records' dead bits, asked for now that their entries' lines are in.
        for hint in &hints[..n] {
            if let Some(old) = index.hinted_entry(*hint) {
                let old = old.location();
                segments.prefetch_dead_bit(old.segment(), old.offset());
            }
        }
        for (i, hint) in hints[..n].iter().enumerate() {
            let (key, entry) = (self.key(i), self.puts[i].1);
            let (old, _) = index
                .upsert_hinted(key, entry, *hint)
                .expect("a deferred put fits the index (DeferredPuts::admits)");
            if let Some(old) = old {
                let old = old.location();
                segments.record_died(old.segment(), old.offset(), old.len());
            }
        }
        counters.deferred_groups += 1;
        counters.deferred_puts += n as u64;
        self.keys.clear();
        self.puts.clear();
    }

    fn key(&self, i: usize) -> &[u8] {
        let start = i.checked_sub(1).map_or(0, |p| self.puts[p].0);
        &self.keys[start..self.puts[i].0]
    }
}
