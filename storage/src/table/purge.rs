//! What the table layer lets compaction purge ([`CompactionFilter`]): rows of dropped tables,
//! and the expired (or surplus) versions inside a live row.
//!
//! A row's record stays live while any version is unexpired (`stored_row.rs`), so versions that
//! expired earlier still take space in it until the row is written again or compaction copies it:
//! then this filter rewrites the row without them, keeping its token, newest version and expiry.
//! A key under a table id the catalog no longer has (ids below the next id are never reused) is a
//! row of a dropped table: dropped; the same for an entry of a dropped index (index ids come from
//! the same counter). An entry of an index the catalog has is kept as it is. DROP TABLE also deletes the rows at once (`table_store.rs`);
//! this catches what a crash in the middle of that left behind.

use std::cell::RefCell;
use std::rc::Rc;

use crate::compaction_filter::{CompactionFilter, FilterDecision};
use crate::table::limits::TABLE_PREFIX_BYTES;
use crate::table::stored_row::StoredRow;
use crate::table::tables::Tables;

pub(crate) struct TablePurge {
    pub tables: Rc<RefCell<Tables>>,
}

impl CompactionFilter for TablePurge {
    fn filter(&self, key: &[u8], value: &[u8], now_ms: u64) -> FilterDecision {
        let Some(prefix) = key.first_chunk::<TABLE_PREFIX_BYTES>() else {
            return FilterDecision::Keep;
        };
        let id = u32::from_be_bytes(*prefix);
        let tables = self.tables.borrow();
        if tables.index_ids.contains(&id) {
            // An index entry: no row to decode; it expires with its row's record.
            return FilterDecision::Keep;
        }
        let Some(table) = tables.by_id.get(&id) else {
            let dropped = id < tables.next_id;
            return if dropped { FilterDecision::Drop } else { FilterDecision::Keep };
        };
        let schema = table.schema();
        // A row that does not decode is kept as it is: reads report it; compaction is no judge.
        let Ok(row) = StoredRow::decode(schema, value) else { return FilterDecision::Keep };
        let max = schema.options().max_versions as usize;
        let live = row.versions.iter().filter(|v| !v.is_expired(now_ms)).take(max).count();
        if live == row.versions.len() || live == 0 {
            return FilterDecision::Keep;
        }
        let mut kept = row.to_owned_row();
        kept.versions.retain(|v| !v.is_expired(now_ms));
        kept.versions.truncate(max);
        // The index keeps the record's version and expiry: rewrite only if they stay the same.
        let same = kept.versions[0].version == row.versions[0].version
            && kept.record_expiry_ms() == row.record_expiry_ms();
        if same {
            FilterDecision::Rewrite(kept.encode())
        } else {
            FilterDecision::Keep
        }
    }
}
