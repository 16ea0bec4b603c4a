//! A read batch's Gets, decoded ahead of running them, so that the memory their keys will touch
//! can be asked for all at once (the store's batch prefetch, `storage/src/batch_prefetch.rs`)
//! and each Get then finds its lines on the way instead of waiting for them one miss after
//! another. The binary port's counterpart of `resp_batch.rs`.
//!
//! The read loop (`connection.rs`) takes up to [`BATCH_FRAMES_MAX`] whole frames from its
//! buffer and turns each into an [`Ahead`]. A Get is decoded once, its table looked up once,
//! and its key encoded once (as the table stores it) to find the owner shard; the keys this
//! shard owns go to the store's prefetch when there are two or more. The frames then run in
//! order (`inline.rs`), a Get from its decoded form and encoded key, so neither its decode nor
//! its key's encoding is done twice (the sixth session's lever 10, which decoded every request a
//! second time to prefetch it, lost for that reason). A frame the loop does not reach this time
//! (its response must wait for room in the output) is decoded again the next time: the
//! look-ahead only saves work, it decides nothing.
//!
//! Only Gets are taken ahead. Puts were too, and lost (docs/BENCHMARKS.md, eighteenth session:
//! 1.15-1.19x the CPU per put on the write-only load): a put of a key the record cache does not
//! hold has no index hint to prefetch, so its sorted-run search waits for its misses anyway,
//! and moving its decode and key encoding ahead of the batch took away the work that used to
//! overlap the put before it.

use std::rc::Rc;

use ringstore_net::request::FieldsReader;
use ringstore_net::{Header, Opcode};
use ringstore_storage::table::limits::PRIMARY_KEY_FIELDS_MAX;
use ringstore_storage::table::{
    encode_primary_key_fields, CatalogTable, FieldRole, ValueRef, VersionSelect,
};
use ringstore_storage::{Upcoming, PREFETCH_BATCH_KEYS_MAX};

use crate::shard::Shard;

/// Most frames taken ahead at a time: one round of the store's batch prefetch.
pub const BATCH_FRAMES_MAX: usize = PREFETCH_BATCH_KEYS_MAX;

/// Most key values a Get's look-ahead keeps for its response; a Get of a table whose primary
/// key has more fields finds them again in its body when it runs. One covers the common
/// single-field key and keeps [`Ahead`] within [`AHEAD_BYTES_MAX`].
pub const AHEAD_KEY_VALUES_MAX: usize = 1;

/// Most bytes an [`Ahead`] may take. Every frame's record is built and moved on the stack, and
/// past 128 bytes the moves become `memcpy` calls: with two key values kept (144 or 168 bytes)
/// a put at pipeline 32 cost 1.04-1.10x the CPU (docs/BENCHMARKS.md, eighteenth session).
pub const AHEAD_BYTES_MAX: usize = 128;

const _: () = assert!(std::mem::size_of::<Option<Ahead<'static>>>() <= AHEAD_BYTES_MAX);

/// One whole frame of a read batch. It is kept small (a batch of them is built on the stack for
/// every read batch), so only what running a Get needs is kept.
#[derive(Debug)]
pub struct Ahead<'b> {
    pub header: Header,
    /// The frame's bytes, header included.
    pub total: usize,
    pub body: &'b [u8],
    /// A Get of a known table, decoded (None for any other request, or a Get that does not
    /// decode: the request is decoded where it runs, which reports what is wrong).
    pub get: Option<GetAhead<'b>>,
    /// Where its stored key is in [`BatchKeys`], when this shard owns it (None: another shard
    /// does, or the key did not encode, and the Get takes the general path).
    stored: Option<(u32, u32)>,
}

/// A decoded Get, with its table.
#[derive(Debug)]
pub struct GetAhead<'b> {
    pub table: Rc<CatalogTable>,
    pub versions: VersionSelect,
    /// The key's values by key position, as the key's encoding sorted them, when the key has
    /// at most [`AHEAD_KEY_VALUES_MAX`] fields (a wider key's are found again from the frame's
    /// body, [`Ahead::body`]).
    key_values: [Option<ValueRef<'b>>; AHEAD_KEY_VALUES_MAX],
}

impl<'b> GetAhead<'b> {
    /// The key's values by key position, every key field Some, if the look-ahead kept them.
    pub fn key_values(&self) -> Option<&[Option<ValueRef<'b>>]> {
        let fields = self.table.schema().primary_key().len();
        let kept = &self.key_values[..fields.min(AHEAD_KEY_VALUES_MAX)];
        (fields <= AHEAD_KEY_VALUES_MAX && kept.iter().all(Option::is_some)).then_some(kept)
    }
}

/// The encoded keys of one read batch's Gets that this shard owns, back to back. Kept by the
/// connection from one read batch to the next, so in steady state it allocates nothing.
#[derive(Debug, Default)]
pub struct BatchKeys {
    keys: Vec<u8>,
    /// One key being encoded.
    scratch: Vec<u8>,
}

impl BatchKeys {
    /// Forgets the last batch's keys.
    pub fn clear(&mut self) {
        self.keys.clear();
    }

    /// The stored key of `frame` (from this batch), if this shard owns it.
    pub fn stored_key(&self, frame: &Ahead<'_>) -> Option<&[u8]> {
        frame.stored.map(|(start, end)| &self.keys[start as usize..end as usize])
    }

    /// Takes one whole frame (`total` bytes, `body` after the header): a Get is decoded and its
    /// key encoded to find its owner, and the key kept when this shard owns it.
    pub fn decode<'b>(
        &mut self,
        shard: &Shard,
        header: Header,
        total: usize,
        body: &'b [u8],
    ) -> Ahead<'b> {
        let mut ahead = Ahead { header, total, body, get: None, stored: None };
        if header.opcode != Opcode::Get {
            return ahead;
        }
        // One pass over the body: each key field straight into its key position. Anything
        // unusual (a body that does not decode, an unknown table, a field that is not a key
        // field or comes twice) leaves the Get undecoded: where it runs, the general decode
        // reports it.
        let Some((table, sorted, versions)) = read_get(shard, body) else { return ahead };
        let encoded = encode_primary_key_fields(table.schema(), &sorted, &mut self.scratch);
        let mut key_values = [None; AHEAD_KEY_VALUES_MAX];
        key_values.copy_from_slice(&sorted[..AHEAD_KEY_VALUES_MAX]);
        ahead.get = Some(GetAhead { table, versions, key_values });
        let owned = encoded.is_ok_and(|len| shard.owns_shard_key(&self.scratch[..len]));
        if owned {
            let start = self.keys.len() as u32;
            self.keys.extend_from_slice(&self.scratch);
            ahead.stored = Some((start, self.keys.len() as u32));
        }
        ahead
    }

    /// Asks the store to prefetch the keys of `batch` this shard owns (`Store::prefetch`, which
    /// skips a lone key: it has no misses to overlap).
    pub fn prefetch<'a, 'b: 'a>(&self, shard: &Shard, batch: impl Iterator<Item = &'a Ahead<'b>>) {
        let mut upcoming = [Upcoming { key: &[], write: false }; BATCH_FRAMES_MAX];
        let mut owned = 0;
        for key in batch.filter_map(|a| self.stored_key(a)).take(BATCH_FRAMES_MAX) {
            upcoming[owned] = Upcoming { key, write: false };
            owned += 1;
        }
        shard.tables.store().prefetch(&upcoming[..owned]);
    }
}

/// A Get's table, key values by key position and version selection, read from its body in one
/// pass (`FieldsReader`); None for anything the general decode must see.
fn read_get<'b>(
    shard: &Shard,
    body: &'b [u8],
) -> Option<(Rc<CatalogTable>, KeyValues<'b>, VersionSelect)> {
    let (table, mut fields) = FieldsReader::new(body).ok()?;
    let table = shard.tables.table(table).ok()?;
    let mut sorted: KeyValues<'b> = [None; PRIMARY_KEY_FIELDS_MAX];
    while let Some((name, value)) = fields.next_pair().ok()? {
        if value == ValueRef::Null {
            continue;
        }
        let Some((_, FieldRole::Key(p))) = table.schema().field_role(name) else { return None };
        if sorted[p].replace(value).is_some() {
            return None;
        }
    }
    let versions = fields.finish_get().ok()?;
    Some((table, sorted, versions))
}

/// A key's values by key position.
type KeyValues<'b> = [Option<ValueRef<'b>>; PRIMARY_KEY_FIELDS_MAX];
