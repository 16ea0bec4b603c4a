//! Proves the node starts and serves reads on a full disk (issue 12, item 6), on a real ext4 file
//! system: a 64 MiB image, formatted and loop-mounted by the test (it needs root and a loop
//! device, as the CI machine has).
//!
//! - A node writes rows, stops; a filler file then takes every free block.
//! - The node starts again (before the fix it failed writing its I/O probe file, "prepare
//!   directory: No space left on device"), serves every row, and stays up and serving reads
//!   after a write it cannot make durable.
//! - No zero-byte temporary file (`.dma-probe`, `checkpoint.tmp`) is left in a shard directory.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

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
    // A write may or may not find room; either way it is answered and reads go on.
    let mut c = node.client();
    if let Err(e) = c.put("t", &row(ROWS)) {
        assert!(e.code().is_some_and(|code| (600..700).contains(&code)), "{e}");
    }
    assert_rows(&node);
    let log_path = node.log.clone();
    let status = node.terminate();
    let log = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(status.success(), "{status}; log:\n{log}");
    assert_eq!(empty_files(&data), Vec::<PathBuf>::new(), "zero-byte files left behind");
}
