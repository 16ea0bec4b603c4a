//! The seed document's tables created through `TableStore::ddl` and used: both `myProducts`
//! admin CLI scripts verbatim, and the `PRIMARY KEY (SHARD(productType, productName),
//! productClass)` example, whose rows with one shard key share a partition and are read and
//! deleted together by multiGet and multiDelete.

mod common;

use common::{open_tables, run, sim, T0_MS};
use ringstore_storage::ddl::seed_scripts::{SEED_SINGLE_KEY_SCRIPT, SEED_THREE_KEY_SCRIPT};
use ringstore_storage::table::*;
use ringstore_storage::{Durability, ManualClock};

const SHARDED_PRODUCTS: &str = "CREATE TABLE myProducts (productType STRING, productName STRING, \
     productClass STRING, color ENUM(blue, green, red), size ENUM(small, medium, large), \
     inventoryCount INTEGER, PRIMARY KEY (SHARD(productType, productName), productClass))";

const SYNC: Durability = Durability::Sync;

fn s(v: &str) -> Value {
    Value::String(v.to_owned())
}

fn key_names(schema: &TableSchema) -> Vec<&str> {
    (0..schema.primary_key().len()).map(|p| schema.key_field(p).name().as_str()).collect()
}

#[test]
fn seed_cli_scripts_create_the_expected_tables() {
    run(|| async move {
        for (seed, script, key, enum_sizes) in [
            (1, SEED_SINGLE_KEY_SCRIPT, vec!["productName"], "small"),
            (2, SEED_THREE_KEY_SCRIPT, vec!["productName", "productType", "productClass"], "large"),
        ] {
            let (disk, clock) = (sim(seed), ManualClock::new(T0_MS));
            let ts = open_tables(&disk, &clock).await.unwrap();
            let outcomes = ts.ddl(script).await.unwrap();
            assert!(matches!(outcomes[..], [Outcome::Created { .. }]), "{outcomes:?}");
            let table = ts.table("myProducts").unwrap();
            let schema = table.schema();
            assert_eq!(key_names(schema), key);
            assert_eq!(
                schema.shard_key_len(),
                key.len(),
                "the shard key defaults to the whole key"
            );
            let (_, size) = schema.field("size").unwrap();
            assert!(size.ty().enum_index(enum_sizes).is_some());

            // The table takes rows: a full key, every other field, read back.
            let mut row = vec![
                ("productName", s("widget")),
                ("productType", s("tools")),
                ("color", Value::Enum("red".into())),
                ("size", Value::Enum(enum_sizes.into())),
                ("inventoryCount", Value::Integer(12)),
            ];
            if key.len() == 3 {
                row.push(("productClass", s("hand")));
            }
            ts.put("myProducts", &row, SYNC).await.unwrap();
            let key_pairs: Vec<(&str, Value)> =
                row.iter().filter(|(f, _)| key.contains(f)).cloned().collect();
            let got = ts.get("myProducts", &key_pairs, VersionSelect::Newest).await.unwrap();
            let got = got.expect("the row is there");
            assert_eq!(got.newest().get(schema, "inventoryCount"), Some(&Value::Integer(12)));
            assert_eq!(got.newest().get(schema, "color"), Some(&Value::Enum("red".into())));
            ts.close().await.unwrap();
        }
    });
}

#[test]
fn shard_key_example_keeps_a_product_together() {
    run(|| async move {
        let (disk, clock) = (sim(3), ManualClock::new(T0_MS));
        let ts = open_tables(&disk, &clock).await.unwrap();
        ts.ddl(SHARDED_PRODUCTS).await.unwrap();
        let table = ts.table("myProducts").unwrap();
        let schema = table.schema().clone();
        assert_eq!(key_names(&schema), ["productType", "productName", "productClass"]);
        assert_eq!(schema.shard_key_len(), 2);

        let mut partitions = Vec::new();
        for (ty, name) in [("tools", "hammer"), ("tools", "saw"), ("toys", "hammer")] {
            for class in ["a", "b", "c"] {
                let row = [
                    ("productType", s(ty)),
                    ("productName", s(name)),
                    ("productClass", s(class)),
                    ("inventoryCount", Value::Integer(1)),
                ];
                ts.put("myProducts", &row, SYNC).await.unwrap();
                let values = [s(ty), s(name), s(class)];
                partitions.push(partition_of_values(&schema, &values, PartitionCount::default()));
            }
        }
        // Equal shard keys, one partition.
        for group in partitions.chunks(3) {
            assert!(group.iter().all(|p| p == &group[0]), "{group:?}");
        }

        // multiGet on the shard key reads the product's classes, and only them.
        let hammer = [("productType", s("tools")), ("productName", s("hammer"))];
        let page = ts.multi_get("myProducts", &RangeRequest::new(&hammer, 10)).await.unwrap();
        let classes: Vec<_> =
            page.rows.iter().map(|r| r.newest().get(&schema, "productClass").cloned()).collect();
        assert_eq!(classes, [Some(s("a")), Some(s("b")), Some(s("c"))]);

        // productType alone does not cover the shard key: multiGet refuses, a scan needs the flag.
        let tools = [("productType", s("tools"))];
        let e = ts.multi_get("myProducts", &RangeRequest::new(&tools, 10)).await.unwrap_err();
        assert_eq!(e.code(), 216, "{e}");
        assert!(e.to_string().contains("productType, productName"), "{e}");
        let mut scan = RangeRequest::new(&tools, 10);
        scan.allow_full_scan = true;
        assert_eq!(ts.scan("myProducts", &scan).await.unwrap().rows.len(), 6);

        // multiDelete removes one product's rows atomically and leaves the others.
        let o = ts.multi_delete("myProducts", &RangeRequest::new(&hammer, 10), SYNC).await.unwrap();
        assert_eq!(o.deleted, 3);
        assert_eq!(ts.scan("myProducts", &scan).await.unwrap().rows.len(), 3);
        ts.close().await.unwrap();
    });
}
