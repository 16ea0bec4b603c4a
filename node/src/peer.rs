//! The receiving side of the mesh (`mesh.rs`): serves what other shards send here. A forwarded
//! request re-enters [`handle_frame`] with `forwarded` set, so it is decoded and routed a second
//! time on its owner (`router.rs` then runs it here, or refuses it with 724 when this shard's
//! catalog names another owner). The sending side is `forward.rs`.

use std::rc::Rc;

use glommio::channels::shared_channel::ConnectedReceiver;
use ringstore_net::ErrorReply;

use crate::counters::Counters;
use crate::dispatch::{error_frame, handle_frame};
use crate::mesh::ShardMsg;
use crate::shard::Shard;
use crate::table_ops::scan_page;
use crate::{index_query, resp_commands, resp_forwarded};

/// Serves the messages one peer sends here (`rx`, the receiving end of its channel) until it
/// closes the channel. Each message runs in its own task, so a slow one does not hold up the
/// rest.
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
        ShardMsg::IndexPage { body, resume, reply } => {
            let _ = reply.send(index_query::shard_page(shard, &body, resume.as_deref()).await);
        }
        ShardMsg::Resp { command, durability, reply } => {
            Counters::add(&shard.counters.forwarded_in, 1);
            // Forwarded commands count against this shard's in-flight budget too.
            let answer = match shard.admit_request() {
                Ok(slot) => {
                    let answer = resp_forwarded::run(shard, command, durability).await;
                    drop(slot);
                    answer
                }
                Err(e) => {
                    Counters::add(&shard.counters.busy, 1);
                    resp_commands::error_reply(&format!("BUSY {e}"))
                }
            };
            let _ = reply.send(answer);
        }
    }
}
