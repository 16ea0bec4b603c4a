//! Index checkpoints: the whole index written to one file, atomically, so recovery replays only
//! the log written after it.
//!
//! Writing (docs/ARCHITECTURE.md, "Checkpoint"): snapshot the index and note the last LSN and the
//! active segment's append offset; fdatasync the log up to that point (every location in the
//! snapshot must be durable); write `checkpoint.tmp`, fdatasync it, rename it over `checkpoint`,
//! fsync the directory. Only then are compacted segments deleted, because the previous checkpoint
//! may still point into them. Layout byte by byte: docs/FORMAT.md.

use std::path::{Path, PathBuf};
use std::time::Instant;

use zerocopy::byteorder::little_endian::{U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

use crate::constants::*;
use crate::disk::{Disk, DiskFile};
use crate::index::{Index, IndexEntry, IndexSnapshot};
use crate::log::group_commit::{self, poison};
use crate::maintenance_step;
use crate::state::Shared;
use crate::stats::record_elapsed_us;
use crate::{Error, Result};

pub const CHECKPOINT_FILE: &str = "checkpoint";
pub const CHECKPOINT_TMP_FILE: &str = "checkpoint.tmp";
/// `"RINGCKP\0"`.
pub const CHECKPOINT_MAGIC: [u8; 8] = *b"RINGCKP\0";
pub const CHECKPOINT_FORMAT_VERSION: u32 = 1;
/// `replay_from` of a segment the checkpoint covers entirely.
pub const REPLAY_NONE: u64 = u64::MAX;

#[derive(Debug, Clone, Copy, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct CheckpointHeader {
    magic: [u8; 8],
    format_version: U32,
    segment_count: U32,
    lsn: U64,
    key_count: U64,
    keys_len: U64,
    segments_crc: U32,
    keys_crc: U32,
    ends_crc: U32,
    entries_crc: U32,
    reserved: U32,
    header_crc: U32,
}

const HEADER_BYTES: usize = 64;
const _: () = assert!(std::mem::size_of::<CheckpointHeader>() == HEADER_BYTES);

/// Where replay starts in one segment that existed when the checkpoint was taken.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned,
)]
#[repr(C)]
pub struct SegmentMark {
    pub id: U32,
    reserved: U32,
    /// Offset of the first record appended after the checkpoint, or [`REPLAY_NONE`].
    pub replay_from: U64,
}

impl SegmentMark {
    pub fn new(id: u32, replay_from: u64) -> SegmentMark {
        SegmentMark { id: U32::new(id), reserved: U32::ZERO, replay_from: U64::new(replay_from) }
    }
}

/// A loaded checkpoint.
#[derive(Debug)]
pub struct Loaded {
    pub lsn: u64,
    pub index: Index,
    pub marks: Vec<SegmentMark>,
}

/// Writes a checkpoint now (callers hold the maintenance lock). Returns its LSN.
pub(crate) async fn write<D: Disk>(shared: &Shared<D>) -> Result<u64> {
    let (snapshot, lsn, marks, retired) = {
        let started = Instant::now();
        let mut st = shared.state.borrow_mut();
        let snapshot = st.index.snapshot();
        let active = st.log.active_segment();
        let active_end = st.log.active_end();
        let marks: Vec<SegmentMark> = st
            .segments
            .iter()
            .filter(|(_, s)| !s.retired)
            .map(|(id, _)| {
                SegmentMark::new(id, if id == active { active_end } else { REPLAY_NONE })
            })
            .collect();
        let retired: Vec<u32> =
            st.segments.iter().filter(|(_, s)| s.retired).map(|(id, _)| id).collect();
        st.bytes_since_checkpoint = 0;
        record_elapsed_us(&mut st.histograms.maintenance_step_us, started);
        (snapshot, st.next_lsn - 1, marks, retired)
    };
    group_commit::sync_all(shared).await?;
    match write_file(shared, &snapshot, lsn, &marks).await {
        Ok(()) => {}
        // The temporary file could not be written (a full disk): the previous checkpoint and the
        // log are untouched, so the store goes on; the next checkpoint tries again.
        Err(CheckpointFailure::Unpublished(e)) => {
            tracing::warn!(dir = %shared.dir.display(), error = %e, "checkpoint not written; the previous one stays");
            return Err(e);
        }
        Err(CheckpointFailure::Publishing(e)) => {
            poison(shared, format!("checkpoint write failed: {e}"));
            return Err(e);
        }
    }
    {
        let mut st = shared.state.borrow_mut();
        st.checkpoint_lsn = lsn;
        st.counters.checkpoints += 1;
    }
    if let Err(e) = delete_segments(shared, &retired).await {
        // Some removals may be visible but not durable, and the segments stay registered, so a
        // retry would fail on the removed names: stop writes like any failed fsync.
        poison(shared, format!("deleting compacted segments failed: {e}"));
        return Err(e);
    }
    tracing::debug!(lsn, keys = snapshot.len(), "checkpoint written");
    Ok(lsn)
}

/// Takes the maintenance lock and writes a checkpoint.
pub(crate) async fn run<D: Disk>(shared: &Shared<D>) -> Result<u64> {
    let _permit = shared.maintenance_lock.acquire_permit(1).await.map_err(|_| Error::Closed)?;
    write(shared).await
}

fn io<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> Error + 'p {
    move |e| Error::io(op, path, e)
}

/// Why a checkpoint was not written.
enum CheckpointFailure {
    /// Before the rename: the previous checkpoint is still the published one.
    Unpublished(Error),
    /// At the rename or the directory sync: which checkpoint a crash would leave is unknown.
    Publishing(Error),
}

async fn write_file<D: Disk>(
    shared: &Shared<D>,
    snap: &IndexSnapshot,
    lsn: u64,
    marks: &[SegmentMark],
) -> Result<(), CheckpointFailure> {
    let tmp = shared.dir.join(CHECKPOINT_TMP_FILE);
    write_unpublished(shared, &tmp, snap, lsn, marks)
        .await
        .map_err(CheckpointFailure::Unpublished)?;
    let path = shared.dir.join(CHECKPOINT_FILE);
    let published = match shared.disk.rename(&tmp, &path).await {
        Ok(()) => shared.sync_dir().await,
        Err(e) => Err(Error::io("rename", &tmp, e)),
    };
    published.map_err(CheckpointFailure::Publishing)
}

/// Writes and syncs `checkpoint.tmp`; on failure removes it (no partial file is left behind).
async fn write_unpublished<D: Disk>(
    shared: &Shared<D>,
    tmp: &Path,
    snap: &IndexSnapshot,
    lsn: u64,
    marks: &[SegmentMark],
) -> Result<()> {
    let names = shared.disk.list_dir(&shared.dir).await.map_err(io("list", &shared.dir))?;
    if names.iter().any(|n| n == CHECKPOINT_TMP_FILE) {
        shared.disk.remove(tmp).await.map_err(io("remove", tmp))?;
    }
    let file = shared.disk.create(tmp).await.map_err(io("create", tmp))?;
    if let Err(e) = write_tmp(&file, tmp, snap, lsn, marks).await {
        drop(file);
        shared.disk.remove(tmp).await.ok();
        return Err(e);
    }
    Ok(())
}

/// Writes the whole checkpoint into the temporary file and syncs it.
async fn write_tmp<F: DiskFile>(
    file: &F,
    tmp: &Path,
    snap: &IndexSnapshot,
    lsn: u64,
    marks: &[SegmentMark],
) -> Result<()> {
    let sections: [&[u8]; 4] =
        [marks.as_bytes(), &snap.keys, snap.ends_bytes(), snap.entries_bytes()];
    let mut crcs = [0; 4];
    for (crc, section) in crcs.iter_mut().zip(sections) {
        *crc = maintenance_step::crc32c_in_steps(section).await;
    }
    let header = header(snap, lsn, marks.len() as u32, crcs);
    let mut out = ChunkedWriter::new(file, tmp);
    out.push(header.as_bytes()).await?;
    for s in sections {
        out.push(s).await?;
    }
    out.finish().await?;
    file.fdatasync().await.map_err(io("fdatasync", tmp))
}

fn header(snap: &IndexSnapshot, lsn: u64, segment_count: u32, crcs: [u32; 4]) -> CheckpointHeader {
    let mut h = CheckpointHeader {
        magic: CHECKPOINT_MAGIC,
        format_version: U32::new(CHECKPOINT_FORMAT_VERSION),
        segment_count: U32::new(segment_count),
        lsn: U64::new(lsn),
        key_count: U64::new(snap.len() as u64),
        keys_len: U64::new(snap.keys.len() as u64),
        segments_crc: U32::new(crcs[0]),
        keys_crc: U32::new(crcs[1]),
        ends_crc: U32::new(crcs[2]),
        entries_crc: U32::new(crcs[3]),
        reserved: U32::ZERO,
        header_crc: U32::ZERO,
    };
    h.header_crc = U32::new(crc32c::crc32c(&h.as_bytes()[..HEADER_BYTES - 4]));
    h
}

/// Streams bytes into aligned DMA buffers of [`SEQUENTIAL_READ_BYTES`] and writes them in order.
struct ChunkedWriter<'a, F: DiskFile> {
    file: &'a F,
    path: &'a Path,
    buf: F::Buf,
    used: usize,
    pos: u64,
}

impl<'a, F: DiskFile> ChunkedWriter<'a, F> {
    fn new(file: &'a F, path: &'a Path) -> Self {
        ChunkedWriter { file, path, buf: file.alloc_buf(SEQUENTIAL_READ_BYTES), used: 0, pos: 0 }
    }

    async fn push(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            let n = bytes.len().min(SEQUENTIAL_READ_BYTES - self.used);
            self.buf.as_mut()[self.used..self.used + n].copy_from_slice(&bytes[..n]);
            self.used += n;
            bytes = &bytes[n..];
            if self.used == SEQUENTIAL_READ_BYTES {
                let full =
                    std::mem::replace(&mut self.buf, self.file.alloc_buf(SEQUENTIAL_READ_BYTES));
                self.used = 0;
                self.write(full).await?;
            }
        }
        Ok(())
    }

    async fn write(&mut self, buf: F::Buf) -> Result<()> {
        let len = buf.as_ref().len() as u64;
        self.file.write_at(buf, self.pos).await.map_err(|e| Error::io("write", self.path, e))?;
        self.pos += len;
        Ok(())
    }

    /// Writes the last, partial buffer, zero-padded to the DMA alignment.
    async fn finish(mut self) -> Result<()> {
        if self.used > 0 {
            let mut last =
                self.file.alloc_buf(align_up(self.used as u64, DMA_ALIGN_BYTES) as usize);
            last.as_mut()[..self.used].copy_from_slice(&self.buf.as_ref()[..self.used]);
            self.write(last).await?;
        }
        Ok(())
    }
}

async fn delete_segments<D: Disk>(shared: &Shared<D>, ids: &[u32]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    for &id in ids {
        let path = shared.segment_path(id);
        let has_file = shared.state.borrow().segments.get(id).is_some_and(|s| s.file.is_some());
        if has_file {
            shared.disk.remove(&path).await.map_err(|e| Error::io("remove", &path, e))?;
        }
    }
    shared.sync_dir().await?;
    let mut st = shared.state.borrow_mut();
    for &id in ids {
        st.segments.remove(id);
        st.counters.segments_deleted += 1;
    }
    Ok(())
}

/// Loads and verifies the checkpoint in `dir`, if there is one.
pub async fn load<D: Disk>(disk: &D, dir: &Path) -> Result<Option<Loaded>> {
    let path = dir.join(CHECKPOINT_FILE);
    let names = disk.list_dir(dir).await.map_err(|e| Error::io("list", dir, e))?;
    if !names.iter().any(|n| n == CHECKPOINT_FILE) {
        return Ok(None);
    }
    let map = disk.map(&path).await.map_err(|e| Error::io("map", &path, e))?;
    parse(&map).map(Some).map_err(|what| Error::CorruptFile { file: path, what })
}

/// Decodes and validates a checkpoint file's bytes (header, section checksums, the index);
/// the error says what is wrong. Public for the fuzz targets (`tests/src/fuzz_targets.rs`).
pub fn parse(bytes: &[u8]) -> std::result::Result<Loaded, String> {
    let (h, _) = CheckpointHeader::read_from_prefix(bytes)
        .map_err(|_| format!("only {} bytes", bytes.len()))?;
    if h.magic != CHECKPOINT_MAGIC
        || crc32c::crc32c(&h.as_bytes()[..HEADER_BYTES - 4]) != h.header_crc.get()
    {
        return Err("bad magic or header checksum".into());
    }
    if h.format_version.get() != CHECKPOINT_FORMAT_VERSION {
        return Err(format!(
            "format version {} (this build reads {CHECKPOINT_FORMAT_VERSION})",
            h.format_version.get()
        ));
    }
    let n = h.key_count.get();
    let lens = [
        u64::from(h.segment_count.get()) * std::mem::size_of::<SegmentMark>() as u64,
        h.keys_len.get(),
        n.checked_mul(4).ok_or("key count overflows")?,
        n.checked_mul(std::mem::size_of::<IndexEntry>() as u64).ok_or("key count overflows")?,
    ];
    let crcs = [h.segments_crc.get(), h.keys_crc.get(), h.ends_crc.get(), h.entries_crc.get()];
    let mut sections = [&[][..]; 4];
    let mut pos = HEADER_BYTES as u64;
    for (i, len) in lens.into_iter().enumerate() {
        let end = pos.checked_add(len).filter(|&e| e <= bytes.len() as u64).ok_or_else(|| {
            format!(
                "section {i} ({len} bytes at {pos}) runs past the end of the {}-byte file",
                bytes.len()
            )
        })?;
        sections[i] = &bytes[pos as usize..end as usize];
        if crc32c::crc32c(sections[i]) != crcs[i] {
            return Err(format!("section {i} checksum mismatch"));
        }
        pos = end;
    }
    let marks =
        <[SegmentMark]>::ref_from_bytes(sections[0]).map_err(|_| "bad segment section")?.to_vec();
    let index = Index::from_checkpoint(sections[1], sections[2], sections[3])?;
    Ok(Loaded { lsn: h.lsn.get(), index, marks })
}

/// Path of the checkpoint file of a store directory.
pub fn checkpoint_path(dir: &Path) -> PathBuf {
    dir.join(CHECKPOINT_FILE)
}
