//! Proves the basic contract on the real glommio DMA disk: a value written with each durability
//! mode reads back, deletes hide keys at once, and everything survives close and reopen.

mod common;

use ringstore_storage::disk::dma::DmaDisk;
use ringstore_storage::{Durability, Store, WriteOptions};

#[test]
fn put_get_delete_reopen_on_dma_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("shard-0");
    common::run(move || async move {
        let store = Store::open(DmaDisk, &path, common::test_config()).await.expect("open");
        for (i, d) in
            [Durability::Sync, Durability::WriteNoSync, Durability::NoSync].into_iter().enumerate()
        {
            let key = format!("key-{i}");
            store.put(key.as_bytes(), b"value", WriteOptions::durability(d)).await.expect("put");
            let got = store.get(key.as_bytes()).await.expect("get").expect("present");
            assert_eq!(&got.value[..], b"value");
        }
        assert!(store.delete(b"key-0", Durability::Sync).await.expect("delete"));
        assert!(store.get(b"key-0").await.expect("get").is_none());
        store.close().await.expect("close");

        let store = Store::open(DmaDisk, &path, common::test_config()).await.expect("reopen");
        assert!(store.get(b"key-0").await.expect("get").is_none());
        for i in 1..3 {
            let got =
                store.get(format!("key-{i}").as_bytes()).await.expect("get").expect("present");
            assert_eq!(&got.value[..], b"value");
        }
        store.close().await.expect("close");
    });
}

/// The file operations preallocation relies on, on the real disk: a renamed file's size is its
/// own (glommio's `file_size` stats the old path, which by then names another file), and a
/// durable (O_DSYNC) write through a renamed file lands in it.
#[test]
fn a_renamed_dma_file_keeps_its_size_and_takes_durable_writes() {
    use ringstore_storage::disk::{Disk, DiskFile};
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    common::run(move || async move {
        let disk = DmaDisk;
        disk.prepare_dir(&root).await.expect("prepare");
        let (a, b) = (root.join("a"), root.join("b"));
        let file = disk.create(&a).await.expect("create a");
        file.write_at(file.alloc_buf(8192), 0).await.expect("write");
        disk.rename(&a, &b).await.expect("rename a to b");
        let other = disk.create(&a).await.expect("create a again");
        other.write_at(other.alloc_buf(4096), 0).await.expect("write");
        assert_eq!(file.size().await.expect("size"), 8192, "the renamed file's own size");
        assert_eq!(other.size().await.expect("size"), 4096);
        let mut buf = file.alloc_buf(4096);
        buf.as_mut()[..5].copy_from_slice(b"hello");
        file.write_at_durable(buf, 4096).await.expect("durable write");
        let got = file.read_at(4096, 5).await.expect("read");
        assert_eq!(&got[..], b"hello");
        assert_eq!(std::fs::read(&b).expect("read b")[4096..4101], *b"hello");
    });
}

/// A log flush's buffer is its records followed by zeros, also when glommio hands out a buffer
/// that an earlier write left full of other bytes (its buffers are pooled, not zeroed).
#[test]
fn a_flush_buffer_is_its_prefix_then_zeros_on_dma_disk() {
    use ringstore_storage::disk::{Disk, DiskFile};
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_path_buf();
    common::run(move || async move {
        let disk = DmaDisk;
        disk.prepare_dir(&root).await.expect("prepare");
        let file = disk.create(&root.join("f")).await.expect("create");
        for round in 0..4u64 {
            let mut dirty = file.alloc_buf(8192);
            dirty.as_mut().fill(0xA5);
            file.write_at(dirty, 0).await.expect("write a dirty buffer");
            let prefix = vec![b'r'; 100 + round as usize * 1000];
            let buf = file.alloc_buf_from(&prefix, 8192);
            assert_eq!(&buf.as_ref()[..prefix.len()], &prefix[..]);
            assert!(buf.as_ref()[prefix.len()..].iter().all(|&b| b == 0), "round {round}");
            file.write_at(buf, 8192).await.expect("write");
            let back = file.read_at(8192, 8192).await.expect("read");
            assert_eq!(&back[..prefix.len()], &prefix[..]);
            assert!(back[prefix.len()..].iter().all(|&b| b == 0), "round {round}, on disk");
        }
    });
}

/// A store on the real disk that fills several preallocated segments with Sync writes, compacts
/// them (compaction scans each by the file's size) and reopens with everything there.
#[test]
fn preallocated_segments_roll_compact_and_reopen_on_dma_disk() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("shard-0");
    common::run(move || async move {
        let store = Store::open(DmaDisk, &path, common::test_config()).await.expect("open");
        let value = vec![7u8; 4000];
        // 4 MiB segments: 3,000 records of ~4 KiB (each its own flush) fill three of them; the
        // keys repeat, so the early segments become garbage.
        for i in 0..3000u32 {
            let key = format!("key-{}", i % 300);
            store.put(key.as_bytes(), &value, WriteOptions::default()).await.expect("put");
        }
        assert!(store.stats().segments >= 3, "segments rolled: {:?}", store.stats().segments);
        assert!(store.stats().counters.preallocations >= 2);
        let report = store.compact().await.expect("compact");
        assert!(report.segments_compacted >= 1, "{report:?}");
        store.close().await.expect("close");
        let store = Store::open(DmaDisk, &path, common::test_config()).await.expect("reopen");
        assert!(store.recovery_report().corrupt.is_empty());
        for i in 0..300u32 {
            let got = store.get(format!("key-{i}").as_bytes()).await.expect("get").expect("kept");
            assert_eq!(got.value.len(), 4000);
        }
        store.close().await.expect("close");
    });
}
