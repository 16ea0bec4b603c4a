//! Cache warm-up: fill the record cache from the log with large sequential reads.
//!
//! After a restart (or a bulk load) the cache is empty, and filling it through gets costs one
//! random O_DIRECT read per record: on the development machines about 40k reads/s, so 25 s for
//! 1M records. Reading the segments front to back in [`SEQUENTIAL_READ_BYTES`] chunks and caching
//! every record the index still points at does the same in a fraction of that time.

use bytes::Bytes;

use crate::cache::{CachedRecord, RecordCache};
use crate::constants::SEGMENT_HEADER_BYTES;
use crate::disk::{Disk, DiskFile};
use crate::index::Location;
use crate::log::scan::{ScanItem, SegmentScanner};
use crate::record::RecordKind;
use crate::store::Store;
use crate::{Error, Result};

/// What a warm-up did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WarmupReport {
    pub segments_read: u64,
    pub bytes_read: u64,
    pub records_cached: u64,
}

impl<D: Disk> Store<D> {
    /// Reads the segments sequentially and caches every live, unexpired record until the cache
    /// is full. Records not yet flushed are not cached (call [`Store::sync`] first to include
    /// them). Damaged records are skipped: a later get reports them.
    pub async fn warm_cache(&self) -> Result<WarmupReport> {
        let mut report = WarmupReport::default();
        let segments: Vec<(u32, u64)> = {
            let st = self.shared.state.borrow();
            st.segments
                .iter()
                .filter(|(_, s)| s.file.is_some() && !s.retired)
                .map(|(id, s)| (id, s.end))
                .collect()
        };
        for (id, end) in segments {
            if !self.warm_segment(id, end, &mut report).await? {
                break;
            }
        }
        Ok(report)
    }

    /// Caches the live records of one segment; false once the cache is full.
    async fn warm_segment(&self, id: u32, end: u64, report: &mut WarmupReport) -> Result<bool> {
        let Some(file) = self.shared.state.borrow().segments.file(id) else { return Ok(true) };
        let path = self.shared.segment_path(id);
        let size = file.size().await.map_err(|e| Error::io("stat", &path, e))?.min(end);
        let mut scanner = SegmentScanner::new(&*file, id, SEGMENT_HEADER_BYTES, size);
        report.segments_read += 1;
        while let Some(item) = scanner.next().await.map_err(|e| Error::io("read", &path, e))? {
            let ScanItem::Record(r) = item else { continue };
            if r.meta.kind != RecordKind::Put {
                continue;
            }
            let now = self.shared.clock.now_ms();
            let mut st = self.shared.state.borrow_mut();
            let cache = st.cache.stats();
            let weight = RecordCache::weight_of(&r.key, &r.value);
            if cache.used_bytes + weight > cache.capacity_bytes {
                report.bytes_read += scanner.position() - SEGMENT_HEADER_BYTES;
                return Ok(false);
            }
            let loc = Location::new(id, r.offset, r.padded_len);
            let live = st
                .index
                .get_hinted(&r.key)
                .filter(|(e, _)| e.location() == loc && !e.is_expired(now));
            if let Some((_, hint)) = live {
                let rec = CachedRecord {
                    value: Bytes::from(r.value),
                    version: r.meta.version,
                    expiry_ms: r.meta.expiry_ms,
                };
                st.cache.insert(&r.key, rec, hint);
                report.records_cached += 1;
            }
        }
        report.bytes_read += size.saturating_sub(SEGMENT_HEADER_BYTES);
        Ok(true)
    }
}
