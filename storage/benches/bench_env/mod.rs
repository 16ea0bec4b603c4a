//! What both storage benchmarks need to know about where they run: the store's directory (a
//! temporary one under the target directory by default), its filesystem, the machine, the source
//! revision and the time, for the lines every report starts with.
#![allow(dead_code, reason = "each benchmark uses a different subset")]

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub mod measure;

pub type BenchResult<T> = Result<T, String>;

/// The store's parent directory (see [`bench_dir`]), its filesystem, and the guard; refused on
/// a memory filesystem, where O_DIRECT does not work.
pub fn block_device_dir(
    dir: Option<&Path>,
    prefix: &str,
) -> BenchResult<(PathBuf, Filesystem, Option<tempfile::TempDir>)> {
    let (dir, guard) = bench_dir(dir, prefix)?;
    let fs = filesystem_of(&dir)?;
    if fs.fstype == "tmpfs" || fs.fstype == "ramfs" {
        return Err(format!(
            "{} is on {}; O_DIRECT needs a block device: pass --dir",
            dir.display(),
            fs.fstype
        ));
    }
    Ok((dir, fs, guard))
}

/// The store's parent directory and, for the default, the guard that deletes it at the end.
pub fn bench_dir(
    dir: Option<&Path>,
    prefix: &str,
) -> BenchResult<(PathBuf, Option<tempfile::TempDir>)> {
    if let Some(dir) = dir {
        let empty = std::fs::read_dir(dir).map(|mut d| d.next().is_none()).unwrap_or(true);
        if !empty {
            return Err(format!("--dir {} is not empty", dir.display()));
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        return Ok((dir.to_path_buf(), None));
    }
    let parent = default_parent();
    std::fs::create_dir_all(&parent).map_err(|e| format!("create {}: {e}", parent.display()))?;
    let tmp = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&parent)
        .map_err(|e| format!("tempdir in {}: {e}", parent.display()))?;
    Ok((tmp.path().to_path_buf(), Some(tmp)))
}

/// `<target dir>/bench-tmp`, found from this executable's path (`<target>/<profile>/deps/<bench>-*`),
/// so the data sits on the same disk as the build rather than on a possibly memory-backed /tmp.
pub fn default_parent() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .unwrap_or_else(std::env::temp_dir)
        .join("bench-tmp")
}

pub struct Filesystem {
    pub device: String,
    pub fstype: String,
}

/// The mount holding `dir`, from the longest matching mount point in /proc/mounts.
pub fn filesystem_of(dir: &Path) -> BenchResult<Filesystem> {
    let dir = dir.canonicalize().map_err(|e| format!("canonicalize {}: {e}", dir.display()))?;
    let mounts =
        std::fs::read_to_string("/proc/mounts").map_err(|e| format!("read /proc/mounts: {e}"))?;
    mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() >= 3 && dir.starts_with(f[1]))
                .then(|| (f[1].len(), f[0].to_string(), f[2].to_string()))
        })
        .max_by_key(|(len, _, _)| *len)
        .map(|(_, device, fstype)| Filesystem { device, fstype })
        .ok_or_else(|| format!("no mount holds {}", dir.display()))
}

pub fn machine_line() -> String {
    let nproc = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let loadavg = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load1 = loadavg.split_whitespace().next().unwrap_or("?");
    format!(
        "machine: nproc {nproc} | kernel {} | date {} | loadavg (1 min) at start {load1} | source {}",
        kernel.trim(),
        utc_now(),
        source_revision()
    )
}

/// The workspace's git revision (`+dirty` with uncommitted changes), or "unknown".
pub fn source_revision() -> String {
    std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "describe", "--always", "--dirty=+dirty"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

/// The current UTC time as `YYYY-MM-DD HH:MM UTC`.
pub fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}
