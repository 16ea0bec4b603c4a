//! The catalog of table schemas (issue 3): which tables exist, their ids, and a schema version
//! per table for the row encoding; its file codec; and what a DDL statement does to it.
//!
//! [`Catalog::plan`] works out what a parsed DDL [`Statement`] does without any I/O. CREATE
//! gives the schema the next table id (ids start at 1 and are never reused, because a dropped
//! table's rows may still sit in the log under its id prefix, so the next id is stored in the
//! file too), DROP removes a table, ALTER changes a table's options, DESCRIBE and SHOW TABLES
//! read. A change comes back as the
//! next catalog, which the engine (`storage/src/table/catalog_file.rs`) writes to the catalog
//! file atomically and only then makes visible. A failed write poisons the catalog
//! ([`Catalog::poison`]): the file may hold either version until the next load, so later changes
//! are refused. `docs/FORMAT.md` ("Catalog file") holds the bytes, `docs/ERRORS.md` the codes.

mod codec;
mod contents;
mod indexes;
mod node_view;

pub use codec::{
    decode as decode_catalog, decode_table_record, encode as encode_catalog, encode_table_record,
    CATALOG_FORMAT_VERSION, CATALOG_HEADER_BYTES, CATALOG_MAGIC,
};
pub use contents::{Catalog, CatalogTable, FIRST_SCHEMA_VERSION, FIRST_TABLE_ID};

use crate::ddl::{OptionChanges, Statement};
use crate::table::index_def::{IndexId, IndexState};
use crate::table::limits::{INDEXES_PER_TABLE_MAX, INDEX_FIELDS_MAX};
use crate::table::{Name, TableError, TableId, TableSchema};

/// Why a statement cannot be applied to the catalog. Each variant has a stable code
/// ([`CatalogError::code`]); a table module error keeps its own code. A failure to write or read
/// the catalog file is the engine's (503, `OpError::CatalogStore` in `ringstore-storage`).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    #[error(transparent)]
    Table(#[from] TableError),
    #[error(
        "table {table} already exists (id {id}); to ignore this, use CREATE TABLE IF NOT EXISTS \
         in SQL, or plan add-table -name {table} -if-not-exists in an admin CLI script"
    )]
    TableExists { table: String, id: u32 },
    #[error("no table id left: every id up to {last} has been used")]
    TableIdsExhausted { last: u32 },
    #[error(
        "table {table} already has an index {index} (id {id}, {state}); to ignore this, use \
         CREATE INDEX IF NOT EXISTS"
    )]
    IndexExists { table: String, index: String, id: u32, state: &'static str },
    #[error("table {table} has no index {index}; its indexes: {known}")]
    UnknownIndex { table: String, index: String, known: String },
    #[error(
        "table {table} already has {INDEXES_PER_TABLE_MAX} indexes, the most a table may have \
         (INDEXES_PER_TABLE_MAX); drop one first"
    )]
    TooManyIndexes { table: String },
    #[error(
        "table {table}, index {index}: field {field} is named twice; index fields must differ"
    )]
    IndexFieldRepeated { table: String, index: String, field: String },
    #[error(
        "table {table}, index {index}: {given} fields given; an index has 1 to \
         {INDEX_FIELDS_MAX} fields (INDEX_FIELDS_MAX)"
    )]
    IndexFieldCount { table: String, index: String, given: usize },
}

impl CatalogError {
    /// The error's stable numeric code: 5xx, or the table module's code for [`CatalogError::Table`].
    pub fn code(&self) -> u16 {
        match self {
            CatalogError::Table(e) => e.code(),
            CatalogError::TableExists { .. } => 501,
            CatalogError::TableIdsExhausted { .. } => 502,
            CatalogError::IndexExists { .. } => 504,
            CatalogError::UnknownIndex { .. } => 505,
            CatalogError::TooManyIndexes { .. } => 506,
            CatalogError::IndexFieldRepeated { .. } => 507,
            CatalogError::IndexFieldCount { .. } => 508,
        }
    }
}

pub type CatalogResult<T> = std::result::Result<T, CatalogError>;

/// What executing a statement did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// CREATE made the table, with this id; the catalog file holds it.
    Created { id: TableId },
    /// CREATE IF NOT EXISTS found a table of that name; nothing changed.
    AlreadyExists { id: TableId },
    /// DROP removed the table that had this id; the catalog file no longer holds it.
    Dropped { id: TableId },
    /// DROP IF EXISTS named no table; nothing changed.
    NothingDropped,
    /// ALTER TABLE changed the options of the table with this id; the catalog file holds them.
    Altered { id: TableId },
    /// DESCRIBE: the table.
    Described(CatalogTable),
    /// SHOW TABLES: every table name, sorted.
    Tables(Vec<Name>),
    /// CREATE INDEX made the index, with this id; the catalog file holds it, in `state`
    /// (BUILDING from the plan; the engine reports READY once it has indexed every row).
    IndexCreated { table: TableId, index: IndexId, state: IndexState },
    /// CREATE INDEX IF NOT EXISTS found an index of that name; nothing changed.
    IndexAlreadyExists { table: TableId, index: IndexId },
    /// DROP INDEX: the index is DELETING in the catalog file; the engine removes its entries and
    /// then forgets it.
    IndexDropped { table: TableId, index: IndexId },
    /// DROP INDEX IF EXISTS named no index; nothing changed.
    NoIndexDropped,
    /// SHOW INDEXES ON t: the table, whose [`CatalogTable::indexes`] are the answer.
    Indexes(CatalogTable),
}

/// What a statement does to the catalog ([`Catalog::plan`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Nothing to write: a read, or a CREATE IF NOT EXISTS / DROP IF EXISTS that changes nothing.
    Unchanged(Outcome),
    /// `next` replaces the catalog once it is durable in the catalog file.
    Change { next: Catalog, outcome: Outcome },
}

impl Catalog {
    /// What `statement` does to this catalog, without changing it. A poisoned catalog plans
    /// changes like any other; refusing to write them is the file writer's part.
    pub fn plan(&self, statement: &Statement) -> CatalogResult<Plan> {
        match statement {
            Statement::CreateTable { schema, if_not_exists } => {
                self.plan_create(schema, *if_not_exists)
            }
            Statement::DropTable { table, if_exists } => self.plan_drop(table, *if_exists),
            Statement::AlterTable { table, changes } => self.plan_alter(table, changes),
            Statement::DescribeTable { table } => self
                .by_name(table)
                .cloned()
                .map(|t| Plan::Unchanged(Outcome::Described(t)))
                .ok_or_else(|| unknown(table)),
            Statement::ShowTables => {
                Ok(Plan::Unchanged(Outcome::Tables(self.by_name.keys().cloned().collect())))
            }
            Statement::CreateIndex { table, index, fields, if_not_exists, .. } => {
                self.plan_create_index(table, index, fields, *if_not_exists)
            }
            Statement::DropIndex { table, index, if_exists } => {
                self.plan_drop_index(table, index, *if_exists)
            }
            Statement::ShowIndexes { table } => self
                .by_name(table)
                .cloned()
                .map(|t| Plan::Unchanged(Outcome::Indexes(t)))
                .ok_or_else(|| unknown(table)),
        }
    }

    fn plan_create(&self, schema: &TableSchema, if_not_exists: bool) -> CatalogResult<Plan> {
        if let Some(existing) = self.by_name(schema.name()) {
            let id = existing.id();
            if if_not_exists {
                return Ok(Plan::Unchanged(Outcome::AlreadyExists { id }));
            }
            return Err(CatalogError::TableExists { table: schema.name().to_string(), id: id.0 });
        }
        let id = TableId(self.next_id);
        let next_id = self
            .next_id
            .checked_add(1)
            .ok_or(CatalogError::TableIdsExhausted { last: id.0 - 1 })?;
        let mut next = self.clone();
        next.next_id = next_id;
        let table = CatalogTable {
            schema: schema.rebuilt(id, *schema.options())?,
            schema_version: FIRST_SCHEMA_VERSION,
            indexes: Vec::new(),
        };
        next.insert(table);
        Ok(Plan::Change { next, outcome: Outcome::Created { id } })
    }

    fn plan_drop(&self, table: &Name, if_exists: bool) -> CatalogResult<Plan> {
        let Some(id) = self.by_name.get(table).copied() else {
            return if if_exists {
                Ok(Plan::Unchanged(Outcome::NothingDropped))
            } else {
                Err(unknown(table))
            };
        };
        let mut next = self.clone();
        next.by_name.remove(table);
        next.by_id.remove(&id);
        Ok(Plan::Change { next, outcome: Outcome::Dropped { id } })
    }
}

impl Catalog {
    /// ALTER TABLE: the table with its options changed (checked by the schema builder). The id
    /// and the schema version stay: options do not change how rows are encoded.
    fn plan_alter(&self, table: &Name, changes: &OptionChanges) -> CatalogResult<Plan> {
        let current = self.by_name(table).ok_or_else(|| unknown(table))?;
        let schema = current.schema();
        let options = changes.applied_to(schema.options(), table.as_str())?;
        let id = current.id();
        let altered = CatalogTable {
            schema: schema.rebuilt(id, options)?,
            schema_version: current.schema_version,
            indexes: current.indexes.clone(),
        };
        let mut next = self.clone();
        next.by_id.insert(id, altered);
        Ok(Plan::Change { next, outcome: Outcome::Altered { id } })
    }
}

pub(super) fn unknown(table: &Name) -> CatalogError {
    CatalogError::Table(TableError::UnknownTable { table: table.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Codes are part of the protocol: pinned here, and listed in docs/ERRORS.md.
    #[test]
    fn codes_are_stable_and_unique() {
        let all = [
            CatalogError::TableExists { table: String::new(), id: 1 },
            CatalogError::TableIdsExhausted { last: 1 },
            CatalogError::IndexExists {
                table: String::new(),
                index: String::new(),
                id: 1,
                state: "",
            },
            CatalogError::UnknownIndex {
                table: String::new(),
                index: String::new(),
                known: String::new(),
            },
            CatalogError::TooManyIndexes { table: String::new() },
            CatalogError::IndexFieldRepeated {
                table: String::new(),
                index: String::new(),
                field: String::new(),
            },
            CatalogError::IndexFieldCount { table: String::new(), index: String::new(), given: 0 },
        ];
        let codes: Vec<u16> = all.iter().map(CatalogError::code).collect();
        assert_eq!(codes, [501, 502, 504, 505, 506, 507, 508]);
        crate::error_codes::assert_documented(&codes);
    }

    /// Planning changes nothing: the catalog a plan came from is as it was.
    #[test]
    fn plan_leaves_the_catalog_unchanged() {
        let catalog = Catalog::default();
        let statements = crate::ddl::parse("CREATE TABLE t (id LONG, PRIMARY KEY (id))").unwrap();
        let Plan::Change { next, outcome } = catalog.plan(&statements[0]).unwrap() else {
            panic!("a CREATE of a new table is a change");
        };
        assert_eq!(outcome, Outcome::Created { id: TableId(FIRST_TABLE_ID) });
        assert!(next.get("t").is_some());
        assert_eq!(catalog, Catalog::default());
    }
}
