//! The delta part of the index: keys inserted since the last merge, in an insert-only skiplist.
//!
//! Nodes, towers and key bytes live in three `Vec`s addressed by `u32` indices instead of one
//! allocation per node, so `memory_bytes()` is exact (capacities times element sizes) and the
//! per-key cost stays small: a 32-byte node (key end offset, tower start, 24-byte entry) plus on
//! average 1.33 `u32` links at branching factor 4, about 37 bytes. The delta is kept to a small
//! fraction of the static run, so the index as a whole stays within its 32 B/key budget.
//!
//! Nothing is ever unlinked: deleting marks the entry dead and re-inserting revives it, so node
//! indices stay stable and the key of node `i` is always `keys[end(i - 1)..end(i)]`. Node heights
//! are never stored: a search only reads level `l` of a node it reached through a level-`l` link.

use super::entry::{dead_entry, is_dead, IndexEntry};

/// End of a level's list.
pub(super) const NIL: u32 = u32::MAX;
/// The head of the list, before every node.
pub(super) const HEAD: u32 = u32::MAX - 1;
/// Enough for 4^16 nodes; the delta is merged long before that.
const MAX_HEIGHT: usize = 16;

#[derive(Clone, Copy)]
#[repr(C)]
struct Node {
    /// End offset of this node's key in `keys`; it starts at the previous node's end.
    key_end: u32,
    /// Index of this node's level-0 link in `towers`; level `l` is at `tower + l`.
    tower: u32,
    entry: IndexEntry,
}

const _: () = assert!(std::mem::size_of::<Node>() == 32);

/// The last node before the searched key on every level (`HEAD` if none).
pub(super) type Preds = [u32; MAX_HEIGHT];

pub(super) struct SkipList {
    keys: Vec<u8>,
    nodes: Vec<Node>,
    towers: Vec<u32>,
    head: [u32; MAX_HEIGHT],
    /// Levels in use: the tallest tower so far.
    height: usize,
    /// xorshift64 state for tower heights; fixed seed so runs are reproducible.
    rng: u64,
    dead: usize,
}

impl SkipList {
    pub(super) fn new() -> SkipList {
        SkipList {
            keys: Vec::new(),
            nodes: Vec::new(),
            towers: Vec::new(),
            head: [NIL; MAX_HEIGHT],
            height: 1,
            rng: 0x9E37_79B9_7F4A_7C15,
            dead: 0,
        }
    }

    /// Nodes, live and dead.
    pub(super) fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub(super) fn live(&self) -> usize {
        self.nodes.len() - self.dead
    }

    pub(super) fn dead(&self) -> usize {
        self.dead
    }

    pub(super) fn arena_bytes(&self) -> usize {
        self.keys.len()
    }

    pub(super) fn key(&self, node: u32) -> &[u8] {
        let i = node as usize;
        let start = if i == 0 { 0 } else { self.nodes[i - 1].key_end as usize };
        &self.keys[start..self.nodes[i].key_end as usize]
    }

    pub(super) fn entry(&self, node: u32) -> IndexEntry {
        self.nodes[node as usize].entry
    }

    pub(super) fn is_dead(&self, node: u32) -> bool {
        is_dead(&self.nodes[node as usize].entry)
    }

    /// Stores `entry` in `node`, reviving it if dead, and returns the previous live entry.
    pub(super) fn put(&mut self, node: u32, entry: IndexEntry) -> Option<IndexEntry> {
        assert!(!is_dead(&entry));
        let prev = std::mem::replace(&mut self.nodes[node as usize].entry, entry);
        if is_dead(&prev) {
            self.dead -= 1;
            return None;
        }
        Some(prev)
    }

    /// Marks `node` dead and returns its entry if it was live.
    pub(super) fn kill(&mut self, node: u32) -> Option<IndexEntry> {
        let prev = std::mem::replace(&mut self.nodes[node as usize].entry, dead_entry());
        if is_dead(&prev) {
            return None;
        }
        self.dead += 1;
        Some(prev)
    }

    /// The node after `at` (a node or `HEAD`) on `level`, or `NIL`.
    pub(super) fn next(&self, at: u32, level: usize) -> u32 {
        if at == HEAD {
            return self.head[level];
        }
        self.towers[self.nodes[at as usize].tower as usize + level]
    }

    /// The last node whose key satisfies `before` (`HEAD` if none). `before` must hold for a
    /// prefix of the key order.
    pub(super) fn last_before(&self, before: impl Fn(&[u8]) -> bool) -> u32 {
        let mut at = HEAD;
        for level in (0..self.height).rev() {
            at = self.advance(at, level, &before);
        }
        at
    }

    fn advance(&self, mut at: u32, level: usize, before: &impl Fn(&[u8]) -> bool) -> u32 {
        loop {
            let next = self.next(at, level);
            if next == NIL || !before(self.key(next)) {
                return at;
            }
            at = next;
        }
    }

    /// The node holding exactly `key` (live or dead), else the insertion point for it.
    pub(super) fn seek(&self, key: &[u8]) -> Result<u32, Preds> {
        let mut preds = [HEAD; MAX_HEIGHT];
        let mut at = HEAD;
        for level in (0..self.height).rev() {
            at = self.advance(at, level, &|k: &[u8]| k < key);
            preds[level] = at;
        }
        let next = self.next(at, 0);
        if next != NIL && self.key(next) == key {
            return Ok(next);
        }
        Err(preds)
    }

    /// The node holding exactly `key`, live or dead.
    pub(super) fn find(&self, key: &[u8]) -> Option<u32> {
        let at = self.last_before(|k| k < key);
        let next = self.next(at, 0);
        (next != NIL && self.key(next) == key).then_some(next)
    }

    /// The node before `node` in key order, or `HEAD`.
    pub(super) fn predecessor(&self, node: u32) -> u32 {
        let key = self.key(node);
        self.last_before(|k| k < key)
    }

    /// Links a new node for `key`, which must be absent, after `preds` from `seek`.
    pub(super) fn insert(&mut self, preds: &Preds, key: &[u8], entry: IndexEntry) {
        assert!(!is_dead(&entry));
        assert!(self.nodes.len() < HEAD as usize, "delta node indices exhausted");
        let node = self.nodes.len() as u32;
        let height = self.random_height();
        let tower = self.towers.len();
        assert!(tower + height <= u32::MAX as usize, "delta tower indices exhausted");
        for (level, &pred) in preds.iter().enumerate().take(height) {
            // Levels above the old height have no predecessor but the head; `seek` filled HEAD.
            self.towers.push(self.next(pred, level));
            self.set_next(pred, level, node);
        }
        self.height = self.height.max(height);
        self.keys.extend_from_slice(key);
        let key_end = u32::try_from(self.keys.len()).expect("delta arena is bounded by the index");
        self.nodes.push(Node { key_end, tower: tower as u32, entry });
    }

    fn set_next(&mut self, at: u32, level: usize, to: u32) {
        if at == HEAD {
            self.head[level] = to;
        } else {
            let slot = self.nodes[at as usize].tower as usize + level;
            self.towers[slot] = to;
        }
    }

    /// Height with P(height > h) = 4^-h, from the trailing zero bits of an xorshift64 step.
    fn random_height(&mut self) -> usize {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        (1 + self.rng.trailing_zeros() as usize / 2).min(MAX_HEIGHT)
    }

    /// Exact heap bytes: capacity times element size of each buffer.
    pub(super) fn memory_bytes(&self) -> usize {
        self.keys.capacity()
            + self.nodes.capacity() * std::mem::size_of::<Node>()
            + self.towers.capacity() * std::mem::size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    //! Proves the skiplist keeps key order and finds every key, with a plain sorted list as model.

    use super::*;
    use crate::index::Location;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    #[test]
    fn level0_walk_is_sorted_and_seek_finds_all() {
        let seed = 11;
        let mut rng = StdRng::seed_from_u64(seed);
        let mut list = SkipList::new();
        let mut model: Vec<Vec<u8>> = Vec::new();
        let e = IndexEntry::new(Location::new(1, 8, 8), 1, 0);
        for _ in 0..5000 {
            let len = rng.gen_range(1..6);
            let key: Vec<u8> = (0..len).map(|_| rng.gen_range(0..4u8)).collect();
            if let Err(preds) = list.seek(&key) {
                list.insert(&preds, &key, e);
                model.push(key);
            }
        }
        model.sort();
        let mut walk = Vec::new();
        let (mut prev, mut at) = (HEAD, list.next(HEAD, 0));
        while at != NIL {
            walk.push(list.key(at).to_vec());
            assert_eq!(list.find(list.key(at)), Some(at), "seed {seed}");
            assert_eq!(list.predecessor(at), prev, "seed {seed}");
            (prev, at) = (at, list.next(at, 0));
        }
        assert_eq!(walk, model, "seed {seed}");
    }
}
