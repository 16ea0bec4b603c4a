//! The simulation seam: the store reaches files only through [`Disk`] and [`DiskFile`].
//!
//! Two implementations: [`dma::DmaDisk`] (glommio DMA files, O_DIRECT on io_uring) for production,
//! and [`sim::SimDisk`] (in memory, seeded) that loses unsynced writes, tears the last write and
//! injects I/O errors for the crash and model tests. The traits use `async fn` because every
//! implementation is driven by one single-threaded glommio executor; the futures are not `Send`.

pub mod dma;
pub mod sim;

use std::io;
use std::ops::Deref;
use std::path::Path;

/// A directory-level view of the file system the store lives in.
#[allow(
    async_fn_in_trait,
    reason = "used from one single-threaded executor; no Send bound is wanted"
)]
pub trait Disk: Clone + std::fmt::Debug + 'static {
    type File: DiskFile;
    /// A read-only view of a whole file (a memory map for real files).
    type Map: Deref<Target = [u8]> + 'static;

    /// Creates a new, empty file for reading and writing; fails if it exists.
    async fn create(&self, path: &Path) -> io::Result<Self::File>;
    /// Opens an existing file for reading and writing.
    async fn open(&self, path: &Path) -> io::Result<Self::File>;
    /// Maps a whole existing file read-only.
    async fn map(&self, path: &Path) -> io::Result<Self::Map>;
    async fn remove(&self, path: &Path) -> io::Result<()>;
    /// Renames `from` over `to` (atomically replacing `to`).
    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes creations, renames and removals in `dir` durable.
    async fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Creates `dir` and its parents if missing.
    async fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Creates `dir` if missing and readies the disk for direct I/O in it. Called once by
    /// recovery before any store file is opened.
    async fn prepare_dir(&self, dir: &Path) -> io::Result<()> {
        self.create_dir_all(dir).await
    }
    /// Names of the regular files in `dir`, in no particular order.
    async fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>>;
}

/// One open file. Writes use buffers from [`DiskFile::alloc_buf`] at aligned offsets.
#[allow(
    async_fn_in_trait,
    reason = "used from one single-threaded executor; no Send bound is wanted"
)]
pub trait DiskFile: std::fmt::Debug + 'static {
    /// A buffer suitable for a direct write (aligned memory for O_DIRECT).
    type Buf: AsRef<[u8]> + AsMut<[u8]> + 'static;
    /// The bytes of a completed read.
    type ReadBuf: Deref<Target = [u8]> + 'static;

    /// A zeroed buffer of `len` bytes; `len` is a multiple of [`crate::constants::DMA_ALIGN_BYTES`].
    fn alloc_buf(&self, len: usize) -> Self::Buf;
    /// A buffer of `len` bytes that starts with `prefix` and is zero after it (`prefix.len() <=
    /// len`): a log flush's records and their padding. An implementation whose fresh buffers are
    /// not zeroed writes each byte once instead of zeroing them all first.
    fn alloc_buf_from(&self, prefix: &[u8], len: usize) -> Self::Buf {
        let mut buf = self.alloc_buf(len);
        buf.as_mut()[..prefix.len()].copy_from_slice(prefix);
        buf
    }
    /// Writes the whole buffer at `pos` (aligned). A short write is an error.
    async fn write_at(&self, buf: Self::Buf, pos: u64) -> io::Result<()>;
    /// Writes the whole buffer at `pos` and makes *this write* durable, with the metadata needed
    /// to read it, in one device round trip where the file system allows (O_DSYNC: a FUA write
    /// into allocated blocks). Earlier writes not yet synced are not covered: call it only when
    /// everything written before is already durable. The default writes, then fdatasyncs.
    async fn write_at_durable(&self, buf: Self::Buf, pos: u64) -> io::Result<()> {
        self.write_at(buf, pos).await?;
        self.fdatasync().await
    }
    /// Reads up to `len` bytes at `pos` (any alignment); shorter only at end of file.
    async fn read_at(&self, pos: u64, len: usize) -> io::Result<Self::ReadBuf>;
    /// Makes every completed write to this file durable, with the metadata needed to read it.
    async fn fdatasync(&self) -> io::Result<()>;
    /// Current size of the open file in bytes (of this file, also after it was renamed).
    async fn size(&self) -> io::Result<u64>;
    /// Shrinks the file to `len` bytes and makes the new size durable. Call it only when every
    /// write to the file is synced; a crash before it returns leaves either size, and both read
    /// the same bytes up to `len`.
    async fn truncate(&self, len: u64) -> io::Result<()>;
}
