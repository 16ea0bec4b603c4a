//! The partition map: which shard owns each partition, stored in the data directory.
//!
//! The partition count is fixed when a data directory is created (`partition.rs` hashes shard keys
//! into it) and the map assigns every partition to a shard, round-robin (`p mod shards`) at
//! creation. It is written once, atomically (`atomic_file.rs`), and checked on every start: a
//! daemon started with another partition count or shard count than the directory was made with is
//! refused with [`TableError::PartitionMapMismatch`] instead of silently looking for rows on the
//! wrong shard. Moving partitions between shards (a rebalance) would rewrite this file; it is the
//! unit of such moves.
//!
//! File `partitions` (all integers little-endian), `docs/FORMAT.md` ("Partition map"):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 4 | magic `RSPM` |
//! | 4 | 4 | format version, [`PARTITION_MAP_FORMAT_VERSION`] |
//! | 8 | 4 | partition count `P` |
//! | 12 | 4 | shard count `S` |
//! | 16 | 2 x P | owner shard of partition 0..P, each `< S` |
//! | 16 + 2P | 4 | CRC32C of bytes 0..16 + 2P |
//!
//! then zero padding to the DMA alignment.

use std::path::Path;

use super::atomic_file::{self, AtomicFile};
use super::error::{TableError, TableResult};
use super::limits::SHARDS_MAX;
use super::partition::PartitionCount;
use crate::disk::Disk;
use crate::table::op_error::OpResult;

pub const PARTITION_MAP_FILE: &str = "partitions";
pub const PARTITION_MAP_TMP_FILE: &str = "partitions.tmp";
pub const PARTITION_MAP_MAGIC: [u8; 4] = *b"RSPM";
pub const PARTITION_MAP_FORMAT_VERSION: u32 = 1;
const HEADER_BYTES: usize = 16;
const FILE: AtomicFile = AtomicFile { name: PARTITION_MAP_FILE, tmp: PARTITION_MAP_TMP_FILE };

/// Which shard owns each partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionMap {
    count: PartitionCount,
    shards: u32,
    owners: Vec<u16>,
}

impl PartitionMap {
    /// `count` partitions over `shards` shards, partition `p` on shard `p mod shards`.
    pub fn round_robin(count: PartitionCount, shards: u32) -> TableResult<PartitionMap> {
        if shards == 0 || shards > SHARDS_MAX {
            return Err(TableError::InvalidShardCount { shards });
        }
        let owners = (0..count.get()).map(|p| (p % shards) as u16).collect();
        Ok(PartitionMap { count, shards, owners })
    }

    pub fn partitions(&self) -> PartitionCount {
        self.count
    }

    pub fn shards(&self) -> u32 {
        self.shards
    }

    /// The shard that owns `partition` (which must be below the partition count).
    pub fn shard_of(&self, partition: u32) -> u32 {
        u32::from(self.owners[partition as usize])
    }

    /// The partitions a shard owns, in order.
    pub fn partitions_of(&self, shard: u32) -> impl Iterator<Item = u32> + '_ {
        (0..self.count.get()).filter(move |&p| self.shard_of(p) == shard)
    }

    /// Loads the map of data directory `dir`, creating it (round-robin) if the directory has
    /// none. A map made with another partition or shard count is refused.
    pub async fn load_or_create<D: Disk>(
        disk: &D,
        dir: &Path,
        count: PartitionCount,
        shards: u32,
    ) -> OpResult<PartitionMap> {
        let wanted = PartitionMap::round_robin(count, shards)?;
        match atomic_file::read(disk, dir, FILE).await? {
            Some(bytes) => {
                let stored = decode(bytes.as_ref()).map_err(|what| crate::Error::CorruptFile {
                    file: dir.join(PARTITION_MAP_FILE),
                    what: what.to_owned(),
                })?;
                if stored.count != count || stored.shards != shards {
                    return Err(TableError::PartitionMapMismatch {
                        stored_partitions: stored.count.get(),
                        stored_shards: stored.shards,
                        partitions: count.get(),
                        shards,
                    }
                    .into());
                }
                Ok(stored)
            }
            None => {
                atomic_file::write(disk, dir, FILE, &encode(&wanted)).await?;
                Ok(wanted)
            }
        }
    }
}

fn encode(map: &PartitionMap) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES + 2 * map.owners.len() + 4);
    out.extend_from_slice(&PARTITION_MAP_MAGIC);
    out.extend_from_slice(&PARTITION_MAP_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&map.count.get().to_le_bytes());
    out.extend_from_slice(&map.shards.to_le_bytes());
    for owner in &map.owners {
        out.extend_from_slice(&owner.to_le_bytes());
    }
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn decode(bytes: &[u8]) -> Result<PartitionMap, &'static str> {
    let word = |at: usize| -> Result<u32, &'static str> {
        let b = bytes.get(at..at + 4).ok_or("truncated file")?;
        Ok(u32::from_le_bytes(b.try_into().map_err(|_| "truncated file")?))
    };
    if bytes.get(..4) != Some(&PARTITION_MAP_MAGIC[..]) {
        return Err("bad magic (not a partition map)");
    }
    if word(4)? != PARTITION_MAP_FORMAT_VERSION {
        return Err("unknown format version");
    }
    let count = PartitionCount::new(word(8)?).map_err(|_| "partition count out of range")?;
    let shards = word(12)?;
    if shards == 0 || shards > SHARDS_MAX {
        return Err("shard count out of range");
    }
    let end = HEADER_BYTES + 2 * count.get() as usize;
    let crc = word(end)?;
    if crc32c::crc32c(&bytes[..end]) != crc {
        return Err("checksum mismatch");
    }
    let owners: Vec<u16> = bytes[HEADER_BYTES..end]
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    if owners.iter().any(|&o| u32::from(o) >= shards) {
        return Err("a partition's owner is not a shard");
    }
    Ok(PartitionMap { count, shards, owners })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let map = PartitionMap::round_robin(PartitionCount::new(10).unwrap(), 3).unwrap();
        assert_eq!((map.shard_of(0), map.shard_of(4), map.shard_of(9)), (0, 1, 0));
        assert_eq!(map.partitions_of(2).collect::<Vec<_>>(), [2, 5, 8]);
        let mut bytes = encode(&map);
        bytes.resize(4096, 0); // the DMA padding a reader sees
        assert_eq!(decode(&bytes), Ok(map));
        for i in 0..HEADER_BYTES + 24 {
            let mut b = bytes.clone();
            b[i] ^= 0x40;
            assert!(decode(&b).is_err(), "byte {i} flipped");
        }
        assert!(decode(&bytes[..20]).is_err());
        let e = PartitionMap::round_robin(PartitionCount::default(), 0).unwrap_err();
        assert_eq!(e.code(), 303);
    }
}
