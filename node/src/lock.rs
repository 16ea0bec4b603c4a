//! One daemon per data directory: an exclusive lock on `DIR/LOCK` for as long as the node runs.
//!
//! Two daemons on one directory would each replay the log and then append to it, destroying
//! each other's writes. [`DataDirLock::acquire`] takes an exclusive, non-blocking `flock` on the
//! lock file and writes the daemon's pid into it, so the refusal can say who holds it. The lock
//! belongs to the open file: it is released when the value is dropped, and by the kernel when the
//! process exits or is killed, so a crash never leaves a stale lock behind. The file itself stays
//! (with the last holder's pid): deleting it on exit would let a third daemon lock a fresh file
//! while a second one still holds the old, unlinked one.

use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

/// Name of the lock file inside the data directory.
pub const LOCK_FILE: &str = "LOCK";

/// Most bytes of the lock file read for the holder's pid.
const PID_TEXT_BYTES_MAX: u64 = 64;

/// Why the data directory could not be locked.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LockError {
    #[error(
        "data directory {} is in use by another ringstore-node (pid {pid} from {})",
        dir.display(),
        path.display()
    )]
    InUse { dir: PathBuf, path: PathBuf, pid: String },
    #[error("cannot {op} {}: {source}", path.display())]
    Io { op: &'static str, path: PathBuf, source: std::io::Error },
}

/// The held lock on a data directory; dropping it releases the lock.
#[derive(Debug)]
pub struct DataDirLock {
    file: File,
    path: PathBuf,
}

impl DataDirLock {
    /// Creates `dir` if needed and locks `dir/LOCK`, or says which process holds it.
    pub fn acquire(dir: &Path) -> Result<DataDirLock, LockError> {
        std::fs::create_dir_all(dir).map_err(io_error("create directory", dir))?;
        let path = dir.join(LOCK_FILE);
        // No truncation before the lock is held: the file holds the current owner's pid.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_error("open", &path))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let pid = holder_pid(&mut file);
                return Err(LockError::InUse { dir: dir.to_owned(), path, pid });
            }
            Err(TryLockError::Error(source)) => {
                return Err(LockError::Io { op: "lock", path, source });
            }
        }
        write_pid(&mut file, std::process::id()).map_err(io_error("write pid to", &path))?;
        Ok(DataDirLock { file, path })
    }

    /// The lock file, `DIR/LOCK`.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The locked file, for callers that must keep it open elsewhere (the lock lives with it).
    pub fn file(&self) -> &File {
        &self.file
    }
}

fn io_error<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> LockError + 'a {
    move |source| LockError::Io { op, path: path.to_owned(), source }
}

/// The pid text the holder wrote, or a note saying why there is none. The holder may be between
/// taking the lock and writing its pid, so an empty file is possible.
fn holder_pid(file: &mut File) -> String {
    let mut text = String::new();
    let read = Read::by_ref(file).take(PID_TEXT_BYTES_MAX).read_to_string(&mut text);
    match read {
        Ok(_) if !text.trim().is_empty() => text.trim().to_string(),
        Ok(_) => "unknown: the file is empty".to_string(),
        Err(e) => format!("unknown: {e}"),
    }
}

fn write_pid(file: &mut File, pid: u32) -> std::io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    file.write_all(format!("{pid}\n").as_bytes())?;
    file.sync_data()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A fresh path under the system temp directory (not created: acquire creates it).
    fn scratch_dir(name: &str) -> PathBuf {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        std::env::temp_dir().join(format!("ringstore-lock-{}-{n}-{name}", std::process::id()))
    }

    #[test]
    fn creates_the_directory_and_writes_the_pid() {
        let dir = scratch_dir("pid").join("nested");
        let lock = DataDirLock::acquire(&dir).expect("first lock");
        assert_eq!(lock.path(), dir.join(LOCK_FILE));
        let text = std::fs::read_to_string(dir.join(LOCK_FILE)).expect("read lock file");
        assert_eq!(text, format!("{}\n", std::process::id()));
        drop(lock);
        std::fs::remove_dir_all(dir.parent().expect("parent")).expect("cleanup");
    }

    #[test]
    fn second_acquire_fails_naming_the_holder_then_succeeds_after_drop() {
        let dir = scratch_dir("twice");
        let first = DataDirLock::acquire(&dir).expect("first lock");
        // flock locks belong to the open file description, so a second open in this same
        // process conflicts just as another process would.
        let err = DataDirLock::acquire(&dir).expect_err("second lock granted");
        let expected = format!(
            "data directory {} is in use by another ringstore-node (pid {} from {})",
            dir.display(),
            std::process::id(),
            dir.join(LOCK_FILE).display()
        );
        assert_eq!(err.to_string(), expected);
        // The refused attempt must not have erased the holder's pid.
        let text = std::fs::read_to_string(dir.join(LOCK_FILE)).expect("read lock file");
        assert_eq!(text.trim(), std::process::id().to_string());
        drop(first);
        let again = DataDirLock::acquire(&dir).expect("lock after drop");
        drop(again);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }

    #[test]
    fn empty_lock_file_of_a_holder_is_reported() {
        let dir = scratch_dir("empty");
        std::fs::create_dir_all(&dir).expect("create dir");
        let holder = File::create(dir.join(LOCK_FILE)).expect("create lock file");
        holder.lock().expect("hold the lock");
        let err = DataDirLock::acquire(&dir).expect_err("lock granted while held");
        assert!(err.to_string().contains("(pid unknown: the file is empty from"), "{err}");
        drop(holder);
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
