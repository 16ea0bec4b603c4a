//! The table model's one error type: every way a schema, a key or a range can be bad input.
//!
//! Each variant has a stable numeric code ([`TableError::code`]) that clients and the protocol can
//! rely on, and a message that names the table and the field and, where a limit was crossed, the
//! limit. Codes are never reused or renumbered: a removed variant leaves a hole. Codes 1xx are
//! schema errors (found when a table is created), 2xx are errors in keys, values and requests (found
//! on every request), 3xx are store-level settings. `docs/ERRORS.md` lists them all.

use super::limits::*;
use super::name::NameProblem;

pub type TableResult<T> = std::result::Result<T, TableError>;

/// What an invalid name was meant to name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRole {
    Table,
    Field,
    EnumValue,
    Index,
}

impl std::fmt::Display for NameRole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NameRole::Table => "table name",
            NameRole::Field => "field name",
            NameRole::EnumValue => "ENUM value",
            NameRole::Index => "index name",
        })
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TableError {
    // Schema errors (1xx).
    /// The message names the bad name once: a bad table name is not repeated as the table, and
    /// a name over the length limit is shown by its first [`SHOWN_NAME_CHARS`] characters.
    #[error("{}", invalid_name_message(table, *role, name, problem))]
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
    #[error("table {table}: {count} fields; the limit is {TABLE_FIELDS_MAX}")]
    TooManyFields { table: String, count: usize },

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
        "table {table}: key field {field} value is {len} bytes (its own bytes: UTF-8 for a \
         STRING, before escaping); the limit is {KEY_FIELD_BYTES_MAX} bytes per key value"
    )]
    KeyFieldTooLarge { table: String, field: String, len: usize },
    #[error(
        "table {table}: encoded key is {len} bytes (key values escaped, with end marks); the \
         limit is {ENCODED_KEY_BYTES_MAX} bytes"
    )]
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

    /// `hint` is [`WHOLE_KEY_SHARD_HINT`] when the shard key is the whole primary key, else empty.
    #[error(
        "table {table}: the key gives {given} of the {needed} shard key fields ({shard_key}); \
         multiGet and multiDelete need the whole shard key (a shorter key is a scan){hint}"
    )]
    ShardKeyNotCovered {
        table: String,
        given: usize,
        needed: usize,
        shard_key: String,
        hint: &'static str,
    },
    /// A scan that bounds no key field: no value and no range for the first key field `first`.
    #[error(
        "table {table}: the scan gives no value or range for the first key field {first}, so it \
         reads the whole table; bound {first} or set allow_full_scan to run it"
    )]
    FullScanNotAllowed { table: String, first: String },
    #[error(
        "table {table}: execute operation {index} has another shard key than operation 0; \
         every operation of an execute must share one shard key"
    )]
    ExecuteMixedShardKeys { table: String, index: usize },
    #[error(
        "table {table}: execute operations {first} and {index} address the same row; each row may \
         appear once"
    )]
    ExecuteDuplicateKey { table: String, first: usize, index: usize },
    #[error(
        "table {table}: execute has {ops} operations; it needs 1..={} operations \
         (EXECUTE_OPS_MAX)",
        crate::constants::EXECUTE_OPS_MAX
    )]
    ExecuteSize { table: String, ops: usize },
    #[error(
        "table {table}: version {version} is outside the window [now - {offset_seconds} s, now + \
         {offset_seconds} s) around now = {now_ms} ms (max_version_offset)"
    )]
    VersionOutOfWindow { table: String, version: u64, now_ms: u64, offset_seconds: u64 },
    #[error(
        "table {table}: the write of version {version} would expire at {expiry_ms} ms, which is \
         not after now = {now_ms} ms; already-expired data is not written"
    )]
    ExpiredWrite { table: String, version: u64, expiry_ms: u64, now_ms: u64 },
    #[error("table {table}: resume token is not valid for this request: {what}")]
    BadResumeToken { table: String, what: &'static str },
    #[error(
        "table {table}: the row changed under the write {attempts} times in a row; retry later"
    )]
    WriteContention { table: String, attempts: usize },
    #[error("table {table}: invalid version selection: {what}")]
    InvalidVersionSelect { table: String, what: &'static str },
    #[error(
        "table {table}: stored row would be {bytes} bytes; the limit is {ROW_BYTES_MAX} bytes"
    )]
    RowTooLarge { table: String, bytes: usize },
    #[error("table {table}: limit {limit} is out of range; it must be 1..={max}")]
    InvalidLimit { table: String, limit: usize, max: usize },
    #[error("table {table}: stored row is corrupt at byte {offset}: {what}")]
    CorruptRow { table: String, offset: usize, what: &'static str },
    #[error(
        "table {table}: update sets key field {field}; key fields name the row and cannot be set \
         (delete it and put the new row)"
    )]
    KeyFieldInUpdate { table: String, field: String },
    #[error(
        "table {table}: version {version} is older than all {kept} kept versions (oldest kept: \
         {oldest}, max_versions {kept}); it would never be read"
    )]
    VersionTooOld { table: String, version: u64, kept: usize, oldest: u64 },
    #[error("table {table}: field {field} is given twice in one row")]
    FieldGivenTwice { table: String, field: String },
    #[error(
        "table {table}: the range is on field {field}, but a range must be on the key field \
         after the partial key, which is {expected}"
    )]
    RangeNotOnNextKeyField { table: String, field: String, expected: String },
    #[error(
        "table {table}: this write, with the entries of the table's {indexes} indexes, needs at \
         least {ops} store operations in one atomic batch; the limit is {max} (BATCH_OPS_MAX): \
         write or delete fewer rows at once"
    )]
    IndexedWriteTooLarge { table: String, indexes: usize, ops: usize, max: usize },
    #[error(
        "table {table}, index {index}: the index entry's key is {len} bytes (index id, indexed \
         values, primary key); the store's limit is {max} bytes (KEY_BYTES_MAX)"
    )]
    IndexKeyTooLarge { table: String, index: String, len: usize, max: usize },
    #[error(
        "table {table}, index {index}: indexed field {field} holds {len} bytes; an indexed \
         STRING or BINARY value may have at most {INDEX_VALUE_BYTES_MAX} bytes \
         (INDEX_VALUE_BYTES_MAX)"
    )]
    IndexValueTooLarge { table: String, index: String, field: String, len: usize },
    #[error(
        "table {table}: index {index} is {state}; an index is read only when it is READY{hint}"
    )]
    IndexNotReady { table: String, index: String, state: &'static str, hint: &'static str },
    #[error(
        "table {table}, index {index} ({fields} fields): a query gives equal values for a \
         leading prefix of the index fields and at most a range on the next one; {what}"
    )]
    BadIndexQuery { table: String, index: String, fields: usize, what: &'static str },

    // Store-level settings (3xx).
    #[error("partition count {count} is out of range; it must be 1..={MAP_PARTITIONS_MAX}")]
    InvalidPartitionCount { count: u32 },
    #[error(
        "the data directory's partition map has {stored_partitions} partitions on \
         {stored_shards} shards, but {partitions} partitions on {shards} shards were asked for; \
         the partition count is fixed at creation and a shard count change needs a rebalance"
    )]
    PartitionMapMismatch {
        stored_partitions: u32,
        stored_shards: u32,
        partitions: u32,
        shards: u32,
    },
    #[error("shard count {shards} is out of range; it must be 1..={SHARDS_MAX}")]
    InvalidShardCount { shards: u32 },
}

/// Characters of a too-long name that an error message shows.
pub const SHOWN_NAME_CHARS: usize = 32;

fn invalid_name_message(table: &str, role: NameRole, name: &str, problem: &NameProblem) -> String {
    let shown = match name.char_indices().nth(SHOWN_NAME_CHARS) {
        Some((cut, _)) if matches!(problem, NameProblem::TooLong { .. }) => {
            format!("{:?}...", &name[..cut])
        }
        _ => format!("{name:?}"),
    };
    match role {
        NameRole::Table => format!("invalid {role} {shown}: {problem}"),
        _ => format!("table {table}: invalid {role} {shown}: {problem}"),
    }
}

/// The fix that 216 names when a table's shard key is its whole primary key: then every
/// partial key spans partitions, and only a shorter shard key makes a key prefix one partition's.
pub const WHOLE_KEY_SHARD_HINT: &str = ". The shard key of this table is its whole primary key, \
    so any partial key spans every partition: to read or delete by a key prefix, create the table \
    with a shorter shard key (PRIMARY KEY (SHARD(a), b) in SQL, shard-key -field a in the admin \
    CLI)";

impl TableError {
    /// The error's stable numeric code.
    /// The name a schema error is about (a field, or the bad name itself), if it is about one:
    /// where the DDL parser points a schema error. None for errors about the whole table.
    pub fn subject(&self) -> Option<&str> {
        match self {
            TableError::InvalidName { name, .. } => Some(name),
            TableError::DuplicateField { field, .. }
            | TableError::EnumEmpty { field, .. }
            | TableError::EnumDuplicateValue { field, .. }
            | TableError::EnumTooManyValues { field, .. }
            | TableError::BooleanKeyField { field, .. }
            | TableError::DuplicateKeyField { field, .. }
            | TableError::ShardKeyNotPrefix { field, .. }
            | TableError::UnknownField { field, .. } => Some(field),
            _ => None,
        }
    }

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
            TableError::TooManyFields { .. } => 113,
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
            TableError::ShardKeyNotCovered { .. } => 216,
            TableError::FullScanNotAllowed { .. } => 217,
            TableError::ExecuteMixedShardKeys { .. } => 218,
            TableError::ExecuteDuplicateKey { .. } => 219,
            TableError::ExecuteSize { .. } => 220,
            TableError::VersionOutOfWindow { .. } => 221,
            TableError::ExpiredWrite { .. } => 222,
            TableError::BadResumeToken { .. } => 223,
            TableError::WriteContention { .. } => 224,
            TableError::InvalidVersionSelect { .. } => 225,
            TableError::RowTooLarge { .. } => 226,
            TableError::InvalidLimit { .. } => 227,
            TableError::CorruptRow { .. } => 228,
            TableError::KeyFieldInUpdate { .. } => 229,
            TableError::VersionTooOld { .. } => 230,
            TableError::FieldGivenTwice { .. } => 231,
            TableError::RangeNotOnNextKeyField { .. } => 232,
            TableError::IndexedWriteTooLarge { .. } => 233,
            TableError::IndexKeyTooLarge { .. } => 234,
            TableError::IndexValueTooLarge { .. } => 235,
            TableError::IndexNotReady { .. } => 236,
            TableError::BadIndexQuery { .. } => 237,
            TableError::InvalidPartitionCount { .. } => 301,
            TableError::PartitionMapMismatch { .. } => 302,
            TableError::InvalidShardCount { .. } => 303,
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
    #[allow(clippy::too_many_lines, reason = "one entry per variant, in code order")]
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
            TableError::TooManyFields { table: t(), count: 0 },
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
            TableError::ShardKeyNotCovered {
                table: t(),
                given: 0,
                needed: 0,
                shard_key: f(),
                hint: "",
            },
            TableError::FullScanNotAllowed { table: t(), first: f() },
            TableError::ExecuteMixedShardKeys { table: t(), index: 0 },
            TableError::ExecuteDuplicateKey { table: t(), first: 0, index: 0 },
            TableError::ExecuteSize { table: t(), ops: 0 },
            TableError::VersionOutOfWindow { table: t(), version: 0, now_ms: 0, offset_seconds: 0 },
            TableError::ExpiredWrite { table: t(), version: 0, expiry_ms: 0, now_ms: 0 },
            TableError::BadResumeToken { table: t(), what: "" },
            TableError::WriteContention { table: t(), attempts: 0 },
            TableError::InvalidVersionSelect { table: t(), what: "" },
            TableError::RowTooLarge { table: t(), bytes: 0 },
            TableError::InvalidLimit { table: t(), limit: 0, max: 0 },
            TableError::CorruptRow { table: t(), offset: 0, what: "" },
            TableError::KeyFieldInUpdate { table: t(), field: f() },
            TableError::VersionTooOld { table: t(), version: 0, kept: 0, oldest: 0 },
            TableError::FieldGivenTwice { table: t(), field: f() },
            TableError::RangeNotOnNextKeyField { table: t(), field: f(), expected: f() },
            TableError::IndexedWriteTooLarge { table: t(), indexes: 0, ops: 0, max: 0 },
            TableError::IndexKeyTooLarge { table: t(), index: f(), len: 0, max: 0 },
            TableError::IndexValueTooLarge { table: t(), index: f(), field: f(), len: 0 },
            TableError::IndexNotReady { table: t(), index: f(), state: "", hint: "" },
            TableError::BadIndexQuery { table: t(), index: f(), fields: 0, what: "" },
            TableError::InvalidPartitionCount { count: 0 },
            TableError::PartitionMapMismatch {
                stored_partitions: 0,
                stored_shards: 0,
                partitions: 0,
                shards: 0,
            },
            TableError::InvalidShardCount { shards: 0 },
        ];
        let codes: Vec<u16> = all.iter().map(TableError::code).collect();
        let pinned = [
            101, 102, 103, 104, 105, 106, 107, 108, 109, 110, 111, 112, 113, 201, 202, 203, 204,
            205, 206, 207, 208, 209, 210, 211, 212, 213, 214, 215, 216, 217, 218, 219, 220, 221,
            222, 223, 224, 225, 226, 227, 228, 229, 230, 231, 232, 233, 234, 235, 236, 237, 301,
            302, 303,
        ];
        assert_eq!(codes, pinned);
        crate::error_codes::assert_documented(&codes);
    }

    #[test]
    fn long_enum_lists_are_cut() {
        let values: Vec<String> = (0..20).map(|i| format!("v{i}")).collect();
        assert_eq!(describe_enum_values(&values[..2]), "v0, v1");
        assert!(describe_enum_values(&values).ends_with("... (20 values)"));
    }
}
