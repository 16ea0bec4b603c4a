//! The cross-shard mesh: one bounded channel from every shard to every other shard.
//!
//! A shard that receives a request for a partition it does not own forwards it to the owner as a
//! [`ShardMsg::Request`]: the frame's header and body, and a one-shot reply channel for the
//! response frame. The owner runs it as if it had arrived on its own socket and sends the
//! response back; the receiving shard writes it on the original connection. Fan-out work (DDL,
//! stats, scans without a full shard key) uses the other messages.
//!
//! The channels are glommio's shared channels, created by the daemon before the shards start
//! (one per ordered pair of shards, [`channels`]), so each shard knows its peers by shard number.
//! Each holds at most `forward_queue` messages; a full channel makes the request fail with BUSY
//! instead of queueing without bound. Replies travel on `futures` one-shot channels, whose
//! wakers work across threads.

use futures::channel::oneshot;
use glommio::channels::shared_channel::{
    self, ConnectedReceiver, ConnectedSender, SharedReceiver, SharedSender,
};
use ringstore_net::{ErrorReply, Header, ShardStats};
use ringstore_storage::table::{IndexPage, Outcome, RowPage};
use ringstore_storage::Durability;

use crate::error::RequestError;
use crate::mesh_setup;

/// A message from one shard to another.
#[derive(Debug)]
pub enum ShardMsg {
    /// Run this request here (this shard owns its partition) and reply with the response frame.
    Request { header: Header, body: Vec<u8>, reply: oneshot::Sender<Vec<u8>> },
    /// Apply DDL text to this shard's catalog (sent by shard 0, which orders all DDL).
    Ddl { text: String, reply: oneshot::Sender<Result<Vec<Outcome>, ErrorReply>> },
    /// This shard's statistics.
    Stats { reply: oneshot::Sender<ShardStats> },
    /// One page of this shard's rows for a fanned-out scan: the Scan request body, with the
    /// coordinator's limit and this shard's resume token in place of the request's.
    ScanPage {
        body: Vec<u8>,
        limit: u32,
        resume: Option<Vec<u8>>,
        reply: oneshot::Sender<Result<RowPage, ErrorReply>>,
    },
    /// One page of this shard's entries of an index query: the IndexQuery request body, with
    /// the coordinator's resume position (an entry key) in place of the request's token.
    IndexPage {
        body: Vec<u8>,
        resume: Option<Vec<u8>>,
        reply: oneshot::Sender<Result<IndexPage, ErrorReply>>,
    },
    /// Run this RESP command here (`resp_commands.rs`): a one-key command on a key this shard
    /// owns, or this shard's part of a node-wide one; reply with the RESP reply bytes.
    Resp { command: Vec<u8>, durability: Durability, reply: oneshot::Sender<Vec<u8>> },
}

/// The channel ends one shard starts with ([`crate::mesh_setup`] wires and connects them).
pub type MeshEnds = mesh_setup::MeshEnds<SharedSender<ShardMsg>, SharedReceiver<ShardMsg>>;

/// Creates the channels of a full mesh of `shards` shards, `capacity` messages each, and hands
/// out each shard's ends (index = shard number).
pub fn channels(shards: usize, capacity: usize) -> Vec<MeshEnds> {
    mesh_setup::full_mesh(shards, || shared_channel::new_bounded(capacity))
}

/// Connects a shard's ends (runs on the shard's executor): its peers and its receivers.
pub async fn connect(ends: MeshEnds, capacity: usize) -> (Peers, Vec<ConnectedReceiver<ShardMsg>>) {
    let (senders, receivers) =
        mesh_setup::connect_all(ends, SharedSender::connect, SharedReceiver::connect).await;
    (Peers { senders, capacity }, receivers.into_iter().flatten().collect())
}

/// A shard's connected senders, by shard number.
#[derive(Debug)]
pub struct Peers {
    senders: Vec<Option<ConnectedSender<ShardMsg>>>,
    capacity: usize,
}

impl Peers {
    /// Queues a message for `shard` without waiting: BUSY if its channel is full.
    pub fn try_send(&self, shard: usize, msg: ShardMsg) -> Result<(), RequestError> {
        let sender = self
            .senders
            .get(shard)
            .and_then(Option::as_ref)
            .ok_or(RequestError::ShardUnavailable { shard })?;
        sender.try_send(msg).map_err(|e| match e {
            glommio::GlommioError::WouldBlock(_) => {
                RequestError::Busy { what: "the cross-shard queue", limit: self.capacity }
            }
            _ => RequestError::ShardUnavailable { shard },
        })
    }

    /// Queues a message for `shard`, waiting for room (fan-out and control messages, which are
    /// few and bounded by their callers).
    pub async fn send(&self, shard: usize, msg: ShardMsg) -> Result<(), RequestError> {
        let sender = self
            .senders
            .get(shard)
            .and_then(Option::as_ref)
            .ok_or(RequestError::ShardUnavailable { shard })?;
        sender.send(msg).await.map_err(|_| RequestError::ShardUnavailable { shard })
    }

    /// Closes every channel to the other shards (at shutdown, after the barrier).
    pub fn close(&self) {
        for s in self.senders.iter().flatten() {
            s.close();
        }
    }
}

/// Waits for a reply; a dropped sender means the peer stopped.
pub async fn reply<T>(rx: oneshot::Receiver<T>, shard: usize) -> Result<T, RequestError> {
    rx.await.map_err(|_| RequestError::ShardUnavailable { shard })
}
