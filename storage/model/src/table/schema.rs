//! A table's schema: its id, name, ordered fields, primary key, shard key and options, built only
//! through [`TableSchemaBuilder::build`], which checks every rule.
//!
//! A [`TableSchema`] that exists is valid: names follow the name rule, field names are unique, the
//! primary key has 1..=8 existing non-BOOLEAN fields, the shard key is a leading prefix of it, ENUM
//! types have 1..=65,536 unique valid values, and the options are in range. The key encoder relies
//! on this and does not check it again.

use super::error::{NameRole, TableError, TableResult};
use super::limits::*;
use super::name::Name;
use super::types::FieldType;

/// A table's id, assigned by the catalog. It is the 4-byte prefix of every stored key of the
/// table, so two tables never share a key; ids are never reused while data of the old table may
/// remain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TableId(pub u32);

/// One named, typed field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    name: Name,
    ty: FieldType,
}

impl Field {
    pub fn name(&self) -> &Name {
        &self.name
    }

    pub fn ty(&self) -> &FieldType {
        &self.ty
    }
}

/// One primary key field: which field, and whether it sorts descending.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyField {
    /// Index into [`TableSchema::fields`].
    pub field: usize,
    pub desc: bool,
}

/// Versions and TTL settings of a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableOptions {
    /// Versions kept per row, at least 1.
    pub max_versions: u32,
    /// Table TTL; None keeps rows until they are deleted.
    pub ttl_seconds: Option<u64>,
    /// Client versions must lie in `[now - offset, now + offset)`.
    pub max_version_offset_seconds: u64,
}

impl Default for TableOptions {
    fn default() -> TableOptions {
        TableOptions {
            max_versions: MAX_VERSIONS_DEFAULT,
            ttl_seconds: None,
            max_version_offset_seconds: MAX_VERSION_OFFSET_SECONDS_DEFAULT,
        }
    }
}

/// A validated table schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableSchema {
    id: TableId,
    name: Name,
    fields: Vec<Field>,
    primary_key: Vec<KeyField>,
    shard_key_len: usize,
    options: TableOptions,
    /// Indexes of the non-key fields, in field order (slot `i` of a row value is field
    /// `non_key[i]`); kept because every row encode and decode needs it.
    non_key: Vec<usize>,
    /// What each field is, by field index: kept so a row given by name needs one lookup per
    /// field.
    roles: Vec<FieldRole>,
}

/// The role of a field in the stored row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldRole {
    /// Primary key field at this position.
    Key(usize),
    /// Non-key field in this row value slot.
    Slot(usize),
}

impl TableSchema {
    /// The same table with id `id` and `options`, checked again. The schema type can only be
    /// built through its builder, so the parts go through it again; they were valid before and
    /// stay valid, and the options get the builder's range checks (112).
    pub fn rebuilt(&self, id: TableId, options: TableOptions) -> TableResult<TableSchema> {
        let mut builder = TableSchema::builder(id, self.name().as_str());
        for field in self.fields() {
            builder = builder.field(field.name().as_str(), field.ty().clone());
        }
        for key in self.primary_key() {
            builder = builder.primary_key_field(self.fields()[key.field].name().as_str(), key.desc);
        }
        let shard: Vec<&str> =
            (0..self.shard_key_len()).map(|p| self.key_field(p).name().as_str()).collect();
        builder.shard_key(&shard).options(options).build()
    }

    /// Starts a schema for table `name` with id `id`.
    pub fn builder(id: TableId, name: &str) -> TableSchemaBuilder {
        TableSchemaBuilder {
            id,
            name: name.to_owned(),
            fields: Vec::new(),
            primary_key: Vec::new(),
            shard_key: None,
            options: TableOptions::default(),
        }
    }

    pub fn id(&self) -> TableId {
        self.id
    }

    pub fn name(&self) -> &Name {
        &self.name
    }

    /// Fields in declaration order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The field called `name` and its index, if any.
    pub fn field(&self, name: &str) -> Option<(usize, &Field)> {
        self.fields.iter().enumerate().find(|(_, f)| f.name.as_str() == name)
    }

    /// The field called `name` and its role (one lookup for a row given by name).
    pub fn field_role(&self, name: &str) -> Option<(usize, FieldRole)> {
        let index = self.fields.iter().position(|f| f.name.as_str() == name)?;
        Some((index, self.roles[index]))
    }

    /// Primary key fields in key order.
    pub fn primary_key(&self) -> &[KeyField] {
        &self.primary_key
    }

    /// The field of primary key position `position`.
    pub fn key_field(&self, position: usize) -> &Field {
        &self.fields[self.primary_key[position].field]
    }

    /// Position of field `name` in the primary key, if it is a key field.
    pub fn key_position(&self, name: &str) -> Option<usize> {
        (0..self.primary_key.len()).find(|&p| self.key_field(p).name.as_str() == name)
    }

    /// Number of leading primary key fields that form the shard key.
    pub fn shard_key_len(&self) -> usize {
        self.shard_key_len
    }

    /// Indexes (into [`TableSchema::fields`]) of the fields that are not primary key fields, in
    /// field order. Position `i` of this list is slot `i` of a row value.
    pub fn non_key_fields(&self) -> &[usize] {
        &self.non_key
    }

    pub fn options(&self) -> &TableOptions {
        &self.options
    }
}

/// Collects a schema's parts as given and checks them all in [`TableSchemaBuilder::build`].
#[derive(Debug, Clone)]
pub struct TableSchemaBuilder {
    id: TableId,
    name: String,
    fields: Vec<(String, FieldType)>,
    primary_key: Vec<(String, bool)>,
    shard_key: Option<Vec<String>>,
    options: TableOptions,
}

impl TableSchemaBuilder {
    /// Adds a field after the ones already added.
    pub fn field(mut self, name: &str, ty: FieldType) -> Self {
        self.fields.push((name.to_owned(), ty));
        self
    }

    /// Appends one field to the primary key; `desc` makes it sort newest (largest) first.
    pub fn primary_key_field(mut self, name: &str, desc: bool) -> Self {
        self.primary_key.push((name.to_owned(), desc));
        self
    }

    /// Appends ascending fields to the primary key, in order.
    pub fn primary_key(mut self, names: &[&str]) -> Self {
        self.primary_key.extend(names.iter().map(|n| ((*n).to_owned(), false)));
        self
    }

    /// Sets the shard key; it must name a leading prefix of the primary key, in order. Without it,
    /// the shard key is the whole primary key.
    pub fn shard_key(mut self, names: &[&str]) -> Self {
        self.shard_key = Some(names.iter().map(|n| (*n).to_owned()).collect());
        self
    }

    pub fn max_versions(mut self, versions: u32) -> Self {
        self.options.max_versions = versions;
        self
    }

    pub fn ttl_seconds(mut self, seconds: u64) -> Self {
        self.options.ttl_seconds = Some(seconds);
        self
    }

    pub fn max_version_offset_seconds(mut self, seconds: u64) -> Self {
        self.options.max_version_offset_seconds = seconds;
        self
    }

    /// Sets every option at once (`ALTER TABLE` and the catalog rebuild a schema with it).
    pub fn options(mut self, options: TableOptions) -> Self {
        self.options = options;
        self
    }

    /// Checks every rule and returns the schema, or the first broken rule.
    pub fn build(self) -> TableResult<TableSchema> {
        let name = valid_name(&self.name, NameRole::Table, &self.name)?;
        let fields = self.fields(&name)?;
        let primary_key = primary_key(&name, &fields, &self.primary_key)?;
        let shard_key_len = shard_key_len(&name, &fields, &primary_key, self.shard_key)?;
        check_options(&name, &self.options)?;
        let options = self.options;
        let is_key = |i: &usize| primary_key.iter().any(|k| k.field == *i);
        let non_key: Vec<usize> = (0..fields.len()).filter(|i| !is_key(i)).collect();
        let roles = (0..fields.len())
            .map(|i| match primary_key.iter().position(|k| k.field == i) {
                Some(position) => FieldRole::Key(position),
                None => FieldRole::Slot(non_key.iter().position(|&f| f == i).unwrap_or_default()),
            })
            .collect();
        let (id, key) = (self.id, primary_key);
        Ok(TableSchema {
            id,
            name,
            fields,
            primary_key: key,
            shard_key_len,
            options,
            non_key,
            roles,
        })
    }

    fn fields(&self, table: &Name) -> TableResult<Vec<Field>> {
        if self.fields.len() > TABLE_FIELDS_MAX {
            // Checked first: the catalog stores the count as a u16, and the duplicate check
            // below is quadratic.
            return Err(TableError::TooManyFields { table: s(table), count: self.fields.len() });
        }
        let mut fields: Vec<Field> = Vec::with_capacity(self.fields.len());
        for (name, ty) in &self.fields {
            let name = valid_name(table.as_str(), NameRole::Field, name)?;
            if fields.iter().any(|f| f.name == name) {
                return Err(TableError::DuplicateField { table: s(table), field: s(&name) });
            }
            check_enum(table, &name, ty)?;
            fields.push(Field { name, ty: ty.clone() });
        }
        Ok(fields)
    }
}

fn s(name: &Name) -> String {
    name.as_str().to_owned()
}

fn valid_name(table: &str, role: NameRole, name: &str) -> TableResult<Name> {
    Name::new(name).map_err(|problem| TableError::InvalidName {
        table: table.to_owned(),
        role,
        name: name.to_owned(),
        problem,
    })
}

fn check_enum(table: &Name, field: &Name, ty: &FieldType) -> TableResult<()> {
    let FieldType::Enum(values) = ty else { return Ok(()) };
    let (table_s, field_s) = (s(table), s(field));
    if values.is_empty() {
        return Err(TableError::EnumEmpty { table: table_s, field: field_s });
    }
    if values.len() > ENUM_VALUES_MAX {
        let count = values.len();
        return Err(TableError::EnumTooManyValues { table: table_s, field: field_s, count });
    }
    let mut seen = std::collections::HashSet::with_capacity(values.len());
    for value in values {
        valid_name(&table_s, NameRole::EnumValue, value)?;
        if !seen.insert(value.as_str()) {
            let value = value.clone();
            return Err(TableError::EnumDuplicateValue { table: table_s, field: field_s, value });
        }
    }
    Ok(())
}

fn primary_key(
    table: &Name,
    fields: &[Field],
    spec: &[(String, bool)],
) -> TableResult<Vec<KeyField>> {
    if spec.is_empty() {
        return Err(TableError::PrimaryKeyEmpty { table: s(table) });
    }
    if spec.len() > PRIMARY_KEY_FIELDS_MAX {
        return Err(TableError::TooManyKeyFields { table: s(table), count: spec.len() });
    }
    let mut key: Vec<KeyField> = Vec::with_capacity(spec.len());
    for (name, desc) in spec {
        let field = key_field(table, fields, name)?;
        if key.iter().any(|k| k.field == field) {
            return Err(TableError::DuplicateKeyField { table: s(table), field: name.clone() });
        }
        key.push(KeyField { field, desc: *desc });
    }
    Ok(key)
}

/// Index of the key field called `name`: it must exist and may not be BOOLEAN.
fn key_field(table: &Name, fields: &[Field], name: &str) -> TableResult<usize> {
    let unknown = || TableError::UnknownField { table: s(table), field: name.to_owned() };
    let index = fields.iter().position(|f| f.name.as_str() == name).ok_or_else(unknown)?;
    if !fields[index].ty.can_be_key() {
        return Err(TableError::BooleanKeyField { table: s(table), field: name.to_owned() });
    }
    Ok(index)
}

fn shard_key_len(
    table: &Name,
    fields: &[Field],
    primary_key: &[KeyField],
    spec: Option<Vec<String>>,
) -> TableResult<usize> {
    let Some(names) = spec else { return Ok(primary_key.len()) };
    if names.is_empty() {
        return Err(TableError::ShardKeyEmpty { table: s(table) });
    }
    for (position, name) in names.iter().enumerate() {
        let expected = primary_key.get(position).map(|k| fields[k.field].name.as_str());
        if expected != Some(name.as_str()) {
            return Err(TableError::ShardKeyNotPrefix {
                table: s(table),
                field: name.clone(),
                position,
                expected: expected.unwrap_or("(none: the primary key is shorter)").to_owned(),
            });
        }
    }
    Ok(names.len())
}

fn check_options(table: &Name, options: &TableOptions) -> TableResult<()> {
    let max_versions = u64::from(options.max_versions);
    check_range(table, "max_versions", max_versions, 1, u64::from(MAX_VERSIONS_MAX))?;
    if let Some(ttl) = options.ttl_seconds {
        check_range(table, "ttl_seconds", ttl, 1, DURATION_SECONDS_MAX)?;
    }
    let offset = options.max_version_offset_seconds;
    check_range(table, "max_version_offset_seconds", offset, 1, DURATION_SECONDS_MAX)
}

fn check_range(
    table: &Name,
    option: &'static str,
    value: u64,
    min: u64,
    max: u64,
) -> TableResult<()> {
    if value < min || value > max {
        return Err(TableError::InvalidOption { table: s(table), option, value, min, max });
    }
    Ok(())
}
