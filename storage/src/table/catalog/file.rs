//! Reading and atomically replacing the catalog file through the [`Disk`] seam, the way
//! `checkpoint.rs` writes checkpoints.
//!
//! Write path: (1) remove a leftover `catalog.tmp`; (2) create `catalog.tmp` and write the whole
//! file in one aligned write, zero-padded to the DMA alignment; (3) fdatasync `catalog.tmp`;
//! (4) rename it over `catalog`; (5) fsync the directory. A crash before step 4 leaves the old
//! `catalog` in place (and a `catalog.tmp` that the next load removes); after step 4 the rename is
//! atomic, so a reader sees the old file or the new one, never a mix.

use std::path::Path;

use crate::constants::{align_up, DMA_ALIGN_BYTES};
use crate::disk::{Disk, DiskFile};
use crate::{Error, Result};

pub const CATALOG_FILE: &str = "catalog";
pub const CATALOG_TMP_FILE: &str = "catalog.tmp";

fn io<'p>(op: &'static str, path: &'p Path) -> impl FnOnce(std::io::Error) -> Error + 'p {
    move |e| Error::io(op, path, e)
}

/// Removes `catalog.tmp` if a crashed write left one behind.
async fn remove_tmp<D: Disk>(disk: &D, dir: &Path) -> Result<()> {
    let names = disk.list_dir(dir).await.map_err(io("list", dir))?;
    if names.iter().any(|n| n == CATALOG_TMP_FILE) {
        let tmp = dir.join(CATALOG_TMP_FILE);
        disk.remove(&tmp).await.map_err(io("remove", &tmp))?;
    }
    Ok(())
}

/// The bytes of `dir/catalog`, or None if there is none. Creates `dir` if it is missing and
/// removes a leftover `catalog.tmp`, which never holds the current catalog.
pub(super) async fn read<D: Disk>(disk: &D, dir: &Path) -> Result<Option<D::Map>> {
    disk.create_dir_all(dir).await.map_err(io("create directory", dir))?;
    remove_tmp(disk, dir).await?;
    let names = disk.list_dir(dir).await.map_err(io("list", dir))?;
    if !names.iter().any(|n| n == CATALOG_FILE) {
        return Ok(None);
    }
    let path = dir.join(CATALOG_FILE);
    disk.map(&path).await.map(Some).map_err(io("map", &path))
}

/// Replaces `dir/catalog` with `bytes`, durably and atomically (steps in the module comment).
pub(super) async fn write<D: Disk>(disk: &D, dir: &Path, bytes: &[u8]) -> Result<()> {
    remove_tmp(disk, dir).await?;
    let tmp = dir.join(CATALOG_TMP_FILE);
    let file = disk.create(&tmp).await.map_err(io("create", &tmp))?;
    let mut buf = file.alloc_buf(align_up(bytes.len() as u64, DMA_ALIGN_BYTES) as usize);
    buf.as_mut()[..bytes.len()].copy_from_slice(bytes);
    file.write_at(buf, 0).await.map_err(io("write", &tmp))?;
    file.fdatasync().await.map_err(io("fdatasync", &tmp))?;
    drop(file);
    let path = dir.join(CATALOG_FILE);
    disk.rename(&tmp, &path).await.map_err(io("rename", &tmp))?;
    disk.sync_dir(dir).await.map_err(io("sync directory", dir))
}
