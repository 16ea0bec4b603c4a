//! The stored form of a table row: the value of the row's store record, holding the row's
//! version token and every kept version of its non-key fields (issue 3).
//!
//! A row is one store record under its encoded primary key. Keeping all of a row's versions in
//! that one record (rather than one record per version) keeps a get of the newest version a point
//! lookup that the record cache can serve, makes every write of a row a single record (atomic
//! without a batch) and lets `max_versions` be enforced when writing, so surplus versions are never
//! written at all. The price is that a table with `max_versions > 1` rewrites its kept versions on
//! each write; [`super::limits::MAX_VERSIONS_MAX`] and [`super::limits::ROW_BYTES_MAX`] bound it.
//!
//! Layout (all integers little-endian), documented in `docs/FORMAT.md` ("Stored rows"):
//!
//! | bytes | field |
//! |---|---|
//! | 1 | format, [`STORED_ROW_FORMAT`] |
//! | 8 | row token (changes on every write of the row) |
//! | 2 | version count `n`, 1..=[`super::limits::MAX_VERSIONS_MAX`] |
//! | n x (20 + len) | per version, newest first: version (u64 ms), expiry (u64 ms, 0 = never), `len` (u32), then `len` bytes of row values (`row.rs`) |
//!
//! Versions are strictly decreasing. Decoding checks every count and length against the bytes left
//! before reading, so corrupt bytes give [`TableError::CorruptRow`], never a panic.

use super::error::{TableError, TableResult};
use super::limits::MAX_VERSIONS_MAX;
use super::schema::TableSchema;

/// The format byte of a stored row.
pub const STORED_ROW_FORMAT: u8 = 1;
/// Bytes before the first version: format, token, count.
pub const STORED_ROW_HEADER_BYTES: usize = 1 + 8 + 2;
/// Bytes of a version's header: version, expiry, length.
pub const STORED_VERSION_HEADER_BYTES: usize = 8 + 8 + 4;

/// One kept version of a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVersion<B = Vec<u8>> {
    /// Milliseconds since the Unix epoch.
    pub version: u64,
    /// When this version expires, in ms since the epoch; 0 means never.
    pub expiry_ms: u64,
    /// The non-key field values (`row.rs` encoding).
    pub row: B,
}

impl<B> StoredVersion<B> {
    pub fn is_expired(&self, now_ms: u64) -> bool {
        self.expiry_ms != 0 && self.expiry_ms <= now_ms
    }

    /// Whether a read returns this version: unexpired, and in the `[from, to)` range of
    /// [`super::request::VersionSelect::bounds`].
    pub fn is_readable(&self, (from, to): (u64, u64), now_ms: u64) -> bool {
        !self.is_expired(now_ms) && self.version >= from && self.version < to
    }
}

/// A decoded stored row; `versions` newest first. Borrowed (`&[u8]` rows) when decoded from a
/// value, owned when built for a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredRow<B = Vec<u8>> {
    pub token: u64,
    pub versions: Vec<StoredVersion<B>>,
}

impl<B: AsRef<[u8]>> StoredRow<B> {
    /// Encoded size in bytes.
    pub fn encoded_len(&self) -> usize {
        STORED_ROW_HEADER_BYTES
            + self
                .versions
                .iter()
                .map(|v| STORED_VERSION_HEADER_BYTES + v.row.as_ref().len())
                .sum::<usize>()
    }

    /// The store value for this row. Versions must be non-empty, newest first.
    pub fn encode(&self) -> Vec<u8> {
        debug_assert!(
            !self.versions.is_empty() && self.versions.len() <= MAX_VERSIONS_MAX as usize
        );
        debug_assert!(self.versions.windows(2).all(|w| w[0].version > w[1].version));
        let mut out = Vec::with_capacity(self.encoded_len());
        out.push(STORED_ROW_FORMAT);
        out.extend_from_slice(&self.token.to_le_bytes());
        out.extend_from_slice(&(self.versions.len() as u16).to_le_bytes());
        for v in &self.versions {
            out.extend_from_slice(&v.version.to_le_bytes());
            out.extend_from_slice(&v.expiry_ms.to_le_bytes());
            out.extend_from_slice(&(v.row.as_ref().len() as u32).to_le_bytes());
            out.extend_from_slice(v.row.as_ref());
        }
        out
    }

    /// The store record's expiry: the latest expiry of any version (0, never, if one never
    /// expires), so the store drops the record only when every version has expired.
    pub fn record_expiry_ms(&self) -> u64 {
        let mut latest = 0;
        for v in &self.versions {
            if v.expiry_ms == 0 {
                return 0;
            }
            latest = latest.max(v.expiry_ms);
        }
        latest
    }
}

impl<'a> StoredRow<&'a [u8]> {
    /// Decodes a stored row value of table `schema` (named in errors).
    pub fn decode(schema: &TableSchema, bytes: &'a [u8]) -> TableResult<StoredRow<&'a [u8]>> {
        decode(bytes).map_err(|(offset, what)| TableError::CorruptRow {
            table: schema.name().to_string(),
            offset,
            what,
        })
    }

    /// An owned copy, for a read-modify-write that keeps some of these versions.
    pub fn to_owned_row(&self) -> StoredRow {
        StoredRow {
            token: self.token,
            versions: self
                .versions
                .iter()
                .map(|v| StoredVersion {
                    version: v.version,
                    expiry_ms: v.expiry_ms,
                    row: v.row.to_vec(),
                })
                .collect(),
        }
    }
}

type Corrupt = (usize, &'static str);

fn decode(bytes: &[u8]) -> Result<StoredRow<&[u8]>, Corrupt> {
    let mut versions = Vec::with_capacity(1);
    let token = decode_with(bytes, |v| versions.push(v))?;
    Ok(StoredRow { token, versions })
}

/// Decodes a stored row value without allocating: checks it whole and hands each version,
/// newest first, to `sink`; returns the row token. Errors as [`StoredRow::decode`].
pub fn for_each_version<'a>(
    schema: &TableSchema,
    bytes: &'a [u8],
    sink: impl FnMut(StoredVersion<&'a [u8]>),
) -> TableResult<u64> {
    decode_with(bytes, sink).map_err(|(offset, what)| TableError::CorruptRow {
        table: schema.name().to_string(),
        offset,
        what,
    })
}

fn decode_with<'a>(
    bytes: &'a [u8],
    mut sink: impl FnMut(StoredVersion<&'a [u8]>),
) -> Result<u64, Corrupt> {
    let mut r = Reader { bytes, pos: 0 };
    let [format] = r.array::<1>("stored row: empty")?;
    if format != STORED_ROW_FORMAT {
        return Err((0, "stored row: unknown format byte"));
    }
    let token = u64::from_le_bytes(r.array("stored row: truncated token")?);
    let count = u16::from_le_bytes(r.array("stored row: truncated count")?);
    if count == 0 || u32::from(count) > MAX_VERSIONS_MAX {
        return Err((9, "stored row: version count is 0 or over MAX_VERSIONS_MAX"));
    }
    let mut previous = None;
    for _ in 0..count {
        let at = r.pos;
        let version = u64::from_le_bytes(r.array("stored row: truncated version")?);
        let expiry_ms = u64::from_le_bytes(r.array("stored row: truncated expiry")?);
        let len = u32::from_le_bytes(r.array("stored row: truncated length")?) as usize;
        let row = r.take(len, "stored row: version longer than the value")?;
        if previous.is_some_and(|prev| prev <= version) {
            return Err((at, "stored row: versions not strictly decreasing"));
        }
        previous = Some(version);
        sink(StoredVersion { version, expiry_ms, row });
    }
    if r.pos != bytes.len() {
        return Err((r.pos, "stored row: bytes after the last version"));
    }
    Ok(token)
}

/// A cursor over untrusted bytes: every read checks the bytes left first.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], Corrupt> {
        let out = self.pos.checked_add(n).and_then(|end| self.bytes.get(self.pos..end));
        let out = out.ok_or((self.pos, what))?;
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], Corrupt> {
        let at = self.pos;
        self.take(N, what)?.try_into().map_err(|_| (at, what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::{FieldType, TableId};

    fn schema() -> TableSchema {
        TableSchema::builder(TableId(1), "t")
            .field("k", FieldType::Long)
            .primary_key(&["k"])
            .build()
            .unwrap()
    }

    #[test]
    fn round_trip_and_expiry() {
        let row = StoredRow {
            token: 7,
            versions: vec![
                StoredVersion { version: 20, expiry_ms: 50, row: vec![1, 2] },
                StoredVersion { version: 10, expiry_ms: 40, row: vec![] },
            ],
        };
        let bytes = row.encode();
        assert_eq!(bytes.len(), row.encoded_len());
        let back = StoredRow::decode(&schema(), &bytes).unwrap();
        assert_eq!(back.to_owned_row(), row);
        assert_eq!(row.record_expiry_ms(), 50);
        let mut forever = row.clone();
        forever.versions[1].expiry_ms = 0;
        assert_eq!(forever.record_expiry_ms(), 0);
    }

    /// Every truncation and every single-byte change decodes to a row or an error, never a panic.
    #[test]
    fn damaged_bytes_never_panic() {
        let row = StoredRow {
            token: 1,
            versions: vec![StoredVersion { version: 9, expiry_ms: 0, row: vec![3; 5] }],
        };
        let bytes = row.encode();
        for cut in 0..bytes.len() {
            let e = StoredRow::decode(&schema(), &bytes[..cut]).unwrap_err();
            assert_eq!(e.code(), 228);
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0xff;
            let _ = StoredRow::decode(&schema(), &b);
        }
    }
}
