//! The allocation-free blind put: a row given as borrowed `(name, value)` pairs (a request's
//! fields, straight from the receive buffer) is checked, encoded into reused buffers and appended,
//! with no owned value, row or key built on the way. The node's inline path
//! (`node/src/inline.rs`) runs every single-version, unconditional Put through it.
//!
//! It covers the common case only and leaves everything else, untouched, to the general path
//! ([`TableStore::write`]), which also reports every error with its message: a condition, a
//! multi-version table or a table with secondary indexes (these read the row first), a row wider than [`INLINE_PUT_SLOTS_MAX`]
//! non-key fields, and any request the general path would refuse (an unknown or repeated field,
//! a missing key field, a wrong type, a version out of the window, data already expired, a row
//! over the size limit). The bytes written are those of the general path: the same key
//! (`key.rs`), the same stored row with one version (`stored_row.rs`, `row.rs`).

use super::catalog::CatalogTable;
use super::key::encode_primary_key_fields;
use super::limits::{PRIMARY_KEY_FIELDS_MAX, ROW_BYTES_MAX};
use super::op_error::OpResult;
use super::request::{Condition, WriteOutcome};
use super::row::encode_row_into;
use super::schema::FieldRole;
use super::stored_row::{STORED_ROW_FORMAT, STORED_ROW_HEADER_BYTES, STORED_VERSION_HEADER_BYTES};
use super::table_store::TableStore;
use super::value::ValueRef;
use super::write_plan::{check_window, expiry_of};
use crate::disk::Disk;
use crate::log::group_commit::{Durability, DurableWait};
use crate::store::WriteOptions;

/// Most non-key fields a table may have for its puts to take the allocation-free path (the
/// values are sorted into a fixed array on the stack); wider tables take the general path.
pub const INLINE_PUT_SLOTS_MAX: usize = 32;

/// The options of a put that the allocation-free path reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PutOptions {
    pub condition: Condition,
    /// Client version (ms since the epoch); the store's clock when None.
    pub version: Option<u64>,
    /// Per-row TTL overriding the table's.
    pub ttl_seconds: Option<u64>,
}

/// Buffers the allocation-free put reuses from one request to the next (one per shard).
#[derive(Debug, Default)]
pub struct PutScratch {
    /// The stored key of the last put.
    pub key: Vec<u8>,
    value: Vec<u8>,
}

/// A row's non-NULL values sorted by role as its fields are read: key fields by key position,
/// the others by slot. Filled by [`RowSlots::add`] and written by [`TableStore::put_now`].
#[derive(Debug, Clone, Copy)]
pub struct RowSlots<'v> {
    key: [Option<ValueRef<'v>>; PRIMARY_KEY_FIELDS_MAX],
    values: [Option<ValueRef<'v>>; INLINE_PUT_SLOTS_MAX],
}

impl Default for RowSlots<'_> {
    fn default() -> Self {
        RowSlots::new()
    }
}

impl<'v> RowSlots<'v> {
    pub fn new() -> RowSlots<'v> {
        RowSlots { key: [None; PRIMARY_KEY_FIELDS_MAX], values: [None; INLINE_PUT_SLOTS_MAX] }
    }

    /// The row of `pairs` (NULL: absent) of table `t`; None when [`RowSlots::add`] refuses one.
    pub fn of<'n>(
        t: &CatalogTable,
        pairs: impl IntoIterator<Item = (&'n str, ValueRef<'v>)>,
    ) -> Option<RowSlots<'v>> {
        let mut row = RowSlots::new();
        pairs.into_iter().all(|(name, value)| row.add(t, name, value)).then_some(row)
    }

    /// Adds field `name` of table `t` (a NULL is no value). False when the put must take the
    /// general path: `name` is not a field of the table, was given twice, or the table is wider
    /// than [`INLINE_PUT_SLOTS_MAX`].
    pub fn add(&mut self, t: &CatalogTable, name: &str, value: ValueRef<'v>) -> bool {
        if value == ValueRef::Null {
            return true;
        }
        // A slot past the array is a table too wide for this path (`takes_inline_puts`).
        let slot = match t.schema().field_role(name) {
            None => return false,
            Some((_, FieldRole::Key(p))) => self.key.get_mut(p),
            Some((_, FieldRole::Slot(s))) => self.values.get_mut(s),
        };
        slot.is_some_and(|slot| slot.replace(value).is_none())
    }
}

impl<D: Disk> TableStore<D> {
    /// Puts a row, its borrowed values sorted into [`RowSlots`] (the node's inline put fills them
    /// as it reads the request's fields, `ringstore_net::request::FieldsReader`), without
    /// allocating. `owns` gets the encoded shard key and says whether this shard owns its
    /// partition. Returns None, having
    /// done nothing, when the put must take the general path (see the module docs) or another
    /// shard owns it; otherwise the outcome and what is left to wait for before acknowledging
    /// (as [`TableStore::write_now`]). `now` is the store's clock as the caller last read it
    /// ([`crate::Store::now_ms`]): the version of a put without one, and where TTLs count from.
    #[allow(clippy::too_many_arguments)]
    pub fn put_now(
        &self,
        t: &CatalogTable,
        row: &RowSlots<'_>,
        options: PutOptions,
        durability: Durability,
        now: u64,
        scratch: &mut PutScratch,
        owns: impl FnOnce(&[u8]) -> bool,
    ) -> Option<OpResult<(WriteOutcome, Option<DurableWait>)>> {
        if !takes_inline_puts(t, options) {
            return None;
        }
        let (schema, key, values) = (t.schema(), &row.key, &row.values);
        let shard_key_len = encode_primary_key_fields(schema, key, &mut scratch.key).ok()?;
        if !owns(&scratch.key[..shard_key_len]) {
            return None;
        }
        let PutScratch { key, value } = scratch;
        self.put_slots_now(t, key, values, options, durability, now, value)
    }

    /// [`Self::put_now`] of a row whose key the caller has already encoded: `stored_key` must
    /// be the table's encoding of the row's key fields ([`super::encode_primary_key_into`]) on a
    /// shard that owns it, and `values` names only non-key fields (a key field among them sends
    /// the put to the general path, None). The node's RESP port encodes each key once to find
    /// its owner (`node/src/resp_batch.rs`) and writes with that encoding.
    #[allow(clippy::too_many_arguments)]
    pub fn put_encoded_now<'n, 'v>(
        &self,
        t: &CatalogTable,
        stored_key: &[u8],
        values: impl Iterator<Item = (&'n str, ValueRef<'v>)>,
        options: PutOptions,
        durability: Durability,
        now: u64,
        scratch: &mut PutScratch,
    ) -> Option<OpResult<(WriteOutcome, Option<DurableWait>)>> {
        if !takes_inline_puts(t, options) {
            return None;
        }
        let schema = t.schema();
        let mut slots = [None; INLINE_PUT_SLOTS_MAX];
        for (name, value) in values.filter(|(_, v)| *v != ValueRef::Null) {
            let FieldRole::Slot(s) = schema.field_role(name)?.1 else { return None };
            if slots[s].replace(value).is_some() {
                return None;
            }
        }
        self.put_slots_now(t, stored_key, &slots, options, durability, now, &mut scratch.value)
    }

    /// The common tail of both: the stored row of `values` (by slot) encoded into `value`, and
    /// appended under `key`.
    #[allow(clippy::too_many_arguments)]
    fn put_slots_now(
        &self,
        t: &CatalogTable,
        key: &[u8],
        values: &[Option<ValueRef<'_>>; INLINE_PUT_SLOTS_MAX],
        options: PutOptions,
        durability: Durability,
        now: u64,
        value: &mut Vec<u8>,
    ) -> Option<OpResult<(WriteOutcome, Option<DurableWait>)>> {
        let schema = t.schema();
        let slots = schema.non_key_fields().len();
        let version = match options.version {
            Some(v) => check_window(schema, v, now).ok()?,
            None => now,
        };
        let expiry_ms = expiry_of(schema, options.ttl_seconds, false, version, now).ok()?;
        // The stored row (stored_row.rs): header, one version header, the row values.
        value.clear();
        value.push(STORED_ROW_FORMAT);
        value.extend_from_slice(&[0; 8]); // the token, taken once nothing can fail
        value.extend_from_slice(&1u16.to_le_bytes());
        value.extend_from_slice(&version.to_le_bytes());
        value.extend_from_slice(&expiry_ms.to_le_bytes());
        value.extend_from_slice(&[0; 4]); // the row's length
        let row_at = value.len();
        let row = values[..slots].iter().copied();
        encode_row_into(value, schema, t.schema_version(), row).ok()?;
        let row_len = (value.len() - row_at) as u32;
        value[row_at - 4..row_at].copy_from_slice(&row_len.to_le_bytes());
        debug_assert_eq!(row_at, STORED_ROW_HEADER_BYTES + STORED_VERSION_HEADER_BYTES);
        if value.len() > ROW_BYTES_MAX {
            return None;
        }
        let token = self.tokens.next(now);
        value[1..9].copy_from_slice(&token.0.to_le_bytes());
        let opts = WriteOptions { durability, version: Some(version), expiry_ms };
        Some(
            self.store
                .put_now(key, value, opts)
                .map(|appended| (WriteOutcome::Written { token, version }, appended.wait))
                .map_err(Into::into),
        )
    }
}

/// Whether puts on `t` with `options` may take the allocation-free path at all (see the module
/// docs).
fn takes_inline_puts(t: &CatalogTable, options: PutOptions) -> bool {
    let schema = t.schema();
    options.condition == Condition::Always
        && schema.options().max_versions <= 1
        && schema.non_key_fields().len() <= INLINE_PUT_SLOTS_MAX
        && t.indexes().is_empty()
}
