//! Every limit of the store, in one place, with the relations between them checked at compile time.
//!
//! Names put the unit last (`segment_size_bytes`, `flush_interval_ms`). A limit that a caller can
//! exceed is reported as a typed [`crate::Error`] naming the limit; a limit that only a bug can exceed
//! is an `assert!`.

/// O_DIRECT alignment of every write offset and length. 4096 covers both 512 B and 4 KiB devices.
pub const DMA_ALIGN_BYTES: u64 = 4096;

/// Every segment file starts with one header block; records follow it.
pub const SEGMENT_HEADER_BYTES: u64 = DMA_ALIGN_BYTES;

/// Records start on this boundary inside a segment, so a location stores `offset / 8`.
pub const RECORD_ALIGN_BYTES: u64 = 8;

/// Size of the fixed record header (see docs/FORMAT.md).
pub const RECORD_HEADER_BYTES: usize = 48;

/// Default maximum size of one segment file.
pub const SEGMENT_SIZE_BYTES_DEFAULT: u64 = 64 * 1024 * 1024;
/// Smallest configurable segment: it must hold the largest batch after the header block.
pub const SEGMENT_SIZE_BYTES_MIN: u64 = 4 * 1024 * 1024;
/// Largest configurable segment: a location keeps `offset / 8` in 23 bits.
pub const SEGMENT_SIZE_BYTES_MAX: u64 = 64 * 1024 * 1024;

// The limits a client must know too (largest key and value, most operations in a batch and in an
// execute, most rows a scan returns) are defined in `ringstore-model` and re-exported here.
pub use ringstore_model::constants::{
    BATCH_OPS_MAX, EXECUTE_OPS_MAX, KEY_BYTES_MAX, SCAN_LIMIT_MAX, VALUE_BYTES_MAX,
};
/// Most encoded bytes (headers, keys, values, alignment) in one atomic batch. A batch is written in
/// one segment, so it must fit in the smallest segment.
pub const BATCH_BYTES_MAX: usize = 2 * 1024 * 1024;

/// Largest encoded record (header + largest key + largest value), rounded up to the record alignment.
pub const RECORD_BYTES_MAX: u64 = align_up(
    RECORD_HEADER_BYTES as u64 + KEY_BYTES_MAX as u64 + VALUE_BYTES_MAX as u64,
    RECORD_ALIGN_BYTES,
);

/// Segment ids are recycled (smallest free id first), so this bounds live segments, not history.
/// A location keeps the id in 20 bits.
pub const SEGMENT_ID_MAX: u32 = (1 << 20) - 1;

/// Bits of a packed [`crate::index::Location`]: segment id, `offset / 8`, `length / 8`.
pub const LOCATION_SEGMENT_BITS: u32 = 20;
pub const LOCATION_OFFSET_BITS: u32 = 23;
pub const LOCATION_LENGTH_BITS: u32 = 18;

/// Default of how long the flusher may wait for more Sync writers after a Sync flush
/// (`StoreConfig::commit_delay_max_us`, `log/group_commit.rs` `commit_delay`); never longer
/// than the flush took. In a first form that always waited the whole time, 100 us gave 1.060x
/// the puts per second at 50 writers, pipeline 1, and 50 us 1.053x (docs/BENCHMARKS.md,
/// twenty-sixth session).
pub const COMMIT_DELAY_MAX_US_DEFAULT: u64 = 100;

/// The largest `commit_delay_max_us` a store takes: a wait of a millisecond is already longer
/// than a flush on any disk this was measured on.
pub const COMMIT_DELAY_US_LIMIT: u64 = 1000;

/// Default interval within which a `NoSync` write reaches the device.
pub const FLUSH_INTERVAL_MS_DEFAULT: u64 = 10;
/// Unflushed bytes a shard buffers before writers wait for the flush (backpressure).
pub const WRITE_BUFFER_BYTES_MAX: usize = 16 * 1024 * 1024;
/// Most blind puts whose index updates wait to be applied as one group with their searches
/// overlapped (`deferred_puts.rs`, `Index::find_overlapped`): 16 searches in flight is about
/// what one core's fill buffers hold (as `PREFETCH_BATCH_KEYS_MAX`).
pub const DEFERRED_PUTS_MAX: usize = 16;

/// Default capacity of the record cache.
pub const CACHE_CAPACITY_BYTES_DEFAULT: u64 = 64 * 1024 * 1024;
/// Bytes charged per cached record for its share of the cache's hash index (at most four 8-byte
/// slots per entry), on top of the entry itself and any heap part of its key and value.
pub const CACHE_ENTRY_OVERHEAD_BYTES: u64 = 32;
/// A cached record whose key and value together take up to this many bytes lives inside its cache
/// entry (no pointer to chase on a hit); a longer one keeps them on the heap. A cached value is a
/// stored row: the row's fields plus about 32 bytes of row and version headers, so a 16-byte key
/// and a 100-byte field fit (ringstore-load's table: 256 bytes charged per cached row, all of
/// them inline). Keeping rows of a 100-byte
/// field inline mattered: with the value behind a pointer a Get at pipeline 32 cost 2.61 CPU-us per
/// op against 1.92 inline (docs/BENCHMARKS.md, lever 3). The entry is sized around it: 40 bytes of
/// header (with the index hint), these bytes and the enum's tag, 224 in all (`cache.rs`).
pub const CACHE_INLINE_BYTES: usize = 176;

/// Default share of the store's bytes that may be garbage before the maintenance task compacts
/// (the segments with the most garbage first, each at least this share garbage). Keeps disk use
/// at or under `live / (1 - 0.5)` = 2x live data plus the active segment once compaction has
/// caught up (as Redis's default AOF rewrite, at 100% growth), or live data plus
/// [`COMPACTION_GARBAGE_MIN_SEGMENTS`] segments if that is larger. Per segment, 0.5 moved at most
/// one live record per record of garbage reclaimed (0.3 moved 2.3): 0.87-0.95x the node's CPU
/// per SET in docs/BENCHMARKS.md (nineteenth session); store-wide, fewer (twentieth session).
pub const GARBAGE_RATIO_THRESHOLD_DEFAULT: f64 = 0.5;

/// The maintenance task compacts only once the store holds at least this many segments' worth
/// of garbage (besides the garbage share reaching the threshold). A store whose live data is
/// small beside a segment would otherwise compact each segment as soon as it is sealed, copying
/// the quarter of it that is still live and would die in the next segment anyway; waiting lets
/// the victims age to nearly all garbage. Disk use of a small store is then at most its live
/// bytes plus this many segments plus the active one (docs/BENCHMARKS.md, twenty-sixth session).
pub const COMPACTION_GARBAGE_MIN_SEGMENTS: u64 = 2;
/// Default log bytes written between two index checkpoints.
pub const CHECKPOINT_INTERVAL_BYTES_DEFAULT: u64 = 256 * 1024 * 1024;
/// Sequential read size for recovery and compaction.
pub const SEQUENTIAL_READ_BYTES: usize = 1024 * 1024;

/// Value reads a scan keeps in flight.
pub const SCAN_READS_IN_FLIGHT_MAX: usize = 64;

/// Keys a range delete copies out of the index at a time while it removes the keys of its range
/// (`range_delete.rs`): the delete is one synchronous step whatever the range holds, and this
/// bounds its memory (at most this many keys of at most `KEY_BYTES_MAX` bytes).
pub const RANGE_DELETE_CHUNK_KEYS: usize = 1024;

/// The key arena of the index addresses bytes with `u32` offsets.
pub const INDEX_KEY_ARENA_BYTES_MAX: u64 = u32::MAX as u64;

pub const fn align_up(v: u64, align: u64) -> u64 {
    v.div_ceil(align) * align
}

pub const fn align_down(v: u64, align: u64) -> u64 {
    v / align * align
}

const _: () = assert!(SEGMENT_SIZE_BYTES_DEFAULT.is_multiple_of(DMA_ALIGN_BYTES));
const _: () = assert!(SEGMENT_SIZE_BYTES_MIN.is_multiple_of(DMA_ALIGN_BYTES));
const _: () = assert!(SEGMENT_SIZE_BYTES_MIN <= SEGMENT_SIZE_BYTES_DEFAULT);
const _: () = assert!(SEGMENT_SIZE_BYTES_DEFAULT <= SEGMENT_SIZE_BYTES_MAX);
const _: () = assert!(SEGMENT_SIZE_BYTES_MAX / RECORD_ALIGN_BYTES <= 1 << LOCATION_OFFSET_BITS);
const _: () = assert!(RECORD_BYTES_MAX / RECORD_ALIGN_BYTES < 1 << LOCATION_LENGTH_BITS);
const _: () = assert!(SEGMENT_ID_MAX < 1 << LOCATION_SEGMENT_BITS);
const _: () = assert!(LOCATION_SEGMENT_BITS + LOCATION_OFFSET_BITS + LOCATION_LENGTH_BITS < 64);
const _: () = assert!((BATCH_BYTES_MAX as u64) + SEGMENT_HEADER_BYTES <= SEGMENT_SIZE_BYTES_MIN);
const _: () = assert!(RECORD_BYTES_MAX <= BATCH_BYTES_MAX as u64);
const _: () = assert!((RECORD_HEADER_BYTES as u64).is_multiple_of(RECORD_ALIGN_BYTES));
const _: () = assert!(KEY_BYTES_MAX <= u16::MAX as usize);
const _: () = assert!((WRITE_BUFFER_BYTES_MAX as u64) >= 2 * (BATCH_BYTES_MAX as u64));
