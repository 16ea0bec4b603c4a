//! What the index stores per key: a packed record location plus version and expiry.

use zerocopy::byteorder::little_endian::U64;
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::constants::{
    LOCATION_LENGTH_BITS, LOCATION_OFFSET_BITS, LOCATION_SEGMENT_BITS, RECORD_ALIGN_BYTES,
};

/// Where a record lives: segment id (20 bits), `offset / 8` (23 bits) and `padded length / 8`
/// (18 bits), packed into one `u64`. Offsets and lengths are multiples of 8 by construction.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location(u64);

impl Location {
    /// Packs a location. `offset` and `len` must be multiples of 8 and within the packed widths.
    pub fn new(segment: u32, offset: u64, len: u64) -> Location {
        assert!(u64::from(segment) < 1 << LOCATION_SEGMENT_BITS, "segment id {segment} too large");
        assert!(
            offset.is_multiple_of(RECORD_ALIGN_BYTES) && len.is_multiple_of(RECORD_ALIGN_BYTES)
        );
        let off8 = offset / RECORD_ALIGN_BYTES;
        let len8 = len / RECORD_ALIGN_BYTES;
        assert!(off8 < 1 << LOCATION_OFFSET_BITS, "offset {offset} too large");
        assert!(len8 < 1 << LOCATION_LENGTH_BITS, "length {len} too large");
        Location(
            (u64::from(segment) << (LOCATION_OFFSET_BITS + LOCATION_LENGTH_BITS))
                | (off8 << LOCATION_LENGTH_BITS)
                | len8,
        )
    }

    pub fn segment(self) -> u32 {
        (self.0 >> (LOCATION_OFFSET_BITS + LOCATION_LENGTH_BITS)) as u32
    }

    pub fn offset(self) -> u64 {
        ((self.0 >> LOCATION_LENGTH_BITS) & ((1 << LOCATION_OFFSET_BITS) - 1)) * RECORD_ALIGN_BYTES
    }

    /// Padded record length (header + key + value, rounded up to 8).
    pub fn len(self) -> u64 {
        (self.0 & ((1 << LOCATION_LENGTH_BITS) - 1)) * RECORD_ALIGN_BYTES
    }

    pub fn is_empty(self) -> bool {
        self.len() == 0
    }

    pub fn to_raw(self) -> u64 {
        self.0
    }

    pub fn from_raw(raw: u64) -> Location {
        Location(raw)
    }
}

impl std::fmt::Debug for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "seg{}@{}+{}", self.segment(), self.offset(), self.len())
    }
}

/// One index value: 24 bytes, little-endian, alignment 1, so the checkpoint stores the array as is.
#[derive(Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct IndexEntry {
    location: U64,
    version: U64,
    expiry_ms: U64,
}

const _: () = assert!(std::mem::size_of::<IndexEntry>() == 24);

impl IndexEntry {
    pub fn new(location: Location, version: u64, expiry_ms: u64) -> IndexEntry {
        IndexEntry {
            location: U64::new(location.0),
            version: U64::new(version),
            expiry_ms: U64::new(expiry_ms),
        }
    }

    pub fn location(&self) -> Location {
        Location(self.location.get())
    }

    pub fn version(&self) -> u64 {
        self.version.get()
    }

    /// Expiry in ms since the Unix epoch; 0 means never.
    pub fn expiry_ms(&self) -> u64 {
        self.expiry_ms.get()
    }

    /// True if the entry has expired at `now_ms`.
    pub fn is_expired(&self, now_ms: u64) -> bool {
        let e = self.expiry_ms();
        e != 0 && e <= now_ms
    }
}

impl std::fmt::Debug for IndexEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IndexEntry")
            .field("location", &self.location())
            .field("version", &self.version())
            .field("expiry_ms", &self.expiry_ms())
            .finish()
    }
}

/// The raw location that marks a deleted slot. `Location::new` cannot produce it: a packed
/// location uses only the low 61 bits.
pub(super) const DEAD_LOCATION_RAW: u64 = u64::MAX;

/// Whether `entry` is the dead sentinel of a deleted slot ([`dead_entry`]).
pub(super) fn is_dead(entry: &IndexEntry) -> bool {
    entry.location().to_raw() == DEAD_LOCATION_RAW
}

/// The entry a deleted slot holds until a merge drops it or an insert revives it.
pub(super) fn dead_entry() -> IndexEntry {
    IndexEntry::new(Location::from_raw(DEAD_LOCATION_RAW), 0, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn location_packs_and_unpacks_extremes() {
        for (seg, off, len) in [
            (0, 0, 8),
            (
                crate::constants::SEGMENT_ID_MAX,
                64 * 1024 * 1024 - 8,
                crate::constants::RECORD_BYTES_MAX,
            ),
        ] {
            let l = Location::new(seg, off, len);
            assert_eq!((l.segment(), l.offset(), l.len()), (seg, off, len));
        }
    }
}
