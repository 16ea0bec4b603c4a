//! The partition map in the data directory: created once, found again after a restart (and a
//! crash that loses everything unsynced), and a start with another partition or shard count is
//! refused with code 302 instead of looking for rows on the wrong shard.

mod common;

use std::path::Path;

use common::{run, sim};
use ringstore_storage::table::{PartitionCount, PartitionMap, PARTITION_MAP_FILE};

const DATA_DIR: &str = "/sim/data";

#[test]
fn partition_map_is_created_once_and_checked_on_every_start() {
    run(|| async move {
        let disk = sim(1);
        let dir = Path::new(DATA_DIR);
        let count = PartitionCount::new(64).unwrap();
        let map = PartitionMap::load_or_create(&disk, dir, count, 3).await.unwrap();
        assert_eq!((map.partitions(), map.shards()), (count, 3));
        assert_eq!(map.partitions_of(1).take(3).collect::<Vec<_>>(), [1, 4, 7]);
        assert!(disk.file_bytes(&dir.join(PARTITION_MAP_FILE)).is_some());

        // Durable before load_or_create returns.
        disk.crash_losing_all_unsynced();
        let again = PartitionMap::load_or_create(&disk, dir, count, 3).await.unwrap();
        assert_eq!(again, map);

        // Another shard count or partition count is refused, naming both.
        let e = PartitionMap::load_or_create(&disk, dir, count, 4).await.unwrap_err();
        assert_eq!(e.code(), 302);
        let text = e.to_string();
        assert!(
            text.contains("64 partitions on 3 shards") && text.contains("on 4 shards"),
            "{text}"
        );
        let e = PartitionMap::load_or_create(&disk, dir, PartitionCount::default(), 3).await;
        assert_eq!(e.unwrap_err().code(), 302);

        // A damaged file is reported as corrupt (code 615), never used.
        let path = dir.join(PARTITION_MAP_FILE);
        let mut bytes = disk.file_bytes(&path).unwrap();
        bytes[20] ^= 1;
        disk.set_file_bytes(&path, bytes);
        let e = PartitionMap::load_or_create(&disk, dir, count, 3).await.unwrap_err();
        assert_eq!(e.code(), 615, "{e}");
        assert!(e.to_string().contains("checksum"), "{e}");
    });
}
