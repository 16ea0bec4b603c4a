//! What the parser produces: [`Statement`]s, and the [`TableDraft`] both grammars fill in before
//! the table module's schema builder checks it.
//!
//! The parser checks only the grammar; every rule about names, keys and options is the schema
//! builder's, so the SQL text and the admin CLI script can not disagree about what a valid table is.

use crate::table::{
    FieldType, Name, NameRole, TableError, TableId, TableOptions, TableResult, TableSchema,
};

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
    /// `ALTER TABLE`: changes a table's options (TTL, versions kept, client version window).
    AlterTable {
        table: Name,
        changes: OptionChanges,
    },
    DescribeTable {
        table: Name,
    },
    ShowTables,
    /// `CREATE INDEX [IF NOT EXISTS] idx ON t (f1, ...)`, or an admin CLI `plan add-index`.
    CreateIndex {
        table: Name,
        index: Name,
        /// The indexed fields, in index order.
        fields: Vec<Name>,
        if_not_exists: bool,
        /// `plan add-index -wait`: the client waits until the index is READY on every shard
        /// (the build runs in the background); the node itself ignores it.
        wait: bool,
    },
    /// `DROP INDEX [IF EXISTS] idx ON t`, or an admin CLI `plan remove-index`.
    DropIndex {
        table: Name,
        index: Name,
        if_exists: bool,
    },
    /// `SHOW INDEXES ON t`.
    ShowIndexes {
        table: Name,
    },
}

/// An index statement as written, before its names are checked; both grammars build it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum IndexDraft {
    Create { index: String, table: String, fields: Vec<String>, if_not_exists: bool, wait: bool },
    Drop { index: String, table: String, if_exists: bool },
    Show { table: String },
}

impl IndexDraft {
    /// Checks the names with the same rules, and errors, as the schema builder.
    pub fn finish(self) -> TableResult<Statement> {
        Ok(match self {
            IndexDraft::Create { index, table, fields, if_not_exists, wait } => {
                let fields = fields
                    .iter()
                    .map(|f| other_name(f, &table, NameRole::Field))
                    .collect::<TableResult<_>>()?;
                Statement::CreateIndex {
                    index: other_name(&index, &table, NameRole::Index)?,
                    table: table_name(&table)?,
                    fields,
                    if_not_exists,
                    wait,
                }
            }
            IndexDraft::Drop { index, table, if_exists } => Statement::DropIndex {
                index: other_name(&index, &table, NameRole::Index)?,
                table: table_name(&table)?,
                if_exists,
            },
            IndexDraft::Show { table } => Statement::ShowIndexes { table: table_name(&table)? },
        })
    }
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
    pub options: OptionChanges,
    /// Every name the text wrote (the table, fields, key fields), its role, and where it stands
    /// as the bytes of the text left from there, in text order: where a schema error points.
    pub places: Vec<(String, Role, usize)>,
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
        let options = self.options.applied_to(&TableOptions::default(), &self.name)?;
        builder.options(options).build()
    }
}

/// Table options as a statement sets them; None: left as they are (CREATE: the default).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OptionChanges {
    /// `USING TTL n unit`: Some(Some(seconds)); `USING TTL NONE`: Some(None).
    pub ttl_seconds: Option<Option<u64>>,
    /// `WITH VERSIONS n`.
    pub max_versions: Option<u64>,
    /// `WITH VERSION OFFSET n unit`, in seconds.
    pub max_version_offset_seconds: Option<u64>,
}

impl OptionChanges {
    /// Whether the statement sets no option.
    pub fn is_empty(&self) -> bool {
        *self == OptionChanges::default()
    }

    /// `current` with these changes made. The schema builder checks the ranges; a version count
    /// past `u32` gets the builder's own range error here rather than being truncated into a
    /// different, valid number.
    pub fn applied_to(&self, current: &TableOptions, table: &str) -> TableResult<TableOptions> {
        let mut options = *current;
        if let Some(ttl) = self.ttl_seconds {
            options.ttl_seconds = ttl;
        }
        if let Some(versions) = self.max_versions {
            options.max_versions =
                u32::try_from(versions).map_err(|_| TableError::InvalidOption {
                    table: table.to_owned(),
                    option: "max_versions",
                    value: versions,
                    min: 1,
                    max: u64::from(crate::table::limits::MAX_VERSIONS_MAX),
                })?;
        }
        if let Some(offset) = self.max_version_offset_seconds {
            options.max_version_offset_seconds = offset;
        }
        Ok(options)
    }
}

/// What a name in the text is: the table's, a field's declaration, or a key field's mention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Table,
    Field,
    Key,
}

/// Where a schema error points: the last place (in `places`, in text order) where the text
/// wrote the error's subject ([`TableError::subject`]) in the role the error is about, so a
/// field declared twice points at its second declaration and a bad key field at the key clause.
/// None: the error is about the whole table, or names nothing the text wrote down (an ENUM
/// value), and the caller points at the statement.
pub(crate) fn place_of(error: &TableError, places: &[(String, Role, usize)]) -> Option<usize> {
    let subject = error.subject()?;
    let role = match error {
        TableError::InvalidName { role: NameRole::Table, .. } => Role::Table,
        TableError::InvalidName { role: NameRole::EnumValue, .. } => return None,
        TableError::BooleanKeyField { .. }
        | TableError::DuplicateKeyField { .. }
        | TableError::ShardKeyNotPrefix { .. }
        | TableError::UnknownField { .. } => Role::Key,
        _ => Role::Field,
    };
    places.iter().rev().find(|(name, r, _)| name == subject && *r == role).map(|(_, _, left)| *left)
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

/// Checks a field or index name of table `table` with the name rule.
fn other_name(name: &str, table: &str, role: NameRole) -> TableResult<Name> {
    Name::new(name).map_err(|problem| TableError::InvalidName {
        table: table.to_owned(),
        role,
        name: name.to_owned(),
        problem,
    })
}
