//! Forwarding across the mesh (`mesh.rs`): sending a request to the shard that owns its
//! partition, and serving what other shards send here.

use std::rc::Rc;

use futures::channel::oneshot;
use glommio::channels::shared_channel::ConnectedReceiver;
use ringstore_net::request::Request;
use ringstore_net::{ErrorReply, Header, Opcode};

use crate::dispatch::{error_frame, handle_frame};
use crate::error::RequestError;
use crate::mesh::{reply, ShardMsg};
use crate::shard::{Counters, Shard};
use crate::table_ops;

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

/// Serves the messages shard `from` sends here until it closes its channel. Each message runs
/// in its own task, so a slow one does not hold up the rest.
pub async fn serve_peer(shard: Rc<Shard>, rx: ConnectedReceiver<ShardMsg>) {
    while let Some(msg) = rx.recv().await {
        let shard = shard.clone();
        glommio::spawn_local(async move { serve(&shard, msg).await }).detach();
    }
}

async fn serve(shard: &Rc<Shard>, msg: ShardMsg) {
    match msg {
        ShardMsg::Request { header, body, reply } => {
            Counters::add(&shard.counters.forwarded_in, 1);
            // Forwarded requests count against this shard's in-flight budget too.
            let frame = match shard.admit_request() {
                Ok(slot) => {
                    let frame = handle_frame(shard, header, &body, true).await;
                    drop(slot);
                    frame
                }
                Err(e) => {
                    Counters::add(&shard.counters.busy, 1);
                    let r = e.reply();
                    error_frame(header.opcode, header.request_id, r.code, &r.message)
                }
            };
            // The requester may have gone (its connection closed); nothing to do then.
            let _ = reply.send(frame);
        }
        ShardMsg::Ddl { text, reply } => {
            let result = shard
                .tables
                .ddl(&text)
                .await
                .map_err(|e| ErrorReply { code: e.code(), message: e.to_string() });
            let _ = reply.send(result);
        }
        ShardMsg::Stats { reply } => {
            let _ = reply.send(shard.stats());
        }
        ShardMsg::ScanPage { body, limit, resume, reply } => {
            let _ = reply.send(scan_page(shard, &body, limit, resume.as_deref()).await);
        }
    }
}

/// This shard's page of a fanned-out scan.
pub async fn scan_page(
    shard: &Shard,
    body: &[u8],
    limit: u32,
    resume: Option<&[u8]>,
) -> Result<ringstore_storage::table::RowPage, ErrorReply> {
    let run = async {
        let req = Request::decode(Opcode::Scan, body)?;
        let Request::Scan { table, range } = &req else {
            unreachable!("decoded as a Scan");
        };
        let t = shard.tables.table(table)?;
        table_ops::read_page(shard, &t, range, limit, resume, &req).await
    };
    run.await.map_err(|e: RequestError| e.reply())
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
