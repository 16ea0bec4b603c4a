//! The frame header of the ringstore protocol: 32 bytes, little-endian, declared with zerocopy
//! derives so it is read in place from the receive buffer, and checked before anything is
//! trusted. `docs/PROTOCOL.md` ("Frames") describes it byte by byte; this file and that section
//! change together.
//!
//! | offset | size | field |
//! |---:|---:|---|
//! | 0 | 4 | magic `RNG1` |
//! | 4 | 1 | protocol version, [`PROTOCOL_VERSION`] |
//! | 5 | 1 | opcode ([`Opcode`]) |
//! | 6 | 2 | flags ([`Flags`]) |
//! | 8 | 8 | request id, chosen by the client, echoed in the response |
//! | 16 | 4 | body length in bytes, at most the receiver's frame limit |
//! | 20 | 2 | status: 0 in requests and successful responses, else an error code (`docs/ERRORS.md`) |
//! | 22 | 2 | reserved, 0 |
//! | 24 | 4 | reserved, 0 |
//! | 28 | 4 | CRC32C of bytes 0..28 |
//!
//! [`FrameHeader::parse`] checks, in this order: the magic, the version, the checksum, the
//! reserved bytes, the body length against the limit, the opcode. The first three failures mean
//! the stream can no longer be trusted (a desynchronised or foreign peer): the receiver answers
//! with an error frame and closes. The others leave the stream in step, so the receiver answers
//! the one request with an error and goes on.

use zerocopy::byteorder::little_endian::{U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// The first four bytes of every frame.
pub const MAGIC: [u8; 4] = *b"RNG1";
/// The protocol version this crate speaks.
pub const PROTOCOL_VERSION: u8 = 1;
/// Size of the frame header.
pub const HEADER_BYTES: usize = 32;
/// Bytes of the header covered by its checksum.
const CHECKED_BYTES: usize = 28;
/// Default largest body a receiver accepts: room for a 1 MiB value, its key and a few fields.
pub const FRAME_BODY_BYTES_DEFAULT: u32 = 4 * 1024 * 1024;
/// Largest body limit a receiver may be configured with.
pub const FRAME_BODY_BYTES_MAX: u32 = 64 * 1024 * 1024;

/// The frame header as it lies in the buffer.
#[derive(
    Clone, Copy, PartialEq, Eq, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct FrameHeader {
    magic: [u8; 4],
    version: u8,
    opcode: u8,
    flags: U16,
    request_id: U64,
    body_len: U32,
    status: U16,
    reserved16: U16,
    reserved32: U32,
    header_crc: U32,
}

const _: () = assert!(std::mem::size_of::<FrameHeader>() == HEADER_BYTES);
const _: () = assert!(std::mem::align_of::<FrameHeader>() == 1);
const _: () = assert!(FRAME_BODY_BYTES_DEFAULT <= FRAME_BODY_BYTES_MAX);

macro_rules! opcodes {
    ($($name:ident = $value:literal, $doc:literal;)*) => {
        /// What a frame asks for (a response carries its request's opcode).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        #[repr(u8)]
        pub enum Opcode {
            $(#[doc = $doc] $name = $value,)*
        }

        impl Opcode {
            /// Every opcode, in numeric order.
            pub const ALL: &'static [Opcode] = &[$(Opcode::$name,)*];

            pub fn from_u8(value: u8) -> Option<Opcode> {
                match value {
                    $($value => Some(Opcode::$name),)*
                    _ => None,
                }
            }
        }
    };
}

opcodes! {
    Ping = 1, "Liveness check; empty body both ways.";
    Hello = 2, "Topology: shard count, partition count, shard ports, partition map.";
    Stats = 3, "Per-shard statistics.";
    Ddl = 4, "DDL text (SQL statements or the admin CLI script).";
    Describe = 5, "A table's schema.";
    Get = 16, "Get a row by full key, with a version selection.";
    Put = 17, "Put (insert or replace) a row, optionally conditional.";
    Update = 18, "Set or clear some fields of a row.";
    Delete = 19, "Delete a row, optionally conditional.";
    Execute = 20, "Writes sharing one shard key, all or nothing.";
    MultiGet = 21, "Rows under a partial key covering the shard key.";
    MultiDelete = 22, "Delete rows under a partial key covering the shard key.";
    Scan = 23, "Rows under a shorter partial key (needs the full-scan flag).";
    IndexQuery = 24, "A page of a secondary index's entries in index order, over every shard.";
}

/// Header flag bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Flags(pub u16);

impl Flags {
    /// Set on every response.
    pub const RESPONSE: u16 = 1 << 0;
    /// Bits 1-2 of a write request: durability (0 Sync, 1 WriteNoSync, 2 NoSync; 3 is invalid).
    pub const DURABILITY_SHIFT: u16 = 1;
    pub const DURABILITY_MASK: u16 = 0b11 << Self::DURABILITY_SHIFT;
    /// Every bit this version defines; a frame with another bit set is refused.
    pub const KNOWN: u16 = Self::RESPONSE | Self::DURABILITY_MASK;

    pub fn is_response(self) -> bool {
        self.0 & Self::RESPONSE != 0
    }

    /// The durability code of a write request, 0..=3.
    pub fn durability_code(self) -> u8 {
        ((self.0 & Self::DURABILITY_MASK) >> Self::DURABILITY_SHIFT) as u8
    }
}

/// Why a header was refused. `closes_stream` says whether the receiver must close after
/// answering.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FrameError {
    #[error("bad magic {found:02X?}; frames start with {MAGIC:02X?} (\"RNG1\")")]
    BadMagic { found: [u8; 4] },
    #[error("protocol version {found} is not supported; this server speaks {PROTOCOL_VERSION}")]
    BadVersion { found: u8 },
    #[error("header checksum {found:#010x} does not match {computed:#010x}")]
    BadChecksum { found: u32, computed: u32 },
    #[error("reserved header bytes or unknown flag bits are set (flags {flags:#06x})")]
    ReservedSet { flags: u16 },
    #[error("body length {len} is over the frame limit of {limit} bytes")]
    TooLong { len: u32, limit: u32 },
    #[error("unknown opcode {opcode}")]
    UnknownOpcode { opcode: u8 },
}

impl FrameError {
    /// The stable error code (`docs/ERRORS.md`, 7xx).
    pub fn code(&self) -> u16 {
        match self {
            FrameError::BadMagic { .. } => 701,
            FrameError::BadVersion { .. } => 702,
            FrameError::BadChecksum { .. } => 703,
            FrameError::ReservedSet { .. } => 704,
            FrameError::TooLong { .. } => 705,
            FrameError::UnknownOpcode { .. } => 706,
        }
    }

    /// True when the byte stream can no longer be trusted: answer, then close.
    pub fn closes_stream(&self) -> bool {
        matches!(
            self,
            FrameError::BadMagic { .. }
                | FrameError::BadVersion { .. }
                | FrameError::BadChecksum { .. }
                | FrameError::TooLong { .. }
        )
    }
}

/// A checked header: what the receiver acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub opcode: Opcode,
    pub flags: Flags,
    pub request_id: u64,
    pub body_len: u32,
    pub status: u16,
}

impl FrameHeader {
    /// A header for a frame; the checksum is computed here.
    pub fn new(opcode: Opcode, flags: Flags, request_id: u64, body_len: u32, status: u16) -> Self {
        let mut h = FrameHeader {
            magic: MAGIC,
            version: PROTOCOL_VERSION,
            opcode: opcode as u8,
            flags: U16::new(flags.0),
            request_id: U64::new(request_id),
            body_len: U32::new(body_len),
            status: U16::new(status),
            reserved16: U16::ZERO,
            reserved32: U32::ZERO,
            header_crc: U32::ZERO,
        };
        h.header_crc = U32::new(h.computed_crc());
        h
    }

    fn computed_crc(&self) -> u32 {
        ringstore_model::checksum::crc32c(&self.as_bytes()[..CHECKED_BYTES])
    }

    /// The request id, readable even from a header that fails [`FrameHeader::check`], so an
    /// error answer can name the request when the header is intact enough to say.
    pub fn request_id(&self) -> u64 {
        self.request_id.get()
    }

    /// Reads the header at the start of `buf` in place (None: fewer than [`HEADER_BYTES`]) and
    /// checks it against a body limit of `limit` bytes.
    pub fn parse(buf: &[u8], limit: u32) -> Option<Result<Header, FrameError>> {
        let (h, _) = FrameHeader::ref_from_prefix(buf).ok()?;
        Some(h.check(limit))
    }

    /// The opcode byte as received, unchecked: for answering a refused frame with its opcode.
    pub fn raw_opcode(&self) -> u8 {
        self.opcode
    }

    /// The request id as received, unchecked: for answering a refused frame.
    pub fn raw_request_id(&self) -> u64 {
        self.request_id.get()
    }

    /// The body length as received, unchecked: how many bytes to skip after a refused header
    /// that leaves the stream trustworthy.
    pub fn raw_body_len(&self) -> u32 {
        self.body_len.get()
    }

    /// Checks every field (order in the module documentation).
    pub fn check(&self, limit: u32) -> Result<Header, FrameError> {
        if self.magic != MAGIC {
            return Err(FrameError::BadMagic { found: self.magic });
        }
        if self.version != PROTOCOL_VERSION {
            return Err(FrameError::BadVersion { found: self.version });
        }
        let computed = self.computed_crc();
        if computed != self.header_crc.get() {
            return Err(FrameError::BadChecksum { found: self.header_crc.get(), computed });
        }
        let flags = self.flags.get();
        if self.reserved16.get() != 0 || self.reserved32.get() != 0 || flags & !Flags::KNOWN != 0 {
            return Err(FrameError::ReservedSet { flags });
        }
        let body_len = self.body_len.get();
        if body_len > limit {
            return Err(FrameError::TooLong { len: body_len, limit });
        }
        let opcode = Opcode::from_u8(self.opcode)
            .ok_or(FrameError::UnknownOpcode { opcode: self.opcode })?;
        Ok(Header {
            opcode,
            flags: Flags(flags),
            request_id: self.request_id.get(),
            body_len,
            status: self.status.get(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(h: &FrameHeader) -> Vec<u8> {
        h.as_bytes().to_vec()
    }

    #[test]
    fn round_trip_in_place() {
        let h = FrameHeader::new(Opcode::Get, Flags(Flags::RESPONSE), 77, 1234, 0);
        let mut buf = bytes(&h);
        buf.extend_from_slice(b"body");
        let got = FrameHeader::parse(&buf, FRAME_BODY_BYTES_DEFAULT).unwrap().unwrap();
        assert_eq!(
            got,
            Header {
                opcode: Opcode::Get,
                flags: Flags(Flags::RESPONSE),
                request_id: 77,
                body_len: 1234,
                status: 0
            }
        );
        assert!(FrameHeader::parse(&buf[..31], 1).is_none(), "a short buffer is not a header yet");
        for op in Opcode::ALL {
            assert_eq!(Opcode::from_u8(*op as u8), Some(*op));
        }
    }

    /// The byte layout of docs/PROTOCOL.md's example header.
    #[test]
    fn documented_example() {
        let h = FrameHeader::new(Opcode::Ping, Flags(0), 1, 0, 0);
        let hex: Vec<String> = h.as_bytes().iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(
            hex.join(" "),
            "52 4E 47 31 01 01 00 00 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 \
             21 3B C7 37"
        );
    }

    #[test]
    fn every_bad_header_is_a_typed_error() {
        let good = bytes(&FrameHeader::new(Opcode::Put, Flags(0), 5, 10, 0));
        let check = |b: &[u8], limit| FrameHeader::parse(b, limit).unwrap().unwrap_err();
        let mut b = good.clone();
        b[0] = b'X';
        assert_eq!(check(&b, 100).code(), 701);
        let mut b = good.clone();
        b[4] = 9;
        assert_eq!(check(&b, 100), FrameError::BadVersion { found: 9 });
        // Any flipped bit in the checked bytes after the version is caught by the checksum.
        for i in 5..28 {
            let mut b = good.clone();
            b[i] ^= 0x10;
            assert_eq!(check(&b, 100).code(), 703, "byte {i}");
        }
        let resealed = |f: &dyn Fn(&mut FrameHeader)| {
            let mut h = FrameHeader::new(Opcode::Put, Flags(0), 5, 10, 0);
            f(&mut h);
            h.header_crc = U32::new(h.computed_crc());
            bytes(&h)
        };
        let e = check(&resealed(&|h| h.reserved32 = U32::new(1)), 100);
        assert_eq!((e.code(), e.closes_stream()), (704, false));
        assert_eq!(check(&resealed(&|h| h.flags = U16::new(1 << 9)), 100).code(), 704);
        let e = check(&good, 9);
        assert_eq!(
            (e.clone(), e.closes_stream()),
            (FrameError::TooLong { len: 10, limit: 9 }, true)
        );
        let e = check(&resealed(&|h| h.opcode = 99), 100);
        assert_eq!((e.code(), e.closes_stream()), (706, false));
        assert!(e.to_string().contains("99"));
    }

    /// Codes are part of the protocol: pinned here, and listed in docs/ERRORS.md.
    #[test]
    fn codes_are_stable_and_documented() {
        let all = [
            FrameError::BadMagic { found: [0; 4] },
            FrameError::BadVersion { found: 0 },
            FrameError::BadChecksum { found: 0, computed: 0 },
            FrameError::ReservedSet { flags: 0 },
            FrameError::TooLong { len: 0, limit: 0 },
            FrameError::UnknownOpcode { opcode: 0 },
        ];
        let codes: Vec<u16> = all.iter().map(FrameError::code).collect();
        assert_eq!(codes, (701..=706).collect::<Vec<u16>>());
        ringstore_model::error_codes::assert_documented(&codes);
    }
}
