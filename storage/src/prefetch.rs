//! Cache-line prefetch hints, for the batch prefetch of a pipeline's keys (`batch_prefetch.rs`)
//! and for the index's lookups (`index/sorted_run.rs`). In a lookup: once the sample
//! level has found a block, the cache lines of its key bytes and of its entries are known, all
//! likely misses. Asking for them at once lets the misses overlap instead of following one
//! another. docs/BENCHMARKS.md (levers 22 and 23) has the A/B of each use, and of a prefetch of
//! a replaced record's dead bit, one request at a time, that was tried and not kept (in a batch,
//! where the misses of several keys overlap, it is one of the kept steps).

/// Bytes of a cache line on every x86_64 CPU this runs on: the unit a prefetch brings in.
pub const CACHE_LINE_BYTES: usize = 64;

/// Asks the CPU to bring the cache line holding `ptr` into every cache level. A hint: it reads
/// nothing the program sees and never faults, whatever `ptr` is (so a pointer one past a
/// buffer is fine). A no-op on targets without a prefetch instruction wired here.
#[inline(always)]
pub fn prefetch<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: PREFETCHT0 is a hint; it never faults and has no architectural effect.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(ptr.cast());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = ptr;
}

/// [`prefetch`] of every cache line that `bytes` bytes from `ptr` touch (none for 0 bytes).
#[inline(always)]
pub fn prefetch_bytes<T>(ptr: *const T, bytes: usize) {
    if bytes == 0 {
        return;
    }
    // From the start of `ptr`'s line, so a range that starts mid-line still gets its last line.
    let skew = ptr as usize % CACHE_LINE_BYTES;
    let line = ptr.cast::<u8>().wrapping_sub(skew);
    for at in (0..skew + bytes).step_by(CACHE_LINE_BYTES) {
        prefetch(line.wrapping_add(at));
    }
}
