//! One request frame in, one response frame out: decode the body, route it (`router.rs`), then
//! run it here (`table_ops.rs`), forward it to the owning shard (`forward.rs`) or coordinate it
//! across shards (`fanout.rs`). A forwarded request comes back in here on its owner (`peer.rs`),
//! where it is decoded and routed a second time. Every failure becomes an error response with
//! the code and message of the error; nothing here panics on client input.

use std::rc::Rc;

use ringstore_net::frame::{Flags, HEADER_BYTES};
use ringstore_net::request::{durability_of, Request};
use ringstore_net::{FrameHeader, Header, Opcode, Writer};
use zerocopy::IntoBytes;

use crate::counters::Counters;
use crate::error::RequestError;
use crate::router::{route, Route};
use crate::shard::Shard;
use crate::{fanout, forward, table_ops};

/// Answers one request frame. `forwarded` is set when another shard sent it here because this
/// shard owns its partition: it then runs here whatever the route says.
pub async fn handle_frame(
    shard: &Rc<Shard>,
    header: Header,
    body: &[u8],
    forwarded: bool,
) -> Vec<u8> {
    let mut out = Writer { buf: shard.buffers.take() };
    out.buf.resize(HEADER_BYTES, 0);
    match respond(shard, header, body, forwarded, &mut out).await {
        Ok(None) => {
            let body_len = (out.buf.len() - HEADER_BYTES) as u32;
            let h = response_header(header.opcode, header.request_id, body_len, 0);
            out.buf[..HEADER_BYTES].copy_from_slice(h.as_bytes());
            out.buf
        }
        Ok(Some(frame)) => {
            shard.buffers.give(out.buf);
            frame
        }
        Err(e) => {
            shard.buffers.give(out.buf);
            failure_frame(shard, header, e)
        }
    }
}

/// Runs the request; Ok(None) when the body is in `out`, Ok(Some(frame)) when another shard
/// answered with a whole frame.
async fn respond(
    shard: &Rc<Shard>,
    header: Header,
    body: &[u8],
    forwarded: bool,
    out: &mut Writer,
) -> Result<Option<Vec<u8>>, RequestError> {
    let durability =
        durability_of(header.flags).map_err(|code| RequestError::BadDurability { code })?;
    let req = Request::decode(header.opcode, body)?;
    let r = route(shard, &req, forwarded);
    if !matches!(r, Route::Forward(_)) {
        // Counted where it runs (a forwarded request counts on its owner).
        shard.counters.count_op(header.opcode);
    }
    match r {
        Route::Local => table_ops::run(shard, &req, body, durability, out).await.map(|()| None),
        Route::Forward(to) => forward::forward(shard, to, header, body).await.map(Some),
        Route::FanOut(kind) => fanout::run(shard, kind, body, out).await.map(|()| None),
        Route::NotOwner(owner) => Err(RequestError::NotOwner { shard: shard.id, owner }),
    }
}

/// The header of a response.
pub fn response_header(opcode: Opcode, request_id: u64, body_len: u32, status: u16) -> FrameHeader {
    FrameHeader::new(opcode, Flags(Flags::RESPONSE), request_id, body_len, status)
}

/// The error response to a request that failed, counted in the shard's statistics.
pub fn failure_frame(shard: &Shard, header: Header, e: RequestError) -> Vec<u8> {
    Counters::add(&shard.counters.errors, 1);
    if let RequestError::Busy { .. } = e {
        Counters::add(&shard.counters.busy, 1);
    }
    let reply = e.reply();
    error_frame(header.opcode, header.request_id, reply.code, &reply.message)
}

/// A whole error response frame: status `code`, the message as the body.
pub fn error_frame(opcode: Opcode, request_id: u64, code: u16, message: &str) -> Vec<u8> {
    let h = response_header(opcode, request_id, message.len() as u32, code);
    let mut frame = Vec::with_capacity(HEADER_BYTES + message.len());
    frame.extend_from_slice(h.as_bytes());
    frame.extend_from_slice(message.as_bytes());
    frame
}
