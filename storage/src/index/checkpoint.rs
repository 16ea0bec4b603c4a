//! The index as checkpoint sections: a snapshot to write, and validation to read one back.
//!
//! The sections are exactly the static run's three arrays (key arena, little-endian `u32` end
//! offsets, 24-byte entries), so writing a snapshot shares the run's buffers and loading one is a
//! copy of each section plus one validation pass. The entry and offset types have alignment 1,
//! which lets zerocopy view any byte slice as an array of them without copying or `unsafe`.

use std::rc::Rc;

use zerocopy::byteorder::little_endian::U32;
use zerocopy::{FromBytes, IntoBytes};

use super::entry::{is_dead, IndexEntry};
use super::sorted_run::SortedRun;
use crate::constants::KEY_BYTES_MAX;

/// The live index at one moment, sorted, detached from the index so a checkpoint writer can hold
/// it across await points while the index keeps changing.
pub struct IndexSnapshot {
    pub keys: Rc<[u8]>,
    /// End offset of each key in `keys`.
    pub ends: Rc<[U32]>,
    /// Live entries only, in key order.
    pub entries: Vec<IndexEntry>,
}

impl IndexSnapshot {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The end offsets as written to the checkpoint (little-endian `u32`s).
    pub fn ends_bytes(&self) -> &[u8] {
        self.ends.as_bytes()
    }

    /// The entries as written to the checkpoint (24 bytes each).
    pub fn entries_bytes(&self) -> &[u8] {
        self.entries.as_bytes()
    }
}

impl std::fmt::Debug for IndexSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexSnapshot")
            .field("keys", &self.len())
            .field("key_bytes", &self.keys.len())
            .finish()
    }
}

/// Validates checkpoint sections and builds a static run from copies of them.
pub(super) fn decode(
    keys: &[u8],
    ends: &[u8],
    entries: &[u8],
    arena_bytes_max: u64,
) -> Result<SortedRun, String> {
    let ends = <[U32]>::ref_from_bytes(ends)
        .map_err(|_| format!("end offsets section is {} bytes, not a multiple of 4", ends.len()))?;
    let entries = <[IndexEntry]>::ref_from_bytes(entries)
        .map_err(|_| format!("entries section is {} bytes, not a multiple of 24", entries.len()))?;
    if ends.len() != entries.len() {
        return Err(format!("{} end offsets but {} entries", ends.len(), entries.len()));
    }
    if keys.len() as u64 > arena_bytes_max {
        return Err(format!("key section is {} bytes; the limit is {arena_bytes_max}", keys.len()));
    }
    check_keys(keys, ends)?;
    check_entries(entries)?;
    Ok(SortedRun::new(Rc::from(keys), Rc::from(ends), entries.to_vec()))
}

/// One pass: every key is in bounds, 1..=KEY_BYTES_MAX long and greater than the one before.
fn check_keys(keys: &[u8], ends: &[U32]) -> Result<(), String> {
    let mut start = 0;
    let mut prev: &[u8] = &[];
    for (i, end) in ends.iter().enumerate() {
        let key = key_at(keys, i, start, end.get() as usize)?;
        if i > 0 && key <= prev {
            return Err(format!("key {i} is not greater than key {}", i - 1));
        }
        (prev, start) = (key, start + key.len());
    }
    if start != keys.len() {
        return Err(format!(
            "last end offset is {start} but the key section is {} bytes",
            keys.len()
        ));
    }
    Ok(())
}

fn key_at(keys: &[u8], i: usize, start: usize, end: usize) -> Result<&[u8], String> {
    if end > keys.len() {
        return Err(format!("key {i} ends at {end}, past the key section ({} bytes)", keys.len()));
    }
    if end <= start {
        return Err(format!("key {i} ends at {end}, not after its start {start} (empty key)"));
    }
    if end - start > KEY_BYTES_MAX {
        return Err(format!("key {i} is {} bytes; the limit is {KEY_BYTES_MAX}", end - start));
    }
    Ok(&keys[start..end])
}

fn check_entries(entries: &[IndexEntry]) -> Result<(), String> {
    match entries.iter().position(is_dead) {
        Some(i) => Err(format!("entry {i} has the reserved dead location")),
        None => Ok(()),
    }
}
