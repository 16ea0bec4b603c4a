//! The on-disk record: a 48-byte checksummed header, then the key, then the value, padded with
//! zeros to 8 bytes. Layout is drawn byte by byte in docs/FORMAT.md; this file is its code.
//!
//! Two checksums (CRC32C): `header_crc` over header bytes 4..48 followed by the key, and
//! `body_crc` over the value. A valid header can be trusted for its lengths before the value is
//! read, so a damaged value is skipped precisely and a damaged header never sizes an allocation;
//! and because the key is under the header's checksum, a record whose value is damaged still
//! names its key, so recovery can mark exactly that key as damaged (error 614) instead of
//! serving an older version of it.

use ringstore_model::checksum;
use zerocopy::byteorder::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::constants::{
    align_up, KEY_BYTES_MAX, RECORD_ALIGN_BYTES, RECORD_HEADER_BYTES, VALUE_BYTES_MAX,
};

/// `"RS"` little-endian: helps a human reading a hex dump; validity comes from the checksum.
pub const RECORD_MAGIC: u16 = 0x5352;

/// What a record does to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordKind {
    Put = 1,
    Delete = 2,
    /// A range tombstone: every key in `[key, value)` (an empty value: no end) written before
    /// this record is deleted (docs/FORMAT.md, "Range tombstones").
    RangeDelete = 3,
}

impl RecordKind {
    fn from_u8(v: u8) -> Option<RecordKind> {
        match v {
            1 => Some(RecordKind::Put),
            2 => Some(RecordKind::Delete),
            3 => Some(RecordKind::RangeDelete),
            _ => None,
        }
    }
}

/// Flag: the record was copied forward by compaction (same LSN as the original).
pub const FLAG_MOVED: u8 = 1;

/// The fixed record header. `#[repr(C)]` of unaligned little-endian fields: no padding, any address.
#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub struct RecordHeader {
    header_crc: U32,
    body_crc: U32,
    lsn: U64,
    version: U64,
    expiry_ms: U64,
    segment_id: U32,
    value_len: U32,
    key_len: U16,
    kind: u8,
    flags: u8,
    batch_remaining: U16,
    magic: U16,
}

const _: () = assert!(std::mem::size_of::<RecordHeader>() == RECORD_HEADER_BYTES);

/// The fields of a record, as the log writer supplies them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordMeta {
    pub kind: RecordKind,
    pub lsn: u64,
    pub version: u64,
    pub expiry_ms: u64,
    pub segment_id: u32,
    pub flags: u8,
    /// Records that follow this one in the same atomic batch (0 for the last or only one).
    pub batch_remaining: u16,
}

/// A decoded, checksum-verified record borrowing its key and value from the read buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub meta: RecordMeta,
    pub key: &'a [u8],
    pub value: &'a [u8],
}

impl Record<'_> {
    /// Bytes the record occupies in the log, including padding to 8.
    pub fn padded_len(&self) -> u64 {
        padded_len(self.key.len(), self.value.len())
    }
}

/// Bytes a record with this key and value occupies in the log, padding included.
pub fn padded_len(key_len: usize, value_len: usize) -> u64 {
    align_up((RECORD_HEADER_BYTES + key_len + value_len) as u64, RECORD_ALIGN_BYTES)
}

/// Appends one encoded record (header, key, value, zero padding) to `out`.
pub fn encode(out: &mut Vec<u8>, meta: &RecordMeta, key: &[u8], value: &[u8]) {
    assert!(key.len() <= KEY_BYTES_MAX && value.len() <= VALUE_BYTES_MAX);
    let body_crc = checksum::crc32c(value);
    let mut header = RecordHeader {
        header_crc: U32::ZERO,
        body_crc: U32::new(body_crc),
        lsn: U64::new(meta.lsn),
        version: U64::new(meta.version),
        expiry_ms: U64::new(meta.expiry_ms),
        segment_id: U32::new(meta.segment_id),
        value_len: U32::new(value.len() as u32),
        key_len: U16::new(key.len() as u16),
        kind: meta.kind as u8,
        flags: meta.flags,
        batch_remaining: U16::new(meta.batch_remaining),
        magic: U16::new(RECORD_MAGIC),
    };
    header.header_crc =
        U32::new(checksum::crc32c_append(checksum::crc32c(&header.as_bytes()[4..]), key));
    let start = out.len();
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(value);
    let end = start + padded_len(key.len(), value.len()) as usize;
    out.resize(end, 0);
}

/// Why bytes at an offset are not a valid record.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecodeError {
    /// Fewer bytes remain than the header and the key it claims.
    Truncated,
    /// The header checksum (over the header and the key) does not match: neither the lengths,
    /// the LSN nor the key can be trusted.
    BadHeader,
    /// The header is valid but claims a value length over the limit or past the end of the buffer.
    BadLength { lsn: u64, what: String },
    /// The header and key are valid but the value's checksum does not match.
    BadBody { lsn: u64, len: u64 },
}

/// Bytes from the start of a record through its key, as its (unverified) header claims: what
/// [`decode_header`] needs in `buf`. None when the claimed key length is impossible.
pub fn header_and_key_len(buf: &[u8]) -> Option<usize> {
    let bytes = buf.get(..RECORD_HEADER_BYTES)?;
    let (header, _) = RecordHeader::read_from_prefix(bytes).ok()?;
    let key_len = header.key_len.get() as usize;
    (1..=KEY_BYTES_MAX).contains(&key_len).then_some(RECORD_HEADER_BYTES + key_len)
}

/// Decodes and verifies the header and key at the start of `buf` without touching the value.
/// `buf` must hold [`header_and_key_len`] bytes.
pub fn decode_header(buf: &[u8]) -> Result<RecordHeader, DecodeError> {
    let bytes = buf.get(..RECORD_HEADER_BYTES).ok_or(DecodeError::Truncated)?;
    let (header, _) = RecordHeader::read_from_prefix(bytes).map_err(|_| DecodeError::Truncated)?;
    let Some(span) = header_and_key_len(buf) else { return Err(DecodeError::BadHeader) };
    let key = buf.get(RECORD_HEADER_BYTES..span).ok_or(DecodeError::Truncated)?;
    let crc = checksum::crc32c_append(checksum::crc32c(&bytes[4..]), key);
    if crc != header.header_crc.get() || header.magic.get() != RECORD_MAGIC {
        return Err(DecodeError::BadHeader);
    }
    if RecordKind::from_u8(header.kind).is_none() {
        return Err(DecodeError::BadHeader);
    }
    let value_len = header.value_len.get() as usize;
    if value_len > VALUE_BYTES_MAX {
        let what = format!("value_len {value_len} (max {VALUE_BYTES_MAX})");
        return Err(DecodeError::BadLength { lsn: header.lsn.get(), what });
    }
    Ok(header)
}

impl RecordHeader {
    pub fn lsn(&self) -> u64 {
        self.lsn.get()
    }

    pub fn key_len(&self) -> usize {
        self.key_len.get() as usize
    }

    pub fn value_len(&self) -> usize {
        self.value_len.get() as usize
    }

    /// Padded length of the whole record this header starts.
    pub fn padded_len(&self) -> u64 {
        padded_len(self.key_len(), self.value_len())
    }

    pub fn meta(&self) -> RecordMeta {
        RecordMeta {
            kind: RecordKind::from_u8(self.kind).unwrap_or(RecordKind::Put),
            lsn: self.lsn.get(),
            version: self.version.get(),
            expiry_ms: self.expiry_ms.get(),
            segment_id: self.segment_id.get(),
            flags: self.flags,
            batch_remaining: self.batch_remaining.get(),
        }
    }
}

/// Decodes and verifies one whole record at the start of `buf`.
pub fn decode(buf: &[u8]) -> Result<Record<'_>, DecodeError> {
    let header = decode_header(buf)?;
    let key_end = RECORD_HEADER_BYTES + header.key_len();
    let total = key_end + header.value_len();
    let Some(value) = buf.get(key_end..total) else {
        let what = format!("record of {total} bytes runs past the {} bytes available", buf.len());
        return Err(DecodeError::BadLength { lsn: header.lsn(), what });
    };
    if checksum::crc32c(value) != header.body_crc.get() {
        return Err(DecodeError::BadBody { lsn: header.lsn(), len: header.padded_len() });
    }
    Ok(Record { meta: header.meta(), key: &buf[RECORD_HEADER_BYTES..key_end], value })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(kind: RecordKind) -> RecordMeta {
        RecordMeta {
            kind,
            lsn: 42,
            version: 1_700_000_000_000,
            expiry_ms: 7,
            segment_id: 3,
            flags: 0,
            batch_remaining: 2,
        }
    }

    #[test]
    fn encode_decode_round_trip_and_padding() {
        for (key, value) in
            [(&b"k"[..], &b""[..]), (b"key-0001", b"value bytes"), (b"abc", &[9u8; 1000][..])]
        {
            let mut buf = Vec::new();
            encode(&mut buf, &meta(RecordKind::Put), key, value);
            assert_eq!(buf.len() as u64, padded_len(key.len(), value.len()));
            assert_eq!(buf.len() % 8, 0);
            let rec = decode(&buf).expect("valid record");
            assert_eq!((rec.key, rec.value, rec.meta), (key, value, meta(RecordKind::Put)));
        }
    }

    #[test]
    fn every_flipped_bit_is_detected() {
        let mut buf = Vec::new();
        encode(&mut buf, &meta(RecordKind::Delete), b"some-key", b"some-value");
        let used = RECORD_HEADER_BYTES + 8 + 10;
        for bit in 0..used * 8 {
            let mut bad = buf.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(decode(&bad).is_err(), "flip of bit {bit} went unnoticed");
        }
    }

    #[test]
    fn value_damage_keeps_the_header_and_key_trusted() {
        let mut buf = Vec::new();
        encode(&mut buf, &meta(RecordKind::Put), b"k", b"v");
        buf[RECORD_HEADER_BYTES + 1] ^= 0xff;
        assert_eq!(decode(&buf), Err(DecodeError::BadBody { lsn: 42, len: 56 }));
        let header = decode_header(&buf).expect("header and key still verify");
        assert_eq!((header.key_len(), header.meta()), (1, meta(RecordKind::Put)));
    }

    #[test]
    fn key_damage_invalidates_the_header() {
        let mut buf = Vec::new();
        encode(&mut buf, &meta(RecordKind::Put), b"key", b"value");
        for at in RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + 3 {
            let mut bad = buf.clone();
            bad[at] ^= 0x01;
            assert_eq!(decode_header(&bad).unwrap_err(), DecodeError::BadHeader, "byte {at}");
        }
        // The header alone, without the key it covers, cannot be verified.
        assert_eq!(decode_header(&buf[..RECORD_HEADER_BYTES]).unwrap_err(), DecodeError::Truncated);
        assert_eq!(header_and_key_len(&buf), Some(RECORD_HEADER_BYTES + 3));
    }

    #[test]
    fn zeros_truncation_and_huge_lengths_are_rejected_without_allocating() {
        assert_eq!(decode(&[0u8; 64]).unwrap_err(), DecodeError::BadHeader);
        assert_eq!(decode(&[0u8; 10]).unwrap_err(), DecodeError::Truncated);
        // A valid header claiming a value past the buffer end.
        let mut buf = Vec::new();
        encode(&mut buf, &meta(RecordKind::Put), b"k", &[1u8; 100]);
        buf.truncate(RECORD_HEADER_BYTES + 10);
        assert!(matches!(decode(&buf), Err(DecodeError::BadLength { lsn: 42, .. })));
    }
}
