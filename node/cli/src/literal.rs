//! Literals as written in a statement, and their typing by the field they are given for.
//!
//! The parser does not know the table's schema, so it keeps each value as written
//! ([`Literal`]); once the client has the schema, [`to_value`] turns a literal into the storage
//! [`Value`] of the field's type, or says why it can not:
//!
//! | field type | accepted literals |
//! |---|---|
//! | INTEGER, LONG | whole numbers (`-12`, `+7`), range-checked |
//! | FLOAT, DOUBLE | any number (`3.5`, `.5`, `1e3`, `-12`), refused if it overflows to infinity |
//! | STRING | `'text'` |
//! | BINARY | `x'0aff'`, or `'text'` as its UTF-8 bytes |
//! | BOOLEAN | `TRUE`, `FALSE` |
//! | ENUM | `'symbol'` or a bare `symbol`, checked against the field's values |
//! | TIMESTAMP | a whole number of ms since the epoch, or `'YYYY-MM-DD HH:MM:SS[.fff]'` (UTC) |
//!
//! `NULL` is refused by [`to_value`]; where the caller allows it (a non-key field of an UPSERT),
//! [`to_optional_value`] turns it into `None`.

use std::fmt;

use ringstore_model::table::{FieldType, Value};

use super::timestamp::parse_utc_ms;

/// A value as written in a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Literal {
    /// A number as written: `-12`, `3.5`, `.5`, `1e3`, `+7`.
    Number(String),
    /// `'single quoted'`, with `''` already turned into one quote.
    String(String),
    Boolean(bool),
    Null,
    /// `x'0aff'`.
    Binary(Vec<u8>),
    /// A bare word that is not a keyword: an ENUM symbol.
    Symbol(String),
}

impl Literal {
    /// What kind of literal this is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Literal::Number(_) => "the number",
            Literal::String(_) => "the string",
            Literal::Boolean(_) => "the boolean",
            Literal::Null => "NULL",
            Literal::Binary(_) => "the binary",
            Literal::Symbol(_) => "the bare word",
        }
    }
}

/// The literal as it would be written in a statement.
impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::Number(text) | Literal::Symbol(text) => f.write_str(text),
            Literal::String(text) => write!(f, "'{}'", text.replace('\'', "''")),
            Literal::Boolean(true) => f.write_str("TRUE"),
            Literal::Boolean(false) => f.write_str("FALSE"),
            Literal::Null => f.write_str("NULL"),
            Literal::Binary(bytes) => write!(f, "x'{}'", super::output::hex(bytes)),
        }
    }
}

/// Code of every [`LiteralError`], for `ERROR <code>: ...` lines.
pub const CODE_LITERAL: u16 = 804;

/// Longest literal text quoted in a message, in characters.
const SHOWN_CHARS_MAX: usize = 60;

/// ENUM values listed in a message, at most.
const SHOWN_ENUM_VALUES_MAX: usize = 16;

/// Why a literal is no value of its field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LiteralError {
    #[error("field {field} ({ty}) can not be NULL here")]
    Null { field: String, ty: &'static str },
    #[error("field {field} is {ty}: expected {expected}, found {found}")]
    Mismatch { field: String, ty: &'static str, expected: &'static str, found: String },
    #[error("field {field} is {ty}: {value} is out of range {min}..={max}")]
    OutOfRange { field: String, ty: &'static str, value: String, min: String, max: String },
    #[error("field {field} is ENUM: {symbol} is not one of its values {values}")]
    NotInEnum { field: String, symbol: String, values: String },
    #[error(
        "field {field} is TIMESTAMP: {value}: {reason}; expected ms since the epoch \
         or 'YYYY-MM-DD HH:MM:SS[.fff]' (UTC)"
    )]
    BadTimestamp { field: String, value: String, reason: &'static str },
}

impl LiteralError {
    /// A stable numeric code, [`CODE_LITERAL`].
    pub fn code(&self) -> u16 {
        CODE_LITERAL
    }
}

/// The value of `literal` for field `field` of type `ty`; NULL is an error.
pub fn to_value(literal: &Literal, ty: &FieldType, field: &str) -> Result<Value, LiteralError> {
    let typing = Typing { literal, ty, field };
    match ty {
        FieldType::Integer => {
            typing.integer(i32::MIN.into(), i32::MAX.into()).map(|v| Value::Integer(v as i32))
        }
        FieldType::Long => typing.integer(i64::MIN, i64::MAX).map(Value::Long),
        FieldType::Float => typing.float().map(Value::Float),
        FieldType::Double => typing.double().map(Value::Double),
        FieldType::String => typing.string().map(|s| Value::String(s.to_owned())),
        FieldType::Binary => typing.binary().map(Value::Binary),
        FieldType::Boolean => typing.boolean().map(Value::Boolean),
        FieldType::Enum(values) => typing.symbol(values).map(|s| Value::Enum(s.to_owned())),
        FieldType::Timestamp => typing.timestamp().map(Value::Timestamp),
    }
}

/// Like [`to_value`], but NULL is allowed and gives `None`.
pub fn to_optional_value(
    literal: &Literal,
    ty: &FieldType,
    field: &str,
) -> Result<Option<Value>, LiteralError> {
    match literal {
        Literal::Null => Ok(None),
        other => to_value(other, ty, field).map(Some),
    }
}

/// One literal being typed for one field.
struct Typing<'a> {
    literal: &'a Literal,
    ty: &'a FieldType,
    field: &'a str,
}

impl Typing<'_> {
    /// A whole number in `min..=max`.
    fn integer(&self, min: i64, max: i64) -> Result<i64, LiteralError> {
        let Literal::Number(text) = self.literal else {
            return Err(self.mismatch("a whole number"));
        };
        if !is_integer_syntax(text) {
            return Err(self.mismatch("a whole number"));
        }
        match text.parse::<i64>() {
            Ok(v) if (min..=max).contains(&v) => Ok(v),
            _ => Err(self.out_of_range(text, min.to_string(), max.to_string())),
        }
    }

    fn float(&self) -> Result<f32, LiteralError> {
        let text = self.number_text()?;
        match text.parse::<f32>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.out_of_range(text, format!("{:?}", f32::MIN), format!("{:?}", f32::MAX))),
        }
    }

    fn double(&self) -> Result<f64, LiteralError> {
        let text = self.number_text()?;
        match text.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok(v),
            _ => Err(self.out_of_range(text, format!("{:?}", f64::MIN), format!("{:?}", f64::MAX))),
        }
    }

    /// The text of a number literal in the lexer's number syntax. Rust's float parser also
    /// takes `inf` and `NaN`, which are no numbers here.
    fn number_text(&self) -> Result<&str, LiteralError> {
        match self.literal {
            Literal::Number(text) if is_number_syntax(text) => Ok(text),
            _ => Err(self.mismatch("a number")),
        }
    }

    fn string(&self) -> Result<&str, LiteralError> {
        match self.literal {
            Literal::String(text) => Ok(text),
            _ => Err(self.mismatch("a quoted string such as 'text'")),
        }
    }

    fn binary(&self) -> Result<Vec<u8>, LiteralError> {
        match self.literal {
            Literal::Binary(bytes) => Ok(bytes.clone()),
            Literal::String(text) => Ok(text.as_bytes().to_vec()),
            _ => Err(self.mismatch("x'hex digits' or a quoted string")),
        }
    }

    fn boolean(&self) -> Result<bool, LiteralError> {
        match self.literal {
            Literal::Boolean(b) => Ok(*b),
            _ => Err(self.mismatch("TRUE or FALSE")),
        }
    }

    /// An ENUM symbol; checked against `values` unless the caller gave none.
    fn symbol(&self, values: &[String]) -> Result<&str, LiteralError> {
        let symbol = match self.literal {
            Literal::String(s) | Literal::Symbol(s) => s.as_str(),
            _ => return Err(self.mismatch("an ENUM symbol, bare or quoted")),
        };
        if values.is_empty() || values.iter().any(|v| v == symbol) {
            return Ok(symbol);
        }
        Err(LiteralError::NotInEnum {
            field: self.field.to_owned(),
            symbol: shown(symbol),
            values: shown_values(values),
        })
    }

    fn timestamp(&self) -> Result<i64, LiteralError> {
        let reason = match self.literal {
            Literal::Number(text) if is_integer_syntax(text) => {
                return text.parse::<i64>().map_err(|_| {
                    self.out_of_range(text, i64::MIN.to_string(), i64::MAX.to_string())
                })
            }
            Literal::String(text) => match parse_utc_ms(text) {
                Ok(ms) => return Ok(ms),
                Err(reason) => reason,
            },
            _ => return Err(self.mismatch("a whole number of ms or a quoted date-time")),
        };
        Err(LiteralError::BadTimestamp {
            field: self.field.to_owned(),
            value: shown(&self.literal.to_string()),
            reason,
        })
    }

    fn mismatch(&self, expected: &'static str) -> LiteralError {
        if matches!(self.literal, Literal::Null) {
            return LiteralError::Null { field: self.field.to_owned(), ty: self.ty.name() };
        }
        let found = format!("{} {}", self.literal.kind(), shown(&self.literal.to_string()));
        LiteralError::Mismatch { field: self.field.to_owned(), ty: self.ty.name(), expected, found }
    }

    fn out_of_range(&self, text: &str, min: String, max: String) -> LiteralError {
        let (field, ty, value) = (self.field.to_owned(), self.ty.name(), shown(text));
        LiteralError::OutOfRange { field, ty, value, min, max }
    }
}

/// `[+-]digits`.
fn is_integer_syntax(text: &str) -> bool {
    let digits = text.strip_prefix(['+', '-']).unwrap_or(text);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Only the characters of the lexer's number syntax, with at least one digit; the float parser
/// checks the order.
fn is_number_syntax(text: &str) -> bool {
    text.bytes().any(|b| b.is_ascii_digit())
        && text.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b))
}

/// `text` cut to [`SHOWN_CHARS_MAX`] characters for a message.
fn shown(text: &str) -> String {
    match text.char_indices().nth(SHOWN_CHARS_MAX) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_owned(),
    }
}

/// An ENUM's values for a message, at most [`SHOWN_ENUM_VALUES_MAX`] of them.
fn shown_values(values: &[String]) -> String {
    let listed: Vec<&str> = values.iter().take(SHOWN_ENUM_VALUES_MAX).map(String::as_str).collect();
    let more = values.len().saturating_sub(SHOWN_ENUM_VALUES_MAX);
    match more {
        0 => format!("({})", listed.join(", ")),
        n => format!("({}, and {n} more)", listed.join(", ")),
    }
}

/// Literal builders shared by the CLI's unit tests (`statement.rs`, `run.rs` and this file's).
#[cfg(test)]
pub(crate) mod test_literals {
    use super::Literal;

    pub fn num(text: &str) -> Literal {
        Literal::Number(text.to_owned())
    }

    pub fn string(text: &str) -> Literal {
        Literal::String(text.to_owned())
    }

    pub fn key(pairs: &[(&str, Literal)]) -> Vec<(String, Literal)> {
        pairs.iter().map(|(f, l)| ((*f).to_owned(), l.clone())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::test_literals::{num, string};
    use super::*;

    fn value(literal: &Literal, ty: &FieldType) -> Result<Value, String> {
        to_value(literal, ty, "f").map_err(|e| e.to_string())
    }

    #[test]
    fn integers_and_longs_are_range_checked() {
        assert_eq!(value(&num("-12"), &FieldType::Integer), Ok(Value::Integer(-12)));
        assert_eq!(value(&num("+7"), &FieldType::Integer), Ok(Value::Integer(7)));
        assert_eq!(value(&num("2147483647"), &FieldType::Integer), Ok(Value::Integer(i32::MAX)));
        assert_eq!(
            value(&num("2147483648"), &FieldType::Integer),
            Err("field f is INTEGER: 2147483648 is out of range -2147483648..=2147483647".into())
        );
        assert_eq!(
            value(&num("-9223372036854775808"), &FieldType::Long),
            Ok(Value::Long(i64::MIN))
        );
        assert_eq!(
            value(&num("9223372036854775808"), &FieldType::Long),
            Err("field f is LONG: 9223372036854775808 is out of range \
                 -9223372036854775808..=9223372036854775807"
                .into())
        );
        assert_eq!(
            value(&num("3.5"), &FieldType::Long),
            Err("field f is LONG: expected a whole number, found the number 3.5".into())
        );
        assert_eq!(
            value(&string("3"), &FieldType::Integer),
            Err("field f is INTEGER: expected a whole number, found the string '3'".into())
        );
    }

    #[test]
    fn floats_and_doubles_take_any_number() {
        assert_eq!(value(&num("3.5"), &FieldType::Double), Ok(Value::Double(3.5)));
        assert_eq!(value(&num("1e3"), &FieldType::Double), Ok(Value::Double(1000.0)));
        assert_eq!(value(&num("-12"), &FieldType::Float), Ok(Value::Float(-12.0)));
        assert_eq!(value(&num(".5"), &FieldType::Float), Ok(Value::Float(0.5)));
        let err = value(&num("1e39"), &FieldType::Float).expect_err("overflows f32");
        assert_eq!(err, "field f is FLOAT: 1e39 is out of range -3.4028235e38..=3.4028235e38");
        assert!(value(&num("1e309"), &FieldType::Double).is_err());
        assert!(value(&num("inf"), &FieldType::Double).is_err());
        assert!(value(&num("NaN"), &FieldType::Float).is_err());
    }

    #[test]
    fn strings_binaries_and_booleans() {
        assert_eq!(value(&string("it's"), &FieldType::String), Ok(Value::String("it's".into())));
        assert_eq!(
            value(&Literal::Symbol("abc".into()), &FieldType::String),
            Err("field f is STRING: expected a quoted string such as 'text', found the bare word abc"
                .into())
        );
        let bytes = Literal::Binary(vec![0x0a, 0xff]);
        assert_eq!(value(&bytes, &FieldType::Binary), Ok(Value::Binary(vec![0x0a, 0xff])));
        assert_eq!(value(&string("hé"), &FieldType::Binary), Ok(Value::Binary("hé".into())));
        assert_eq!(value(&Literal::Boolean(true), &FieldType::Boolean), Ok(Value::Boolean(true)));
        assert_eq!(
            value(&num("1"), &FieldType::Boolean),
            Err("field f is BOOLEAN: expected TRUE or FALSE, found the number 1".into())
        );
    }

    #[test]
    fn enums_take_quoted_or_bare_symbols_of_the_list() {
        let ty = FieldType::Enum(vec!["blue".into(), "green".into()]);
        assert_eq!(value(&string("blue"), &ty), Ok(Value::Enum("blue".into())));
        assert_eq!(value(&Literal::Symbol("green".into()), &ty), Ok(Value::Enum("green".into())));
        assert_eq!(
            value(&Literal::Symbol("red".into()), &ty),
            Err("field f is ENUM: red is not one of its values (blue, green)".into())
        );
        let many = FieldType::Enum((0..20).map(|i| format!("v{i}")).collect());
        let err = value(&string("x"), &many).expect_err("not listed");
        assert!(err.ends_with("v15, and 4 more)"), "{err}");
    }

    #[test]
    fn timestamps_from_numbers_or_utc_text() {
        let ty = FieldType::Timestamp;
        assert_eq!(value(&num("1709210096789"), &ty), Ok(Value::Timestamp(1_709_210_096_789)));
        assert_eq!(
            value(&string("2024-02-29 12:34:56.789"), &ty),
            Ok(Value::Timestamp(1_709_210_096_789))
        );
        assert_eq!(value(&num("-1"), &ty), Ok(Value::Timestamp(-1)));
        assert_eq!(
            value(&string("2023-02-29 00:00:00"), &ty),
            Err(
                "field f is TIMESTAMP: '2023-02-29 00:00:00': the day is not a day of that month; \
                 expected ms since the epoch or 'YYYY-MM-DD HH:MM:SS[.fff]' (UTC)"
                    .into()
            )
        );
        assert!(value(&num("1.5"), &ty).is_err());
        assert!(value(&num("99999999999999999999"), &ty)
            .expect_err("overflow")
            .contains("out of range"));
    }

    #[test]
    fn null_only_where_allowed() {
        assert_eq!(
            value(&Literal::Null, &FieldType::Long),
            Err("field f (LONG) can not be NULL here".into())
        );
        assert_eq!(to_optional_value(&Literal::Null, &FieldType::Long, "f"), Ok(None));
        assert_eq!(to_optional_value(&num("5"), &FieldType::Long, "f"), Ok(Some(Value::Long(5))));
        assert_eq!(LiteralError::Null { field: "f".into(), ty: "LONG" }.code(), 804);
    }

    #[test]
    fn literals_display_as_written() {
        let shown: Vec<String> = [
            num("-1e3"),
            string("it's"),
            Literal::Boolean(false),
            Literal::Null,
            Literal::Binary(vec![0, 0xab]),
            Literal::Symbol("red".into()),
        ]
        .iter()
        .map(Literal::to_string)
        .collect();
        assert_eq!(shown, ["-1e3", "'it''s'", "FALSE", "NULL", "x'00ab'", "red"]);
    }
}
