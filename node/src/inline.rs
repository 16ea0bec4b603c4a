//! The inline path: requests that can be answered without waiting run in the connection's read
//! loop, as Redis, Garnet and Seastar run theirs, and their responses go into the connection's
//! output buffer, which the read loop hands to the socket once per read batch.
//!
//! What runs inline (everything else gets a task of its own, `dispatch.rs`):
//! - a Get on this shard whose row is in memory: a record cache hit, a row not flushed yet, or a
//!   row that does not exist (`TableStore::read_stored_now`), encoded from the stored bytes;
//! - a Put on this shard that needs no read (single-version table, no condition): read in one
//!   pass, checked, encoded into the shard's reused key and row buffers, appended to the log and
//!   applied to the index here, from the request's borrowed fields (`TableStore::put_now`); a
//!   Put that path declines (a very wide row, an unknown field, a body that does not decode)
//!   takes a task;
//! - an unconditional Delete: the same through the table layer's owned values
//!   (`TableStore::write_now`).
//!
//! A `NoSync` write is then answered at once; a `Sync` or `WriteNoSync` write leaves its encoded
//! response and the group commit sequence it waits for to the shard's acknowledger, which sends
//! it once the flusher has made it durable (`durable_acks.rs`).
//!
//! A Get comes decoded, and its key encoded, by the read batch's look-ahead (`frame_batch.rs`),
//! which also found the key's owner and prefetched what the batch's Gets will touch.
//!
//! No task is spawned, no future allocated and no response copied for an inline request: the
//! response is encoded straight into the output buffer. A cache-hit Get and a `NoSync` Put
//! allocate nothing at all (`node/tests/alloc_hot_path.rs`).

use std::rc::Rc;

use ringstore_net::frame::HEADER_BYTES;
use ringstore_net::request::{durability_of, FieldsReader, Request};
use ringstore_net::{response, Header, Opcode, Writer};
use ringstore_storage::table::{
    primary_key_refs, OpResult, PutOptions, RowSlots, TableSchema, WriteOutcome,
};
use ringstore_storage::DurableWait;
use ringstore_storage::{Durability, ReadNow};
use zerocopy::IntoBytes;

use crate::budget::response_bound;
use crate::counters::Counters;
use crate::dispatch::response_header;
use crate::error::RequestError;
use crate::frame_batch::{Ahead, BatchKeys, GetAhead};
use crate::router::{route, Route};
use crate::shard::Shard;
use crate::table_ops::OwnedWrite;

/// What the inline path did with a request.
#[derive(Debug)]
pub enum Inline {
    /// Answered: the response frame is at the end of the output buffer.
    Answered,
    /// Written and applied; the response frame (in a pooled buffer) may be sent once the write
    /// is as durable as it asked.
    Durable { wait: DurableWait, frame: Vec<u8> },
    /// Not run: it must wait (a read-modify-write, another shard) or is not a hot-path
    /// request. Nothing was done; run it in a task.
    Spawn,
    /// Not run: a Get whose row must be read from disk. Its response takes at most
    /// `reply_bytes` (frame header included), from the record's length in the index
    /// (`response::get_stored_bound`); run it in a task that sets that much aside.
    ReadsDisk { reply_bytes: usize },
}

/// Runs the request of `frame` inline if it can complete without waiting, appending its
/// response frame to `out`. `keys` holds the keys its read batch encoded (`frame_batch.rs`);
/// `now_ms` is the store's clock, read once per read batch (`Store::now_ms`).
pub fn run(
    shard: &Rc<Shard>,
    frame: &Ahead<'_>,
    keys: &BatchKeys,
    now_ms: u64,
    out: &mut Vec<u8>,
) -> Inline {
    let h = frame.header;
    // Anything malformed goes the general way, which reports it.
    let Ok(durability) = durability_of(h.flags) else { return Inline::Spawn };
    if let Some(ahead) = &frame.get {
        // A Get whose key this shard owns; any other (another shard's, or a key that did not
        // encode) takes a task, which forwards it or reports the error.
        let Some(key) = keys.stored_key(frame) else { return Inline::Spawn };
        return get(shard, h, frame.body, ahead, key, now_ms, out);
    }
    if h.opcode == Opcode::Put {
        return put(shard, h, frame.body, durability, now_ms, out).unwrap_or(Inline::Spawn);
    }
    let Ok(req) = Request::decode(h.opcode, frame.body) else { return Inline::Spawn };
    match req {
        Request::Write { .. } if route(shard, &req, false) != Route::Local => Inline::Spawn,
        Request::Write { table, body, options } => {
            let owned = OwnedWrite::of(&body);
            let op = owned.op(&options);
            let Some(done) = shard.tables.write_now(table, &op, durability) else {
                return Inline::Spawn;
            };
            shard.counters.count_op(h.opcode);
            let Ok(t) = shard.tables.table(table) else {
                unreachable!("write_now found the table a moment ago");
            };
            respond_written(shard, h, t.schema(), done, out)
        }
        // A Get the look-ahead did not take (an unknown table), and everything else.
        _ => Inline::Spawn,
    }
}

/// A single-version, unconditional Put, read from `body` one field at a time straight into its
/// row's slots (`FieldsReader`, `RowSlots`: one pass over the fields, no `Request` built), checked,
/// encoded and appended without allocating (`TableStore::put_now`). None, having done
/// nothing, for anything else: a body that does not decode (the task's decode reports it), a
/// put the allocation-free path declines, or a row another shard owns.
fn put(
    shard: &Shard,
    h: Header,
    body: &[u8],
    durability: Durability,
    now_ms: u64,
    out: &mut Vec<u8>,
) -> Option<Inline> {
    let (table, mut fields) = FieldsReader::new(body).ok()?;
    let t = shard.tables.table(table).ok()?;
    let mut row = RowSlots::new();
    while let Some((name, value)) = fields.next_pair().ok()? {
        if !row.add(&t, name, value) {
            return None;
        }
    }
    let options = fields.finish_put().ok()?;
    let options = PutOptions {
        condition: options.condition,
        version: options.version,
        ttl_seconds: options.ttl_seconds,
    };
    let owns = |shard_key: &[u8]| shard.owns_shard_key(shard_key);
    let mut scratch = shard.scratch.borrow_mut();
    let done = shard.tables.put_now(&t, &row, options, durability, now_ms, &mut scratch, owns)?;
    shard.counters.count_op(h.opcode);
    Some(respond_written(shard, h, t.schema(), done, out))
}

/// The response of an inline write: at once, or (for a write that waits for durability) in a
/// pooled buffer to send once it is durable.
fn respond_written(
    shard: &Shard,
    h: Header,
    schema: &TableSchema,
    done: OpResult<(WriteOutcome, Option<DurableWait>)>,
    out: &mut Vec<u8>,
) -> Inline {
    let (outcome, wait) = match done {
        Ok(done) => done,
        Err(e) => {
            encode_frame(shard, h, out, |_| Err(e.into()));
            return Inline::Answered;
        }
    };
    let encode = |w: &mut Writer| {
        response::encode_write(w, schema, &outcome);
        Ok(())
    };
    match wait {
        None => {
            encode_frame(shard, h, out, encode);
            Inline::Answered
        }
        Some(wait) => {
            let mut frame = shard.buffers.take();
            encode_frame(shard, h, &mut frame, encode);
            Inline::Durable { wait, frame }
        }
    }
}

/// A Get whose row is in memory, encoded from the stored bytes with no row built
/// (`response::encode_get_stored`): the key its read batch encoded is looked up, and the row is
/// borrowed from the record cache or the unflushed log.
fn get(
    shard: &Shard,
    h: Header,
    body: &[u8],
    ahead: &GetAhead<'_>,
    key: &[u8],
    now: u64,
    out: &mut Vec<u8>,
) -> Inline {
    let (schema, versions) = (ahead.table.schema(), ahead.versions);
    let ((from, to), max) = versions.bounds();
    if max == 0 || from >= to {
        return Inline::Spawn;
    }
    // The key's values by position, for the response: kept by the look-ahead, or (a key of
    // many fields) found again in the request.
    let sorted;
    let key_values = match ahead.key_values() {
        Some(kept) => kept,
        None => {
            let Ok(Request::Get { key, .. }) = Request::decode(h.opcode, body) else {
                return Inline::Spawn;
            };
            let Ok(values) = primary_key_refs(schema, key.iter()) else { return Inline::Spawn };
            sorted = values;
            &sorted[..]
        }
    };
    // The buffer budget holds the largest reply (the usual case), or the reply this row
    // makes must fit what is left; a reply that does not is answered BUSY, as a task's is.
    let roomy = shard.budget.fits(response_bound(h.opcode, &shard.limits));
    let reply_bound = |stored_bytes: usize| {
        HEADER_BYTES + response::get_stored_bound(schema, key, key_values, stored_bytes, versions)
    };
    let answered = shard.tables.read_stored_now(key, now, |stored| {
        encode_frame(shard, h, out, |w| {
            if !roomy && shard.budget.refuses(reply_bound(stored.map_or(0, <[u8]>::len))) {
                Counters::add(&shard.counters.busy, 1);
                return Err(shard.budget.full());
            }
            response::encode_get_stored(w, schema, key, key_values, stored, versions, now)
                .map_err(RequestError::from)
        })
    });
    match answered {
        ReadNow::OnDisk { record_bytes } => {
            Inline::ReadsDisk { reply_bytes: reply_bound(record_bytes) }
        }
        ReadNow::Done(result) => {
            shard.counters.count_op(h.opcode);
            if let Err(e) = result {
                encode_frame(shard, h, out, |_| Err(e.into()));
            }
            Inline::Answered
        }
    }
}

/// Appends a whole response frame to `out`: the body `encode` writes, or, if it fails, the
/// error (whatever it wrote is dropped).
pub fn encode_frame(
    shard: &Shard,
    h: Header,
    out: &mut Vec<u8>,
    encode: impl FnOnce(&mut Writer) -> Result<(), RequestError>,
) {
    let start = out.len();
    out.resize(start + HEADER_BYTES, 0);
    let mut w = Writer { buf: std::mem::take(out) };
    let status = match encode(&mut w) {
        Ok(()) => 0,
        Err(e) => {
            Counters::add(&shard.counters.errors, 1);
            let reply = e.reply();
            w.buf.truncate(start + HEADER_BYTES);
            w.buf.extend_from_slice(reply.message.as_bytes());
            reply.code
        }
    };
    *out = w.buf;
    let body_len = (out.len() - start - HEADER_BYTES) as u32;
    let header = response_header(h.opcode, h.request_id, body_len, status);
    out[start..start + HEADER_BYTES].copy_from_slice(header.as_bytes());
}
