//! The production disk: glommio DMA files (O_DIRECT through io_uring) and memmap2 for checkpoints.

use std::io;
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
        Ok(DmaDiskFile { file: Rc::new(file) })
    }

    async fn open(&self, path: &Path) -> io::Result<DmaDiskFile> {
        let file = glommio::io::OpenOptions::new()
            .read(true)
            .write(true)
            .dma_open(path)
            .await
            .map_err(glommio_io)?;
        Ok(DmaDiskFile { file: Rc::new(file) })
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
    async fn prepare_dir(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let probe = dir.join(DMA_PROBE_FILE);
        std::fs::write(&probe, [0u8; DMA_ALIGN_BYTES as usize])?;
        let file = DmaFile::open(&probe).await.map_err(glommio_io);
        std::fs::remove_file(&probe)?;
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

impl DiskFile for DmaDiskFile {
    type Buf = DmaBuffer;
    type ReadBuf = ReadResult;

    fn alloc_buf(&self, len: usize) -> DmaBuffer {
        let mut buf = self.file.alloc_dma_buffer(len);
        buf.as_bytes_mut().fill(0);
        buf
    }

    async fn write_at(&self, buf: DmaBuffer, pos: u64) -> io::Result<()> {
        let len = buf.len();
        let written = self.file.write_at(buf, pos).await.map_err(glommio_io)?;
        if written != len {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                format!("short write: {written} of {len} bytes at offset {pos}"),
            ));
        }
        Ok(())
    }

    async fn read_at(&self, pos: u64, len: usize) -> io::Result<ReadResult> {
        self.file.read_at(pos, len).await.map_err(glommio_io)
    }

    async fn fdatasync(&self) -> io::Result<()> {
        self.file.fdatasync().await.map_err(glommio_io)
    }

    async fn size(&self) -> io::Result<u64> {
        self.file.file_size().await.map_err(glommio_io)
    }
}
