//! The field types of a table: what a field may hold, and which types may be key fields.
//!
//! The set is the one of the seed documents (Oracle NoSQL and Tablestore): INTEGER (i32), LONG (i64),
//! FLOAT (f32), DOUBLE (f64), STRING (UTF-8), BINARY, BOOLEAN, ENUM and TIMESTAMP (ms since the epoch,
//! i64). Each has an upper-case name used in DDL, error messages and docs.

use std::fmt;

/// The type of one field.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FieldType {
    Integer,
    Long,
    Float,
    Double,
    String,
    Binary,
    Boolean,
    /// The allowed values, in declaration order. That order is the key order of the field, so it
    /// is fixed at table creation. The schema builder checks the values.
    Enum(Vec<String>),
    Timestamp,
}

impl FieldType {
    /// Every type, ENUM with no values (callers that name types fill those in).
    pub const ALL: [FieldType; 9] = [
        FieldType::Integer,
        FieldType::Long,
        FieldType::Float,
        FieldType::Double,
        FieldType::String,
        FieldType::Binary,
        FieldType::Boolean,
        FieldType::Timestamp,
        FieldType::Enum(Vec::new()),
    ];

    /// The type's DDL name, for example `INTEGER` or `ENUM`.
    pub fn name(&self) -> &'static str {
        match self {
            FieldType::Integer => "INTEGER",
            FieldType::Long => "LONG",
            FieldType::Float => "FLOAT",
            FieldType::Double => "DOUBLE",
            FieldType::String => "STRING",
            FieldType::Binary => "BINARY",
            FieldType::Boolean => "BOOLEAN",
            FieldType::Enum(_) => "ENUM",
            FieldType::Timestamp => "TIMESTAMP",
        }
    }

    /// Whether a primary key may contain a field of this type. BOOLEAN may not: a key field with
    /// two values splits a table into two hot partitions at best, and neither seed allows it.
    pub fn can_be_key(&self) -> bool {
        !matches!(self, FieldType::Boolean)
    }

    /// Position of `value` in an ENUM's declaration order, or None (also for other types).
    pub fn enum_index(&self, value: &str) -> Option<usize> {
        match self {
            FieldType::Enum(values) => values.iter().position(|v| v == value),
            _ => None,
        }
    }
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldType::Enum(values) => write!(f, "ENUM({})", values.join(", ")),
            other => f.write_str(other.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_boolean_is_not_a_key_type() {
        for t in FieldType::ALL {
            assert_eq!(t.can_be_key(), t != FieldType::Boolean, "{t}");
        }
    }

    #[test]
    fn enum_index_is_declaration_order() {
        let t = FieldType::Enum(vec!["small".into(), "medium".into(), "large".into()]);
        assert_eq!(t.enum_index("medium"), Some(1));
        assert_eq!(t.enum_index("huge"), None);
        assert_eq!(FieldType::String.enum_index("small"), None);
        assert_eq!(t.to_string(), "ENUM(small, medium, large)");
    }
}
