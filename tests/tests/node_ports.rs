//! Proves a node refuses ports another process listens on (`node/src/ports.rs`), where before it
//! shared them through SO_REUSEPORT and the kernel split the connections between two nodes:
//! - a second node given a running node's `--listen` address exits before it is ready, with an
//!   error naming the port, and the first node keeps serving;
//! - a second node whose shard port (`--listen` port + 1 + shard) is a running node's port does
//!   the same.

use std::net::{SocketAddr, TcpListener};

use ringstore_tests::{Node, TEST_SHARDS};

mod node_common;
use node_common::*;

/// A port `p` such that `p - 1 ..= p + TEST_SHARDS` are all free on 127.0.0.1 right now.
fn free_port_run() -> u16 {
    for _ in 0..1000 {
        let probe = TcpListener::bind("127.0.0.1:0").expect("bind a probe");
        let p = probe.local_addr().expect("probe address").port();
        drop(probe);
        let Some(low) = p.checked_sub(1) else { continue };
        let Some(high) = p.checked_add(TEST_SHARDS as u16) else { continue };
        let all_free =
            (low..=high).all(|q| TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], q))).is_ok());
        if all_free {
            return p;
        }
    }
    panic!("no run of free ports on 127.0.0.1");
}

fn assert_refused(result: Result<Node, String>, port: u16) {
    match result {
        Ok(node) => {
            let addr = node.addr();
            node.kill();
            panic!("a second node started on {addr}, sharing port {port} with the first");
        }
        Err(log) => assert!(
            log.contains(&format!("another process already listens on port {port}")),
            "the refusal names the port: {log}"
        ),
    }
}

fn assert_serves(node: &Node) {
    let mut client = node.client();
    client.ddl(KV_DDL).expect("create table");
    client.put("kv", &kv_row(1, "still mine")).expect("put");
    let got = client.get("kv", &kv_key(1)).expect("get").expect("row");
    assert_eq!(kv_value(&got), Some(&ringstore_storage::table::Value::String("still mine".into())));
}

#[test]
fn a_second_node_on_a_used_listen_address_refuses_to_start() {
    let (_d1, first_dir) = data_dir();
    let (_d2, second_dir) = data_dir();
    let first = Node::start(&first_dir, &[]);
    let port = first.addr().port();
    let second = Node::try_start_listening(&second_dir, &first.addr().to_string(), &[]);
    assert_refused(second, port);
    assert_serves(&first);
    first.terminate();
}

#[test]
fn a_second_node_whose_shard_port_is_in_use_refuses_to_start() {
    let (_d1, first_dir) = data_dir();
    let (_d2, second_dir) = data_dir();
    let p = free_port_run();
    let first = Node::try_start_listening(&first_dir, &format!("127.0.0.1:{p}"), &[])
        .expect("the first node starts on a free run of ports");
    // The second node's shared port p - 1 is free, but its shard 0's port is p - 1 + 1 = p, the
    // first node's shared port.
    let second = Node::try_start_listening(&second_dir, &format!("127.0.0.1:{}", p - 1), &[]);
    assert_refused(second, p);
    assert_serves(&first);
    first.terminate();
}
