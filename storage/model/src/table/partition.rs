//! Which partition a row belongs to: a fixed, stable hash of its encoded shard key, modulo a
//! partition count fixed when the store is created.
//!
//! The hash is XXH3-64 with seed 0 (the `xxhash-rust` crate), never a per-process random seed:
//! partitions are stored in the data directory and must be found again after a restart, on
//! another build and on another machine. The hashed bytes are the shard key prefix of the stored
//! key, table prefix included ([`encode_shard_key`]). Including the table id keeps a hot shard key
//! value that several tables share (a date, a tenant) from piling all of them onto one partition,
//! and it makes the partition a function of the stored key's bytes alone. Rows with equal shard
//! keys have equal shard key bytes, so they always land in one partition.

use xxhash_rust::xxh3::xxh3_64_with_seed;

use super::error::{TableError, TableResult};
use super::key::{encode_shard_key, shard_key_prefix_len};
use super::limits::{MAP_PARTITIONS_DEFAULT, MAP_PARTITIONS_MAX};
use super::schema::TableSchema;
use super::value::Value;

/// The seed of the partition hash. Changing it moves every row to another partition.
pub const PARTITION_HASH_SEED: u64 = 0;

/// The number of partitions of a store, 1..=[`MAP_PARTITIONS_MAX`], fixed at creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PartitionCount(u32);

impl PartitionCount {
    pub fn new(count: u32) -> TableResult<PartitionCount> {
        if count == 0 || count > MAP_PARTITIONS_MAX {
            return Err(TableError::InvalidPartitionCount { count });
        }
        Ok(PartitionCount(count))
    }

    pub fn get(self) -> u32 {
        self.0
    }
}

impl Default for PartitionCount {
    fn default() -> PartitionCount {
        PartitionCount(MAP_PARTITIONS_DEFAULT)
    }
}

/// The partition hash of encoded shard key bytes.
pub fn partition_hash(shard_key: &[u8]) -> u64 {
    xxh3_64_with_seed(shard_key, PARTITION_HASH_SEED)
}

/// The partition of encoded shard key bytes. A power-of-two count (like the default) takes the
/// low bits of the hash without bias; other counts have a bias below `count / 2^64`.
pub fn partition_of(shard_key: &[u8], count: PartitionCount) -> u32 {
    (partition_hash(shard_key) % u64::from(count.0)) as u32
}

/// The partition of a row given its key values (a full key, or a partial key covering the shard
/// key).
pub fn partition_of_values(
    schema: &TableSchema,
    values: &[Value],
    count: PartitionCount,
) -> TableResult<u32> {
    Ok(partition_of(&encode_shard_key(schema, values)?, count))
}

/// The partition of a stored full key.
pub fn partition_of_stored_key(
    schema: &TableSchema,
    key: &[u8],
    count: PartitionCount,
) -> TableResult<u32> {
    let len = shard_key_prefix_len(schema, key)?;
    Ok(partition_of(&key[..len], count))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pinned outputs: if an upgrade of `xxhash-rust` changed them, every stored row would be in
    /// the wrong partition, so this test must fail first.
    #[test]
    fn hash_outputs_are_pinned() {
        // The XXH3-64 reference value for empty input and seed 0.
        assert_eq!(partition_hash(b""), 0x2D06_8005_38D3_94C2);
        assert_eq!(partition_hash(b"ringstore"), PINNED_RINGSTORE);
        assert_eq!(partition_hash(&[0, 0, 0, 1, 0x80, 0, 0, 7]), PINNED_INT_KEY);
        assert_eq!(
            partition_of(b"ringstore", PartitionCount::default()),
            (PINNED_RINGSTORE % 4096) as u32
        );
    }

    const PINNED_RINGSTORE: u64 = 0x367C_C60F_0501_8A13;
    const PINNED_INT_KEY: u64 = 0x8BA9_F83F_17D7_F055;

    #[test]
    fn count_limits() {
        assert_eq!(PartitionCount::new(0).map_err(|e| e.code()), Err(301));
        assert!(PartitionCount::new(MAP_PARTITIONS_MAX + 1).is_err());
        assert_eq!(
            PartitionCount::new(MAP_PARTITIONS_MAX).map(PartitionCount::get),
            Ok(MAP_PARTITIONS_MAX)
        );
        assert_eq!(PartitionCount::default().get(), 4096);
    }

    #[test]
    fn one_partition_takes_everything() {
        let one = PartitionCount::new(1).unwrap_or_default();
        assert_eq!(partition_of(b"anything", one), 0);
    }
}
