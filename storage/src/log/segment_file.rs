//! Segment files: their names and their 4096-byte header block (layout in docs/FORMAT.md).

use zerocopy::byteorder::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::constants::SEGMENT_HEADER_BYTES;

/// `"RINGSEG\0"`.
pub const SEGMENT_MAGIC: [u8; 8] = *b"RINGSEG\0";
/// The format this build writes: 3 added the range tombstone (record kind 3).
pub const SEGMENT_FORMAT_VERSION: u32 = 3;
/// The formats this build reads: version 2 is version 3 without range tombstones.
pub const SEGMENT_FORMAT_VERSIONS_READ: [u32; 2] = [2, SEGMENT_FORMAT_VERSION];

/// The first 36 bytes of a segment; the rest of the header block is zero.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct SegmentHeader {
    magic: [u8; 8],
    format_version: U32,
    segment_id: U32,
    created_lsn: U64,
    segment_size_bytes: U64,
    crc: U32,
}

const _: () = assert!(std::mem::size_of::<SegmentHeader>() == 36);

/// `seg-00000001.log`: the id in 8 hex digits, so names sort by id.
pub fn segment_file_name(id: u32) -> String {
    format!("seg-{id:08x}.log")
}

/// The id in a segment file name, or None for any other file.
pub fn parse_segment_file_name(name: &str) -> Option<u32> {
    let hex = name.strip_prefix("seg-")?.strip_suffix(".log")?;
    if hex.len() != 8 {
        return None;
    }
    u32::from_str_radix(hex, 16).ok()
}

/// Fills `block` (at least one header block long) with the header of segment `id`.
pub fn encode_header(block: &mut [u8], id: u32, created_lsn: u64, segment_size_bytes: u64) {
    let mut h = SegmentHeader {
        magic: SEGMENT_MAGIC,
        format_version: U32::new(SEGMENT_FORMAT_VERSION),
        segment_id: U32::new(id),
        created_lsn: U64::new(created_lsn),
        segment_size_bytes: U64::new(segment_size_bytes),
        crc: U32::ZERO,
    };
    h.crc = U32::new(crc32c::crc32c(&h.as_bytes()[..32]));
    block[..SEGMENT_HEADER_BYTES as usize].fill(0);
    block[..36].copy_from_slice(h.as_bytes());
}

/// What is wrong with a segment's header block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderProblem {
    /// Damaged or naming another segment: the records still verify one by one.
    Damaged(String),
    /// An intact header of another format version: this build cannot read its records.
    Version(u32),
}

/// Checks a header block read from segment `id`.
pub fn check_header(block: &[u8], id: u32) -> Result<(), HeaderProblem> {
    let Ok((h, _)) = SegmentHeader::read_from_prefix(block) else {
        return Err(HeaderProblem::Damaged(format!("header block is only {} bytes", block.len())));
    };
    if h.magic != SEGMENT_MAGIC || crc32c::crc32c(&h.as_bytes()[..32]) != h.crc.get() {
        return Err(HeaderProblem::Damaged("bad magic or header checksum".into()));
    }
    if !SEGMENT_FORMAT_VERSIONS_READ.contains(&h.format_version.get()) {
        return Err(HeaderProblem::Version(h.format_version.get()));
    }
    if h.segment_id.get() != id {
        let what = format!("header says segment {}, file name says {id}", h.segment_id.get());
        return Err(HeaderProblem::Damaged(what));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_headers_check() {
        assert_eq!(parse_segment_file_name(&segment_file_name(0xabc)), Some(0xabc));
        assert_eq!(parse_segment_file_name("checkpoint"), None);
        assert_eq!(parse_segment_file_name("seg-1.log"), None);
        let mut block = vec![0u8; 4096];
        encode_header(&mut block, 7, 100, 1 << 26);
        assert_eq!(check_header(&block, 7), Ok(()));
        assert!(check_header(&block, 8).is_err());
        block[3] ^= 1;
        assert!(check_header(&block, 7).is_err());
    }
}
