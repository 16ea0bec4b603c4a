//! ringstore-net: the binary protocol (frames, messages) and the client library shared by
//! `ringstore-cli`, `ringstore-load` and the end-to-end tests.
//!
//! So far: the frame header ([`frame`]) and the body encoding of typed values ([`wire`]); the
//! request and response messages, the connection handling and the
//! client come with the rest of the node issue. `docs/PROTOCOL.md` is the byte-level reference.

pub mod frame;
pub mod wire;

pub use frame::{FrameError, FrameHeader, Header, Opcode};
pub use wire::{Reader, ValueRef, WireError, Writer};
