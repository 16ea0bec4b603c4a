//! How many rows a page response may carry: the frame limit less the response's columns and
//! overhead, so no response is larger than a frame the node would accept. Scans, merged scans
//! and index queries trim their pages with it.

use ringstore_net::response;
use ringstore_storage::table::{CatalogTable, TableRow};

use crate::shard::Shard;

/// Room for resume tokens and counts in a page response besides its columns and rows.
pub const PAGE_OVERHEAD_BYTES: usize = 8 * 1024;

/// Bytes of rows a page response may carry: the frame limit less the columns and overhead, so
/// no response is larger than a frame the node would accept.
pub fn page_budget(shard: &Shard, t: &CatalogTable) -> usize {
    let columns: usize = t.schema().fields().iter().map(|f| 1 + f.name().as_str().len()).sum();
    (shard.limits.frame_body_bytes as usize).saturating_sub(2 + columns + PAGE_OVERHEAD_BYTES)
}

/// Keeps the leading rows that fit in `budget` (at least one unless `may_empty`) and takes their
/// bytes off it; true if rows were dropped (the page then ends at the last row kept).
pub fn trim_to_budget(rows: &mut Vec<TableRow>, budget: &mut usize, may_empty: bool) -> bool {
    trim_items_to_budget(rows, budget, may_empty, response::row_wire_bytes)
}

/// [`trim_to_budget`] for any response item whose encoded size `wire_bytes` gives (rows, index
/// entries).
pub fn trim_items_to_budget<T>(
    rows: &mut Vec<T>,
    budget: &mut usize,
    may_empty: bool,
    wire_bytes: impl Fn(&T) -> usize,
) -> bool {
    let mut used = 0;
    let mut keep = 0;
    for row in rows.iter() {
        let bytes = wire_bytes(row);
        if used + bytes > *budget && (keep > 0 || may_empty) {
            break;
        }
        used += bytes;
        keep += 1;
    }
    let trimmed = keep < rows.len();
    rows.truncate(keep);
    *budget = budget.saturating_sub(used);
    trimmed
}

#[cfg(test)]
mod tests {
    use ringstore_storage::table::{RowToken, RowVersion, Value};

    use super::*;

    fn row(key: &str, value_bytes: usize) -> TableRow {
        let version = RowVersion {
            version: 1,
            expiry_ms: 0,
            fields: vec![Some(Value::Binary(vec![0; value_bytes]))],
        };
        TableRow { token: RowToken(1), versions: vec![version], key: key.as_bytes().to_vec() }
    }

    #[test]
    fn a_page_keeps_the_leading_rows_that_fit_and_at_least_one() {
        let rows: Vec<TableRow> = (0..5).map(|i| row(&format!("k{i}"), 100)).collect();
        let each = response::row_wire_bytes(&rows[0]);
        let mut page = rows.clone();
        let mut budget = 3 * each + 10;
        assert!(trim_to_budget(&mut page, &mut budget, false), "two rows did not fit");
        assert_eq!((page.len(), budget), (3, 10));
        let mut page = rows.clone();
        let mut budget = each - 1;
        assert!(trim_to_budget(&mut page, &mut budget, false));
        assert_eq!((page.len(), budget), (1, 0), "the first row goes even over the budget");
        let mut page = rows.clone();
        let mut budget = each - 1;
        assert!(trim_to_budget(&mut page, &mut budget, true));
        assert!(page.is_empty(), "a later shard's part may add nothing");
        let mut page = rows;
        let mut budget = usize::MAX;
        assert!(!trim_to_budget(&mut page, &mut budget, false));
        assert_eq!(page.len(), 5);
    }
}
