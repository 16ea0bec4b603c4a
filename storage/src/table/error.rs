//! The table model's one error type: every way a schema, a key or a range can be bad input.
//!
//! Each variant has a stable numeric code ([`TableError::code`]) that clients and the protocol can
//! rely on, and a message that names the table and the field and, where a limit was crossed, the
//! limit. Codes are never reused or renumbered: a removed variant leaves a hole. Codes 1xx are
//! schema errors (found when a table is created), 2xx are errors in keys and values (found on every
//! request), 3xx are store-level settings. `docs/FORMAT.md` lists them all.

use super::limits::*;
use super::name::NameProblem;

pub type TableResult<T> = std::result::Result<T, TableError>;

/// What an invalid name was meant to name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRole {
    Table,
    Field,
    EnumValue,
}

impl std::fmt::Display for NameRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NameRole::Table => "table name",
            NameRole::Field => "field name",
            NameRole::EnumValue => "ENUM value",
        })
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    // Schema errors (1xx).
    #[error("table {table}: invalid {role} {name:?}: {problem}")]
    InvalidName { table: String, role: NameRole, name: String, problem: NameProblem },
    #[error("table {table}: field {field} is declared twice; field names must be unique")]
    DuplicateField { table: String, field: String },
    #[error("table {table}: ENUM field {field} has no values; it needs at least 1")]
    EnumEmpty { table: String, field: String },
    #[error("table {table}: ENUM field {field} lists value {value} twice")]
    EnumDuplicateValue { table: String, field: String, value: String },
    #[error(
        "table {table}: ENUM field {field} has {count} values; the limit is {ENUM_VALUES_MAX}"
    )]
    EnumTooManyValues { table: String, field: String, count: usize },
    #[error("table {table}: no primary key; it needs 1..={PRIMARY_KEY_FIELDS_MAX} fields")]
    PrimaryKeyEmpty { table: String },
    #[error(
        "table {table}: primary key has {count} fields; the limit is {PRIMARY_KEY_FIELDS_MAX}"
    )]
    TooManyKeyFields { table: String, count: usize },
    #[error("table {table}: key field {field} is BOOLEAN; key fields may not be BOOLEAN")]
    BooleanKeyField { table: String, field: String },
    #[error("table {table}: field {field} appears twice in the primary key")]
    DuplicateKeyField { table: String, field: String },
    #[error(
        "table {table}: shard key field {field} at position {position} is not primary key \
         field {expected}; the shard key must be a leading prefix of the primary key, in order"
    )]
    ShardKeyNotPrefix { table: String, field: String, position: usize, expected: String },
    #[error("table {table}: shard key has no fields; omit it to shard by the whole primary key")]
    ShardKeyEmpty { table: String },
    #[error("table {table}: option {option} is {value}; it must be {min}..={max}")]
    InvalidOption { table: String, option: &'static str, value: u64, min: u64, max: u64 },

    // Key and value errors (2xx).
    #[error("table {table} does not exist")]
    UnknownTable { table: String },
    #[error("table {table} has no field {field}")]
    UnknownField { table: String, field: String },
    #[error(
        "table {table}: primary key field {field} is missing; a full key needs every key field"
    )]
    MissingKeyField { table: String, field: String },
    #[error(
        "table {table}: partial key gives {field} without {missing}; a partial key must be a \
         leading prefix of the primary key"
    )]
    PartialKeyNotPrefix { table: String, field: String, missing: String },
    #[error("table {table}: field {field} is {expected}; got a {got} value")]
    TypeMismatch { table: String, field: String, expected: &'static str, got: &'static str },
    #[error(
        "table {table}: key field {field} value is {len} bytes; the limit is \
         {KEY_FIELD_BYTES_MAX} bytes"
    )]
    KeyFieldTooLarge { table: String, field: String, len: usize },
    #[error("table {table}: encoded key is {len} bytes; the limit is {KEY_BYTES_MAX} bytes")]
    KeyTooLarge { table: String, len: usize },
    #[error("table {table}: ENUM field {field} has no value {value:?}; it allows {allowed}")]
    EnumValueNotInList { table: String, field: String, value: String, allowed: String },
    #[error("table {table}: key field {field} is NaN; NaN has no place in key order")]
    NanInKey { table: String, field: String },
    #[error("table {table}: {given} key values given; the primary key has {fields} fields")]
    TooManyKeyValues { table: String, given: usize, fields: usize },
    #[error("table {table}: field {field} is not a primary key field")]
    NotAKeyField { table: String, field: String },
    #[error("table {table}: key field {field} is given twice")]
    DuplicateKeyValue { table: String, field: String },
    #[error(
        "table {table}: a range needs a key field after the partial key, but the partial key \
         already has all {fields} key fields"
    )]
    RangeAfterFullKey { table: String, fields: usize },
    #[error("table {table}: key belongs to table id {found}, not to this table (id {expected})")]
    KeyOfOtherTable { table: String, expected: u32, found: u32 },
    #[error("table {table}: stored key is corrupt at byte {offset}: {what}")]
    CorruptKey { table: String, offset: usize, what: &'static str },

    // Store-level settings (3xx).
    #[error("partition count {count} is out of range; it must be 1..={PARTITIONS_MAX}")]
    InvalidPartitionCount { count: u32 },
}

impl TableError {
    /// The error's stable numeric code.
    pub fn code(&self) -> u16 {
        match self {
            TableError::InvalidName { .. } => 101,
            TableError::DuplicateField { .. } => 102,
            TableError::EnumEmpty { .. } => 103,
            TableError::EnumDuplicateValue { .. } => 104,
            TableError::EnumTooManyValues { .. } => 105,
            TableError::PrimaryKeyEmpty { .. } => 106,
            TableError::TooManyKeyFields { .. } => 107,
            TableError::BooleanKeyField { .. } => 108,
            TableError::DuplicateKeyField { .. } => 109,
            TableError::ShardKeyNotPrefix { .. } => 110,
            TableError::ShardKeyEmpty { .. } => 111,
            TableError::InvalidOption { .. } => 112,
            TableError::UnknownTable { .. } => 201,
            TableError::UnknownField { .. } => 202,
            TableError::MissingKeyField { .. } => 203,
            TableError::PartialKeyNotPrefix { .. } => 204,
            TableError::TypeMismatch { .. } => 205,
            TableError::KeyFieldTooLarge { .. } => 206,
            TableError::KeyTooLarge { .. } => 207,
            TableError::EnumValueNotInList { .. } => 208,
            TableError::NanInKey { .. } => 209,
            TableError::TooManyKeyValues { .. } => 210,
            TableError::NotAKeyField { .. } => 211,
            TableError::DuplicateKeyValue { .. } => 212,
            TableError::RangeAfterFullKey { .. } => 213,
            TableError::KeyOfOtherTable { .. } => 214,
            TableError::CorruptKey { .. } => 215,
            TableError::InvalidPartitionCount { .. } => 301,
        }
    }
}

/// The allowed values of an ENUM, for an error message: all of them when few, else the first
/// eight and a count, so a 65,536-value ENUM does not make a 1 MB message.
pub(crate) fn describe_enum_values(values: &[String]) -> String {
    const SHOWN_MAX: usize = 8;
    let shown = values.iter().take(SHOWN_MAX).map(String::as_str).collect::<Vec<_>>().join(", ");
    if values.len() <= SHOWN_MAX {
        shown
    } else {
        format!("{shown}, ... ({} values)", values.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_table_field_and_limit() {
        let e = TableError::KeyFieldTooLarge { table: "t".into(), field: "f".into(), len: 2000 };
        let text = e.to_string();
        assert!(text.contains("table t") && text.contains("field f") && text.contains("1024"));
        let e = TableError::TooManyKeyFields { table: "t".into(), count: 9 };
        assert!(e.to_string().contains(" 8"));
    }

    /// Codes are part of the protocol: this list pins them, and no two variants share one.
    #[test]
    fn codes_are_stable_and_unique() {
        let (t, f) = (String::new, String::new);
        let all = [
            TableError::InvalidName {
                table: t(),
                role: NameRole::Field,
                name: f(),
                problem: NameProblem::Empty,
            },
            TableError::DuplicateField { table: t(), field: f() },
            TableError::EnumEmpty { table: t(), field: f() },
            TableError::EnumDuplicateValue { table: t(), field: f(), value: f() },
            TableError::EnumTooManyValues { table: t(), field: f(), count: 0 },
            TableError::PrimaryKeyEmpty { table: t() },
            TableError::TooManyKeyFields { table: t(), count: 0 },
            TableError::BooleanKeyField { table: t(), field: f() },
            TableError::DuplicateKeyField { table: t(), field: f() },
            TableError::ShardKeyNotPrefix { table: t(), field: f(), position: 0, expected: f() },
            TableError::ShardKeyEmpty { table: t() },
            TableError::InvalidOption { table: t(), option: "", value: 0, min: 0, max: 0 },
            TableError::UnknownTable { table: t() },
            TableError::UnknownField { table: t(), field: f() },
            TableError::MissingKeyField { table: t(), field: f() },
            TableError::PartialKeyNotPrefix { table: t(), field: f(), missing: f() },
            TableError::TypeMismatch { table: t(), field: f(), expected: "", got: "" },
            TableError::KeyFieldTooLarge { table: t(), field: f(), len: 0 },
            TableError::KeyTooLarge { table: t(), len: 0 },
            TableError::EnumValueNotInList { table: t(), field: f(), value: f(), allowed: f() },
            TableError::NanInKey { table: t(), field: f() },
            TableError::TooManyKeyValues { table: t(), given: 0, fields: 0 },
            TableError::NotAKeyField { table: t(), field: f() },
            TableError::DuplicateKeyValue { table: t(), field: f() },
            TableError::RangeAfterFullKey { table: t(), fields: 0 },
            TableError::KeyOfOtherTable { table: t(), expected: 0, found: 0 },
            TableError::CorruptKey { table: t(), offset: 0, what: "" },
            TableError::InvalidPartitionCount { count: 0 },
        ];
        let codes: Vec<u16> = all.iter().map(TableError::code).collect();
        let pinned = [
            101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 201, 202, 203, 204, 205,
            206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 301,
        ];
        assert_eq!(codes, pinned);
    }

    #[test]
    fn long_enum_lists_are_cut() {
        let values: Vec<String> = (0..20).map(|i| format!("v{i}")).collect();
        assert_eq!(describe_enum_values(&values[..2]), "v0, v1");
        assert!(describe_enum_values(&values).ends_with("... (20 values)"));
    }
}
