//! `SELECT ... VERSIONS ...`: Tablestore's reads of several versions of a row. The clause becomes
//! the protocol's [`VersionSelect`], and every version read prints on its own line (a table row,
//! a JSON object) with its version (ms since the epoch, the client's `USING VERSION` or the
//! shard's clock at the write), that version as a UTC timestamp, and when it expires.

use std::time::{Duration, UNIX_EPOCH};

use ringstore_model::table::{TableRow, Value, VersionSelect};
use serde_json::{json, Map, Value as Json};

use super::ast::Versions;
use super::output::{grid, json_line, value_json};
use super::Format;

/// The columns a versioned result puts before the row's fields.
pub const VERSION_COLUMNS: [&str; 3] = ["version", "timestamp", "expires"];

/// The protocol's selection for a `VERSIONS` clause (None: the newest version).
pub fn select(versions: Option<Versions>) -> VersionSelect {
    match versions {
        None => VersionSelect::Newest,
        Some(Versions::Latest(n)) => VersionSelect::Latest(n),
        Some(Versions::Range { from, to, max }) => VersionSelect::Range { from, to, max },
    }
}

/// `2025-11-25T04:00:00.000Z`: ms since the epoch as a UTC timestamp (RFC 3339, by humantime).
pub fn timestamp_text(ms: u64) -> String {
    UNIX_EPOCH
        .checked_add(Duration::from_millis(ms))
        .map_or_else(|| ms.to_string(), |t| humantime::format_rfc3339_millis(t).to_string())
}

/// Every version of every row, newest first within a row: in the table format the columns
/// [`VERSION_COLUMNS`] then `names`; in JSON one array of
/// `{"version":V,"timestamp":"...","expires":null,"row":{...}}` objects (the row's fields in
/// their own object, so a field named `version` clashes with nothing).
pub fn rows_text(format: Format, names: &[String], rows: &[TableRow], indexes: &[usize]) -> String {
    let versions = rows.iter().flat_map(|row| &row.versions);
    let cells = |fields: &[Option<Value>]| -> Vec<Option<Value>> {
        indexes.iter().map(|&i| fields.get(i).cloned().flatten()).collect()
    };
    let expires = |ms: u64| (ms != 0).then(|| timestamp_text(ms));
    match format {
        Format::Table => {
            let mut columns: Vec<String> = VERSION_COLUMNS.map(String::from).to_vec();
            columns.extend_from_slice(names);
            let table: Vec<Vec<Option<Value>>> = versions
                .map(|v| {
                    let mut line = vec![
                        Some(Value::Long(v.version as i64)),
                        Some(Value::String(timestamp_text(v.version))),
                        expires(v.expiry_ms).map(Value::String),
                    ];
                    line.extend(cells(&v.fields));
                    line
                })
                .collect();
            let s = if table.len() == 1 { "" } else { "s" };
            grid(&columns, &table) + &format!("({} version{s})\n", table.len())
        }
        Format::Json => {
            let objects: Vec<Json> = versions
                .map(|v| {
                    let values = cells(&v.fields);
                    let row: Map<String, Json> = names
                        .iter()
                        .zip(&values)
                        .map(|(n, c)| (n.clone(), c.as_ref().map_or(Json::Null, value_json)))
                        .collect();
                    json!({
                        "version": v.version, "timestamp": timestamp_text(v.version),
                        "expires": expires(v.expiry_ms), "row": row,
                    })
                })
                .collect();
            json_line(&Json::Array(objects))
        }
    }
}

#[cfg(test)]
mod tests {
    use ringstore_model::table::{RowToken, RowVersion};

    use super::*;

    fn row() -> TableRow {
        let version = |version: u64, expiry_ms: u64, price: i64| RowVersion {
            version,
            expiry_ms,
            fields: vec![Some(Value::from("a")), Some(Value::Long(price))],
        };
        let versions = vec![
            version(1_764_043_260_000, 0, 12),
            version(1_764_043_200_000, 1_764_129_600_000, 10),
        ];
        TableRow { token: RowToken(1), versions, key: Vec::new() }
    }

    #[test]
    fn every_version_is_a_line_with_its_timestamp() {
        let names = ["sku".to_owned(), "price".to_owned()];
        let text = rows_text(Format::Table, &names, &[row()], &[0, 1]);
        assert_eq!(
            text,
            "+---------------+--------------------------+--------------------------+-----+-------+\n\
             | version       | timestamp                | expires                  | sku | price |\n\
             +---------------+--------------------------+--------------------------+-----+-------+\n\
             | 1764043260000 | 2025-11-25T04:01:00.000Z | NULL                     | a   |    12 |\n\
             | 1764043200000 | 2025-11-25T04:00:00.000Z | 2025-11-26T04:00:00.000Z | a   |    10 |\n\
             +---------------+--------------------------+--------------------------+-----+-------+\n\
             (2 versions)\n"
        );
        let json = rows_text(Format::Json, &names[1..], &[row()], &[1]);
        assert_eq!(
            json,
            "[{\"version\":1764043260000,\"timestamp\":\"2025-11-25T04:01:00.000Z\",\"expires\":null,\
             \"row\":{\"price\":12}},{\"version\":1764043200000,\"timestamp\":\
             \"2025-11-25T04:00:00.000Z\",\"expires\":\"2025-11-26T04:00:00.000Z\",\"row\":{\"price\":10}}]\n"
        );
        assert!(rows_text(Format::Table, &names, &[], &[0, 1]).ends_with("(0 versions)\n"));
    }

    #[test]
    fn clauses_map_to_the_protocol() {
        assert_eq!(select(None), VersionSelect::Newest);
        assert_eq!(select(Some(Versions::Latest(3))), VersionSelect::Latest(3));
        let range = Versions::Range { from: 1, to: 9, max: 2 };
        assert_eq!(select(Some(range)), VersionSelect::Range { from: 1, to: 9, max: 2 });
        assert_eq!(timestamp_text(0), "1970-01-01T00:00:00.000Z");
    }
}
