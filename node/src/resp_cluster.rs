//! Redis Cluster's view of the node on the RESP port (docs/RESP.md, "Cluster mode"): each shard
//! is a cluster node (a primary with no replicas) at its own RESP port (`--resp` port + 1 +
//! shard), serving the slots of the partitions it owns (`resp_slots.rs`). A cluster-aware
//! client reads the slot map with CLUSTER SLOTS (or CLUSTER NODES, or CLUSTER SHARDS) and sends
//! each key to its owner, where it runs without crossing shards.
//!
//! Commands: CLUSTER KEYSLOT, SLOTS, SHARDS, NODES, INFO and MYID; READONLY, READWRITE and
//! ASKING (accepted, they change nothing: there are no replicas and slots never migrate).
//! A key sent to another shard's port is still served (forwarded to its owner, as on the shared
//! port), never answered MOVED, so a client with a stale or no slot map gets correct replies.
//!
//! Without slots (a `resp_kv` made before them, see `resp_table.rs`), every CLUSTER command
//! answers Redis's standalone error.

use std::hash::{Hash, Hasher};
use std::net::{IpAddr, SocketAddr};

use ringstore_net::resp::{reply, Args};

use crate::resp_session::Conn;
use crate::resp_slots::{self, SLOTS};
use crate::resp_table;
use crate::shard::Shard;

/// A standalone Redis's reply to cluster commands (and ringstore's for a table without slots).
pub const DISABLED: &str = "ERR This instance has cluster support disabled";

/// The cluster's configuration epoch: slots never move, so it never changes.
const EPOCH: u64 = 1;

/// Whether the port serves Redis Cluster's commands: `--resp` was given and `resp_kv` has the
/// slot layout.
pub fn enabled(shard: &Shard) -> bool {
    !shard.resp_ports.is_empty()
        && resp_table::table(shard).is_ok_and(|t| resp_table::has_slots(&t))
}

/// A shard's 40-hex-digit node id: a hash of the node's RESP ports, then the shard number.
/// Stable while the node runs with the same ports.
pub fn node_id(shard: &Shard, s: usize) -> String {
    let hash = |salt: &str| {
        let mut h = std::hash::DefaultHasher::new();
        salt.hash(&mut h);
        shard.resp_ports.hash(&mut h);
        h.finish()
    };
    format!("{:016x}{:016x}{:08x}", hash("ringstore-a"), hash("ringstore-b"), s)
}

/// The address a client reaches shard `s` at: the connection's local address (what the client
/// connected to), with that shard's own RESP port.
fn address(shard: &Shard, conn: &Conn, s: usize) -> SocketAddr {
    let ip = conn.local.parse::<SocketAddr>().map_or(IpAddr::from([127, 0, 0, 1]), |a| a.ip());
    SocketAddr::new(ip, shard.resp_ports[s])
}

/// The runs of slots each shard serves, in slot order.
fn ranges(shard: &Shard) -> Vec<(u16, u16, usize)> {
    resp_slots::slot_ranges(shard.partitions(), |p| shard.owner(p))
}

/// READONLY, READWRITE and ASKING: OK in cluster mode.
pub fn accept(shard: &Shard, out: &mut Vec<u8>) {
    if enabled(shard) {
        reply::ok(out)
    } else {
        reply::error(out, DISABLED)
    }
}

/// CLUSTER subcommand [args].
pub fn cluster(shard: &Shard, conn: &Conn, args: &Args, raw: &[u8], out: &mut Vec<u8>) {
    let sub = args.get(raw, 1).to_ascii_uppercase();
    let n = args.len();
    if !enabled(shard) {
        return reply::error(out, DISABLED);
    }
    match (sub.as_slice(), n) {
        (b"KEYSLOT", 3) => reply::integer(out, i64::from(resp_slots::slot_of(args.get(raw, 2)))),
        (b"MYID", 2) => reply::bulk(out, node_id(shard, shard.id).as_bytes()),
        (b"INFO", 2) => reply::bulk(out, info(shard).as_bytes()),
        (b"NODES", 2) => reply::bulk(out, nodes(shard, conn).as_bytes()),
        (b"SLOTS", 2) => slots(shard, conn, out),
        (b"SHARDS", 2) => shards(shard, conn, out),
        (b"KEYSLOT" | b"MYID" | b"INFO" | b"NODES" | b"SLOTS" | b"SHARDS", _) => {
            let sub = String::from_utf8_lossy(&sub).to_lowercase();
            reply::error(out, &format!("ERR wrong number of arguments for 'cluster|{sub}' command"))
        }
        _ => {
            let sub = String::from_utf8_lossy(args.get(raw, 1)).into_owned();
            reply::error(out, &format!("ERR unknown subcommand '{sub}'. Try CLUSTER HELP."))
        }
    }
}

fn info(shard: &Shard) -> String {
    let nodes = shard.shards();
    format!(
        "cluster_state:ok\r\ncluster_slots_assigned:{SLOTS}\r\ncluster_slots_ok:{SLOTS}\r\n\
         cluster_slots_pfail:0\r\ncluster_slots_fail:0\r\ncluster_known_nodes:{nodes}\r\n\
         cluster_size:{nodes}\r\ncluster_current_epoch:{EPOCH}\r\ncluster_my_epoch:{EPOCH}\r\n"
    )
}

/// CLUSTER NODES: a line per shard, `id ip:port@cport flags master ping pong epoch link slots`.
/// There is no cluster bus, so the bus port is 0. `myself` marks the shard only on its own
/// port: on the shared port no node is the connection's (redis-benchmark would otherwise send
/// that node's slots to the shared port, which any shard may answer).
fn nodes(shard: &Shard, conn: &Conn) -> String {
    let ranges = ranges(shard);
    let mut text = String::new();
    for s in 0..shard.shards() {
        let flags = if s == shard.id && conn.own_port { "myself,master" } else { "master" };
        text += &format!(
            "{} {}@0 {flags} - 0 0 {EPOCH} connected",
            node_id(shard, s),
            address(shard, conn, s)
        );
        for &(first, last, _) in ranges.iter().filter(|r| r.2 == s) {
            text += &if first == last { format!(" {first}") } else { format!(" {first}-{last}") };
        }
        text.push('\n');
    }
    text
}

/// One node's entry of CLUSTER SLOTS: ip, port, id.
fn slot_node(shard: &Shard, conn: &Conn, s: usize, out: &mut Vec<u8>) {
    let addr = address(shard, conn, s);
    reply::array(out, 3);
    reply::bulk(out, addr.ip().to_string().as_bytes());
    reply::integer(out, i64::from(addr.port()));
    reply::bulk(out, node_id(shard, s).as_bytes());
}

/// CLUSTER SLOTS: `[first, last, [ip, port, id]]` per run of slots.
fn slots(shard: &Shard, conn: &Conn, out: &mut Vec<u8>) {
    let ranges = ranges(shard);
    reply::array(out, ranges.len());
    for (first, last, s) in ranges {
        reply::array(out, 3);
        reply::integer(out, i64::from(first));
        reply::integer(out, i64::from(last));
        slot_node(shard, conn, s, out);
    }
}

/// CLUSTER SHARDS: per shard, its slot runs and its one node (maps: RESP3 maps, or RESP2 flat
/// arrays, as Redis).
fn shards(shard: &Shard, conn: &Conn, out: &mut Vec<u8>) {
    let ranges = ranges(shard);
    let resp3 = conn.resp3.get();
    reply::array(out, shard.shards());
    for s in 0..shard.shards() {
        let own: Vec<_> = ranges.iter().filter(|r| r.2 == s).collect();
        let addr = address(shard, conn, s);
        reply::map(out, 2, resp3);
        reply::bulk(out, b"slots");
        reply::array(out, own.len() * 2);
        for &&(first, last, _) in &own {
            reply::integer(out, i64::from(first));
            reply::integer(out, i64::from(last));
        }
        reply::bulk(out, b"nodes");
        reply::array(out, 1);
        reply::map(out, 7, resp3);
        reply::bulk(out, b"id");
        reply::bulk(out, node_id(shard, s).as_bytes());
        reply::bulk(out, b"port");
        reply::integer(out, i64::from(addr.port()));
        reply::bulk(out, b"ip");
        reply::bulk(out, addr.ip().to_string().as_bytes());
        reply::bulk(out, b"endpoint");
        reply::bulk(out, addr.ip().to_string().as_bytes());
        reply::bulk(out, b"role");
        reply::bulk(out, b"master");
        reply::bulk(out, b"replication-offset");
        reply::integer(out, 0);
        reply::bulk(out, b"health");
        reply::bulk(out, b"online");
    }
}
