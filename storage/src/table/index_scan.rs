//! Reading a secondary index on one shard (issue 15): [`TableStore::index_scan`].
//!
//! Only a READY index is read (236 names the state otherwise). The query's equal values and
//! range become one byte range of entries (`key/index.rs`), read as one page by one store scan
//! (one snapshot of the entries); each entry names its row, which is then read (unless the
//! query is keys-only) and checked to still call for that entry, so a row that changed since
//! the snapshot is left out rather than shown under values it no longer has. The page's resume
//! token is its last entry key. The node runs it on every shard and merges the pages in index
//! order (entry keys compare alike on every shard): `node/src/index_query.rs`.

use crate::constants::SCAN_LIMIT_MAX;
use crate::disk::Disk;
use crate::read::ScanRequest;
use crate::table::error::TableError;
use crate::table::index_def::IndexState;
use crate::table::index_query::{IndexHit, IndexPage, IndexQuery};
use crate::table::key::{decode_index_entry, index_key_range};
use crate::table::op_error::{OpError, OpResult};
use crate::table::request::VersionSelect;
use crate::table::secondary_index::entry_keys;
use crate::table::stored_row::StoredRow;
use crate::table::table_store::TableStore;
use crate::table::write_plan::table_row;
use crate::table::CatalogError;

impl<D: Disk> TableStore<D> {
    /// One page of this shard's entries of index `index` of `table` that match `query`, in
    /// index order (reversed with `query.reverse`), with their rows unless keys-only.
    pub async fn index_scan(
        &self,
        table: &str,
        index: &str,
        query: &IndexQuery,
    ) -> OpResult<IndexPage> {
        let t = self.table(table)?;
        let schema = t.schema();
        let Some(def) = t.index(index) else {
            let known = t.indexes().iter().map(|i| i.name().as_str()).collect::<Vec<_>>();
            let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
            let (table, index) = (table.to_owned(), index.to_owned());
            return Err(OpError::Catalog(CatalogError::UnknownIndex { table, index, known }));
        };
        if def.state() != IndexState::Ready {
            let hint = match def.state() {
                IndexState::Building => {
                    ": it is being built in the background and becomes READY once every shard \
                     has indexed its rows (SHOW INDEXES shows the state)"
                }
                _ => ": it is being dropped",
            };
            let (table, index) = (table.to_owned(), index.to_owned());
            return Err(TableError::IndexNotReady {
                table,
                index,
                state: def.state().name(),
                hint,
            }
            .into());
        }
        if query.limit == 0 || query.limit > SCAN_LIMIT_MAX {
            let (table, limit) = (table.to_owned(), query.limit);
            return Err(TableError::InvalidLimit { table, limit, max: SCAN_LIMIT_MAX }.into());
        }
        let range = index_key_range(schema, def, &query.equal, query.range.as_ref())?;
        if query.resume.as_ref().is_some_and(|r| !range.contains(r)) {
            let what = "it is not an entry key inside the query's range";
            return Err(TableError::BadResumeToken { table: table.to_owned(), what }.into());
        }
        if range.is_empty() {
            return Ok(IndexPage::default());
        }
        let request = ScanRequest {
            range: range.into(),
            reverse: query.reverse,
            limit: query.limit,
            resume: query.resume.clone(),
            keys_only: true,
        };
        let page = self.store.scan(&request).await?;
        let now = self.store.now_ms();
        let mut hits = Vec::with_capacity(page.rows.len());
        for entry in &page.rows {
            let decoded = decode_index_entry(schema, def, &entry.key)?;
            let mut hit = IndexHit {
                entry: entry.key.to_vec(),
                values: decoded.values,
                row_key: decoded.row_key,
                row: None,
            };
            if !query.keys_only {
                let Some(value) = self.store.get(&hit.row_key).await? else { continue };
                let stored = StoredRow::decode(schema, &value.value)?;
                let wanted = entry_keys(&t, std::iter::once(def), &hit.row_key, &stored)?;
                if !matches!(wanted.first(), Some(Ok(k)) if *k == hit.entry) {
                    continue;
                }
                hit.row =
                    table_row(schema, &hit.row_key, None, &stored, VersionSelect::Newest, now)?;
            }
            hits.push(hit);
        }
        Ok(IndexPage { hits, resume: page.resume })
    }
}
