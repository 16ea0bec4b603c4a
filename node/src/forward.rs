//! The sending side of the mesh (`mesh.rs`): a request handed to the shard that owns its
//! partition, and one-shot questions to another shard. The receiving side is `peer.rs`; it
//! re-enters `dispatch.rs`, which uses this module, so the two sides live apart.

use std::rc::Rc;

use futures::channel::oneshot;
use ringstore_net::Header;

use crate::counters::Counters;
use crate::error::RequestError;
use crate::mesh::{reply, ShardMsg};
use crate::shard::Shard;

/// Sends a request frame to shard `to` and waits for its response frame. A full queue to that
/// shard is BUSY at once.
pub async fn forward(
    shard: &Rc<Shard>,
    to: usize,
    header: Header,
    body: &[u8],
) -> Result<Vec<u8>, RequestError> {
    let (tx, rx) = oneshot::channel();
    shard.peers.try_send(to, ShardMsg::Request { header, body: body.to_vec(), reply: tx })?;
    Counters::add(&shard.counters.forwarded_out, 1);
    reply(rx, to).await
}

/// Asks shard `to` for something with a one-shot reply.
pub async fn ask<T>(
    shard: &Shard,
    to: usize,
    make: impl FnOnce(oneshot::Sender<T>) -> ShardMsg,
) -> Result<T, RequestError> {
    let (tx, rx) = oneshot::channel();
    shard.peers.send(to, make(tx)).await?;
    reply(rx, to).await
}
