//! Fixed-size keys and values, and which shard owns each key.

use ringstore_net::route::partition_of_fields;
use ringstore_net::{FieldsBuf, Topology, ValueRef};
use ringstore_storage::table::{PartitionCount, TableSchema};

/// The benchmark table: a STRING key and a BINARY value.
pub const TABLE: &str = "bench";
pub const CREATE_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS bench (k STRING, v BINARY, PRIMARY KEY (k))";

/// Key number `i` as a string of exactly `size` bytes (`k000...i`).
pub fn key(i: u64, size: usize) -> String {
    let digits = i.to_string();
    let mut k = String::with_capacity(size.max(digits.len() + 1));
    k.push('k');
    for _ in 0..size.saturating_sub(digits.len() + 1) {
        k.push('0');
    }
    k.push_str(&digits);
    k
}

/// For each shard, the key numbers (0..count) it owns.
pub fn keys_by_shard(
    schema: &TableSchema,
    topology: &Topology,
    count: u64,
    key_size: usize,
) -> Vec<Vec<u64>> {
    let shards = topology.shards();
    let partitions = PartitionCount::new(topology.partition_owners.len() as u32)
        .expect("the node reports a valid partition count");
    let mut out = vec![Vec::new(); shards];
    for i in 0..count {
        let k = key(i, key_size);
        let fields = FieldsBuf::of([("k", ValueRef::String(&k))]);
        let p = partition_of_fields(schema, fields.list(), partitions)
            .expect("a STRING key encodes")
            .expect("the key covers the shard key");
        out[usize::from(topology.partition_owners[p as usize])].push(i);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_asked_size_and_differ() {
        assert_eq!(key(7, 16), "k000000000000007");
        assert_eq!(key(123, 16).len(), 16);
        assert_ne!(key(1, 16), key(10, 16));
        // A size too small for the number still gives a unique key.
        assert_eq!(key(12345, 3), "k12345");
    }
}
