//! The production disk: glommio DMA files (O_DIRECT through io_uring) and memmap2 for checkpoints.

use std::cell::RefCell;
use std::io;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::rc::Rc;

use glommio::io::{DmaBuffer, DmaFile, ReadResult};

use super::{Disk, DiskFile};
use crate::constants::DMA_ALIGN_BYTES;

/// Name of the short-lived file [`DmaDisk::prepare_dir`] opens to settle glommio's IOPOLL probe.
pub const DMA_PROBE_FILE: &str = ".dma-probe";

/// Files on the local file system, opened with O_DIRECT. Must be used inside a glommio executor.
#[derive(Debug, Clone, Copy, Default)]
pub struct DmaDisk;

/// A glommio DMA file.
#[derive(Debug)]
pub struct DmaDiskFile {
    file: Rc<DmaFile>,
    /// A second open of the same file with O_DSYNC, for [`DiskFile::write_at_durable`]; opened
    /// on first use (only the active segment ever needs it).
    dsync: RefCell<Option<Rc<DmaFile>>>,
}

impl DmaDiskFile {
    fn new(file: DmaFile) -> Self {
        DmaDiskFile { file: Rc::new(file), dsync: RefCell::new(None) }
    }

    /// The O_DSYNC handle. Opened through `/proc/self/fd`, so it names the same inode even after
    /// the file was renamed (a prepared segment is renamed after it is opened).
    async fn dsync_handle(&self) -> io::Result<Rc<DmaFile>> {
        if let Some(f) = self.dsync.borrow().as_ref() {
            return Ok(f.clone());
        }
        let path = format!("/proc/self/fd/{}", self.file.as_raw_fd());
        let file = glommio::io::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DSYNC)
            .dma_open(&path)
            .await
            .map_err(glommio_io)?;
        let file = Rc::new(file);
        *self.dsync.borrow_mut() = Some(file.clone());
        Ok(file)
    }
}

fn to_io(e: glommio::GlommioError<()>) -> io::Error {
    io::Error::other(e.to_string())
}

fn glommio_io(e: glommio::GlommioError<()>) -> io::Error {
    match e {
        glommio::GlommioError::IoError(e) => e,
        glommio::GlommioError::EnhancedIoError { source, .. } => source,
        other => to_io(other),
    }
}

impl Disk for DmaDisk {
    type File = DmaDiskFile;
    type Map = memmap2::Mmap;

    async fn create(&self, path: &Path) -> io::Result<DmaDiskFile> {
        let file = glommio::io::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .dma_open(path)
            .await
            .map_err(glommio_io)?;
        Ok(DmaDiskFile::new(file))
    }

    async fn open(&self, path: &Path) -> io::Result<DmaDiskFile> {
        let file = glommio::io::OpenOptions::new()
            .read(true)
            .write(true)
            .dma_open(path)
            .await
            .map_err(glommio_io)?;
        Ok(DmaDiskFile::new(file))
    }

    async fn map(&self, path: &Path) -> io::Result<memmap2::Mmap> {
        let file = std::fs::File::open(path)?;
        // SAFETY: the store maps only its own checkpoint files, which are written once under a
        // temporary name and renamed into place; nothing modifies a published checkpoint while
        // it is mapped, so the mapped bytes cannot change underneath the slice.
        unsafe { memmap2::Mmap::map(&file) }
    }

    async fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    async fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    async fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::File::open(dir)?.sync_all()
    }

    async fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    /// glommio decides once per device and thread, on the first DMA open, whether reads may use
    /// the io_uring poll ring (IOPOLL), by reading that file's first block. On an empty file the
    /// read returns end-of-file without reaching the device, so glommio wrongly concludes that the
    /// device polls, and every later read fails with EOPNOTSUPP where it does not (seen on this
    /// project's virtio test machines). Opening a non-empty probe file first makes the decision
    /// on a real read.
    ///
    /// An existing file of at least one block in `dir` serves as the probe, so that a store on a
    /// full disk still opens (and serves reads); only a directory without one gets a probe file
    /// written, and removed again, also when writing it fails.
    async fn prepare_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let probe = dir.join(DMA_PROBE_FILE);
        if probe.exists() {
            std::fs::remove_file(&probe)?;
        }
        if let Some(existing) = block_sized_file(dir)? {
            return DmaFile::open(&existing)
                .await
                .map_err(glommio_io)?
                .close()
                .await
                .map_err(glommio_io);
        }
        let written = std::fs::write(&probe, [0u8; DMA_ALIGN_BYTES as usize]);
        let file = match written {
            Ok(()) => DmaFile::open(&probe).await.map_err(glommio_io),
            Err(e) => Err(e),
        };
        if probe.exists() {
            std::fs::remove_file(&probe)?;
        }
        file?.close().await.map_err(glommio_io)
    }

    async fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            let entry = entry?;
            if entry.file_type()?.is_file() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        Ok(names)
    }
}

/// A regular file in `dir` with at least one block of data, if there is one.
fn block_sized_file(dir: &Path) -> io::Result<Option<std::path::PathBuf>> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let meta = entry.metadata()?;
        if meta.is_file() && meta.len() >= DMA_ALIGN_BYTES {
            return Ok(Some(entry.path()));
        }
    }
    Ok(None)
}

async fn write_whole(file: &DmaFile, buf: DmaBuffer, pos: u64) -> io::Result<()> {
    let len = buf.len();
    let written = file.write_at(buf, pos).await.map_err(glommio_io)?;
    if written != len {
        return Err(io::Error::new(
            io::ErrorKind::WriteZero,
            format!("short write: {written} of {len} bytes at offset {pos}"),
        ));
    }
    Ok(())
}

impl DiskFile for DmaDiskFile {
    type Buf = DmaBuffer;
    type ReadBuf = ReadResult;

    fn alloc_buf(&self, len: usize) -> DmaBuffer {
        let mut buf = self.file.alloc_dma_buffer(len);
        buf.as_bytes_mut().fill(0);
        buf
    }

    fn alloc_buf_from(&self, prefix: &[u8], len: usize) -> DmaBuffer {
        // glommio's buffers come from a pool, not zeroed: write every byte exactly once.
        let mut buf = self.file.alloc_dma_buffer(len);
        let bytes = buf.as_bytes_mut();
        bytes[..prefix.len()].copy_from_slice(prefix);
        bytes[prefix.len()..].fill(0);
        buf
    }

    async fn write_at(&self, buf: DmaBuffer, pos: u64) -> io::Result<()> {
        write_whole(&self.file, buf, pos).await
    }

    async fn write_at_durable(&self, buf: DmaBuffer, pos: u64) -> io::Result<()> {
        write_whole(&*self.dsync_handle().await?, buf, pos).await
    }

    async fn read_at(&self, pos: u64, len: usize) -> io::Result<ReadResult> {
        self.file.read_at(pos, len).await.map_err(glommio_io)
    }

    async fn fdatasync(&self) -> io::Result<()> {
        self.file.fdatasync().await.map_err(glommio_io)
    }

    async fn truncate(&self, len: u64) -> io::Result<()> {
        self.file.truncate(len).await.map_err(glommio_io)?;
        self.fdatasync().await
    }

    /// The size of the open file, by `fstat` on its descriptor. glommio's own `file_size` stats
    /// the path the file was opened with, which after a rename (a prepared segment becoming a
    /// segment) names another file.
    async fn size(&self) -> io::Result<u64> {
        let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
        // SAFETY: the descriptor is open for as long as `self.file` lives, and `st` is a valid,
        // writable `stat` buffer that fstat fills completely when it returns 0.
        let rc = unsafe { libc::fstat(self.file.as_raw_fd(), st.as_mut_ptr()) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fstat returned 0, so it initialised the buffer.
        let st = unsafe { st.assume_init() };
        Ok(st.st_size as u64)
    }
}
