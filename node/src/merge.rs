//! Merging the shards' pages of a cross-shard read into one page in key order: a bounded scan's
//! rows (`merged_scan.rs`) and an index query's entries (`index_query.rs`). Apart from both so
//! that neither needs the other, nor what the other needs.

/// Items in scan order, and the key the next page starts after (None: the scan is done).
#[derive(Debug, PartialEq)]
pub(crate) struct Merged<T> {
    pub(crate) rows: Vec<T>,
    pub(crate) next: Option<Vec<u8>>,
}

/// Merges the shards' pages (each its items in scan order and its resume key) into scan order
/// by `key`, and keeps the items every shard has answered for: up to the first key (in scan
/// order) at which a shard's page was cut, and at most `limit`. Keys are unique across shards.
/// Index queries merge their entries this way too (`index_query.rs`).
pub(crate) fn merge_by<T>(
    parts: Vec<(Vec<T>, Option<Vec<u8>>)>,
    key: fn(&T) -> &[u8],
    reverse: bool,
    limit: usize,
) -> Merged<T> {
    let before = |a: &[u8], b: &[u8]| if reverse { a > b } else { a < b };
    let cut = parts
        .iter()
        .filter_map(|(_, resume)| resume.as_deref())
        .reduce(|a, b| if before(b, a) { b } else { a })
        .map(<[u8]>::to_vec);
    let mut rows: Vec<T> = parts
        .into_iter()
        .flat_map(|(rows, _)| rows)
        .filter(|r| cut.as_deref().is_none_or(|c| !before(c, key(r))))
        .collect();
    rows.sort_unstable_by(|a, b| if reverse { key(b).cmp(key(a)) } else { key(a).cmp(key(b)) });
    if rows.len() > limit {
        rows.truncate(limit);
        let next = rows.last().map(|r| key(r).to_vec());
        return Merged { rows, next };
    }
    Merged { rows, next: cut }
}
