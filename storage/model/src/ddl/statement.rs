//! What the parser produces: [`Statement`]s, and the [`TableDraft`] both grammars fill in before
//! the table module's schema builder checks it.
//!
//! The parser checks only the grammar; every rule about names, keys and options is the schema
//! builder's, so the SQL text and the admin CLI script can not disagree about what a valid table is.

use crate::table::{FieldType, Name, NameRole, TableError, TableId, TableResult, TableSchema};

/// The id given to every schema the parser builds. The parser has no catalog, so it can not
/// assign ids; the catalog replaces this placeholder when it executes the statement.
pub const PLACEHOLDER_TABLE_ID: TableId = TableId(0);

/// One parsed DDL statement.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Statement {
    /// `CREATE TABLE`, or an admin CLI `table create ... exit` plus `plan add-table`. The schema
    /// is validated and carries [`PLACEHOLDER_TABLE_ID`].
    CreateTable {
        schema: TableSchema,
        if_not_exists: bool,
    },
    DropTable {
        table: Name,
        if_exists: bool,
    },
    DescribeTable {
        table: Name,
    },
    ShowTables,
}

/// A table as the text describes it, not yet checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct TableDraft {
    pub name: String,
    pub fields: Vec<(String, FieldType)>,
    /// Primary key fields in order, each with its DESC flag.
    pub key: Vec<(String, bool)>,
    /// None: the shard key is the whole primary key.
    pub shard: Option<Vec<String>>,
    pub ttl_seconds: Option<u64>,
    pub max_versions: Option<u64>,
}

impl TableDraft {
    pub fn new(name: &str) -> TableDraft {
        TableDraft { name: name.to_owned(), ..TableDraft::default() }
    }

    /// Hands the draft to the schema builder, which checks every rule.
    pub fn build(&self) -> TableResult<TableSchema> {
        let mut builder = TableSchema::builder(PLACEHOLDER_TABLE_ID, &self.name);
        for (name, ty) in &self.fields {
            builder = builder.field(name, ty.clone());
        }
        for (name, desc) in &self.key {
            builder = builder.primary_key_field(name, *desc);
        }
        if let Some(shard) = &self.shard {
            builder = builder.shard_key(&shard.iter().map(String::as_str).collect::<Vec<_>>());
        }
        if let Some(ttl) = self.ttl_seconds {
            builder = builder.ttl_seconds(ttl);
        }
        if let Some(versions) = self.max_versions {
            builder = builder.max_versions(self.versions_u32(versions)?);
        }
        builder.build()
    }

    /// The builder takes a `u32`; a larger count gets the builder's own range error rather than
    /// being truncated into a different, valid number.
    fn versions_u32(&self, versions: u64) -> TableResult<u32> {
        u32::try_from(versions).map_err(|_| TableError::InvalidOption {
            table: self.name.clone(),
            option: "max_versions",
            value: versions,
            min: 1,
            max: u64::from(crate::table::limits::MAX_VERSIONS_MAX),
        })
    }
}

/// Checks a table name used outside CREATE with the same rule, and the same error, as the builder.
pub(crate) fn table_name(name: &str) -> TableResult<Name> {
    Name::new(name).map_err(|problem| TableError::InvalidName {
        table: name.to_owned(),
        role: NameRole::Table,
        name: name.to_owned(),
        problem,
    })
}
