//! Reading and atomically replacing a small whole file (the catalog, the partition map) through
//! the [`Disk`] seam, the way `checkpoint.rs` writes checkpoints.
//!
//! Write path for file `F`: (1) remove a leftover `F.tmp`; (2) create `F.tmp` and write the whole
//! file in one aligned write, zero-padded to the DMA alignment; (3) fdatasync `F.tmp`; (4) rename
//! it over `F`; (5) fsync the directory. A crash before step 4 leaves the old `F` in place (and an
//! `F.tmp` that the next read removes); after step 4 the rename is atomic, so a reader sees the old
//! file or the new one, never a mix. The zero padding is part of the file: each format says where
//! its bytes end.

use std::path::Path;

use crate::constants::{align_up, DMA_ALIGN_BYTES};
use crate::disk::{Disk, DiskFile};
use crate::{Error, Result};

/// A file replaced only as a whole: its name and the name of its temporary twin.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AtomicFile {
    pub name: &'static str,
    pub tmp: &'static str,
}

fn io<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> Error + 'p {
    move |e| Error::io(op, path, e)
}

/// Removes the temporary file if a crashed write left one behind.
async fn remove_tmp<D: Disk>(disk: &D, dir: &Path, f: AtomicFile) -> Result<()> {
    let names = disk.list_dir(dir).await.map_err(io("list", dir))?;
    if names.iter().any(|n| n == f.tmp) {
        let tmp = dir.join(f.tmp);
        disk.remove(&tmp).await.map_err(io("remove", &tmp))?;
    }
    Ok(())
}

/// The bytes of `dir/F`, or None if there is none. Creates `dir` if it is missing and removes
/// a leftover `F.tmp`, which never holds the current contents.
pub(crate) async fn read<D: Disk>(disk: &D, dir: &Path, f: AtomicFile) -> Result<Option<D::Map>> {
    disk.create_dir_all(dir).await.map_err(io("create directory", dir))?;
    remove_tmp(disk, dir, f).await?;
    let names = disk.list_dir(dir).await.map_err(io("list", dir))?;
    if !names.iter().any(|n| n == f.name) {
        return Ok(None);
    }
    let path = dir.join(f.name);
    disk.map(&path).await.map(Some).map_err(io("map", &path))
}

/// Replaces `dir/F` with `bytes`, durably and atomically (steps in the module comment).
pub(crate) async fn write<D: Disk>(
    disk: &D,
    dir: &Path,
    f: AtomicFile,
    bytes: &[u8],
) -> Result<()> {
    remove_tmp(disk, dir, f).await?;
    let tmp = dir.join(f.tmp);
    let file = disk.create(&tmp).await.map_err(io("create", &tmp))?;
    let mut buf = file.alloc_buf(align_up(bytes.len() as u64, DMA_ALIGN_BYTES) as usize);
    buf.as_mut()[..bytes.len()].copy_from_slice(bytes);
    file.write_at(buf, 0).await.map_err(io("write", &tmp))?;
    file.fdatasync().await.map_err(io("fdatasync", &tmp))?;
    drop(file);
    let path = dir.join(f.name);
    disk.rename(&tmp, &path).await.map_err(io("rename", &tmp))?;
    disk.sync_dir(dir).await.map_err(io("sync directory", dir))
}
