//! Every limit of the table model, in one place, with the relations between them checked at
//! compile time.
//!
//! A limit that a caller can exceed is reported as a typed [`super::TableError`] whose message names
//! the limit; the numbers live here so the error messages, the encoder and `docs/FORMAT.md` cannot
//! disagree.

/// Longest table, field or ENUM value name, in characters (names are ASCII, so also bytes).
pub const NAME_CHARS_MAX: usize = 255;

/// Most fields in a table. The catalog stores field counts and indexes as `u16`; the bound is
/// far below that so that a schema (and the O(fields) checks of every write) stays small.
pub const TABLE_FIELDS_MAX: usize = 1024;

/// Most fields in a primary key.
pub const PRIMARY_KEY_FIELDS_MAX: usize = 8;

/// Largest STRING or BINARY key field value, in raw bytes (before escaping).
pub const KEY_FIELD_BYTES_MAX: usize = 1024;

/// Largest encoding of one key field: a STRING or BINARY value of [`KEY_FIELD_BYTES_MAX`] bytes
/// that are all 0x00 (each escaped to two bytes) and its 2-byte end mark. A fixed-size type
/// takes at most 8 bytes.
pub const KEY_FIELD_ENCODED_BYTES_MAX: usize = 2 * KEY_FIELD_BYTES_MAX + 2;

/// Largest encoded key (escaping counted), counting the encoded key fields and not the table
/// prefix: every key field at its largest encoding, so a key whose values each stay within
/// [`KEY_FIELD_BYTES_MAX`] always fits (16,400 bytes). The limit a user meets is the one per key
/// value; this one is a guard. The store's own limit on a raw key is
/// [`crate::constants::KEY_BYTES_MAX`].
pub const ENCODED_KEY_BYTES_MAX: usize = PRIMARY_KEY_FIELDS_MAX * KEY_FIELD_ENCODED_BYTES_MAX;

/// Bytes of the table prefix that starts every stored key: the table id, big-endian.
pub const TABLE_PREFIX_BYTES: usize = 4;

/// Most values of one ENUM type: a key stores the value's index as a big-endian `u16`.
pub const ENUM_VALUES_MAX: usize = 1 << 16;

/// Partitions of a store unless its creator chose otherwise.
pub const MAP_PARTITIONS_DEFAULT: u32 = 4096;

/// Most partitions of a store; the partition map keeps one entry per partition.
pub const MAP_PARTITIONS_MAX: u32 = 1 << 20;

/// Most shards a partition map can name; the map stores each owner as a `u16`.
pub const SHARDS_MAX: u32 = 1024;

/// Versions kept per row unless the table says otherwise.
pub const MAX_VERSIONS_DEFAULT: u32 = 1;

/// Most versions a table may keep per row. A row's versions are stored together in one record
/// (`docs/FORMAT.md`, "Stored rows"), so this bounds the work of a read-modify-write; the bytes
/// of one row are bounded separately by [`ROW_BYTES_MAX`].
pub const MAX_VERSIONS_MAX: u32 = 1000;

/// Largest stored row (every kept version, with its header), in bytes: the store's value limit.
/// A write whose newest version alone does not fit is refused; older versions that no longer fit
/// are dropped, oldest first.
pub const ROW_BYTES_MAX: usize = crate::constants::VALUE_BYTES_MAX;

/// Default window for client-supplied versions: `[now - offset, now + offset)`.
pub const MAX_VERSION_OFFSET_SECONDS_DEFAULT: u64 = 86_400;

/// Largest TTL or version offset, in seconds (about 136 years). Keeping it far below
/// `i64::MAX / 1000` lets the version and TTL code convert it to milliseconds without overflow.
pub const DURATION_SECONDS_MAX: u64 = 1 << 32;

/// Most secondary indexes on one table. Every index adds up to two store operations (the old
/// entry's delete, the new entry's put) to each write of a row, inside the write's one batch.
pub const INDEXES_PER_TABLE_MAX: usize = 16;

/// Most fields in one secondary index, as many as a primary key may have.
pub const INDEX_FIELDS_MAX: usize = PRIMARY_KEY_FIELDS_MAX;

/// Largest STRING or BINARY value an indexed field may hold in a row, in raw bytes: as for a key
/// field, since the value becomes part of the index entry's key. A longer value in a write to an
/// indexed field is refused (235).
pub const INDEX_VALUE_BYTES_MAX: usize = KEY_FIELD_BYTES_MAX;

/// Bytes of the index prefix that starts every index entry's key: the index id, big-endian, from
/// the same id space as table ids (so index entries and rows never share a prefix).
pub const INDEX_PREFIX_BYTES: usize = TABLE_PREFIX_BYTES;

// A stored key is the table prefix plus the encoded key; the store must accept the largest one.
const _: () =
    assert!(TABLE_PREFIX_BYTES + ENCODED_KEY_BYTES_MAX <= crate::constants::KEY_BYTES_MAX);
const _: () = assert!(KEY_FIELD_ENCODED_BYTES_MAX <= ENCODED_KEY_BYTES_MAX);
const _: () = assert!(TABLE_FIELDS_MAX <= u16::MAX as usize);
const _: () = assert!(PRIMARY_KEY_FIELDS_MAX <= TABLE_FIELDS_MAX);
const _: () = assert!(ENUM_VALUES_MAX <= u16::MAX as usize + 1);
const _: () = assert!(SHARDS_MAX <= u16::MAX as u32 + 1);
const _: () = assert!(MAP_PARTITIONS_DEFAULT >= 1 && MAP_PARTITIONS_DEFAULT <= MAP_PARTITIONS_MAX);
const _: () = assert!(MAX_VERSIONS_DEFAULT >= 1 && MAX_VERSIONS_DEFAULT <= MAX_VERSIONS_MAX);
const _: () = assert!(MAX_VERSION_OFFSET_SECONDS_DEFAULT <= DURATION_SECONDS_MAX);
const _: () = assert!(DURATION_SECONDS_MAX <= (i64::MAX / 1000) as u64);
const _: () = assert!(INDEX_FIELDS_MAX <= u8::MAX as usize);
const _: () = assert!(INDEXES_PER_TABLE_MAX <= u8::MAX as usize);
// A write of one row with every index changed is one batch: the row and two entries per index.
const _: () = assert!(2 * INDEXES_PER_TABLE_MAX < crate::constants::BATCH_OPS_MAX);
