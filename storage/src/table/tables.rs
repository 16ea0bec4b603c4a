//! The catalog's tables as the running store sees them: by name for requests, by id for
//! compaction's filter (`purge.rs`). `table_store.rs` rebuilds them after every DDL statement.
//!
//! They live apart from `table_store.rs` because the filter that `table_store.rs` installs reads
//! them; kept there, the store and its filter would depend on each other.

use std::cell::RefCell;
use std::rc::Rc;

use ahash::AHashMap;

use crate::table::catalog::{Catalog, CatalogTable};

/// The catalog's tables, looked up by name for requests and by id for compaction.
pub(crate) struct Tables {
    pub by_name: AHashMap<String, Rc<CatalogTable>>,
    pub by_id: AHashMap<u32, Rc<CatalogTable>>,
    /// Ids below this were given out; one that is not in `by_id` or `index_ids` belongs to a
    /// dropped table or index.
    pub next_id: u32,
    /// The ids of every index the catalog has, in any state: keys under them are index entries.
    pub index_ids: ahash::AHashSet<u32>,
    /// The table the last lookup by name found: a load writes to one table request after
    /// request, and comparing its name is cheaper than hashing it (`TableStore::table`).
    /// Rebuilt empty with the rest after every DDL statement.
    pub last: RefCell<Option<Rc<CatalogTable>>>,
}

impl Tables {
    /// The tables of `catalog` as it is now.
    pub(crate) fn of(catalog: &Catalog) -> Tables {
        let all: Vec<Rc<CatalogTable>> = catalog.tables().map(|t| Rc::new(t.clone())).collect();
        Tables {
            by_name: all.iter().map(|t| (t.name().to_string(), t.clone())).collect(),
            by_id: all.iter().map(|t| (t.id().0, t.clone())).collect(),
            next_id: catalog.next_id().0,
            index_ids: all.iter().flat_map(|t| t.indexes().iter().map(|i| i.id().0)).collect(),
            last: RefCell::new(None),
        }
    }
}
