//! Taking writes again after a full disk, without a restart.
//!
//! A write or fsync that fails (ENOSPC, EIO) poisons the shard's store: writes get 611 and reads
//! go on ([`ringstore_storage::Store::resume`] says why nothing else is safe). This task checks
//! once per [`RESUME_CHECK_INTERVAL`] whether its shard is poisoned and, if the file system of
//! the shard's directory has [`RESUME_FREE_SEGMENTS`] segments of free space, resumes it: the
//! store's state is recovered from its files as at a start and writes are taken again. A resume
//! that fails is logged and tried again at the next check. Writes that were appended but not
//! written when the poison struck are lost, as in a crash; none of them was acknowledged as
//! durable.

use std::path::Path;
use std::rc::Rc;
use std::time::Duration;

use crate::shard::Shard;

/// How often a shard checks whether it can take writes again.
pub const RESUME_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Free space, in segments of the configured size, before a poisoned shard tries to resume: one
/// for the next segment and one for the segment prepared ahead of it.
pub const RESUME_FREE_SEGMENTS: u64 = 2;

/// Runs until the shard's shutdown is requested.
pub async fn run(shard: Rc<Shard>, segment_bytes: u64) {
    loop {
        let stop = async {
            shard.shutdown.requested().await;
            true
        };
        let tick = async {
            glommio::timer::sleep(RESUME_CHECK_INTERVAL).await;
            false
        };
        if futures_lite::future::or(stop, tick).await {
            return;
        }
        if shard.tables.is_poisoned() {
            try_resume(&shard, segment_bytes).await;
        }
    }
}

async fn try_resume(shard: &Shard, segment_bytes: u64) {
    let dir = shard.tables.store().dir();
    let needed = segment_bytes.saturating_mul(RESUME_FREE_SEGMENTS);
    match free_bytes(dir) {
        Ok(free) if free >= needed => {}
        Ok(_) => return,
        Err(e) => {
            tracing::warn!(shard = shard.id, dir = %dir.display(), error = %e,
                "cannot read the free space; writes stay refused");
            return;
        }
    }
    match shard.tables.resume_writes().await {
        Ok(true) => tracing::warn!(shard = shard.id, "shard takes writes again"),
        Ok(false) => {}
        Err(e) => tracing::error!(shard = shard.id, error = %e,
            "taking writes again failed; retrying at the next check"),
    }
}

/// Bytes an unprivileged process can still write on the file system of `dir`.
fn free_bytes(dir: &Path) -> std::io::Result<u64> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    // SAFETY: statvfs is plain data, for which all-zero bytes are a valid value.
    let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `path` is a NUL-terminated string and `stat` a valid statvfs that the call fills.
    if unsafe { libc::statvfs(path.as_ptr(), &mut stat) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_bytes_of_a_real_directory_and_an_error_for_a_missing_one() {
        let dir = tempfile::tempdir().expect("temp dir");
        assert!(free_bytes(dir.path()).expect("statvfs") > 0, "{}", dir.path().display());
        let missing = dir.path().join("missing");
        let err = free_bytes(&missing).expect_err("no such directory");
        assert_eq!(err.kind(), std::io::ErrorKind::NotFound, "{err}");
    }
}
