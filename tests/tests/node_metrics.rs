//! The Stats request and the Prometheus endpoint (`--metrics`) report the same per-shard
//! statistics, and the endpoint answers only `GET /metrics`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use ringstore_node::metrics_text::{described_names, UNKNOWN_HELP};
use ringstore_storage::table::Value;
use ringstore_tests::Node;

fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect to the metrics endpoint");
    s.set_read_timeout(Some(Duration::from_secs(30))).expect("read timeout");
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").expect("send the request");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read until the server closes");
    text
}

#[test]
fn metrics_endpoint_serves_every_shard_in_prometheus_text() {
    let dir = tempfile::tempdir().expect("temp dir");
    let node = Node::start(&dir.path().join("data"), &["--metrics", "127.0.0.1:0"]);
    let metrics = node.ready.metrics.expect("the ready line names the metrics address");
    let mut c = node.client();
    c.ddl("CREATE TABLE m (id LONG, PRIMARY KEY (id))").expect("create");
    for id in 0..50 {
        c.put("m", &[("id", Value::Long(id))]).expect("put");
    }
    let stats = c.stats().expect("stats");
    let puts: u64 = stats.iter().map(|s| s.get("ops_put").expect("ops_put")).sum();
    assert_eq!(puts, 50);

    let reply = http_get(metrics, "/metrics");
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    assert!(reply.contains("text/plain; version=0.0.4"), "{reply}");
    assert!(reply.contains("# TYPE ringstore_ops_put counter"), "{reply}");
    let mut total = 0;
    for shard in 0..2 {
        let prefix = format!("ringstore_ops_put{{shard=\"{shard}\"}} ");
        let line = reply.lines().find(|l| l.starts_with(&prefix)).expect("a sample per shard");
        total += line[prefix.len()..].parse::<u64>().expect("a number");
        assert!(reply.contains(&format!("ringstore_index_keys{{shard=\"{shard}\"}}")));
    }
    assert_eq!(total, 50, "the endpoint agrees with the Stats request");

    // The statistics a shard reports (shard.rs) and the ones the metrics table describes
    // (metrics_text.rs) are two lists: they must name the same statistics.
    let undescribed: Vec<&str> = reply.lines().filter(|l| l.ends_with(UNKNOWN_HELP)).collect();
    assert!(undescribed.is_empty(), "reported but not described: {undescribed:?}");
    let reported: Vec<&str> = stats[0].values.iter().map(|(name, _)| name.as_str()).collect();
    let unreported: Vec<&str> = described_names().filter(|n| !reported.contains(n)).collect();
    assert!(unreported.is_empty(), "described but not reported: {unreported:?}");

    assert!(http_get(metrics, "/other").starts_with("HTTP/1.1 404"));
    assert!(node.terminate().success());
}
