//! Transparent huge pages for the large buffers a lookup reads at random.
//!
//! The record cache's slab is about 22 MB for 100,000 records, and a hit reads one slot and one
//! entry at random places in it. With 4 KiB pages nearly every hit also misses the TLB, and the
//! page walk itself misses the caches. Backed by 2 MiB pages the slab needs a dozen TLB entries.
//! Linux gives anonymous memory huge pages only where the process asks for them
//! (`/sys/kernel/mm/transparent_hugepage/enabled` is `madvise` on Debian and most
//! distributions), so the cache asks with `madvise(MADV_HUGEPAGE)` each time one of its buffers
//! is allocated. docs/BENCHMARKS.md (ninth session, lever 15) has the A/B that chose this.
//!
//! The advice changes neither the contents nor the permissions of the memory. Where the kernel
//! has no huge pages (`never`, or a kernel without them) it fails or does nothing, and the
//! buffers stay on small pages: slower, never wrong, so a refusal is ignored.

/// Buffers smaller than one huge page are left alone: they cannot hold a huge page.
pub const HUGE_PAGE_ADVICE_BYTES_MIN: usize = 2 << 20;

/// The page size the advice's range is aligned to.
const PAGE_BYTES: usize = 4096;

/// Asks for huge pages under the allocated capacity of `buf` (its whole allocation, not only its
/// length), if that is at least [`HUGE_PAGE_ADVICE_BYTES_MIN`]. Only whole small pages inside the
/// allocation are advised, so memory around it is not touched. Returns whether advice was given.
pub fn advise<T>(buf: &Vec<T>) -> bool {
    let bytes = buf.capacity() * std::mem::size_of::<T>();
    if bytes < HUGE_PAGE_ADVICE_BYTES_MIN {
        return false;
    }
    let start = (buf.as_ptr() as usize).next_multiple_of(PAGE_BYTES);
    let end = (buf.as_ptr() as usize + bytes) / PAGE_BYTES * PAGE_BYTES;
    // SAFETY: the range is page aligned and lies inside the allocation `buf` owns, which lives
    // across the call. MADV_HUGEPAGE only sets a flag on the mapping: it neither frees, moves
    // nor changes the memory or its protection, so no reference into `buf` is invalidated.
    let rc = unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    rc == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer of at least one huge page is advised, and the kernel of this machine (Linux with
    /// transparent huge pages in `madvise` or `always` mode) takes the advice; a small one is
    /// left alone.
    #[test]
    fn large_buffers_are_advised_and_small_ones_are_not() {
        let small: Vec<u64> = Vec::with_capacity(1024);
        assert!(!advise(&small));
        let large: Vec<u64> = vec![0; HUGE_PAGE_ADVICE_BYTES_MIN];
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled");
        let available = thp.is_ok_and(|mode| !mode.contains("[never]"));
        assert_eq!(advise(&large), available);
    }
}
