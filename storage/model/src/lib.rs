//! ringstore-model: the table model of ringstore, without the engine.
//!
//! Everything here is pure: no disk, no store, no async runtime. The storage engine
//! (`ringstore-storage`) builds on it, and so do the programs that only talk to a node: the client
//! library (`ringstore-net`), `ringstore-cli` and `ringstore-load`. So a client builds and runs
//! without glommio or io_uring (`tests/tests/crate_deps.rs` keeps it so).
//!
//! - [`table`]: typed values and schemas, the order-preserving key encoding, the row and
//!   stored-row codecs, the partition hash, the request and outcome types of the table
//!   operations, [`table::TableError`] with its stable codes, and the catalog's contents, file
//!   codec and DDL execution plan (writing the file is the engine's part).
//! - [`ddl`]: the SQL-style and admin-CLI DDL parsers.
//! - [`checksum`]: CRC-32C of the short inputs on the request path (frame headers, records).
//! - [`constants`]: the store's limits on keys, values, batches and scans, which the table model
//!   and the clients must respect.
//! - [`Durability`]: how durable a write must be before it is acknowledged.
//! - `error_codes` (tests only, feature `test-support`): the check that every stable error code
//!   is in docs/ERRORS.md, for this crate's tests and those of the crates with codes of their own.

pub mod checksum;
pub mod constants;
pub mod ddl;
mod durability;
pub mod table;

#[cfg(any(test, feature = "test-support"))]
pub mod error_codes;

pub use durability::Durability;
