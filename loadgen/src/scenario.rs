//! The key-design lab: one load (orders written by users drawn from the key distribution,
//! zipfian by default, so some users are hot) against the same logical table laid out by each
//! primary-key design the seed documents discuss. ringstore hashes the shard key (the leading
//! key fields) to a partition, so what matters is how many distinct shard-key values carry the
//! load at any moment; the scenarios measure exactly that.
//!
//! | scenario | primary key (shard key in SHARD(...)) | from |
//! |---|---|---|
//! | `user` | SHARD(userid), orderid | the plain design: hot users are hot partitions |
//! | `timestamp-s` | SHARD(ts_s), userid, orderid | Lindorm: a time column leading (coarse, like `2015122410`) |
//! | `timestamp-ms` | SHARD(ts_ms), userid, orderid | the same at millisecond resolution |
//! | `enum` | SHARD(otype), userid, orderid | Lindorm: a low-cardinality order type leading |
//! | `hash-prefix` | SHARD(h), userid, orderid; h = md5(userid)[0..4] | Lindorm salting: hash prefix |
//! | `reversed` | SHARD(ruser), orderid; ruser = reverse(userid) | Lindorm salting: reversed key |
//! | `bucket` | SHARD(bucket), ts_ms, userid, orderid; bucket = ts_ms % 16 | Lindorm salting: `timestamp % numBuckets` |
//! | `random-suffix` | SHARD(userid, salt), orderid; salt = random(100) | Lindorm salting: random suffix, made part of the shard key |

use std::fmt::Write as _;

use md5::{Digest, Md5};
use ringstore_net::{FieldsBuf, ValueRef};

/// Buckets of the `bucket` scenario (`ts_ms % BUCKETS`).
pub const BUCKETS: i64 = 16;
/// Values of the `random-suffix` salt (`random(100)` in the Lindorm document).
pub const SALT_VALUES: u64 = 100;
/// The order types of the `enum` scenario.
pub const ORDER_TYPES: [&str; 4] = ["online", "store", "phone", "partner"];

/// One key design.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scenario {
    User,
    TimestampSecond,
    TimestampMs,
    Enum,
    HashPrefix,
    Reversed,
    Bucket,
    RandomSuffix,
}

impl Scenario {
    pub const ALL: [Scenario; 8] = [
        Scenario::User,
        Scenario::TimestampSecond,
        Scenario::TimestampMs,
        Scenario::Enum,
        Scenario::HashPrefix,
        Scenario::Reversed,
        Scenario::Bucket,
        Scenario::RandomSuffix,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::User => "user",
            Scenario::TimestampSecond => "timestamp-s",
            Scenario::TimestampMs => "timestamp-ms",
            Scenario::Enum => "enum",
            Scenario::HashPrefix => "hash-prefix",
            Scenario::Reversed => "reversed",
            Scenario::Bucket => "bucket",
            Scenario::RandomSuffix => "random-suffix",
        }
    }

    /// `all` or a comma-separated list of names.
    pub fn parse_list(s: &str) -> Result<Vec<Scenario>, String> {
        if s == "all" {
            return Ok(Scenario::ALL.to_vec());
        }
        s.split(',')
            .map(|n| {
                Scenario::ALL.into_iter().find(|sc| sc.name() == n.trim()).ok_or_else(|| {
                    let names: Vec<_> = Scenario::ALL.iter().map(|s| s.name()).collect();
                    format!(
                        "unknown scenario {n:?}; known: all, {} (--scenario list prints them)",
                        names.join(", ")
                    )
                })
            })
            .collect()
    }

    pub fn table(self) -> String {
        format!("lab_{}", self.name().replace('-', "_"))
    }

    /// The design's primary key (the shard key in SHARD(...)).
    pub fn primary_key(self) -> &'static str {
        match self {
            Scenario::User => "SHARD(userid), orderid",
            Scenario::TimestampSecond => "SHARD(ts_s), userid, orderid",
            Scenario::TimestampMs => "SHARD(ts_ms), userid, orderid",
            Scenario::Enum => "SHARD(otype), userid, orderid",
            Scenario::HashPrefix => "SHARD(h), userid, orderid",
            Scenario::Reversed => "SHARD(ruser), orderid",
            Scenario::Bucket => "SHARD(bucket), ts_ms, userid, orderid",
            Scenario::RandomSuffix => "SHARD(userid, salt), orderid",
        }
    }

    /// `--scenario list`: each scenario's name and primary key, one a line.
    pub fn list() -> String {
        let mut out = String::new();
        for s in Scenario::ALL {
            writeln!(out, "{:<14} PRIMARY KEY ({})", s.name(), s.primary_key()).expect("String");
        }
        out
    }

    /// The table's DDL: the same fields in every design, a different primary key.
    pub fn ddl(self) -> String {
        let key = self.primary_key();
        format!(
            "CREATE TABLE {} (userid STRING, orderid LONG, ts_s LONG, ts_ms LONG, \
             otype ENUM({}), h STRING, ruser STRING, bucket LONG, salt LONG, v BINARY, \
             PRIMARY KEY ({key}))",
            self.table(),
            ORDER_TYPES.join(", ")
        )
    }

    /// Fills `f` with one order row: user number `user`, order id `order`, written at `now_ms`.
    /// `text` holds the STRING values (userid, hash prefix, reversed userid) the fields borrow.
    pub fn fill(
        self,
        f: &mut FieldsBuf,
        text: &mut [String; 3],
        user: u64,
        order: u64,
        now_ms: i64,
        value: &[u8],
    ) {
        let [userid, h, ruser] = text;
        userid.clear();
        write!(userid, "u{user:08}").expect("String write");
        f.clear();
        f.push("userid", ValueRef::String(userid));
        f.push("orderid", ValueRef::Long(order as i64));
        match self {
            Scenario::TimestampSecond => f.push("ts_s", ValueRef::Long(now_ms / 1000)),
            Scenario::TimestampMs => f.push("ts_ms", ValueRef::Long(now_ms)),
            Scenario::Enum => {
                let t = ORDER_TYPES
                    [(crate::workload::mix64(order) % ORDER_TYPES.len() as u64) as usize];
                f.push("otype", ValueRef::Enum(t));
            }
            Scenario::HashPrefix => {
                h.clear();
                let digest = Md5::digest(userid.as_bytes());
                write!(h, "{:02x}{:02x}", digest[0], digest[1]).expect("String write");
                f.push("h", ValueRef::String(h));
            }
            Scenario::Reversed => {
                ruser.clear();
                ruser.extend(userid.chars().rev());
                f.push("ruser", ValueRef::String(ruser));
            }
            Scenario::Bucket => {
                f.push("ts_ms", ValueRef::Long(now_ms));
                f.push("bucket", ValueRef::Long(now_ms % BUCKETS));
            }
            Scenario::RandomSuffix => {
                let salt = crate::workload::mix64(order ^ 0x5A17) % SALT_VALUES;
                f.push("salt", ValueRef::Long(salt as i64));
            }
            Scenario::User => {}
        }
        f.push("v", ValueRef::Binary(value));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_and_tables_differ() {
        assert_eq!(Scenario::parse_list("all").unwrap().len(), 8);
        assert_eq!(
            Scenario::parse_list("enum,bucket").unwrap(),
            vec![Scenario::Enum, Scenario::Bucket]
        );
        assert!(Scenario::parse_list("nope").unwrap_err().contains("hash-prefix"));
        let list = Scenario::list();
        assert_eq!(list.lines().count(), 8);
        assert!(list.contains("hash-prefix    PRIMARY KEY (SHARD(h), userid, orderid)"), "{list}");
        let tables: std::collections::HashSet<_> =
            Scenario::ALL.iter().map(|s| s.table()).collect();
        assert_eq!(tables.len(), 8);
    }

    #[test]
    fn every_design_parses_as_ddl() {
        for s in Scenario::ALL {
            let stmts = ringstore_model::ddl::parse(&s.ddl());
            assert!(stmts.is_ok(), "{}: {:?}", s.name(), stmts.err());
        }
    }

    #[test]
    fn hash_prefix_is_four_hex_digits_of_md5() {
        let mut f = FieldsBuf::new();
        let mut text = Default::default();
        Scenario::HashPrefix.fill(&mut f, &mut text, 7, 1, 0, b"x");
        // `echo -n u00000007 | md5sum` starts 3d75.
        assert_eq!(text[1], "3d75");
        assert_eq!(text[0], "u00000007");
        Scenario::Reversed.fill(&mut f, &mut text, 7, 1, 0, b"x");
        assert_eq!(text[2], "70000000u");
    }
}
