//! ringstore-net: the binary protocol (frames, messages) and the client library shared by
//! `ringstore-cli`, `ringstore-load` and the end-to-end tests.
//!
//! Empty until the node issue lands; the crate exists so the workspace has its final shape.
