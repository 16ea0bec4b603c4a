//! `SELECT ... FROM t WHERE f1 = ... [AND f2 > ...] USING INDEX idx` (issue 15): the WHERE
//! clause is on the fields of secondary index `idx`, equalities on a leading prefix of them and
//! a range on the next (`f = NULL` asks for the rows without a value), and the node's index
//! query (`Client::index_query`, merged over every shard) gives the rows in index order, reverse
//! index order with `ORDER BY <the next index field> DESC`, page by page up to the LIMIT.
//!
//! Without `USING INDEX`, a WHERE clause that the primary key does not answer and that matches
//! exactly one index runs the same way through that index (`index_pick.rs` has the rule); its
//! messages then say the index was picked.

use std::ops::Bound;

use ringstore_model::table::{CatalogTable, IndexDef, RangeBound, TableRow, TableSchema, Value};
use ringstore_net::IndexLookup;

use super::index_pick::{index_fields, pick_index, Pick};
use super::{
    cells, check_columns, field_names, projection, range_bound, too_many_rows, CliError, Result,
    Session, CODE_CONNECTION, CODE_LOCAL_MIN, RESULT_ROWS_MAX,
};
use crate::{to_optional_value, Literal, Select};

/// The node's code for an index the table does not have (docs/ERRORS.md), which the CLI gives
/// too when the table's description lists no such index.
const CODE_UNKNOWN_INDEX: u16 = 505;

/// How the index of a query was chosen, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chosen {
    /// `USING INDEX idx`, written.
    Written,
    /// Picked because the WHERE clause matches it and no other index (`index_pick.rs`).
    Picked,
}

/// The WHERE clause as an index query: the equal values in index order and the range.
#[derive(Debug, PartialEq)]
struct IndexPlan {
    equal: Vec<Option<Value>>,
    range: Option<(Option<RangeBound>, Option<RangeBound>)>,
}

impl Session {
    /// Runs a SELECT with `USING INDEX index`.
    pub(super) fn index_select(&mut self, s: &Select, index: &str) -> Result<String> {
        self.read_through(s, index, Chosen::Written)
    }

    /// Runs a SELECT without `USING INDEX` through the index its WHERE clause matches, if it
    /// matches exactly one (`index_pick.rs`); None if the primary key is to answer it, as it
    /// answers a WHERE clause that fits it and refuses one that fits no index. Before it says
    /// "no index matches" on a cached schema it asks the node again, in case another client
    /// has made an index since.
    pub(super) fn picked_index_select(&mut self, s: &Select) -> Result<Option<String>> {
        let cached = self.schemas.contains_key(&s.table);
        let mut pick = pick_index(&*self.schema(&s.table)?, s)?;
        if pick == Pick::NoMatch && cached {
            self.schemas.remove(&s.table);
            pick = pick_index(&*self.schema(&s.table)?, s)?;
        }
        match pick {
            Pick::Index(index) => Ok(Some(self.read_through(s, &index, Chosen::Picked)?)),
            Pick::PrimaryKey | Pick::NoMatch => Ok(None),
        }
    }

    /// Runs a SELECT through `index`, written or picked.
    fn read_through(&mut self, s: &Select, index: &str, chosen: Chosen) -> Result<String> {
        let mut described = self.schema(&s.table)?;
        if described.index(index).is_none() {
            // Another client may have made the index since the schema was cached.
            self.schemas.remove(&s.table);
            described = self.schema(&s.table)?;
        }
        let schema = described.schema();
        check_columns(schema, s.columns.as_deref())?;
        let def = described.index(index).ok_or_else(|| unknown_index(&described, index))?;
        let plan = index_plan(schema, def, s, chosen)?;
        let reverse = s.descending;
        let (columns, rows) = if s.limit == Some(0) {
            (field_names(schema), Vec::new())
        } else {
            let mut lookup = IndexLookup::new(&plan.equal, self.page_rows);
            lookup.range = plan.range.clone();
            lookup.reverse = reverse;
            let pages = self.index_pages(&s.table, index, lookup, s.limit);
            pages.map_err(|e| match chosen {
                Chosen::Picked if e.code < CODE_LOCAL_MIN => picked_note(e, index),
                _ => e,
            })?
        };
        let (names, indexes) = projection(&columns, s.columns.as_deref())?;
        Ok(self.format.rows(&names, &cells(&rows, &indexes)))
    }

    /// Index query pages until `limit` rows or the end.
    fn index_pages(
        &mut self,
        table: &str,
        index: &str,
        mut lookup: IndexLookup<'_>,
        limit: Option<u64>,
    ) -> Result<(Vec<String>, Vec<TableRow>)> {
        let wanted = limit.unwrap_or(u64::MAX);
        let mut rows: Vec<TableRow> = Vec::new();
        loop {
            let left = wanted - rows.len() as u64;
            lookup.limit = left.min(u64::from(self.page_rows)) as u32;
            let page = self.client.index_query(table, index, &lookup)?;
            rows.extend(page.hits.into_iter().filter_map(|h| h.row).take(left as usize));
            if rows.len() > RESULT_ROWS_MAX {
                return Err(too_many_rows());
            }
            match page.resume {
                Some(resume) if (rows.len() as u64) < wanted => {
                    if lookup.resume.as_ref() == Some(&resume) {
                        return Err(CliError::new(
                            CODE_CONNECTION,
                            "the node returned the same resume token twice; stopping so as not \
                             to loop",
                        ));
                    }
                    lookup.resume = Some(resume);
                }
                _ => return Ok((page.columns, rows)),
            }
        }
    }
}

fn unknown_index(t: &CatalogTable, index: &str) -> CliError {
    let known: Vec<&str> = t.indexes().iter().map(|i| i.name().as_str()).collect();
    let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
    let table = t.schema().name();
    CliError::new(
        CODE_UNKNOWN_INDEX,
        format!("table {table} has no index {index} (its indexes: {known})"),
    )
}

/// The node's error `e` about the query through `index`, which the user did not name: says why
/// the CLI read through it.
fn picked_note(e: CliError, index: &str) -> CliError {
    let message = format!(
        "{} (the WHERE clause matches index {index} and no other, so the CLI read through it as \
         if USING INDEX {index} were written)",
        e.message
    );
    CliError::new(e.code, message)
}

/// The WHERE clause of `s` on index `def`: each equality on an index field, together a leading
/// prefix of them, the range on the field after them; VERSIONS and ALLOW FULL SCAN do not apply.
fn index_plan(
    schema: &TableSchema,
    def: &IndexDef,
    s: &Select,
    chosen: Chosen,
) -> Result<IndexPlan> {
    let fields = index_fields(schema, def);
    let index = def.name();
    let listed = fields.join(", ");
    let how = match chosen {
        Chosen::Written => "",
        Chosen::Picked => ", picked as the one index the WHERE clause matches",
    };
    let invalid =
        |what: String| CliError::invalid(format!("USING INDEX {index} ({listed}){how}: {what}"));
    if s.versions.is_some() || s.allow_full_scan {
        return Err(invalid("VERSIONS and ALLOW FULL SCAN do not apply to an index".into()));
    }
    if let Some(field) = s.more_range_fields.first() {
        return Err(invalid(format!("only one field may have a range, and {field} is another")));
    }
    let position = |field: &str| {
        fields
            .iter()
            .position(|f| *f == field)
            .ok_or_else(|| invalid(format!("{field} is not a field of the index")))
    };
    let mut positioned = Vec::with_capacity(s.key.len());
    for (field, literal) in &s.key {
        positioned.push((position(field)?, field.as_str(), literal));
    }
    positioned.sort_by_key(|(p, ..)| *p);
    let mut equal = Vec::with_capacity(positioned.len());
    for (expected, (p, field, literal)) in positioned.into_iter().enumerate() {
        if p != expected {
            let missing = fields[expected];
            return Err(invalid(format!("{field} needs an equality on {missing} before it")));
        }
        equal.push(to_optional_value(literal, field_type(schema, def, p), field)?);
    }
    let next = equal.len();
    if let Some(order_by) = s.order_by.as_deref().filter(|f| fields.get(next) != Some(f)) {
        let what = match fields.get(next) {
            Some(next) => format!("rows come in index order, so only {next} can order them"),
            None => "the WHERE clause gives every index field".to_owned(),
        };
        return Err(invalid(format!("ORDER BY {order_by}: {what}")));
    }
    let Some(spec) = &s.range else { return Ok(IndexPlan { equal, range: None }) };
    if position(&spec.field)? != next {
        let what = match fields.get(next) {
            Some(next) => format!("a range must be on {next}, the field after the equalities"),
            None => "the equalities give every index field, so none can have a range".to_owned(),
        };
        return Err(invalid(format!("{}: {what}", spec.field)));
    }
    let ty = field_type(schema, def, next);
    let bound = |b: &Bound<Literal>| range_bound(b, ty, &spec.field);
    Ok(IndexPlan { equal, range: Some((bound(&spec.start)?, bound(&spec.end)?)) })
}

/// The type of the index's field at `position`.
fn field_type<'s>(
    schema: &'s TableSchema,
    def: &IndexDef,
    position: usize,
) -> &'s ringstore_model::table::FieldType {
    schema.fields()[def.fields()[position]].ty()
}

#[cfg(test)]
mod tests {
    use ringstore_model::table::{FieldType, IndexId, IndexState, Name, TableId};

    use super::*;
    use crate::{parse_script, Statement};

    fn parse(text: &str) -> Statement {
        let mut statements = parse_script(text).expect("parses");
        assert_eq!(statements.len(), 1);
        statements.remove(0)
    }

    fn table() -> CatalogTable {
        let schema = TableSchema::builder(TableId(1), "people")
            .field("id", FieldType::Long)
            .field("city", FieldType::String)
            .field("age", FieldType::Integer)
            .primary_key(&["id"])
            .build()
            .expect("valid schema");
        let name = Name::new("city_age").expect("a valid name");
        let def = IndexDef::new(name, IndexId(2), vec![1, 2], IndexState::Ready);
        CatalogTable::new(schema, 1).with_indexes(vec![def])
    }

    fn plan(text: &str) -> Result<IndexPlan> {
        let Statement::Select(s) = parse(text) else { panic!("a SELECT") };
        let t = table();
        let def = t.index(s.using_index.as_deref().expect("USING INDEX")).expect("the index");
        index_plan(t.schema(), def, &s, Chosen::Written)
    }

    #[test]
    fn equalities_and_a_range_follow_the_index_fields() {
        let p = plan("SELECT * FROM people WHERE age > 3 AND city = 'Oslo' USING INDEX city_age")
            .expect("valid");
        assert_eq!(p.equal, [Some(Value::String("Oslo".into()))]);
        let start = Some(RangeBound { value: Value::Integer(3), inclusive: false });
        assert_eq!(p.range, Some((start, None)));
        let p = plan("SELECT * FROM people WHERE city = NULL USING INDEX city_age").expect("NULL");
        assert_eq!((p.equal, p.range), (vec![None], None));
    }

    #[test]
    fn a_where_clause_off_the_index_prefix_is_refused() {
        for (text, says) in [
            ("SELECT * FROM people WHERE age = 3 USING INDEX city_age", "equality on city"),
            ("SELECT * FROM people WHERE id = 3 USING INDEX city_age", "not a field of the index"),
            ("SELECT * FROM people WHERE age > 3 USING INDEX city_age", "must be on city"),
            (
                "SELECT * FROM people WHERE city = 'x' USING INDEX city_age ORDER BY id",
                "only age can order",
            ),
        ] {
            let err = plan(text).expect_err(text);
            assert!(err.message.contains(says), "{text}: {err}");
            assert!(err.message.contains("USING INDEX city_age (city, age)"), "{err}");
        }
    }

    #[test]
    fn the_messages_of_a_picked_index_say_it_was_picked() {
        let text = "SELECT * FROM people WHERE city = 'x' VERSIONS 2";
        let Statement::Select(s) = parse(text) else { panic!("a SELECT") };
        let t = table();
        let def = t.index("city_age").expect("the index");
        let err = index_plan(t.schema(), def, &s, Chosen::Picked).expect_err(text);
        assert_eq!(
            err.message,
            "USING INDEX city_age (city, age), picked as the one index the WHERE clause \
             matches: VERSIONS and ALLOW FULL SCAN do not apply to an index"
        );
        let node = CliError::new(236, "table people: index city_age is BUILDING");
        let noted = picked_note(node, "city_age");
        assert_eq!(noted.code, 236);
        assert!(noted.message.starts_with("table people: index city_age is BUILDING (the"));
        assert!(noted.message.ends_with("as if USING INDEX city_age were written)"), "{noted}");
    }
}
