//! The RESP port's Redis Cluster view (docs/RESP.md, "Cluster mode"): each shard is a node at
//! its own RESP port serving the slots of its partitions. The slot map covers every slot once,
//! a key sent to its slot's node is never forwarded between shards (the node's own counters
//! say so), a key sent elsewhere is still served, real cluster clients (redis-benchmark
//! `--cluster`, redis-py's `RedisCluster`) run on it, and a table made before slots is served
//! without cluster mode until FLUSHALL re-creates it.

mod resp_common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;

use resp_common::*;
use ringstore_tests::Node;

const SLOTS: u32 = 16384;

/// A parsed RESP2 reply.
#[derive(Debug, Clone, PartialEq)]
enum Reply {
    Int(i64),
    Bulk(Vec<u8>),
    Simple(String),
    Error(String),
    Array(Vec<Reply>),
}

impl Reply {
    fn parse(buf: &[u8]) -> (Reply, usize) {
        let end = buf.windows(2).position(|w| w == b"\r\n").expect("a line");
        let head = std::str::from_utf8(&buf[1..end]).expect("utf-8");
        let after = end + 2;
        match buf[0] {
            b':' => (Reply::Int(head.parse().expect("int")), after),
            b'+' => (Reply::Simple(head.to_owned()), after),
            b'-' => (Reply::Error(head.to_owned()), after),
            b'$' => {
                let n: usize = head.parse().expect("length");
                (Reply::Bulk(buf[after..after + n].to_vec()), after + n + 2)
            }
            b'*' => {
                let n: usize = head.parse().expect("count");
                let mut pos = after;
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    let (item, used) = Reply::parse(&buf[pos..]);
                    items.push(item);
                    pos += used;
                }
                (Reply::Array(items), pos)
            }
            other => panic!("unexpected reply type {:?}", char::from(other)),
        }
    }

    fn int(&self) -> i64 {
        match self {
            Reply::Int(i) => *i,
            other => panic!("not an integer: {other:?}"),
        }
    }

    fn text(&self) -> String {
        match self {
            Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("not a bulk string: {other:?}"),
        }
    }

    fn items(&self) -> &[Reply] {
        match self {
            Reply::Array(items) => items,
            other => panic!("not an array: {other:?}"),
        }
    }
}

/// Sends a command given as space-separated words and parses the reply.
fn call(c: &mut Client, line: &str) -> Reply {
    let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    command(c, &words)
}

/// Sends `words` and parses the reply.
fn command(c: &mut Client, words: &[&[u8]]) -> Reply {
    c.command(words);
    Reply::parse(&c.reply_bytes()).0
}

/// The node's sum over shards of metric `name`.
fn metric(addr: SocketAddr, name: &str) -> u64 {
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT).expect("connect to the metrics port");
    s.set_read_timeout(Some(TIMEOUT)).expect("timeout");
    write!(s, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").expect("send");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read the metrics");
    let prefix = format!("ringstore_{name}{{");
    text.lines()
        .filter(|l| l.starts_with(&prefix))
        .map(|l| l.rsplit(' ').next().and_then(|v| v.parse::<u64>().ok()).expect("a value"))
        .sum()
}

/// The slot map from CLUSTER SLOTS: the node port of every slot.
fn slot_ports(c: &mut Client) -> Vec<u16> {
    let mut ports = vec![0u16; SLOTS as usize];
    for range in call(c, "CLUSTER SLOTS").items() {
        let r = range.items();
        let (first, last) = (r[0].int() as usize, r[1].int() as usize);
        let node = r[2].items();
        assert_eq!(node[0].text(), "127.0.0.1");
        for (slot, port) in ports.iter_mut().enumerate().take(last + 1).skip(first) {
            assert_eq!(*port, 0, "slot {slot} is in two ranges");
            *port = node[1].int() as u16;
        }
    }
    ports
}

fn node_with_metrics() -> (tempfile::TempDir, Node, SocketAddr) {
    let (dir, node) = node(&["--metrics", "127.0.0.1:0"]);
    let metrics = node.ready.metrics.expect("the ready line names the metrics address");
    (dir, node, metrics)
}

#[test]
fn the_slot_map_covers_every_slot_once_on_the_shards_own_ports() {
    let (_dir, node) = node(&[]);
    let own = node.ready.resp_shard_ports.clone();
    assert_eq!(own.len(), ringstore_tests::TEST_SHARDS);
    let mut c = Client::connect(resp_addr(&node));

    // Redis's own slots for its documented examples.
    assert_eq!(c.call("CLUSTER KEYSLOT foo"), ":12182\r\n");
    assert_eq!(
        c.call("CLUSTER KEYSLOT {user1000}.following"),
        c.call("CLUSTER KEYSLOT {user1000}.followers")
    );
    assert!(c.call("CLUSTER INFO").contains("cluster_state:ok\r\ncluster_slots_assigned:16384"));
    assert!(c.call("INFO cluster").contains("# Cluster\r\ncluster_enabled:1\r\n"));

    let ports = slot_ports(&mut c);
    assert!(ports.iter().all(|p| own.contains(p)), "every slot is served by a shard's own port");
    for p in &own {
        assert!(ports.contains(p), "shard port {p} serves slots");
    }

    // Each shard's own port names itself `myself` in CLUSTER NODES, with the slots CLUSTER SLOTS
    // gave it; on the shared port no node is `myself`.
    assert!(!c.call("CLUSTER NODES").contains("myself"));
    for (shard, port) in own.iter().enumerate() {
        let mut on = Client::connect(SocketAddr::new(resp_addr(&node).ip(), *port));
        let myid = call(&mut on, "CLUSTER MYID").text();
        let nodes = call(&mut on, "CLUSTER NODES").text();
        let mine = nodes.lines().find(|l| l.contains("myself")).expect("a myself line");
        assert!(mine.starts_with(&format!("{myid} 127.0.0.1:{port}@0 myself,master")), "{mine}");
        assert_eq!(nodes.lines().count(), own.len(), "{nodes}");
        let slots_here: usize = ports.iter().filter(|p| *p == port).count();
        let listed: usize = mine
            .split(' ')
            .skip(8)
            .map(|r| match r.split_once('-') {
                Some((a, b)) => {
                    b.parse::<usize>().expect("slot") - a.parse::<usize>().expect("slot") + 1
                }
                None => 1,
            })
            .sum();
        assert_eq!(listed, slots_here, "shard {shard}'s CLUSTER NODES slots match CLUSTER SLOTS");
    }
    assert_eq!(c.call("READONLY"), "+OK\r\n");
    assert_eq!(c.call("CLUSTER NOSUCH"), "-ERR unknown subcommand 'NOSUCH'. Try CLUSTER HELP.\r\n");
    assert!(node.terminate().success());
}

#[test]
fn keys_sent_to_their_slots_node_are_never_forwarded() {
    let (_dir, node, metrics) = node_with_metrics();
    let ip = resp_addr(&node).ip();
    let mut any = Client::connect(resp_addr(&node));
    let ports = slot_ports(&mut any);
    let mut by_port: std::collections::HashMap<u16, Client> = node
        .ready
        .resp_shard_ports
        .iter()
        .map(|p| (*p, Client::connect(SocketAddr::new(ip, *p))))
        .collect();
    let before = metric(metrics, "forwarded_out");
    for i in 0..300 {
        let key = format!("key:{i}");
        let slot = call(&mut any, &format!("CLUSTER KEYSLOT {key}")).int() as usize;
        let c = by_port.get_mut(&ports[slot]).expect("a shard port");
        assert_eq!(c.call(&format!("SET {key} v{i}")), "+OK\r\n");
        let got = command(c, &[b"GET", key.as_bytes()]);
        assert_eq!(got, Reply::Bulk(format!("v{i}").into_bytes()));
    }
    // Hash-tagged keys share a slot, so a multi-key command on them stays on one shard.
    let slot = call(&mut any, "CLUSTER KEYSLOT {user1}").int() as usize;
    let c = by_port.get_mut(&ports[slot]).expect("a shard port");
    assert_eq!(c.call("MSET {user1}.a 1 {user1}.b 2"), "+OK\r\n");
    assert_eq!(c.call("MGET {user1}.a {user1}.b"), "*2\r\n$1\r\n1\r\n$1\r\n2\r\n");
    assert_eq!(metric(metrics, "forwarded_out"), before, "no command crossed shards");

    // A key sent to a port that does not serve its slot is still answered (forwarded).
    let slot = call(&mut any, "CLUSTER KEYSLOT key:0").int() as usize;
    let other = *node.ready.resp_shard_ports.iter().find(|p| **p != ports[slot]).expect("2 shards");
    let mut wrong = Client::connect(SocketAddr::new(ip, other));
    assert_eq!(wrong.call("GET key:0"), "$2\r\nv0\r\n");
    assert!(metric(metrics, "forwarded_out") > before, "the misrouted GET was forwarded");
    // The shared port counts every key; each shard's own port only its own, as a cluster node.
    assert_eq!(any.call("DBSIZE"), ":302\r\n");
    let per_node: i64 = by_port.values_mut().map(|c| call(c, "DBSIZE").int()).sum();
    assert_eq!(per_node, 302);
    assert!(node.terminate().success());
}

#[test]
fn redis_benchmark_in_cluster_mode_sends_each_key_to_its_owner() {
    let has_benchmark =
        Command::new("redis-benchmark").arg("--version").output().is_ok_and(|o| o.status.success());
    if !has_benchmark {
        assert!(std::env::var_os("CI").is_none(), "CI installs redis-tools (.ci/run)");
        return;
    }
    let (_dir, node, metrics) = node_with_metrics();
    let out = Command::new("timeout")
        .args(["120", "redis-benchmark", "--cluster", "-h", "127.0.0.1"])
        .args(["-p", &resp_addr(&node).port().to_string()])
        .args(["-c", "8", "-n", "4000", "-r", "1000", "-d", "32", "-P", "4", "-t", "set,get", "-q"])
        .output()
        .expect("run redis-benchmark");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    let masters = format!("Cluster has {} master nodes", ringstore_tests::TEST_SHARDS);
    assert!(text.contains(&masters), "{text}");
    assert!(text.contains("SET: ") && text.contains("GET: "), "{text}");
    assert_eq!(metric(metrics, "forwarded_out"), 0, "no command crossed shards: {text}");
    assert!(metric(metrics, "resp_commands") >= 8000);
    let mut c = Client::connect(resp_addr(&node));
    let keys = call(&mut c, "DBSIZE").int();
    assert!(keys > 0 && keys <= 2000, "{keys} keys");
    assert!(node.terminate().success());
}

#[test]
fn redis_py_cluster_client_runs_without_forwarding() {
    if !has_redis_py() {
        return;
    }
    let (_dir, node, metrics) = node_with_metrics();
    let stdout = run_python("cluster.py", resp_addr(&node).port());
    assert_eq!(metric(metrics, "forwarded_out"), 0, "no command crossed shards: {stdout}");
    assert!(node.terminate().success());
}

#[test]
fn a_table_made_before_slots_is_served_without_cluster_mode_until_flushall() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let old = Node::start(&data, &[]);
    old.client()
        .ddl("CREATE TABLE resp_kv (k BINARY, v BINARY, PRIMARY KEY (SHARD(k)))")
        .expect("create the old layout");
    assert!(old.terminate().success());

    let node = Node::start(&data, &["--resp", "127.0.0.1:0"]);
    let mut c = Client::connect(resp_addr(&node));
    let disabled = "-ERR This instance has cluster support disabled\r\n";
    assert_eq!(c.call("CLUSTER SLOTS"), disabled);
    assert_eq!(c.call("READONLY"), disabled);
    assert!(c.call("INFO cluster").contains("cluster_enabled:0"));
    assert_eq!(c.call("SET a 1"), "+OK\r\n");
    assert_eq!(c.call("GET a"), "$1\r\n1\r\n");
    assert_eq!(c.call("FLUSHALL"), "+OK\r\n");
    assert_eq!(c.call("GET a"), "$-1\r\n");
    assert!(c.call("CLUSTER SLOTS").starts_with('*'), "FLUSHALL made the slot layout");
    assert_eq!(c.call("SET a 2"), "+OK\r\n");
    assert_eq!(c.call("GET a"), "$1\r\n2\r\n");
    assert!(node.terminate().success());
}
