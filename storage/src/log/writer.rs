//! The log's in-memory tail: records appended but not yet written, grouped into chunks.
//!
//! Appending is synchronous and cheap: it assigns the record its location (segment, offset) and
//! its append sequence number, and copies it into the open chunk. The flusher
//! ([`super::group_commit`]) takes every pending chunk at once, pads each to the DMA alignment and
//! writes it; records appended meanwhile form the next chunk, which starts on the next aligned
//! offset. Because every flush is padded, no write ever rewrites a block that an earlier write
//! made durable, so a torn write can only damage records that were never acknowledged as durable.
//!
//! A chunk belongs to one segment. When a record does not fit in the active segment, the open
//! chunk is marked to seal its segment and a new chunk opens the next segment.

use std::collections::VecDeque;

use crate::constants::*;
use crate::index::Location;
use crate::record::{self, RecordMeta};

/// Bytes bound for one segment at one aligned offset.
#[derive(Debug)]
pub struct Chunk {
    pub segment: u32,
    /// Aligned file offset of `bytes[0]`.
    pub base: u64,
    pub bytes: Vec<u8>,
    /// The segment file must be created (header written, directory synced) before this chunk.
    pub creates_segment: bool,
    /// After this chunk the segment is full: fsync it and never write it again.
    pub seals_segment: bool,
}

impl Chunk {
    fn new(segment: u32, base: u64, creates_segment: bool) -> Chunk {
        Chunk { segment, base, bytes: Vec::new(), creates_segment, seals_segment: false }
    }

    /// The record bytes at `loc`, if this chunk holds them.
    pub fn find(&self, loc: Location) -> Option<&[u8]> {
        if loc.segment() != self.segment || loc.offset() < self.base {
            return None;
        }
        let from = (loc.offset() - self.base) as usize;
        self.bytes.get(from..from + loc.len() as usize)
    }
}

/// The appending side of the log.
#[derive(Debug)]
pub struct LogWriter {
    segment_size_bytes: u64,
    /// The segment new records go to.
    active: u32,
    /// Offset the next record will get in the active segment.
    active_end: u64,
    pending: VecDeque<Chunk>,
    /// Append sequence number of the last appended record.
    appended_seq: u64,
    pending_bytes: usize,
    /// Buffers of flushed chunks, kept for the next chunks so that appends in steady state do
    /// not allocate (at most [`SPARE_CHUNK_BUFFERS_MAX`], each at most
    /// [`SPARE_CHUNK_BUFFER_BYTES_MAX`]).
    spare: Vec<Vec<u8>>,
}

/// Most flushed chunk buffers kept for reuse.
pub const SPARE_CHUNK_BUFFERS_MAX: usize = 2;
/// A flushed chunk buffer larger than this is freed instead of kept: kept buffers cost at most
/// `SPARE_CHUNK_BUFFERS_MAX * SPARE_CHUNK_BUFFER_BYTES_MAX` bytes per shard, as much as the
/// unflushed bytes a shard may hold ([`WRITE_BUFFER_BYTES_MAX`]). A NoSync flush at pipeline 32
/// takes 2.9-4.8 MB (16,527 records at the median, 27,215 at most, a 100-byte-value load at 1.2M
/// puts/s); with 4 MiB here, a chunk that grew past it was freed and the next chunk grew again
/// from nothing, and `Vec` growth under `record::encode` was 1.05% of a put's CPU
/// (docs/BENCHMARKS.md, twenty-fifth session).
pub const SPARE_CHUNK_BUFFER_BYTES_MAX: usize = 8 * 1024 * 1024;

/// What [`LogWriter::reserve`] decided for the next records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reservation {
    pub segment: u32,
    pub offset: u64,
    /// A new segment was opened for these records; the caller registers it.
    pub opened_segment: Option<u32>,
    /// The previous active segment was sealed.
    pub sealed_segment: Option<u32>,
}

impl LogWriter {
    /// A writer whose first record goes into the new segment `first_segment`.
    pub fn new(segment_size_bytes: u64, first_segment: u32, appended_seq: u64) -> LogWriter {
        let mut pending = VecDeque::new();
        pending.push_back(Chunk::new(first_segment, SEGMENT_HEADER_BYTES, true));
        LogWriter {
            segment_size_bytes,
            active: first_segment,
            active_end: SEGMENT_HEADER_BYTES,
            pending,
            appended_seq,
            pending_bytes: 0,
            spare: Vec::new(),
        }
    }

    /// Takes back the buffer of a chunk the flusher has written, for a later chunk.
    pub fn recycle(&mut self, mut bytes: Vec<u8>) {
        if self.spare.len() < SPARE_CHUNK_BUFFERS_MAX
            && bytes.capacity() <= SPARE_CHUNK_BUFFER_BYTES_MAX
        {
            bytes.clear();
            self.spare.push(bytes);
        }
    }

    pub fn active_segment(&self) -> u32 {
        self.active
    }

    /// Offset the next record will get in the active segment.
    pub fn active_end(&self) -> u64 {
        self.active_end
    }

    pub fn appended_seq(&self) -> u64 {
        self.appended_seq
    }

    pub fn pending_bytes(&self) -> usize {
        self.pending_bytes
    }

    pub fn has_pending(&self) -> bool {
        self.pending.iter().any(|c| !c.bytes.is_empty() || c.creates_segment || c.seals_segment)
    }

    /// Picks where `total_len` bytes of records go, rotating to segment `next_id()` if they do not
    /// fit in the active one. Nothing is appended yet.
    pub fn reserve(
        &mut self,
        total_len: u64,
        next_id: impl FnOnce() -> Option<u32>,
    ) -> Option<Reservation> {
        assert!(total_len <= BATCH_BYTES_MAX as u64);
        let mut r = Reservation {
            segment: self.active,
            offset: self.active_end,
            opened_segment: None,
            sealed_segment: None,
        };
        if self.active_end + total_len > self.segment_size_bytes {
            let new_id = next_id()?;
            self.seal_active();
            r.sealed_segment = Some(self.active);
            self.active = new_id;
            self.active_end = SEGMENT_HEADER_BYTES;
            let mut chunk = Chunk::new(new_id, SEGMENT_HEADER_BYTES, true);
            chunk.bytes = self.spare.pop().unwrap_or_default();
            self.pending.push_back(chunk);
            r = Reservation {
                segment: new_id,
                offset: SEGMENT_HEADER_BYTES,
                opened_segment: Some(new_id),
                ..r
            };
        }
        Some(r)
    }

    fn seal_active(&mut self) {
        match self.pending.back_mut() {
            Some(c) if c.segment == self.active => c.seals_segment = true,
            _ => {
                let mut c = Chunk::new(self.active, self.active_end, false);
                c.seals_segment = true;
                self.pending.push_back(c);
            }
        }
    }

    /// Appends one record at the reserved position; returns its location and sequence number.
    pub fn append(&mut self, meta: &RecordMeta, key: &[u8], value: &[u8]) -> (Location, u64) {
        assert_eq!(meta.segment_id, self.active, "record must be encoded for the active segment");
        let len = record::padded_len(key.len(), value.len());
        assert!(self.active_end + len <= self.segment_size_bytes, "append without reservation");
        self.appended_seq += 1;
        let chunk = self.open_chunk();
        record::encode(&mut chunk.bytes, meta, key, value);
        let loc = Location::new(self.active, self.active_end, len);
        self.active_end += len;
        self.pending_bytes += len as usize;
        (loc, self.appended_seq)
    }

    /// The chunk that continues exactly at `active_end` in the active segment.
    fn open_chunk(&mut self) -> &mut Chunk {
        let continues = matches!(self.pending.back(),
            Some(c) if c.segment == self.active && !c.seals_segment
                && c.base + c.bytes.len() as u64 == self.active_end);
        if !continues {
            let mut chunk = Chunk::new(self.active, self.active_end, false);
            chunk.bytes = self.spare.pop().unwrap_or_default();
            self.pending.push_back(chunk);
        }
        self.pending.back_mut().expect("a chunk was just ensured")
    }

    /// Hands every pending chunk to the flusher. The active segment's next record then starts on
    /// the next aligned offset, because the flusher pads the chunk it is given.
    pub fn take_pending(&mut self) -> Vec<Chunk> {
        let chunks: Vec<Chunk> = self.pending.drain(..).collect();
        self.active_end = align_up(self.active_end, DMA_ALIGN_BYTES).min(self.segment_size_bytes);
        self.pending_bytes = 0;
        chunks
    }

    /// Record bytes at `loc` that are still only in memory.
    pub fn find(&self, loc: Location) -> Option<&[u8]> {
        self.pending.iter().find_map(|c| c.find(loc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::RecordKind;

    fn meta(seg: u32, lsn: u64) -> RecordMeta {
        RecordMeta {
            kind: RecordKind::Put,
            lsn,
            version: 1,
            expiry_ms: 0,
            segment_id: seg,
            flags: 0,
            batch_remaining: 0,
        }
    }

    #[test]
    fn appends_are_contiguous_and_flushes_realign() {
        let mut w = LogWriter::new(SEGMENT_SIZE_BYTES_MIN, 1, 0);
        let r = w.reserve(56, || None).expect("fits");
        assert_eq!((r.segment, r.offset), (1, SEGMENT_HEADER_BYTES));
        let (a, s1) = w.append(&meta(1, 1), b"k", b"v");
        let (b, s2) = w.append(&meta(1, 2), b"k", b"v");
        assert_eq!((s1, s2), (1, 2));
        assert_eq!(b.offset(), a.offset() + a.len());
        assert!(w.find(b).is_some());
        let chunks = w.take_pending();
        assert_eq!(chunks.len(), 1);
        assert!(chunks[0].creates_segment);
        assert_eq!(w.active_end(), SEGMENT_HEADER_BYTES + DMA_ALIGN_BYTES);
        assert!(w.find(b).is_none());
    }

    #[test]
    fn full_segment_rotates_and_seals() {
        let mut w = LogWriter::new(SEGMENT_SIZE_BYTES_MIN, 1, 0);
        let big = vec![0u8; VALUE_BYTES_MAX];
        let mut lsn = 0;
        let mut sealed = None;
        while sealed.is_none() {
            lsn += 1;
            let r = w.reserve(record::padded_len(1, big.len()), || Some(2)).expect("id");
            sealed = r.sealed_segment;
            w.append(&meta(r.segment, lsn), b"k", &big);
        }
        let chunks = w.take_pending();
        assert!(chunks.iter().any(|c| c.segment == 1 && c.seals_segment));
        assert!(chunks.iter().any(|c| c.segment == 2 && c.creates_segment));
    }
}
