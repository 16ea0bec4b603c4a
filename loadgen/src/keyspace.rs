//! The benchmark table and its keys: key number `n` is the STRING `k000…n`, padded to the size
//! the key-size spec gives `n`, and every key's partition (hence its shard) is computed once so
//! that routing a request costs an array lookup, not an encode and a hash.

use ringstore_model::table::{FieldType, PartitionCount, TableId, TableSchema};
use ringstore_net::route::partition_of_fields;
use ringstore_net::{FieldList, FieldsBuf, Topology, ValueRef};

use crate::scenario::Scenario;
use crate::workload::SizeSpec;

/// The benchmark table: a STRING key and a BINARY value.
pub const TABLE: &str = "bench";
pub const CREATE_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS bench (k STRING, v BINARY, PRIMARY KEY (k))";
/// The key and value field names of [`TABLE`].
pub const KEY_FIELD: &str = "k";
pub const VALUE_FIELD: &str = "v";

/// A secondary index the tool makes on the benchmark table before the load (`--index-on`).
/// Every entry key is the index id, the indexed value and the row's primary key
/// (docs/FORMAT.md, "Index entries"), so an index on `k` carries the key twice and grows by two
/// bytes per byte of key, and one on `v` carries the value and the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexOn {
    /// An index on the key field `k` (a copy of the primary key).
    Key,
    /// An index on the value field `v` (changed by every update).
    Value,
}

impl IndexOn {
    /// The field of [`TABLE`] the index is on.
    pub fn field(self) -> &'static str {
        match self {
            IndexOn::Key => KEY_FIELD,
            IndexOn::Value => VALUE_FIELD,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            IndexOn::Key => "key",
            IndexOn::Value => "value",
        }
    }
}

impl std::str::FromStr for IndexOn {
    type Err = String;

    /// `key` (or `k`) or `value` (or `v`).
    fn from_str(s: &str) -> Result<IndexOn, String> {
        match s.trim() {
            "key" | KEY_FIELD => Ok(IndexOn::Key),
            "value" | VALUE_FIELD => Ok(IndexOn::Value),
            other => Err(format!(
                "unknown field {other:?}; an index is on key or value (a list: key,value)"
            )),
        }
    }
}

/// The index names and `CREATE INDEX` statements of `list` on [`TABLE`]: `by_k`, `by_v`, and
/// `by_k_2`, `by_k_3`, ... for a field given again. The same list gives the same names, so a
/// run against a node given by address finds the indexes an earlier run made.
pub fn index_ddl(list: &[IndexOn]) -> Vec<(String, String)> {
    let mut out = Vec::with_capacity(list.len());
    for (i, on) in list.iter().enumerate() {
        let field = on.field();
        let nth = list[..=i].iter().filter(|o| *o == on).count();
        let name = if nth == 1 { format!("by_{field}") } else { format!("by_{field}_{nth}") };
        let ddl = format!("CREATE INDEX IF NOT EXISTS {name} ON {TABLE} ({field})");
        out.push((name, ddl));
    }
    out
}

/// Writes key number `n` into `out` (cleared first): `k`, zeros, then the decimal digits, `size`
/// bytes in all, or longer when the digits do not fit.
pub fn write_key(out: &mut String, n: u64, size: usize) {
    use std::fmt::Write;
    out.clear();
    let digits = if n == 0 { 1 } else { n.ilog10() as usize + 1 };
    out.push('k');
    for _ in 0..size.saturating_sub(digits + 1) {
        out.push('0');
    }
    write!(out, "{n}").expect("writing to a String cannot fail");
}

/// Key number `n` as an owned String (setup and tests; the request path uses [`write_key`]).
pub fn key(n: u64, size: usize) -> String {
    let mut k = String::new();
    write_key(&mut k, n, size);
    k
}

/// The topology of a RESP server at `port`: one partition, reached through that port (a
/// Redis-protocol server's routing is its own).
pub fn resp_topology(port: u16) -> Topology {
    Topology { shard: 0, shared_port: port, shard_ports: vec![0], partition_owners: vec![0] }
}

/// Where the keys of the benchmark table live.
#[derive(Debug)]
pub struct KeySpace {
    pub key_size: SizeSpec,
    /// The table requests go to.
    pub table: String,
    /// A key-design scenario's row layout instead of the benchmark table's.
    pub design: Option<Scenario>,
    schema: TableSchema,
    partitions: PartitionCount,
    /// Owning shard of each partition.
    owners: Vec<u16>,
    /// Partition of key numbers 0..len, computed up front.
    known: Vec<u32>,
}

impl KeySpace {
    /// The key space of a scenario's table (no precomputed partitions: its keys depend on time).
    pub fn scenario(
        schema: TableSchema,
        topology: &Topology,
        s: Scenario,
    ) -> Result<KeySpace, String> {
        let mut ks = KeySpace::new(schema, topology, SizeSpec::fixed(0), 0)?;
        ks.table = s.table();
        ks.design = Some(s);
        Ok(ks)
    }

    /// The key space of a RESP run (`--protocol resp`): the same keys as the benchmark table's,
    /// in one partition, because a Redis-protocol server's routing is its own.
    pub fn resp(key_size: SizeSpec) -> Result<KeySpace, String> {
        let schema = TableSchema::builder(TableId(1), TABLE)
            .field(KEY_FIELD, FieldType::String)
            .field(VALUE_FIELD, FieldType::Binary)
            .primary_key(&[KEY_FIELD])
            .build()
            .map_err(|e| format!("the RESP key space's schema: {e}"))?;
        KeySpace::new(schema, &resp_topology(0), key_size, 0)
    }

    /// Computes the partitions of keys 0..precompute.
    pub fn new(
        schema: TableSchema,
        topology: &Topology,
        key_size: SizeSpec,
        precompute: u64,
    ) -> Result<KeySpace, String> {
        let partitions = PartitionCount::new(topology.partition_owners.len() as u32)
            .map_err(|e| format!("the node's partition map: {e}"))?;
        let mut space = KeySpace {
            key_size,
            table: TABLE.to_string(),
            design: None,
            schema,
            partitions,
            owners: topology.partition_owners.clone(),
            known: Vec::new(),
        };
        let mut k = String::new();
        let mut known = Vec::with_capacity(precompute as usize);
        for n in 0..precompute {
            write_key(&mut k, n, key_size.of(n));
            known.push(space.compute(&k)?);
        }
        space.known = known;
        Ok(space)
    }

    fn compute(&self, key: &str) -> Result<u32, String> {
        let fields = FieldsBuf::of([(KEY_FIELD, ValueRef::String(key))]);
        self.partition_of_fields(fields.list())
    }

    /// The partition of a row or key given as fields (encodes and hashes: the scenario path).
    pub fn partition_of_fields(&self, fields: FieldList<'_>) -> Result<u32, String> {
        partition_of_fields(&self.schema, fields, self.partitions)
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("the key of table {} does not cover the shard key", self.table))
    }

    /// The partition of key number `n`, whose text is `key`.
    pub fn partition(&self, n: u64, key: &str) -> u32 {
        if self.owners.len() == 1 {
            return 0;
        }
        match self.known.get(n as usize) {
            Some(&p) => p,
            // Keys inserted during the run: a STRING key always encodes.
            None => self.compute(key).unwrap_or(0),
        }
    }

    /// The shard that owns key number `n`; `key` is scratch space, written only for a key
    /// whose partition was not computed up front.
    pub fn owner_of_key(&self, n: u64, key: &mut String) -> usize {
        if self.known.get(n as usize).is_none() {
            write_key(key, n, self.key_size.of(n));
        }
        self.shard_of(self.partition(n, key))
    }

    pub fn shard_of(&self, partition: u32) -> usize {
        usize::from(self.owners[partition as usize])
    }

    pub fn partition_count(&self) -> usize {
        self.owners.len()
    }

    pub fn shards(&self) -> usize {
        self.owners.iter().map(|&s| usize::from(s) + 1).max().unwrap_or(1)
    }

    pub fn schema(&self) -> &TableSchema {
        &self.schema
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_the_asked_size_and_differ() {
        assert_eq!(key(7, 16), "k000000000000007");
        assert_eq!(key(0, 4), "k000");
        assert_eq!(key(123, 16).len(), 16);
        assert_ne!(key(1, 16), key(10, 16));
        let resp = KeySpace::resp(SizeSpec::fixed(16)).expect("resp key space");
        assert_eq!((resp.partition(7, &key(7, 16)), resp.shards()), (0, 1));
        // A size too small for the number still gives a unique key.
        assert_eq!(key(12345, 3), "k12345");
        let mut reused = String::from("junk");
        write_key(&mut reused, 42, 8);
        assert_eq!(reused, "k0000042");
    }

    /// A key's owner is the same whether its partition was computed up front or not.
    #[test]
    fn the_owner_of_a_key_is_its_partitions_shard() {
        let schema = KeySpace::resp(SizeSpec::fixed(16)).expect("resp key space").schema;
        let owners: Vec<u16> = (0..16).map(|p| p % 2).collect();
        let topology = Topology {
            shard: 0,
            shared_port: 0,
            shard_ports: vec![0, 0],
            partition_owners: owners,
        };
        let (known, fresh) = (
            KeySpace::new(schema.clone(), &topology, SizeSpec::fixed(16), 500).expect("known"),
            KeySpace::new(schema, &topology, SizeSpec::fixed(16), 0).expect("fresh"),
        );
        let mut seen = [0; 2];
        let mut scratch = String::new();
        for n in 0..500 {
            let owner = known.shard_of(known.partition(n, &key(n, 16)));
            assert_eq!(known.owner_of_key(n, &mut scratch), owner, "key {n}");
            assert_eq!(fresh.owner_of_key(n, &mut scratch), owner, "key {n}, not precomputed");
            seen[owner] += 1;
        }
        assert!(seen.iter().all(|&n| n > 100), "both shards own keys: {seen:?}");
    }

    #[test]
    fn index_lists_parse_and_name_each_index_once() {
        let list: Vec<IndexOn> =
            ["key", "v", " key"].iter().map(|s| s.parse().expect("index")).collect();
        assert_eq!(list, [IndexOn::Key, IndexOn::Value, IndexOn::Key]);
        let ddl = index_ddl(&list);
        let names: Vec<&str> = ddl.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["by_k", "by_v", "by_k_2"]);
        assert_eq!(ddl[2].1, "CREATE INDEX IF NOT EXISTS by_k_2 ON bench (k)");
        let e = "size".parse::<IndexOn>().unwrap_err();
        assert!(e.contains("unknown field \"size\""), "{e}");
        assert!("".parse::<IndexOn>().is_err());
    }
}
