//! The store's limits that the table model and every client must know. `ringstore-storage`'s
//! `constants` re-exports them next to the engine's own limits, where their relations to the
//! segment and record sizes are checked at compile time.

/// Largest key the store accepts: 20 KiB. The table layer's largest stored key is its 4-byte
/// table prefix and eight key fields of 1 KiB each, every byte escaped (16,404 bytes; checked in
/// `table/limits.rs`).
pub const KEY_BYTES_MAX: usize = 20 * 1024;
/// Largest value the store accepts.
pub const VALUE_BYTES_MAX: usize = 1024 * 1024;
/// Most operations in one atomic batch of the store.
pub const BATCH_OPS_MAX: usize = 1024;
/// Most operations in one `execute` (the table layer refuses more with 220 ExecuteSize, and the
/// protocol's Execute request carries at most this many). An execute is written as one store
/// batch, so it must fit [`BATCH_OPS_MAX`].
pub const EXECUTE_OPS_MAX: usize = 1000;
const _: () = assert!(EXECUTE_OPS_MAX <= BATCH_OPS_MAX);
/// Most rows one scan call returns; callers page with the resume key.
pub const SCAN_LIMIT_MAX: usize = 100_000;
