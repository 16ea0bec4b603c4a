//! The durable catalog of table schemas (issue 3): which tables exist, their ids, and a schema
//! version per table for the row encoding.
//!
//! [`Catalog::apply`] executes a parsed DDL [`Statement`]. CREATE gives the schema the next table
//! id (ids start at 1 and are never reused, because a dropped table's rows may still sit in the
//! log under its id prefix, so the next id is stored in the file too), DROP removes a table,
//! DESCRIBE and SHOW TABLES read. A change is computed on a copy, written to the catalog file
//! atomically (`table/atomic_file.rs`) and only then made visible, so a caller that got `Ok` knows the change
//! survives a crash, and one that got an error sees the catalog unchanged in memory. A failed
//! write poisons the catalog (the file may hold either version until the next load), so later
//! changes are refused until it is loaded again. `docs/FORMAT.md` ("Catalog file") holds the
//! bytes and the error codes.

mod codec;
mod contents;

use std::path::Path;

use crate::table::atomic_file::{self, AtomicFile};
pub use codec::{
    decode_table_record, encode_table_record, CATALOG_FORMAT_VERSION, CATALOG_HEADER_BYTES,
    CATALOG_MAGIC,
};
pub use contents::{Catalog, CatalogTable, FIRST_SCHEMA_VERSION, FIRST_TABLE_ID};

pub const CATALOG_FILE: &str = "catalog";
pub const CATALOG_TMP_FILE: &str = "catalog.tmp";
const FILE: AtomicFile = AtomicFile { name: CATALOG_FILE, tmp: CATALOG_TMP_FILE };

use crate::ddl::Statement;
use crate::disk::Disk;
use crate::table::{Name, TableError, TableId, TableSchema};

/// Why a catalog operation failed. Each variant has a stable code ([`CatalogError::code`]); a
/// table module error keeps its own code.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CatalogError {
    #[error(transparent)]
    Table(#[from] TableError),
    #[error("table {table} already exists (id {id}); use IF NOT EXISTS to ignore this")]
    TableExists { table: String, id: u32 },
    #[error("no table id left: every id up to {last} has been used")]
    TableIdsExhausted { last: u32 },
    /// I/O, a corrupt catalog file (naming the file and what is wrong), or a poisoned catalog.
    #[error(transparent)]
    Store(#[from] crate::Error),
}

impl CatalogError {
    /// The error's stable numeric code: 5xx, or the table module's code for [`CatalogError::Table`].
    pub fn code(&self) -> u16 {
        match self {
            CatalogError::Table(e) => e.code(),
            CatalogError::TableExists { .. } => 501,
            CatalogError::TableIdsExhausted { .. } => 502,
            CatalogError::Store(_) => 503,
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
    /// DESCRIBE: the table.
    Described(CatalogTable),
    /// SHOW TABLES: every table name, sorted.
    Tables(Vec<Name>),
}

impl Catalog {
    /// Loads the catalog of store directory `dir`: empty if it has no catalog file yet. A
    /// leftover `catalog.tmp` is removed. A corrupt file is a [`crate::Error::CorruptFile`].
    pub async fn load<D: Disk>(disk: &D, dir: &Path) -> CatalogResult<Catalog> {
        let Some(bytes) = atomic_file::read(disk, dir, FILE).await? else {
            return Ok(Catalog::default());
        };
        codec::decode(&bytes).map_err(|what| {
            CatalogError::Store(crate::Error::CorruptFile { file: dir.join(CATALOG_FILE), what })
        })
    }

    /// Executes one statement; a change is durable in `dir` before this returns `Ok`.
    pub async fn apply<D: Disk>(
        &mut self,
        disk: &D,
        dir: &Path,
        statement: &Statement,
    ) -> CatalogResult<Outcome> {
        match statement {
            Statement::CreateTable { schema, if_not_exists } => {
                self.create(disk, dir, schema, *if_not_exists).await
            }
            Statement::DropTable { table, if_exists } => {
                self.drop_table(disk, dir, table, *if_exists).await
            }
            Statement::DescribeTable { table } => {
                self.by_name(table).cloned().map(Outcome::Described).ok_or_else(|| unknown(table))
            }
            Statement::ShowTables => Ok(Outcome::Tables(self.by_name.keys().cloned().collect())),
        }
    }

    async fn create<D: Disk>(
        &mut self,
        disk: &D,
        dir: &Path,
        schema: &TableSchema,
        if_not_exists: bool,
    ) -> CatalogResult<Outcome> {
        if let Some(existing) = self.by_name(schema.name()) {
            let id = existing.id();
            if if_not_exists {
                return Ok(Outcome::AlreadyExists { id });
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
        let table =
            CatalogTable { schema: with_id(schema, id)?, schema_version: FIRST_SCHEMA_VERSION };
        next.insert(table);
        self.commit(disk, dir, next).await?;
        Ok(Outcome::Created { id })
    }

    async fn drop_table<D: Disk>(
        &mut self,
        disk: &D,
        dir: &Path,
        table: &Name,
        if_exists: bool,
    ) -> CatalogResult<Outcome> {
        let Some(id) = self.by_name.get(table).copied() else {
            return if if_exists { Ok(Outcome::NothingDropped) } else { Err(unknown(table)) };
        };
        let mut next = self.clone();
        next.by_name.remove(table);
        next.by_id.remove(&id);
        self.commit(disk, dir, next).await?;
        Ok(Outcome::Dropped { id })
    }

    /// Writes `next` to the file and, once it is durable, makes it the catalog.
    async fn commit<D: Disk>(&mut self, disk: &D, dir: &Path, next: Catalog) -> CatalogResult<()> {
        if let Some(reason) = &self.poisoned {
            return Err(crate::Error::Poisoned { reason: reason.clone() }.into());
        }
        let bytes = codec::encode(&next);
        // Checked on write as on read: what is written must load back as the same catalog.
        debug_assert_eq!(codec::decode(&bytes).as_ref(), Ok(&next));
        if let Err(e) = atomic_file::write(disk, dir, FILE, &bytes).await {
            self.poisoned = Some(format!("writing the catalog failed: {e}"));
            return Err(e.into());
        }
        *self = next;
        Ok(())
    }
}

fn unknown(table: &Name) -> CatalogError {
    CatalogError::Table(TableError::UnknownTable { table: table.to_string() })
}

/// The same schema with id `id`. The schema type can only be built through its builder, so the
/// parts go through it again; they were valid before and stay valid.
fn with_id(schema: &TableSchema, id: TableId) -> Result<TableSchema, TableError> {
    let mut builder = TableSchema::builder(id, schema.name().as_str());
    for field in schema.fields() {
        builder = builder.field(field.name().as_str(), field.ty().clone());
    }
    for key in schema.primary_key() {
        builder = builder.primary_key_field(schema.fields()[key.field].name().as_str(), key.desc);
    }
    let shard: Vec<&str> =
        (0..schema.shard_key_len()).map(|p| schema.key_field(p).name().as_str()).collect();
    let options = schema.options();
    builder = builder
        .shard_key(&shard)
        .max_versions(options.max_versions)
        .max_version_offset_seconds(options.max_version_offset_seconds);
    if let Some(ttl) = options.ttl_seconds {
        builder = builder.ttl_seconds(ttl);
    }
    builder.build()
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
            CatalogError::Store(crate::Error::Closed),
        ];
        let codes: Vec<u16> = all.iter().map(CatalogError::code).collect();
        assert_eq!(codes, [501, 502, 503]);
        crate::error::assert_documented(&codes);
    }
}
