//! ringstore-net: the binary protocol (frames, messages) and the client library shared by
//! `ringstore-cli`, `ringstore-load` and the end-to-end tests.
//!
//! - [`frame`]: the 32-byte frame header.
//! - [`wire`]: the body encoding of integers, names, text, bytes and typed values.
//! - [`fields`]: fields lists checked once and read in place.
//! - [`request`] / [`response`]: the message of every opcode, both directions.
//! - [`resp`]: RESP2, the Redis protocol of the node's `--resp` port (docs/RESP.md).
//! - [`route`]: the partition of a key, for forwarding (node) and shard-aware routing (client).
//!
//! `docs/PROTOCOL.md` is the byte-level reference.

pub mod client;
pub mod connection;
pub mod fields;
pub mod frame;
pub mod request;
pub mod resp;
pub mod response;
pub mod route;
pub mod wire;

pub use client::{Client, ClientOptions, IndexLookup, IndexWait, RangeQuery, WriteOp};
pub use connection::{ClientError, Connection, Reply};
pub use fields::{FieldList, FieldsBuf};
pub use frame::{FrameError, FrameHeader, Header, Opcode};
pub use request::{IndexBody, Request, WriteBody, WriteOptions};
pub use response::{ErrorReply, IndexRow, IndexRows, Rows, ShardStats, Topology};
pub use wire::{Reader, ValueRef, WireError, Writer};
