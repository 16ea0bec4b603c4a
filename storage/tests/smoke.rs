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
