//! Printing results, as an aligned ASCII table (`--format table`) or as JSON (`--format json`).
//!
//! Every function returns whole lines, each ending in `\n`, for the caller to print as they are.
//! Values are shown the same way in both formats where JSON allows:
//!
//! | type | table | JSON |
//! |---|---|---|
//! | absent field | `NULL` | `null` (every object has every column) |
//! | INTEGER, LONG, TIMESTAMP | the number (TIMESTAMP in ms since the epoch) | a number |
//! | FLOAT, DOUBLE | shortest text that reads back the same (`3.5`, `1.0`, `1e20`) | a number; NaN and infinities as the strings `"NaN"`, `"Infinity"`, `"-Infinity"` |
//! | STRING, ENUM | as is; control characters escaped (`\n`) so rows stay one line | a string |
//! | BINARY | `x'0aff'` | the hex string `"0aff"` |
//! | BOOLEAN | `true`, `false` | `true`, `false` |
//!
//! In a table, a column whose values are all numbers is right-aligned; widths count display
//! columns, so CJK text lines up too. The `tabled` crate lays tables out (not `comfy-table`, whose
//! u16 widths cut a cell over 65,535 columns into several lines; see docs/CLI.md).

use std::fmt::Write as _;
use std::str::FromStr;

use ringstore_model::table::Value;
use serde_json::{json, Map, Number, Value as Json};
use tabled::builder::Builder;
use tabled::settings::object::{Columns, Rows};
use tabled::settings::style::HorizontalLine;
use tabled::settings::{Alignment, Style};
use unicode_width::UnicodeWidthStr;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Table,
    Json,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(text: &str) -> Result<Format, String> {
        match text {
            "table" => Ok(Format::Table),
            "json" => Ok(Format::Json),
            other => Err(format!("unknown format {other:?}; expected table or json")),
        }
    }
}

impl Format {
    /// Rows of a result; see [`rows_table`] and [`rows_json`].
    pub fn rows(self, columns: &[String], rows: &[Vec<Option<Value>>]) -> String {
        match self {
            Format::Table => rows_table(columns, rows),
            Format::Json => rows_json(columns, rows),
        }
    }

    /// A simple outcome, such as `1 row written`.
    pub fn message(self, text: &str) -> String {
        match self {
            Format::Table => message_table(text),
            Format::Json => message_json(text),
        }
    }

    /// An error with its code.
    pub fn error(self, code: u16, message: &str) -> String {
        match self {
            Format::Table => error_line(code, message),
            Format::Json => error_json(code, message),
        }
    }

    /// Key/value sections, as STATS and TOPOLOGY print them.
    pub fn pairs(self, sections: &[(String, Vec<(String, String)>)]) -> String {
        match self {
            Format::Table => pairs_table(sections),
            Format::Json => pairs_json(sections),
        }
    }
}

/// An aligned table with a header and a `(N rows)` footer, laid out by `tabled`: MySQL's frame
/// (`+---+` lines above and below the header and below the rows, none between rows). Cell `i` of
/// a row is column `i`; a row shorter than the header shows `NULL` for the rest. Headers are
/// left-aligned, numeric columns' values right-aligned.
pub fn rows_table(columns: &[String], rows: &[Vec<Option<Value>>]) -> String {
    grid(columns, rows) + &count_footer(rows.len())
}

/// [`rows_table`] without its footer: the framed grid, ending in `\n`.
pub fn grid(columns: &[String], rows: &[Vec<Option<Value>>]) -> String {
    let mut builder = Builder::with_capacity(rows.len() + 1, columns.len());
    builder.push_record(columns.iter().map(|c| escaped(c)));
    for row in rows {
        builder.push_record(
            (0..columns.len()).map(|i| cell_text(row.get(i).and_then(Option::as_ref))),
        );
    }
    let mut table = builder.build();
    let frame = HorizontalLine::full('-', '+', '+', '+');
    table.with(Style::ascii().remove_horizontal().horizontals([(1, frame)]));
    table.with(Alignment::left());
    for i in (0..columns.len()).filter(|&i| numeric_column(rows, i)) {
        table.modify(Columns::one(i), Alignment::right());
    }
    table.modify(Rows::first(), Alignment::left());
    let mut out = table.to_string();
    out.push('\n');
    out
}

/// One JSON array of objects, one per row, with every column as a key (absent values are
/// `null`), on one line.
pub fn rows_json(columns: &[String], rows: &[Vec<Option<Value>>]) -> String {
    let objects: Vec<Json> = rows
        .iter()
        .map(|row| {
            let cell =
                |i: usize| row.get(i).and_then(Option::as_ref).map_or(Json::Null, value_json);
            Json::Object(columns.iter().enumerate().map(|(i, c)| (c.clone(), cell(i))).collect())
        })
        .collect();
    json_line(&Json::Array(objects))
}

pub fn message_table(text: &str) -> String {
    format!("{text}\n")
}

/// `{"message":"..."}`.
pub fn message_json(text: &str) -> String {
    json_line(&json!({ "message": text }))
}

/// `ERROR 224: message`.
pub fn error_line(code: u16, message: &str) -> String {
    format!("ERROR {code}: {message}\n")
}

/// `{"error":{"code":224,"message":"..."}}`.
pub fn error_json(code: u16, message: &str) -> String {
    json_line(&json!({ "error": { "code": code, "message": message } }))
}

/// Each section's title followed by its pairs, indented, keys padded to the widest key of all
/// sections so the values line up.
pub fn pairs_table(sections: &[(String, Vec<(String, String)>)]) -> String {
    let key_width = sections
        .iter()
        .flat_map(|(_, pairs)| pairs.iter().map(|(k, _)| k.width()))
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for (title, pairs) in sections {
        out.push_str(&escaped(title));
        out.push_str(":\n");
        for (key, value) in pairs {
            let line = format!("  {}  {}", pad(&escaped(key), key_width, false), escaped(value));
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

/// One JSON object of objects: `{"title":{"key":value,...},...}` in the given order. A value
/// that is a JSON number written the way JSON writes it (`12`, `-3`, `0.5`) becomes a number,
/// anything else a string. A repeated title adds its pairs to the first one's object.
pub fn pairs_json(sections: &[(String, Vec<(String, String)>)]) -> String {
    let mut out = Map::new();
    for (title, pairs) in sections {
        let entry = out.entry(title.clone()).or_insert_with(|| Json::Object(Map::new()));
        if let Json::Object(object) = entry {
            for (key, value) in pairs {
                object.insert(key.clone(), number_or_string(value));
            }
        }
    }
    json_line(&Json::Object(out))
}

/// A value as a table shows it (before control characters are escaped).
pub fn value_text(value: &Value) -> String {
    match value {
        Value::Integer(v) => v.to_string(),
        Value::Long(v) | Value::Timestamp(v) => v.to_string(),
        Value::Float(v) => format!("{v:?}"),
        Value::Double(v) => format!("{v:?}"),
        Value::String(s) | Value::Enum(s) => s.clone(),
        Value::Binary(bytes) => format!("x'{}'", hex(bytes)),
        Value::Boolean(b) => b.to_string(),
    }
}

/// A value as JSON shows it.
pub fn value_json(value: &Value) -> Json {
    match value {
        Value::Integer(v) => Json::from(*v),
        Value::Long(v) | Value::Timestamp(v) => Json::from(*v),
        // Through the f32's own shortest text, so 0.1f32 prints as 0.1 and not 0.10000000149.
        Value::Float(v) => float_json(v.to_string().parse().unwrap_or(f64::NAN)),
        Value::Double(v) => float_json(*v),
        Value::String(s) | Value::Enum(s) => Json::from(s.as_str()),
        Value::Binary(bytes) => Json::from(hex(bytes)),
        Value::Boolean(b) => Json::from(*b),
    }
}

/// Lower-case hex digits of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String can not fail.
        let _ = write!(out, "{b:02x}");
    }
    out
}

fn float_json(v: f64) -> Json {
    match Number::from_f64(v) {
        Some(n) => Json::Number(n),
        None if v.is_nan() => Json::from("NaN"),
        None if v > 0.0 => Json::from("Infinity"),
        None => Json::from("-Infinity"),
    }
}

fn number_or_string(text: &str) -> Json {
    match serde_json::from_str::<Json>(text) {
        Ok(Json::Number(n)) if n.to_string() == text => Json::Number(n),
        _ => Json::from(text),
    }
}

/// `value` on one line, with its newline.
pub fn json_line(value: &Json) -> String {
    format!("{value}\n")
}

fn cell_text(value: Option<&Value>) -> String {
    value.map_or_else(|| "NULL".to_owned(), |v| escaped(&value_text(v)))
}

/// `text` with control characters escaped, so a cell or a pair stays on its line.
fn escaped(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() })
        .collect()
}

/// Whether every present value of column `i` is a number (and one is present).
fn numeric_column(rows: &[Vec<Option<Value>>], i: usize) -> bool {
    let mut present = rows.iter().filter_map(|r| r.get(i).and_then(Option::as_ref)).peekable();
    present.peek().is_some()
        && present.all(|v| {
            matches!(
                v,
                Value::Integer(_)
                    | Value::Long(_)
                    | Value::Float(_)
                    | Value::Double(_)
                    | Value::Timestamp(_)
            )
        })
}

/// `text` padded with spaces to `width` display columns, on the left if `right`.
fn pad(text: &str, width: usize, right: bool) -> String {
    let fill = " ".repeat(width.saturating_sub(text.width()));
    if right {
        format!("{fill}{text}")
    } else {
        format!("{text}{fill}")
    }
}

fn count_footer(rows: usize) -> String {
    match rows {
        1 => "(1 row)\n".to_owned(),
        n => format!("({n} rows)\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn columns(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    fn sample() -> (Vec<String>, Vec<Vec<Option<Value>>>) {
        let rows = vec![
            vec![
                Some(Value::from("hat")),
                Some(Value::Integer(3)),
                Some(Value::Binary(vec![0x0a, 0xff])),
                Some(Value::Double(0.5)),
            ],
            vec![Some(Value::from("scarf")), None, None, Some(Value::Double(12.0))],
        ];
        (columns(&["productName", "count", "tag", "price"]), rows)
    }

    #[test]
    fn a_small_table() {
        let (columns, rows) = sample();
        assert_eq!(
            rows_table(&columns, &rows),
            "\
+-------------+-------+---------+-------+
| productName | count | tag     | price |
+-------------+-------+---------+-------+
| hat         |     3 | x'0aff' |   0.5 |
| scarf       |  NULL | NULL    |  12.0 |
+-------------+-------+---------+-------+
(2 rows)
"
        );
    }

    #[test]
    fn empty_and_single_row_tables() {
        assert_eq!(rows_table(&columns(&["a"]), &[]), "+---+\n| a |\n+---+\n(0 rows)\n");
        let one = vec![vec![Some(Value::from("line\nbreak")), Some(Value::from("日本"))]];
        assert_eq!(
            rows_table(&columns(&["s", "j"]), &one),
            "\
+-------------+------+
| s           | j    |
+-------------+------+
| line\\nbreak | 日本 |
+-------------+------+
(1 row)
"
        );
    }

    #[test]
    fn cells_wider_than_u16_stay_whole_and_aligned() {
        // A STRING of up to a row's 1 MiB is one cell: a table library that counts widths in u16
        // (comfy-table) cuts it into several lines. It must stay whole, its column as wide.
        let wide = "w".repeat(70_000);
        let rows = vec![vec![Some(Value::from(wide.as_str()))], vec![Some(Value::from("x"))]];
        let text = rows_table(&columns(&["s"]), &rows);
        let lines: Vec<&str> = text.lines().collect();
        let lengths: Vec<usize> = lines.iter().map(|l| l.len()).collect();
        assert_eq!(lengths, [70_004, 70_004, 70_004, 70_004, 70_004, 70_004, 8]);
        assert!(lines[3] == format!("| {wide} |"), "the wide cell is whole");
        assert!(lines[4] == format!("| x{} |", " ".repeat(69_999)), "the narrow one padded");
    }

    #[test]
    fn rows_as_json() {
        let (columns, rows) = sample();
        assert_eq!(
            rows_json(&columns, &rows),
            "[{\"productName\":\"hat\",\"count\":3,\"tag\":\"0aff\",\"price\":0.5},\
             {\"productName\":\"scarf\",\"count\":null,\"tag\":null,\"price\":12.0}]\n"
        );
        assert_eq!(rows_json(&columns, &[]), "[]\n");
    }

    #[test]
    fn values_in_json() {
        assert_eq!(value_json(&Value::Long(i64::MAX)).to_string(), "9223372036854775807");
        assert_eq!(value_json(&Value::Float(0.1)).to_string(), "0.1");
        assert_eq!(value_json(&Value::Double(f64::NAN)), Json::from("NaN"));
        assert_eq!(value_json(&Value::Float(f32::NEG_INFINITY)), Json::from("-Infinity"));
        assert_eq!(value_json(&Value::Timestamp(-1)).to_string(), "-1");
        assert_eq!(value_json(&Value::Enum("red".into())), Json::from("red"));
        assert_eq!(value_json(&Value::Boolean(true)), Json::from(true));
        assert_eq!(value_text(&Value::Double(1e20)), "1e20");
        assert_eq!(value_text(&Value::Timestamp(1_709_210_096_789)), "1709210096789");
    }

    #[test]
    fn messages_and_errors() {
        assert_eq!(message_table("1 row written"), "1 row written\n");
        assert_eq!(message_json("created table t"), "{\"message\":\"created table t\"}\n");
        assert_eq!(error_line(224, "write contention"), "ERROR 224: write contention\n");
        assert_eq!(
            error_json(224, "say \"hi\""),
            "{\"error\":{\"code\":224,\"message\":\"say \\\"hi\\\"\"}}\n"
        );
        assert_eq!(Format::Json.error(1, "x"), error_json(1, "x"));
        assert_eq!("json".parse::<Format>(), Ok(Format::Json));
        assert!("yaml".parse::<Format>().is_err());
    }

    #[test]
    fn pairs() {
        let sections = vec![
            ("node".to_owned(), vec![("version".to_owned(), "0.1.0".to_owned())]),
            (
                "shard 0".to_owned(),
                vec![
                    ("keys".to_owned(), "1234".to_owned()),
                    ("ratio".to_owned(), "0.5".to_owned()),
                    ("zip".to_owned(), "007".to_owned()),
                ],
            ),
        ];
        assert_eq!(
            pairs_table(&sections),
            "node:\n  version  0.1.0\nshard 0:\n  keys     1234\n  ratio    0.5\n  zip      007\n"
        );
        assert_eq!(
            pairs_json(&sections),
            "{\"node\":{\"version\":\"0.1.0\"},\
             \"shard 0\":{\"keys\":1234,\"ratio\":0.5,\"zip\":\"007\"}}\n"
        );
    }
}
