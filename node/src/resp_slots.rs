//! Redis Cluster's key slots on the RESP port (docs/RESP.md, "Cluster mode"): a cluster-aware
//! client (redis-py's `RedisCluster`, `redis-benchmark --cluster`, `redis-cli -c`) hashes each
//! key to one of [`SLOTS`] slots and sends it to the node that serves the slot, so each shard's
//! own RESP port gets only the keys it owns and nothing is forwarded between shards.
//!
//! - A key's slot is Redis's: CRC16 (XMODEM) of the key, or of its hash tag (the bytes between
//!   the first `{` and the next `}`, if not empty), modulo 16384 ([`slot_of`]).
//! - The slots are cut into the store's partitions in contiguous runs ([`partition_of_slot`]):
//!   slot `s` lives in partition `s * P / 16384`. With the default 256 partitions a partition
//!   holds 64 slots, and the shard that owns the partition serves them.
//! - A row's partition is still the hash of its stored shard key (`partition.rs`), so
//!   `resp_kv`'s shard key is a *partition token* ([`Tokens`]), not the key: for each partition
//!   the smallest integer whose encoded shard key hashes into that partition. The stored key is
//!   `(token of partition_of_slot(slot_of(k)), k)`. Every path that routes rows (the router,
//!   the inline path, the store's ownership check, compaction) keeps working unchanged.
//!
//! The tokens depend only on the table (its id is in the shard key's bytes) and the partition
//! count, both fixed for a table's life, so they are found again after a restart by the same
//! search.

use std::cell::RefCell;
use std::rc::Rc;

use crc::{Crc, CRC_16_XMODEM};
use ringstore_storage::table::{
    encode_shard_key, partition_of, PartitionCount, TableId, TableResult, TableSchema, Value,
};

/// Redis Cluster's slot count.
pub const SLOTS: u16 = 16384;

const CRC16: Crc<u16> = Crc::<u16>::new(&CRC_16_XMODEM);

/// The bytes of `key` that choose its slot: the hash tag (between the first `{` and the next
/// `}`) if it is not empty, else the whole key. Redis's rule.
pub fn hashed_part(key: &[u8]) -> &[u8] {
    let Some(open) = key.iter().position(|&b| b == b'{') else {
        return key;
    };
    let rest = &key[open + 1..];
    match rest.iter().position(|&b| b == b'}') {
        Some(len) if len > 0 => &rest[..len],
        _ => key,
    }
}

/// The slot of `key`, 0..16384.
pub fn slot_of(key: &[u8]) -> u16 {
    CRC16.checksum(hashed_part(key)) % SLOTS
}

/// The partition that holds slot `slot`: the slots cut into `count` contiguous runs.
pub fn partition_of_slot(slot: u16, count: PartitionCount) -> u32 {
    (u64::from(slot) * u64::from(count.get()) / u64::from(SLOTS)) as u32
}

/// The runs of consecutive slots served by one shard, in slot order: `(first, last, shard)`.
pub fn slot_ranges(count: PartitionCount, owner: impl Fn(u32) -> usize) -> Vec<(u16, u16, usize)> {
    let mut ranges: Vec<(u16, u16, usize)> = Vec::new();
    for slot in 0..SLOTS {
        let shard = owner(partition_of_slot(slot, count));
        match ranges.last_mut() {
            Some((_, last, s)) if *s == shard => *last = slot,
            _ => ranges.push((slot, slot, shard)),
        }
    }
    ranges
}

/// The partition tokens of one table: `tokens[p]` is the smallest non-negative integer whose
/// encoded shard key (an INTEGER shard key field, the table's only one) hashes into partition
/// `p`. Only the partitions that hold slots have one.
#[derive(Debug)]
pub struct Tokens {
    table: TableId,
    tokens: Vec<i32>,
}

/// The token search gives up past this many candidates. With at most `NODE_PARTITIONS_MAX`
/// (65,536) partitions it ends after about `P ln(partitions with slots)` hashes, under a
/// million; the bound only keeps a broken hash from looping forever.
const TOKEN_SEARCH_MAX: i32 = 1 << 26;

impl Tokens {
    /// Finds the tokens of the table `schema` describes, whose shard key is one INTEGER field
    /// (an error if it is not).
    pub fn find(schema: &TableSchema, count: PartitionCount) -> TableResult<Tokens> {
        let needed = (0..SLOTS)
            .map(|s| partition_of_slot(s, count))
            .collect::<std::collections::BTreeSet<u32>>();
        let mut tokens = vec![-1i32; count.get() as usize];
        let mut missing = needed.len();
        let mut v = 0i32;
        while missing > 0 {
            assert!(
                v < TOKEN_SEARCH_MAX,
                "no partition token below {TOKEN_SEARCH_MAX} for {missing} of {} partitions: \
                 the partition hash does not spread integers",
                count.get()
            );
            let shard_key = encode_shard_key(schema, &[Value::Integer(v)])?;
            let p = partition_of(&shard_key, count) as usize;
            if tokens[p] < 0 && needed.contains(&(p as u32)) {
                tokens[p] = v;
                missing -= 1;
            }
            v += 1;
        }
        Ok(Tokens { table: schema.id(), tokens })
    }

    /// The token of the partition that holds `key`'s slot.
    pub fn of_key(&self, key: &[u8], count: PartitionCount) -> i32 {
        self.tokens[partition_of_slot(slot_of(key), count) as usize]
    }
}

thread_local! {
    /// The tokens of the table last asked for (one shard per thread, so the shard's).
    static CACHED: RefCell<Option<Rc<Tokens>>> = const { RefCell::new(None) };
}

/// The tokens of table `schema` (found once per table and shard, then cached).
pub fn tokens(schema: &TableSchema, count: PartitionCount) -> TableResult<Rc<Tokens>> {
    if let Some(t) = CACHED
        .with_borrow(|c| c.clone())
        .filter(|t| t.table == schema.id() && t.tokens.len() == count.get() as usize)
    {
        return Ok(t);
    }
    let found = Rc::new(Tokens::find(schema, count)?);
    CACHED.with_borrow_mut(|c| *c = Some(found.clone()));
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Redis's own values (`CLUSTER KEYSLOT`, and the CRC16 check value of its cluster spec).
    #[test]
    fn slots_are_redis_slots() {
        assert_eq!(CRC16.checksum(b"123456789"), 0x31C3);
        assert_eq!(slot_of(b"foo"), 12182);
        assert_eq!(slot_of(b"bar"), 5061);
        assert_eq!(slot_of(b"hello"), 866);
        assert_eq!(slot_of(b""), 0);
    }

    #[test]
    fn a_hash_tag_chooses_the_slot() {
        assert_eq!(hashed_part(b"{user1000}.following"), b"user1000");
        assert_eq!(slot_of(b"{user1000}.following"), slot_of(b"{user1000}.followers"));
        // An empty tag, or no closing brace: the whole key.
        assert_eq!(hashed_part(b"foo{}{bar}"), b"foo{}{bar}");
        assert_eq!(hashed_part(b"foo{bar"), b"foo{bar");
        // The first '{' and the first '}' after it.
        assert_eq!(hashed_part(b"foo{{bar}}zap"), b"{bar");
        assert_eq!(hashed_part(b"foo{bar}{zap}"), b"bar");
    }

    #[test]
    fn slots_fill_the_partitions_in_contiguous_runs() {
        let count = PartitionCount::new(256).expect("count");
        assert_eq!(partition_of_slot(0, count), 0);
        assert_eq!(partition_of_slot(63, count), 0);
        assert_eq!(partition_of_slot(64, count), 1);
        assert_eq!(partition_of_slot(SLOTS - 1, count), 255);
        // Round-robin owners over two shards: runs of 64 slots, alternating.
        let ranges = slot_ranges(count, |p| (p % 2) as usize);
        assert_eq!(ranges.len(), 256);
        assert_eq!(ranges[0], (0, 63, 0));
        assert_eq!(ranges[1], (64, 127, 1));
        assert_eq!(ranges.last(), Some(&(16320, 16383, 1)));
        // One shard: one run.
        assert_eq!(slot_ranges(count, |_| 0), vec![(0, SLOTS - 1, 0)]);
        // More partitions than slots: every slot still has one partition, in order.
        let many = PartitionCount::new(65_536).expect("count");
        assert_eq!(partition_of_slot(1, many), 4);
    }

    /// Every partition that holds slots gets a token whose shard key hashes into it, so a row
    /// stored under `of_key(k)` lands in the partition of `k`'s slot.
    #[test]
    fn each_token_hashes_into_its_partition() {
        use ringstore_storage::table::{encode_primary_key_into, FieldType, ValueRef};
        let schema = TableSchema::builder(TableId(7), "resp_kv")
            .field("p", FieldType::Integer)
            .field("k", FieldType::Binary)
            .field("v", FieldType::Binary)
            .primary_key(&["p", "k"])
            .shard_key(&["p"])
            .build()
            .expect("schema");
        for partitions in [1, 3, 256, 20_000] {
            let count = PartitionCount::new(partitions).expect("count");
            let tokens = Tokens::find(&schema, count).expect("tokens");
            let mut buf = Vec::new();
            for key in [&b"foo"[..], b"bar", b"{user1000}.following", b"", b"k:12345"] {
                let token = tokens.of_key(key, count);
                let pairs = [("p", ValueRef::Integer(token)), ("k", ValueRef::Binary(key))];
                let (_, len) = encode_primary_key_into(&schema, pairs, &mut buf).expect("key");
                let want = partition_of_slot(slot_of(key), count);
                assert_eq!(partition_of(&buf[..len], count), want, "{partitions} partitions");
            }
        }
    }
}
