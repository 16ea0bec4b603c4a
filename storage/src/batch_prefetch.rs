//! The batch prefetch: before a connection runs a pipeline's commands one by one, the memory
//! each of them will touch is asked for, step by step over the whole batch, so that the misses
//! of different keys overlap instead of following one another.
//!
//! A write of a cached key touches four places at random in memory, each found from the one
//! before: the record cache's index slot, its entry (which keeps the key's index hint), the
//! index entry the hint names (which holds the replaced record's location), and the dead bit
//! of that record in its segment's dead-record map. Run one request at a time, each is a miss
//! the CPU waits for. Here each step is taken for every key of the batch before the next step,
//! reading only lines the step before asked for, so a batch of 16 keys costs about four rounds
//! of misses instead of 64 one after another. A read of a cached key needs the first two.
//!
//! Everything here is a hint: nothing changes, a key that is not cached (or whose hint is stale)
//! just stops early, and the commands then run as they would have without it. Nothing may run
//! between the prefetch and the commands for it to help, which is why the node calls it right
//! before running a parsed batch, in the same synchronous step. docs/BENCHMARKS.md (seventeenth
//! session) has the A/B.

use crate::disk::Disk;
use crate::index::IndexHint;
use crate::state::State;

/// Most keys one round of the batch prefetch follows at once (a longer batch is taken in
/// rounds of this many): 16 misses in flight is about what one core's fill buffers hold.
pub const PREFETCH_BATCH_KEYS_MAX: usize = 16;

/// A key a command is about to run on, for [`crate::Store::prefetch`]: its stored key (as the
/// store indexes it), and whether the command writes it (a read needs only the cache's lines).
#[derive(Debug, Clone, Copy)]
pub struct Upcoming<'a> {
    pub key: &'a [u8],
    pub write: bool,
}

impl<D: Disk> State<D> {
    /// Asks for the lines the commands on `keys` will touch (see the module docs).
    pub fn prefetch(&self, keys: &[Upcoming<'_>]) {
        for round in keys.chunks(PREFETCH_BATCH_KEYS_MAX) {
            self.prefetch_round(round);
        }
    }

    fn prefetch_round(&self, keys: &[Upcoming<'_>]) {
        let n = keys.len();
        let mut hashes = [0u64; PREFETCH_BATCH_KEYS_MAX];
        for (k, h) in keys.iter().zip(&mut hashes) {
            *h = self.cache.hash_of(k.key);
            self.cache.prefetch_slot(*h);
        }
        let mut entries = [None; PREFETCH_BATCH_KEYS_MAX];
        for (h, e) in hashes[..n].iter().zip(&mut entries) {
            *e = self.cache.prefetch_entry(*h);
        }
        let mut hints = [IndexHint::NONE; PREFETCH_BATCH_KEYS_MAX];
        for i in (0..n).filter(|&i| keys[i].write) {
            if let Some(at) = entries[i] {
                hints[i] = self.cache.hint_at(at, hashes[i]);
                self.index.prefetch_hinted(hints[i]);
            }
        }
        for i in (0..n).filter(|&i| keys[i].write && hints[i] != IndexHint::NONE) {
            if let Some(old) = self.index.hinted_entry(hints[i]) {
                let old = old.location();
                self.segments.prefetch_dead_bit(old.segment(), old.offset());
            }
        }
    }
}
