//! What the catalog holds: its tables by id and by name, the next table id, and whether a failed
//! write poisoned it. The catalog's file format (`codec.rs`) and its DDL plan (`mod.rs`) both build
//! on these types, so they are apart from both.

use std::collections::BTreeMap;

use crate::table::index_def::IndexDef;
use crate::table::{Name, TableId, TableSchema};

/// The first id a table gets; 0 is the DDL parser's placeholder.
pub const FIRST_TABLE_ID: u32 = 1;
/// The schema version a new table starts at.
pub const FIRST_SCHEMA_VERSION: u32 = 1;

/// One table in the catalog: its schema (with its assigned id), its schema version and its
/// secondary indexes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogTable {
    pub(super) schema: TableSchema,
    pub(super) schema_version: u32,
    /// In creation order; at most [`INDEXES_PER_TABLE_MAX`] of them.
    ///
    /// [`INDEXES_PER_TABLE_MAX`]: crate::table::limits::INDEXES_PER_TABLE_MAX
    pub(super) indexes: Vec<IndexDef>,
}

impl CatalogTable {
    /// A table as a client knows it (from a Describe response, say); the catalog makes its own.
    pub fn new(schema: TableSchema, schema_version: u32) -> CatalogTable {
        CatalogTable { schema, schema_version, indexes: Vec::new() }
    }

    /// The same table with these indexes (as a client decodes them; the catalog checks its own).
    pub fn with_indexes(mut self, indexes: Vec<IndexDef>) -> CatalogTable {
        self.indexes = indexes;
        self
    }

    /// The table's secondary indexes, in creation order, in every state. Empty for most tables:
    /// a write checks only this before taking the path without index work.
    pub fn indexes(&self) -> &[IndexDef] {
        &self.indexes
    }

    /// The index called `name`, if the table has one.
    pub fn index(&self, name: &str) -> Option<&IndexDef> {
        self.indexes.iter().find(|i| i.name().as_str() == name)
    }

    pub fn schema(&self) -> &TableSchema {
        &self.schema
    }

    pub fn id(&self) -> TableId {
        self.schema.id()
    }

    pub fn name(&self) -> &Name {
        self.schema.name()
    }

    /// Version of the schema, starting at [`FIRST_SCHEMA_VERSION`]; rows record the version
    /// they were written with.
    pub fn schema_version(&self) -> u32 {
        self.schema_version
    }
}

/// The set of tables, by id and by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Catalog {
    pub(super) by_id: BTreeMap<TableId, CatalogTable>,
    pub(super) by_name: BTreeMap<Name, TableId>,
    /// The id the next CREATE gets; never decreases.
    pub(super) next_id: u32,
    /// Set when writing the file failed: the file may hold the old or the new catalog.
    pub(super) poisoned: Option<String>,
}

impl Default for Catalog {
    fn default() -> Catalog {
        Catalog {
            by_id: BTreeMap::new(),
            by_name: BTreeMap::new(),
            next_id: FIRST_TABLE_ID,
            poisoned: None,
        }
    }
}

impl Catalog {
    /// The table called `name`, if any.
    pub fn get(&self, name: &str) -> Option<&CatalogTable> {
        Name::new(name).ok().and_then(|name| self.by_name(&name))
    }

    pub fn get_by_id(&self, id: TableId) -> Option<&CatalogTable> {
        self.by_id.get(&id)
    }

    /// Every table, in name order.
    pub fn tables(&self) -> impl Iterator<Item = &CatalogTable> + '_ {
        self.by_name.values().filter_map(|id| self.by_id.get(id))
    }

    /// The id the next CREATE will get.
    pub fn next_id(&self) -> TableId {
        TableId(self.next_id)
    }

    pub(super) fn by_name(&self, name: &Name) -> Option<&CatalogTable> {
        self.by_name.get(name).and_then(|id| self.by_id.get(id))
    }

    /// Whether a failed file write left this catalog refusing changes.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.is_some()
    }

    /// Why this catalog refuses changes, if it does.
    pub fn poisoned(&self) -> Option<&str> {
        self.poisoned.as_deref()
    }

    /// Marks the catalog as refusing changes: writing its file failed for `reason`, so the file
    /// may hold the old or the new catalog until it is loaded again.
    pub fn poison(&mut self, reason: String) {
        self.poisoned = Some(reason);
    }

    pub(super) fn insert(&mut self, table: CatalogTable) {
        let id = table.id();
        assert!(self.by_name.insert(table.name().clone(), id).is_none(), "name taken");
        assert!(self.by_id.insert(id, table).is_none(), "id taken");
    }

    /// Adds a table read from the file, refusing what the writer never produces.
    pub(super) fn insert_loaded(&mut self, table: CatalogTable) -> Result<(), String> {
        let id = table.id().0;
        if id < FIRST_TABLE_ID || id >= self.next_id {
            return Err(format!("table id {id} is outside 1..{}", self.next_id));
        }
        if table.schema_version < FIRST_SCHEMA_VERSION {
            return Err(format!("schema version {} is below 1", table.schema_version));
        }
        if self.by_id.contains_key(&table.id()) || self.by_name.contains_key(table.name()) {
            return Err(format!("table {} (id {id}) appears twice", table.name()));
        }
        self.insert(table);
        Ok(())
    }
}
