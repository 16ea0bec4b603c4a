//! Reading and writing message bodies: little-endian integers, names, text, bytes and typed
//! values, decoded in place (borrowed slices of the receive buffer) and checked against the bytes
//! left before anything is read or allocated. `docs/PROTOCOL.md` ("Body encoding") is the
//! byte-level reference; this file and that section change together.
//!
//! | item | encoding |
//! |---|---|
//! | u8, u16, u32, u64, i32, i64, f32, f64 | little-endian, fixed width (floats as their IEEE bits) |
//! | name | u8 length, then that many UTF-8 bytes (table, field and ENUM value names) |
//! | text | u32 length, then that many UTF-8 bytes |
//! | bytes | u32 length, then that many bytes |
//! | value | u8 type tag ([`ValueRef`]), then the value |
//! | fields | u16 count (at most [`FIELDS_MAX`]), then count x (name, value) |

use crate::frame::FRAME_BODY_BYTES_MAX;

/// Most (name, value) pairs in one fields list: more than any table has fields.
pub const FIELDS_MAX: usize = 4096;

/// Why a body could not be decoded. Every variant says where (byte offset in the body).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum WireError {
    #[error("body ends at byte {at} but {what} needs {need} more bytes")]
    Truncated { at: usize, what: &'static str, need: usize },
    #[error("{what} at byte {at} is not valid UTF-8")]
    BadUtf8 { at: usize, what: &'static str },
    #[error("unknown value type tag {tag} at byte {at}")]
    BadTag { at: usize, tag: u8 },
    #[error("BOOLEAN at byte {at} is {byte}; it must be 0 or 1")]
    BadBoolean { at: usize, byte: u8 },
    #[error("fields list at byte {at} has {count} entries; the limit is {FIELDS_MAX}")]
    TooManyFields { at: usize, count: usize },
    #[error(
        "Execute's operation count at byte {at} is {count}; the limit is {} (EXECUTE_OPS_MAX)",
        ringstore_model::constants::EXECUTE_OPS_MAX
    )]
    TooManyOperations { at: usize, count: usize },
    #[error(
        "an index query's equal-value count at byte {at} is {count}; the limit is {} \
         (INDEX_FIELDS_MAX: an index has at most that many fields)",
        ringstore_model::table::limits::INDEX_FIELDS_MAX
    )]
    TooManyIndexValues { at: usize, count: usize },
    #[error("{what} at byte {at} is {value}, which is not allowed here")]
    BadEnum { at: usize, what: &'static str, value: u64 },
    #[error("body has {extra} bytes after the last field (at byte {at})")]
    TrailingBytes { at: usize, extra: usize },
}

impl WireError {
    /// The stable error code (`docs/ERRORS.md`, 7xx): every malformed body is 710.
    pub fn code(&self) -> u16 {
        710
    }
}

pub type WireResult<T> = Result<T, WireError>;

/// A typed value borrowed from a body (the table layer's borrowed value, so request values reach
/// the key encoder without a copy); its wire tag ([`tag`]) is its type.
pub use ringstore_model::table::ValueRef;

/// The wire tag of a value: 0 NULL, 1 INTEGER, 2 LONG, 3 FLOAT, 4 DOUBLE, 5 STRING (text),
/// 6 BINARY, 7 BOOLEAN (one byte, 0 or 1), 8 ENUM (the symbol, as a name), 9 TIMESTAMP (ms since
/// the Unix epoch).
pub fn tag(v: &ValueRef<'_>) -> u8 {
    match v {
        ValueRef::Null => 0,
        ValueRef::Integer(_) => 1,
        ValueRef::Long(_) => 2,
        ValueRef::Float(_) => 3,
        ValueRef::Double(_) => 4,
        ValueRef::String(_) => 5,
        ValueRef::Binary(_) => 6,
        ValueRef::Boolean(_) => 7,
        ValueRef::Enum(_) => 8,
        ValueRef::Timestamp(_) => 9,
    }
}

/// A cursor over a received body.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    body: &'a [u8],
    pos: usize,
}

macro_rules! read_le {
    ($($name:ident -> $ty:ty;)*) => {
        $(
            pub fn $name(&mut self, what: &'static str) -> WireResult<$ty> {
                let bytes = self.take(std::mem::size_of::<$ty>(), what)?;
                Ok(<$ty>::from_le_bytes(bytes.try_into().expect("take returned the size asked")))
            }
        )*
    };
}

impl<'a> Reader<'a> {
    pub fn new(body: &'a [u8]) -> Reader<'a> {
        Reader { body, pos: 0 }
    }

    /// Bytes read so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes not read yet.
    pub fn left(&self) -> usize {
        self.body.len() - self.pos
    }

    /// `n` bytes, borrowed; fails (without allocating) if fewer are left.
    /// The next `N` bytes without reading them, if the body has that many left.
    pub fn peek<const N: usize>(&self) -> Option<&'a [u8; N]> {
        self.body.get(self.pos..self.pos + N)?.try_into().ok()
    }

    pub fn take(&mut self, n: usize, what: &'static str) -> WireResult<&'a [u8]> {
        let left = self.body.len() - self.pos;
        if n > left {
            return Err(WireError::Truncated { at: self.body.len(), what, need: n - left });
        }
        let out = &self.body[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    read_le! {
        u8 -> u8;
        u16 -> u16;
        u32 -> u32;
        u64 -> u64;
        i32 -> i32;
        i64 -> i64;
        f32 -> f32;
        f64 -> f64;
    }

    fn utf8(&mut self, len: usize, what: &'static str) -> WireResult<&'a str> {
        let at = self.pos;
        let bytes = self.take(len, what)?;
        std::str::from_utf8(bytes).map_err(|_| WireError::BadUtf8 { at, what })
    }

    /// A name: u8 length and UTF-8.
    pub fn name(&mut self, what: &'static str) -> WireResult<&'a str> {
        let len = self.u8(what)?;
        self.utf8(usize::from(len), what)
    }

    /// Text: u32 length and UTF-8. The length is checked against the bytes left first, so a
    /// forged length never reaches an allocation.
    pub fn text(&mut self, what: &'static str) -> WireResult<&'a str> {
        let len = self.u32(what)?;
        self.utf8(len as usize, what)
    }

    /// Bytes: u32 length and the bytes.
    pub fn bytes(&mut self, what: &'static str) -> WireResult<&'a [u8]> {
        let len = self.u32(what)?;
        self.take(len as usize, what)
    }

    /// A typed value.
    pub fn value(&mut self) -> WireResult<ValueRef<'a>> {
        let at = self.pos;
        Ok(match self.u8("value tag")? {
            0 => ValueRef::Null,
            1 => ValueRef::Integer(self.i32("INTEGER")?),
            2 => ValueRef::Long(self.i64("LONG")?),
            3 => ValueRef::Float(self.f32("FLOAT")?),
            4 => ValueRef::Double(self.f64("DOUBLE")?),
            5 => ValueRef::String(self.text("STRING")?),
            6 => ValueRef::Binary(self.bytes("BINARY")?),
            7 => {
                let at = self.pos;
                match self.u8("BOOLEAN")? {
                    0 => ValueRef::Boolean(false),
                    1 => ValueRef::Boolean(true),
                    byte => return Err(WireError::BadBoolean { at, byte }),
                }
            }
            8 => ValueRef::Enum(self.name("ENUM")?),
            9 => ValueRef::Timestamp(self.i64("TIMESTAMP")?),
            tag => return Err(WireError::BadTag { at, tag }),
        })
    }

    /// A fields list, decoded into `out` (cleared first; reuse it across requests to avoid an
    /// allocation per request).
    pub fn fields(&mut self, out: &mut Vec<(&'a str, ValueRef<'a>)>) -> WireResult<()> {
        out.clear();
        let at = self.pos;
        let count = usize::from(self.u16("fields count")?);
        if count > FIELDS_MAX {
            return Err(WireError::TooManyFields { at, count });
        }
        for _ in 0..count {
            let name = self.name("field name")?;
            out.push((name, self.value()?));
        }
        Ok(())
    }

    /// Fails unless every byte was read.
    pub fn finish(&self) -> WireResult<()> {
        match self.body.len() - self.pos {
            0 => Ok(()),
            extra => Err(WireError::TrailingBytes { at: self.pos, extra }),
        }
    }
}

/// Appends body items to a buffer.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    pub fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }

    /// A name; panics on more than 255 bytes (names are checked before they are sent).
    pub fn name(&mut self, name: &str) {
        let len = u8::try_from(name.len()).expect("names are at most 255 bytes");
        self.u8(len);
        self.buf.extend_from_slice(name.as_bytes());
    }

    /// Text or bytes with a u32 length; a body never holds more than the frame limit.
    pub fn bytes(&mut self, bytes: &[u8]) {
        assert!(bytes.len() <= FRAME_BODY_BYTES_MAX as usize, "item larger than any frame");
        self.u32(bytes.len() as u32);
        self.buf.extend_from_slice(bytes);
    }

    pub fn value(&mut self, v: &ValueRef<'_>) {
        self.u8(tag(v));
        match *v {
            ValueRef::Null => {}
            ValueRef::Integer(x) => self.buf.extend_from_slice(&x.to_le_bytes()),
            ValueRef::Long(x) | ValueRef::Timestamp(x) => {
                self.buf.extend_from_slice(&x.to_le_bytes())
            }
            ValueRef::Float(x) => self.buf.extend_from_slice(&x.to_le_bytes()),
            ValueRef::Double(x) => self.buf.extend_from_slice(&x.to_le_bytes()),
            ValueRef::String(s) => self.bytes(s.as_bytes()),
            ValueRef::Binary(b) => self.bytes(b),
            ValueRef::Boolean(b) => self.u8(u8::from(b)),
            ValueRef::Enum(s) => self.name(s),
        }
    }

    /// A fields list; panics on more than [`FIELDS_MAX`] pairs.
    pub fn fields(&mut self, fields: &[(&str, ValueRef<'_>)]) {
        assert!(fields.len() <= FIELDS_MAX, "more fields than FIELDS_MAX");
        self.u16(fields.len() as u16);
        for (name, value) in fields {
            self.name(name);
            self.value(value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every_type() -> Vec<(&'static str, ValueRef<'static>)> {
        vec![
            ("n", ValueRef::Null),
            ("i", ValueRef::Integer(-7)),
            ("l", ValueRef::Long(i64::MIN)),
            ("f", ValueRef::Float(1.5)),
            ("d", ValueRef::Double(-0.25)),
            ("s", ValueRef::String("héllo")),
            ("b", ValueRef::Binary(&[0, 255, 7])),
            ("t", ValueRef::Boolean(true)),
            ("e", ValueRef::Enum("red")),
            ("ts", ValueRef::Timestamp(1_700_000_000_000)),
        ]
    }

    #[test]
    fn every_type_round_trips_borrowed() {
        let mut w = Writer::default();
        w.fields(&every_type());
        let mut out = Vec::new();
        let mut r = Reader::new(&w.buf);
        r.fields(&mut out).unwrap();
        r.finish().unwrap();
        assert_eq!(out, every_type());
        // Strings are borrowed from the body, not copied.
        let ValueRef::String(s) = out[5].1 else { panic!("not a string") };
        assert!(w.buf.as_ptr_range().contains(&s.as_ptr()));
    }

    /// Every cut of a valid body is a typed error, never a panic or a partial success.
    /// The example of docs/PROTOCOL.md ("Body encoding").
    #[test]
    fn documented_example() {
        let mut w = Writer::default();
        w.fields(&[("a", ValueRef::Integer(1)), ("s", ValueRef::String("hi"))]);
        let hex: Vec<String> = w.buf.iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(hex.join(" "), "02 00 01 61 01 01 00 00 00 01 73 05 02 00 00 00 68 69");
    }

    #[test]
    fn every_truncation_is_an_error() {
        let mut w = Writer::default();
        w.fields(&every_type());
        let mut out = Vec::new();
        for cut in 0..w.buf.len() {
            let e = Reader::new(&w.buf[..cut]).fields(&mut out).unwrap_err();
            assert!(matches!(e, WireError::Truncated { .. }), "cut {cut}: {e}");
            assert_eq!(e.code(), 710);
        }
    }

    #[test]
    fn malformed_items_are_typed_errors() {
        // A forged 4 GiB text length fails on the bytes left, before any allocation.
        let body = [0xFF, 0xFF, 0xFF, 0xFF, b'a'];
        let e = Reader::new(&body).text("STRING").unwrap_err();
        assert_eq!(e, WireError::Truncated { at: 5, what: "STRING", need: u32::MAX as usize - 1 });
        let e = Reader::new(&[5, 2, 0, 0, 0, 0xC3, 0x28]).value().unwrap_err();
        assert_eq!(e, WireError::BadUtf8 { at: 5, what: "STRING" });
        assert_eq!(Reader::new(&[42]).value(), Err(WireError::BadTag { at: 0, tag: 42 }));
        assert_eq!(Reader::new(&[7, 2]).value(), Err(WireError::BadBoolean { at: 1, byte: 2 }));
        let e = Reader::new(&[0xFF, 0xFF]).fields(&mut Vec::new()).unwrap_err();
        assert_eq!(e, WireError::TooManyFields { at: 0, count: 65_535 });
        let mut r = Reader::new(&[1, 2]);
        r.u8("x").unwrap();
        assert_eq!(r.finish(), Err(WireError::TrailingBytes { at: 1, extra: 1 }));
    }

    /// Random bytes decode to values or typed errors; whatever decodes re-encodes to the same
    /// bytes.
    #[test]
    fn random_bodies_never_panic() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..20_000 {
            let mut out = Vec::new();
            let len = (next() % 40) as usize;
            let body: Vec<u8> = (0..len).map(|_| (next() % 12) as u8).collect();
            let mut r = Reader::new(&body);
            if r.fields(&mut out).is_ok() {
                let mut w = Writer::default();
                w.fields(&out);
                assert_eq!(w.buf, body[..r.position()]);
            }
        }
    }
}
