//! Proves the node starts and serves reads on a full disk (issue 12, item 6), on a real ext4 file
//! system: a 64 MiB image, formatted and loop-mounted by the test (it needs root and a loop
//! device, as the CI machine has).
//!
//! - A node writes rows, stops; a filler file then takes every free block.
//! - The node starts again (before the fix it failed writing its I/O probe file, "prepare
//!   directory: No space left on device"), serves every row, and stays up and serving reads
//!   after a write it cannot make durable.
//! - No zero-byte temporary file (`.dma-probe`, `checkpoint.tmp`) is left in a shard directory.
//! - Once the filler is removed, the node takes writes again without a restart, and they are
//!   durable.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use ringstore_storage::table::Value;
use ringstore_tests::Node;

mod node_common;

/// Size of the file system image.
const IMAGE_BYTES: u64 = 64 << 20;
/// Rows written before the disk fills.
const ROWS: i64 = 50;

/// A loop-mounted ext4 image under a temporary directory; unmounted when dropped.
struct SmallDisk {
    _dir: tempfile::TempDir,
    mount: PathBuf,
}

impl SmallDisk {
    fn new() -> SmallDisk {
        let dir = tempfile::tempdir().expect("temp dir");
        let image = dir.path().join("fs.img");
        let mount = dir.path().join("mnt");
        std::fs::create_dir(&mount).expect("mount point");
        std::fs::File::create(&image).expect("image").set_len(IMAGE_BYTES).expect("size");
        run(Command::new("mkfs.ext4").args(["-q", "-F"]).arg(&image));
        run(Command::new("mount").args(["-o", "loop"]).arg(&image).arg(&mount));
        SmallDisk { _dir: dir, mount }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
    }
}

fn run(command: &mut Command) {
    let out = command.output().unwrap_or_else(|e| panic!("{command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed (this test needs root and a loop device): {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes a file until the file system has no block left.
fn fill(dir: &Path) {
    let mut f = std::fs::File::create(dir.join("filler")).expect("filler");
    for chunk in [1 << 20, 4096] {
        let block = vec![0xEEu8; chunk];
        while f.write_all(&block).is_ok() {}
    }
    let _ = f.sync_all();
}

fn row(id: i64) -> [(&'static str, Value); 2] {
    [("id", Value::Long(id)), ("v", Value::String(format!("row {id}")))]
}

fn assert_rows(node: &Node) {
    let mut c = node.client();
    for id in 0..ROWS {
        let got = c
            .get("t", &[("id", Value::Long(id))])
            .unwrap_or_else(|e| panic!("get {id}: {e}; node log:\n{}", node.log_text()))
            .expect("row present");
        assert_eq!(got.newest().fields[1], Some(Value::String(format!("row {id}"))), "row {id}");
    }
}

/// Zero-byte files left in the shard directories.
fn empty_files(data: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for shard in std::fs::read_dir(data).expect("data dir").flatten() {
        if !shard.path().is_dir() {
            continue;
        }
        for f in std::fs::read_dir(shard.path()).expect("shard dir").flatten() {
            if f.metadata().expect("metadata").len() == 0 {
                found.push(f.path());
            }
        }
    }
    found
}

#[test]
fn a_node_starts_and_serves_reads_on_a_full_disk() {
    let disk = SmallDisk::new();
    // The data directory is on the small disk; the node's log (written next to the path given)
    // is not, through a link from the temporary directory.
    std::fs::create_dir(disk.mount.join("data")).expect("data dir");
    let data = disk.mount.parent().expect("temp dir").join("data");
    std::os::unix::fs::symlink(disk.mount.join("data"), &data).expect("link");
    let small_segments = ["--segment-size-bytes", "4194304"];
    let node = Node::start(&data, &small_segments);
    let mut c = node.client();
    c.ddl("CREATE TABLE t (id LONG, v STRING, PRIMARY KEY (id))").expect("create");
    for id in 0..ROWS {
        c.put("t", &row(id)).expect("put");
    }
    drop(c);
    assert!(node.terminate().success());

    fill(&disk.mount);
    let node = Node::try_start(&data, &small_segments)
        .unwrap_or_else(|log| panic!("the node did not start on a full disk: {log}"));
    assert_rows(&node);
    // Writes fill what is left (the prepared segment file kept at the last stop) and then find
    // no room, since no new segment can be created: answered with an error, and reads go on.
    let mut c = node.client();
    let big = "x".repeat(BIG_VALUE_BYTES);
    let e = (0..BIG_ROWS_MAX)
        .find_map(|i| {
            let id = BIG_ROW_FIRST_ID + i;
            c.put("t", &[("id", Value::Long(id)), ("v", Value::String(big.clone()))]).err()
        })
        .expect("a full disk refuses writes before the bound");
    assert_eq!(e.code(), Some(611), "{e}");
    assert_rows(&node);

    // Space returns: the shard takes writes again without a restart (it checks once a second,
    // `resume.rs`). Before the fix the store stayed poisoned until the node was restarted.
    std::fs::remove_file(disk.mount.join("filler")).expect("free the space");
    // Each shard resumes on its own check, so every row is retried until its shard takes it.
    let deadline = Instant::now() + RESUME_BOUND;
    for id in ROWS..ROWS + 10 {
        loop {
            match c.put("t", &row(id)) {
                Ok(_) => break,
                Err(e) if Instant::now() < deadline => {
                    assert_eq!(e.code(), Some(611), "{e}");
                    std::thread::sleep(RESUME_POLL);
                }
                Err(e) => panic!(
                    "writes not taken again within {RESUME_BOUND:?}: {e}; log:\n{}",
                    node.log_text()
                ),
            }
        }
    }
    drop(c);
    let log_path = node.log.clone();
    let status = node.terminate();
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(status.success(), "{status}; log:\n{log}");
    assert!(log.contains("shard takes writes again"), "log:\n{log}");
    assert_eq!(empty_files(&data), Vec::<PathBuf>::new(), "zero-byte files left behind");

    // The writes taken after the resume are durable (the client's writes are Sync).
    let node = Node::start(&data, &small_segments);
    assert_rows(&node);
    let mut c = node.client();
    for id in ROWS..ROWS + 10 {
        let got = c.get("t", &[("id", Value::Long(id))]).expect("get").expect("row kept");
        assert_eq!(got.newest().fields[1], Some(Value::String(format!("row {id}"))), "row {id}");
    }
}

/// Rows of this many bytes fill the space left after a start on the full disk.
const BIG_VALUE_BYTES: usize = 64 << 10;
/// Far more big rows than the space left holds (a prepared 4 MiB segment at most).
const BIG_ROWS_MAX: i64 = 1024;
const BIG_ROW_FIRST_ID: i64 = 1_000_000;

/// How long the node may take to notice that space returned: its check runs once a second
/// (`RESUME_CHECK_INTERVAL`), and a resume replays the log of a small store.
const RESUME_BOUND: Duration = Duration::from_secs(30);
/// Pause between write attempts while waiting for the resume.
const RESUME_POLL: Duration = Duration::from_millis(100);
