//! Segment preallocation: one zero-filled, fsynced file kept ready for the next segment, so that
//! a flush never grows a file.
//!
//! Why: an O_DIRECT write past the end of a file changes its size and allocates blocks. On ext4
//! io_uring cannot issue such a write without blocking, so it hands it to a kernel worker thread,
//! and the next `fdatasync` must commit the size and the new extents through the journal before
//! it can return. A write inside a file whose blocks are allocated *and written* (zeros count;
//! `fallocate` alone leaves them "unwritten", which converts on first write and journals again)
//! is a plain overwrite: issued inline, and its `fdatasync` only flushes the device's write cache.
//! This disk measured 128 us for a 4 KiB append + fdatasync and 85 us for an overwrite of a
//! pre-zeroed file + fdatasync (`../shared/DESIGN.md`); docs/BENCHMARKS.md has the A/B on the node.
//!
//! How: the preparer task writes [`PREPARING_SEGMENT_FILE`] with zeros up to
//! `segment_size_bytes` in [`PREALLOCATE_WRITE_BYTES`] writes, fdatasyncs it, renames it to
//! [`READY_SEGMENT_FILE`] and parks it in [`State::prepared`](crate::state::State). When the
//! flusher opens a new segment it takes that file, renames it to the segment's name, then writes
//! the header and syncs as for any new segment ([`super::group_commit`]); then it wakes the
//! preparer for the next one. With no file ready (a preparer that failed, a disk that fills, a
//! burst that outruns it) the flusher creates the segment the plain way, so preallocation only
//! ever makes a flush cheaper, never waits for one.
//!
//! One task at a time owns the prepared file's names ([`Prepared`]): the preparer while it writes
//! the file, the flusher while it renames it. Without that, a preparer woken during the rename
//! could remove and recreate the name, and the rename would then give the segment the new,
//! headerless file while the flusher wrote into the old one.
//!
//! On disk the zeros are flush padding to the scanner (docs/FORMAT.md, "Reading a segment"), so a
//! preallocated segment reads exactly like a grown one.
//!
//! Across a restart: the ready file's name is given only after its zeros are durable, so open
//! adopts a [`READY_SEGMENT_FILE`] of the configured size as it is (restarts do not zero-fill 64
//! MiB again), and removes a [`PREPARING_SEGMENT_FILE`] (a crash while preparing: its zeros may not
//! be durable). Close keeps the ready file, and cuts the active segment's unused zeros off
//! ([`trim_active_at_close`]), so the next open does not read them: recovery seals that segment.

use std::path::Path;
use std::rc::Rc;

use crate::config::StoreConfig;
use crate::constants::*;
use crate::disk::{Disk, DiskFile};
use crate::log::prepared::Prepared;
use crate::state::Shared;
use crate::{Error, Result};

/// The name of a prepared file while it is written; never a segment name (`seg-XXXXXXXX.log`).
pub const PREPARING_SEGMENT_FILE: &str = "seg-prepared.tmp";

/// The name of a prepared file whose zeros are durable; never a segment name.
pub const READY_SEGMENT_FILE: &str = "seg-prepared.ready";

/// Size of each zero write while preparing (256 writes for a 64 MiB segment). Measured: with
/// 1 MiB buffers (allocated outside glommio's io memory, then freed, 64 per segment) the same
/// process's later CPU-bound work (the checkpoint load and live-byte count of a restart) ran
/// about 15 ms slower for 1M keys; 256 KiB buffers left it as fast as before preallocation
/// (docs/BENCHMARKS.md, "Durable writes").
pub const PREALLOCATE_WRITE_BYTES: u64 = 256 * 1024;

const _: () = assert!(PREALLOCATE_WRITE_BYTES.is_multiple_of(DMA_ALIGN_BYTES));

/// Prepares the first segment's file at open if recovery found none ready, before any write can
/// need it (a store that just opened writes to a new segment, and would otherwise grow its whole
/// first segment). A failure is logged and counted, not returned: the store works without
/// preallocation.
pub(crate) async fn prepare_at_open<D: Disk>(shared: &Shared<D>) {
    if claim(shared) {
        prepare_claimed(shared).await;
    }
}

/// The preparer task: keeps one prepared file ready until the store closes or is poisoned.
/// A failed preparation (ENOSPC, an I/O error) is logged, counted and retried when the next
/// segment is opened; the store goes on creating segments the plain way meanwhile.
pub(crate) async fn run_preparer<D: Disk>(shared: Rc<Shared<D>>) {
    loop {
        let listener = shared.prepare_wanted.listen();
        let stopped = {
            let st = shared.state.borrow();
            st.closing || st.poisoned.is_some()
        };
        if stopped {
            return;
        }
        if claim(&shared) && prepare_claimed(&shared).await {
            continue;
        }
        listener.await;
    }
}

/// Takes the name for preparing if nobody holds it and no file is ready.
fn claim<D: Disk>(shared: &Shared<D>) -> bool {
    let mut st = shared.state.borrow_mut();
    let free = matches!(st.prepared, Prepared::Absent);
    if free {
        st.prepared = Prepared::Busy;
    }
    free
}

/// Prepares a file under the claimed name; true if one is now ready. Always releases the claim.
async fn prepare_claimed<D: Disk>(shared: &Shared<D>) -> bool {
    let result = prepare(shared).await;
    let ready = matches!(result, Ok(Some(_)));
    match result {
        Ok(Some(file)) => {
            let mut st = shared.state.borrow_mut();
            st.prepared = Prepared::Ready(file);
            st.counters.preallocations += 1;
        }
        // Stopped by close: the partial file stays for close (or the next open) to remove.
        Ok(None) => shared.state.borrow_mut().prepared = Prepared::Absent,
        Err(e) => failed(shared, &e).await,
    }
    ready
}

/// Writes one prepared file and gives it the ready name; None if the store started closing
/// meanwhile.
async fn prepare<D: Disk>(shared: &Shared<D>) -> Result<Option<D::File>> {
    remove_leftovers(shared).await?;
    let path = shared.dir.join(PREPARING_SEGMENT_FILE);
    let file = shared.disk.create(&path).await.map_err(|e| Error::io("create", &path, e))?;
    let size = shared.config.segment_size_bytes;
    let mut pos = 0;
    while pos < size {
        if shared.state.borrow().closing {
            return Ok(None);
        }
        let len = (size - pos).min(PREALLOCATE_WRITE_BYTES);
        let zeros = file.alloc_buf(len as usize);
        file.write_at(zeros, pos).await.map_err(|e| Error::io("write", &path, e))?;
        pos += len;
    }
    file.fdatasync().await.map_err(|e| Error::io("fdatasync", &path, e))?;
    // No directory sync: a crash that loses the rename leaves the preparing name, removed at open.
    let ready = shared.dir.join(READY_SEGMENT_FILE);
    shared.disk.rename(&path, &ready).await.map_err(|e| Error::io("rename", &ready, e))?;
    Ok(Some(file))
}

/// Logs and counts a failed preparation or rename, removes what is left under the name (the
/// caller holds it) and releases the name.
async fn failed<D: Disk>(shared: &Shared<D>, e: &Error) {
    tracing::warn!(dir = %shared.dir.display(), error = %e,
        "segment preallocation failed; new segments grow as they are written until one succeeds");
    remove_leftovers(shared).await.ok();
    let mut st = shared.state.borrow_mut();
    st.counters.preallocations_failed += 1;
    st.prepared = Prepared::Absent;
}

/// At close, after the preparer stopped and the last flush (so nobody holds the name): keeps a
/// ready file for the next open, and removes a partial one.
pub(crate) async fn release_at_close<D: Disk>(shared: &Shared<D>) -> Result<()> {
    let prepared = std::mem::take(&mut shared.state.borrow_mut().prepared);
    let path = shared.dir.join(PREPARING_SEGMENT_FILE);
    let names = shared.disk.list_dir(&shared.dir).await.map_err(|e| Error::io("list", &path, e))?;
    if names.iter().any(|n| n == PREPARING_SEGMENT_FILE) {
        shared.disk.remove(&path).await.map_err(|e| Error::io("remove", &path, e))?;
    }
    if !matches!(prepared, Prepared::Ready(_)) && names.iter().any(|n| n == READY_SEGMENT_FILE) {
        let ready = shared.dir.join(READY_SEGMENT_FILE);
        shared.disk.remove(&ready).await.map_err(|e| Error::io("remove", &ready, e))?;
    }
    Ok(())
}

/// At close, after the last sync: shrinks the active segment to the bytes in use, so that the
/// next open does not read its preallocated zeros (recovery seals it; nothing is written after
/// them). A crash skips this, and the next open reads the zeros as flush padding.
pub(crate) async fn trim_active_at_close<D: Disk>(shared: &Shared<D>) -> Result<()> {
    let (id, file, end) = {
        let st = shared.state.borrow();
        let id = st.log.active_segment();
        let Some(info) = st.segments.get(id) else { return Ok(()) };
        let Some(file) = info.file.clone() else { return Ok(()) };
        (id, file, align_up(info.end, DMA_ALIGN_BYTES))
    };
    let path = shared.segment_path(id);
    let size = file.size().await.map_err(|e| Error::io("stat", &path, e))?;
    if size > end {
        file.truncate(end).await.map_err(|e| Error::io("truncate", &path, e))?;
    }
    Ok(())
}

/// Recovery's part: removes a partial prepared file, and returns the ready one if it has the
/// configured size and preallocation is on (removing it otherwise).
pub(crate) async fn adopt_at_open<D: Disk>(
    disk: &D,
    dir: &Path,
    names: &[String],
    config: &StoreConfig,
) -> Result<Option<D::File>> {
    if names.iter().any(|n| n == PREPARING_SEGMENT_FILE) {
        let path = dir.join(PREPARING_SEGMENT_FILE);
        disk.remove(&path).await.map_err(|e| Error::io("remove", &path, e))?;
    }
    if !names.iter().any(|n| n == READY_SEGMENT_FILE) {
        return Ok(None);
    }
    let path = dir.join(READY_SEGMENT_FILE);
    if config.preallocate_segments {
        let file = disk.open(&path).await.map_err(|e| Error::io("open", &path, e))?;
        match unused_ready_file(&file, config).await.map_err(|e| Error::io("read", &path, e))? {
            None => return Ok(Some(file)),
            Some(why) => {
                tracing::info!(path = %path.display(), why, "preparing a new segment file")
            }
        }
    }
    disk.remove(&path).await.map_err(|e| Error::io("remove", &path, e))?;
    Ok(None)
}

/// None if a ready file can become the next segment; otherwise why not. Its header block must be
/// zeros: a crash between the rename that made it a segment and the directory sync after its
/// header write leaves the ready name on a file that already has a segment's header, and maybe
/// records (written only after the header was synced), or a second name on that segment's file.
async fn unused_ready_file<F: DiskFile>(
    file: &F,
    config: &StoreConfig,
) -> std::io::Result<Option<&'static str>> {
    if file.size().await? != config.segment_size_bytes {
        return Ok(Some("the ready file is not segment_size_bytes long"));
    }
    let head = file.read_at(0, SEGMENT_HEADER_BYTES as usize).await?;
    if head.len() as u64 != SEGMENT_HEADER_BYTES || head.iter().any(|&b| b != 0) {
        return Ok(Some("the ready file's header block is not zeros: it was a segment"));
    }
    Ok(None)
}

/// Removes both prepared-file names from the store's directory where they exist.
async fn remove_leftovers<D: Disk>(shared: &Shared<D>) -> Result<()> {
    let (disk, dir) = (&shared.disk, &shared.dir);
    let names = disk.list_dir(dir).await.map_err(|e| Error::io("list", dir, e))?;
    for name in [PREPARING_SEGMENT_FILE, READY_SEGMENT_FILE] {
        if names.iter().any(|n| n == name) {
            let path = dir.join(name);
            disk.remove(&path).await.map_err(|e| Error::io("remove", &path, e))?;
        }
    }
    Ok(())
}

/// The prepared file, renamed to segment `id`'s path, if one is ready; None otherwise (the caller
/// creates the segment the plain way). Wakes the preparer for the next one either way.
pub(crate) async fn take_for_segment<D: Disk>(shared: &Shared<D>, id: u32) -> Option<D::File> {
    let taken = std::mem::replace(&mut shared.state.borrow_mut().prepared, Prepared::Busy);
    let Prepared::Ready(file) = taken else {
        // Put back what was there (Absent, or Busy: the preparer is still writing).
        shared.state.borrow_mut().prepared = taken;
        shared.prepare_wanted.notify(1);
        return None;
    };
    let from = shared.dir.join(READY_SEGMENT_FILE);
    let to = shared.segment_path(id);
    let renamed = shared.disk.rename(&from, &to).await;
    let file = match renamed {
        Ok(()) => {
            shared.state.borrow_mut().prepared = Prepared::Absent;
            Some(file)
        }
        Err(e) => {
            // The flusher creates the segment the plain way; the file it could not rename goes.
            failed(shared, &Error::io("rename", &to, e)).await;
            None
        }
    };
    shared.prepare_wanted.notify(1);
    file
}
