//! Helpers shared by the `node_*` end-to-end suites (each includes this module with
//! `mod node_common;`, so not every suite uses every helper): raw frames for the malformed-input
//! cases, raw replies read from a plain socket, request bodies encoded by the protocol's own
//! encoder, keys chosen by their owning shard, and the node's statistics by name.

#![allow(dead_code)]

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use ringstore_net::frame::{Flags, FRAME_BODY_BYTES_MAX, HEADER_BYTES};
use ringstore_net::request::{Request, WriteBody, WriteOptions};
use ringstore_net::{
    Client, Connection, FieldsBuf, FrameHeader, Header, Opcode, ShardStats, Writer,
};
use ringstore_storage::table::{TableRow, Value, VersionSelect};
use ringstore_tests::Node;
use zerocopy::IntoBytes;

/// Bounds every read, write and connect of the suites' own sockets and connections.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// The key-value table most suites use: `id` is the primary key and so the shard key.
pub const KV_DDL: &str = "CREATE TABLE kv (id LONG, v STRING, PRIMARY KEY (id))";

/// A fresh data directory inside a temporary directory that lives as long as the value.
pub fn data_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    (dir, data)
}

/// The address of shard `shard`'s own port.
pub fn shard_addr(node: &Node, shard: usize) -> SocketAddr {
    SocketAddr::new(node.addr().ip(), node.ready.shard_ports[shard])
}

/// A connection with every wait bounded by [`TIMEOUT`].
pub fn connect(addr: SocketAddr) -> Connection {
    Connection::connect(addr, Some(TIMEOUT)).expect("connect to the node")
}

/// A plain socket with every wait bounded by [`TIMEOUT`].
pub fn raw_socket(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect_timeout(&addr, TIMEOUT).expect("connect to the node");
    s.set_read_timeout(Some(TIMEOUT)).expect("read timeout");
    s.set_write_timeout(Some(TIMEOUT)).expect("write timeout");
    s.set_nodelay(true).expect("nodelay");
    s
}

/// The bytes of a request frame with a correct header.
pub fn frame(opcode: Opcode, flags: u16, id: u64, body: &[u8]) -> Vec<u8> {
    let header = FrameHeader::new(opcode, Flags(flags), id, body.len() as u32, 0);
    let mut out = header.as_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

/// Recomputes the header checksum (CRC32C of bytes 0..28, little-endian at 28..32) after a
/// header byte was changed on purpose, so that only the intended check fails.
pub fn reseal(frame: &mut [u8]) {
    let crc = crc32c::crc32c(&frame[..28]);
    frame[28..HEADER_BYTES].copy_from_slice(&crc.to_le_bytes());
}

/// Reads one response frame from a plain socket: None at end of stream before a header.
pub fn read_frame(s: &mut TcpStream) -> io::Result<Option<(Header, Vec<u8>)>> {
    let mut header = [0u8; HEADER_BYTES];
    let mut filled = 0;
    while filled < HEADER_BYTES {
        match s.read(&mut header[filled..])? {
            0 if filled == 0 => return Ok(None),
            0 => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "inside a header")),
            n => filled += n,
        }
    }
    let h = FrameHeader::parse(&header, FRAME_BODY_BYTES_MAX)
        .expect("a whole header")
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let mut body = vec![0u8; h.body_len as usize];
    s.read_exact(&mut body)?;
    Ok(Some((h, body)))
}

/// Writes a Ping with request id `id` on a plain socket and reads the reply.
pub fn raw_ping(s: &mut TcpStream, id: u64) -> io::Result<Option<(Header, Vec<u8>)>> {
    s.write_all(&frame(Opcode::Ping, 0, id, &[]))?;
    read_frame(s)
}

/// The body of a request, encoded by the protocol's encoder.
pub fn body_of(req: &Request<'_>) -> Vec<u8> {
    let mut w = Writer::default();
    req.encode(&mut w);
    w.buf
}

/// The body of a Get of the newest version of `key`.
pub fn get_body(table: &str, key: &[(&str, Value)]) -> Vec<u8> {
    let key = FieldsBuf::of_values(key);
    body_of(&Request::Get { table, key: key.list(), versions: VersionSelect::Newest })
}

/// The body of an unconditional Put of `row`.
pub fn put_body(table: &str, row: &[(&str, Value)]) -> Vec<u8> {
    let row = FieldsBuf::of_values(row);
    let body = WriteBody::Put { row: row.list() };
    body_of(&Request::Write { table, body, options: WriteOptions::default() })
}

/// A `kv` row.
pub fn kv_row(id: i64, v: &str) -> [(&'static str, Value); 2] {
    [("id", Value::Long(id)), ("v", Value::String(v.to_owned()))]
}

/// A `kv` key.
pub fn kv_key(id: i64) -> [(&'static str, Value); 1] {
    [("id", Value::Long(id))]
}

/// The `v` field of a `kv` row (the second column).
pub fn kv_value(row: &TableRow) -> Option<&Value> {
    row.newest().fields[1].as_ref()
}

/// The owning shard of `kv` key `id`, as the client computes it.
pub fn kv_owner(client: &mut Client, id: i64) -> usize {
    client.shard_of("kv", &kv_key(id)).expect("routable").expect("a full key has an owner")
}

/// The first `n` ids from `from` on whose `kv` key `shard` owns.
pub fn kv_ids_owned_by(client: &mut Client, shard: usize, from: i64, n: usize) -> Vec<i64> {
    let ids: Vec<i64> =
        (from..from + 100_000).filter(|id| kv_owner(client, *id) == shard).take(n).collect();
    assert_eq!(ids.len(), n, "not enough keys owned by shard {shard}");
    ids
}

/// A statistic of one shard.
pub fn stat(stats: &[ShardStats], shard: usize, name: &str) -> u64 {
    let s = stats.iter().find(|s| usize::from(s.shard) == shard).expect("stats of every shard");
    s.get(name).unwrap_or_else(|| panic!("shard {shard} has no statistic {name}"))
}

/// Polls the node's statistics (over a connection of its own) until `done` holds, or fails with
/// `what` after `timeout`.
pub fn wait_for_stat(
    node: &Node,
    timeout: Duration,
    what: &str,
    done: impl Fn(&[ShardStats]) -> bool,
) {
    let mut c = node.client();
    let deadline = Instant::now() + timeout;
    while !done(&c.stats().expect("stats")) {
        assert!(Instant::now() < deadline, "{what}");
    }
}

/// A statistic summed over the shards.
pub fn stat_sum(stats: &[ShardStats], name: &str) -> u64 {
    (0..stats.len()).map(|shard| stat(stats, shard, name)).sum()
}
