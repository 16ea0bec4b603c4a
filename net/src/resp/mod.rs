//! RESP2, the Redis serialization protocol, as the node's Redis-compatible port speaks it
//! (docs/RESP.md): [`parse`] reads commands from a receive buffer in place (multibulk and inline,
//! bounded like Redis's `proto-max-bulk-len`), [`reply`] appends replies to an output buffer.

pub mod parse;
pub mod reply;

pub use parse::{parse_command, Args, ParseLimits, Parsed, ProtocolError};
