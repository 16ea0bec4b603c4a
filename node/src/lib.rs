//! ringstore-node: the thread-per-core daemon (one glommio executor and one
//! `ringstore_storage::Store` per shard), routing, catalog and operations surface.
//!
//! Empty until the node issue lands; the crate exists so the workspace has its final shape.
