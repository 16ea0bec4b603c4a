//! A typed field value. Each variant carries its type, so the encoder can refuse a value of the
//! wrong type with a message that says what was expected and what was given.
//!
//! An ENUM value is its symbol (not its index): callers speak in symbols, and the schema turns a
//! symbol into the index that the key stores.

use super::types::FieldType;

/// One field value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Integer(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    String(String),
    Binary(Vec<u8>),
    Boolean(bool),
    Enum(String),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
}

/// A field value borrowed from a request or a stored row, or NULL (absent). The protocol
/// (`ringstore-net`) sends and receives values in this form, so a request's values reach the key
/// encoder, and a stored row's values reach the response, without being copied.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    Null,
    Integer(i32),
    Long(i64),
    Float(f32),
    Double(f64),
    String(&'a str),
    Binary(&'a [u8]),
    Boolean(bool),
    /// The symbol.
    Enum(&'a str),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
}

impl ValueRef<'_> {
    /// The owned value; None for NULL.
    pub fn to_value(&self) -> Option<Value> {
        Some(match *self {
            ValueRef::Null => return None,
            ValueRef::Integer(x) => Value::Integer(x),
            ValueRef::Long(x) => Value::Long(x),
            ValueRef::Float(x) => Value::Float(x),
            ValueRef::Double(x) => Value::Double(x),
            ValueRef::String(s) => Value::String(s.to_owned()),
            ValueRef::Binary(b) => Value::Binary(b.to_vec()),
            ValueRef::Boolean(b) => Value::Boolean(b),
            ValueRef::Enum(s) => Value::Enum(s.to_owned()),
            ValueRef::Timestamp(x) => Value::Timestamp(x),
        })
    }

    /// The DDL name of the value's type (`NULL` for an absent value).
    pub fn type_name(&self) -> &'static str {
        match self {
            ValueRef::Null => "NULL",
            ValueRef::Integer(_) => "INTEGER",
            ValueRef::Long(_) => "LONG",
            ValueRef::Float(_) => "FLOAT",
            ValueRef::Double(_) => "DOUBLE",
            ValueRef::String(_) => "STRING",
            ValueRef::Binary(_) => "BINARY",
            ValueRef::Boolean(_) => "BOOLEAN",
            ValueRef::Enum(_) => "ENUM",
            ValueRef::Timestamp(_) => "TIMESTAMP",
        }
    }
}

impl<'a> From<&'a Value> for ValueRef<'a> {
    fn from(v: &'a Value) -> ValueRef<'a> {
        match v {
            Value::Integer(x) => ValueRef::Integer(*x),
            Value::Long(x) => ValueRef::Long(*x),
            Value::Float(x) => ValueRef::Float(*x),
            Value::Double(x) => ValueRef::Double(*x),
            Value::String(s) => ValueRef::String(s),
            Value::Binary(b) => ValueRef::Binary(b),
            Value::Boolean(b) => ValueRef::Boolean(*b),
            Value::Enum(s) => ValueRef::Enum(s),
            Value::Timestamp(x) => ValueRef::Timestamp(*x),
        }
    }
}

impl Value {
    /// The DDL name of the value's type, for example `STRING`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Integer(_) => "INTEGER",
            Value::Long(_) => "LONG",
            Value::Float(_) => "FLOAT",
            Value::Double(_) => "DOUBLE",
            Value::String(_) => "STRING",
            Value::Binary(_) => "BINARY",
            Value::Boolean(_) => "BOOLEAN",
            Value::Enum(_) => "ENUM",
            Value::Timestamp(_) => "TIMESTAMP",
        }
    }

    /// Whether the value may be stored in a field of type `ty` (for ENUM: whether it is an ENUM
    /// value at all; membership in the list is checked where the table name is known).
    pub fn matches(&self, ty: &FieldType) -> bool {
        self.type_name() == ty.name()
    }
}

impl From<i32> for Value {
    fn from(v: i32) -> Value {
        Value::Integer(v)
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Value {
        Value::Long(v)
    }
}

impl From<f32> for Value {
    fn from(v: f32) -> Value {
        Value::Float(v)
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Value {
        Value::Double(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Value {
        Value::String(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Value {
        Value::String(v)
    }
}

impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Value {
        Value::Binary(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Value {
        Value::Boolean(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_match_field_types() {
        let pairs = [
            (Value::Integer(1), FieldType::Integer),
            (Value::Long(1), FieldType::Long),
            (Value::Float(1.0), FieldType::Float),
            (Value::Double(1.0), FieldType::Double),
            (Value::from("x"), FieldType::String),
            (Value::Binary(vec![1]), FieldType::Binary),
            (Value::Boolean(true), FieldType::Boolean),
            (Value::Enum("a".into()), FieldType::Enum(vec!["a".into()])),
            (Value::Timestamp(1), FieldType::Timestamp),
        ];
        for (value, ty) in &pairs {
            assert_eq!(value.type_name(), ty.name());
            assert!(value.matches(ty));
        }
        assert!(!Value::Integer(1).matches(&FieldType::Long));
        assert!(!Value::Long(1).matches(&FieldType::Timestamp));
    }
}
