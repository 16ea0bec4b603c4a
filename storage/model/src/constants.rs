//! The store's limits that the table model and every client must know. `ringstore-storage`'s
//! `constants` re-exports them next to the engine's own limits, where their relations to the
//! segment and record sizes are checked at compile time.

/// Largest key the store accepts. The table layer keeps whole keys under 2 KiB; the rest is room
/// for its table prefix.
pub const KEY_BYTES_MAX: usize = 4096;
/// Largest value the store accepts.
pub const VALUE_BYTES_MAX: usize = 1024 * 1024;
/// Most operations in one atomic batch.
pub const BATCH_OPS_MAX: usize = 1024;
/// Most rows one scan call returns; callers page with the resume key.
pub const SCAN_LIMIT_MAX: usize = 100_000;
