//! The automatic index pick (issue 15): a SELECT without `USING INDEX` whose WHERE clause the
//! primary key does not answer, and which matches exactly one of the table's indexes, runs as if
//! `USING INDEX` that index were written (docs/CLI.md, "SELECT ... USING INDEX").
//!
//! The rule looks at the fields the WHERE clause names, never at their values nor at the index's
//! state. A WHERE clause *fits* a list of fields when
//!
//! - it names at least one field, and no field but these;
//! - its equalities are on exactly the first n of the fields (n >= 0, in any order);
//! - it has at most one range, and that on field n + 1.
//!
//! So the set of fields it names is the list's first m fields (m >= 1), and a range is on the
//! last of them. Then:
//!
//! 1. a WHERE clause that fits the primary key (a get, a multiGet or a bounded scan), or that is
//!    empty, runs on the primary key as before: an index is never picked for it;
//! 2. an index *matches* a WHERE clause that fits its fields; READY or not (a BUILDING or
//!    DELETING index is picked like a READY one, and the node refuses the query with 236, as it
//!    does with `USING INDEX`);
//! 3. one matching index is picked; two or more are an error (802) naming them, for the user to
//!    choose with `USING INDEX`; none leaves the statement to the primary key, which refuses it
//!    as before;
//! 4. `ALLOW FULL SCAN` asks for a read of the primary key, so it turns the pick off; with a
//!    matching index that is an error (802) saying so and naming the index, since the primary key
//!    can not answer the WHERE clause.
//!
//! ORDER BY, LIMIT and VERSIONS play no part in the match; the picked index's rules then apply to
//! them as with `USING INDEX` (`index_select.rs`).

use ringstore_model::table::{CatalogTable, IndexDef, TableSchema};

use super::{key_list, CliError, Result};
use crate::Select;

/// What a SELECT without `USING INDEX` reads through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Pick {
    /// The primary key: the WHERE clause fits it, or is empty.
    PrimaryKey,
    /// No index matches a WHERE clause that does not fit the primary key: the statement runs on
    /// the primary key as before, which refuses it with its reason.
    NoMatch,
    /// The one index that matches, by name.
    Index(String),
}

/// The index, if any, that the SELECT `s` (without `USING INDEX`) on table `t` reads through:
/// the module's rule.
pub(super) fn pick_index(t: &CatalogTable, s: &Select) -> Result<Pick> {
    debug_assert!(s.using_index.is_none(), "a written USING INDEX is not picked");
    let schema = t.schema();
    let key: Vec<&str> =
        schema.primary_key().iter().map(|k| schema.fields()[k.field].name().as_str()).collect();
    if where_fields(s).is_empty() || fits(&key, s) {
        return Ok(Pick::PrimaryKey);
    }
    let matching: Vec<&IndexDef> =
        t.indexes().iter().filter(|def| fits(&index_fields(schema, def), s)).collect();
    match matching[..] {
        [] => Ok(Pick::NoMatch),
        _ if s.allow_full_scan => Err(full_scan_refused(schema, &matching, s)),
        [one] => Ok(Pick::Index(one.name().as_str().to_owned())),
        _ => Err(ambiguous(schema, &matching, s)),
    }
}

/// The names of the fields of `def`, in index order.
pub(super) fn index_fields<'s>(schema: &'s TableSchema, def: &IndexDef) -> Vec<&'s str> {
    def.fields().iter().map(|&f| schema.fields()[f].name().as_str()).collect()
}

/// `city_age (city, age)`: an index with its fields, for messages.
pub(super) fn index_text(schema: &TableSchema, def: &IndexDef) -> String {
    format!("{} ({})", def.name(), index_fields(schema, def).join(", "))
}

/// Whether the WHERE clause of `s` fits `fields` (the module's rule): its equalities on exactly
/// the first n of them, a range (if any) on field n + 1, nothing else, and not empty.
fn fits(fields: &[&str], s: &Select) -> bool {
    if !s.more_range_fields.is_empty() {
        return false;
    }
    let positions: Option<Vec<usize>> =
        s.key.iter().map(|(field, _)| fields.iter().position(|f| f == field)).collect();
    let Some(mut positions) = positions else { return false };
    positions.sort_unstable();
    // Each field is given once (the parser refuses a field twice), so n positions that sort
    // to 0..n are exactly the first n fields.
    if !positions.iter().copied().eq(0..positions.len()) {
        return false;
    }
    let given = positions.len();
    match &s.range {
        Some(range) => fields.get(given) == Some(&range.field.as_str()),
        None => given > 0,
    }
}

/// The fields the WHERE clause of `s` names: the equalities' in the order written, then the
/// range's, then any other bounded ones.
fn where_fields(s: &Select) -> Vec<&str> {
    let equal = s.key.iter().map(|(field, _)| field.as_str());
    let ranged = s.range.iter().map(|r| r.field.as_str());
    equal.chain(ranged).chain(s.more_range_fields.iter().map(String::as_str)).collect()
}

/// `a`, `a and b`, `a, b and c`.
fn listed(items: &[String], last: &str) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., tail] => format!("{} {last} {tail}", init.join(", ")),
    }
}

fn ambiguous(schema: &TableSchema, matching: &[&IndexDef], s: &Select) -> CliError {
    let texts: Vec<String> = matching.iter().map(|def| index_text(schema, def)).collect();
    let usings: Vec<String> =
        matching.iter().map(|def| format!("USING INDEX {}", def.name())).collect();
    CliError::invalid(format!(
        "the WHERE clause (on {}) matches {} indexes of table {}, {}, and the CLI does not \
         choose between indexes: add {}",
        where_fields(s).join(", "),
        matching.len(),
        schema.name(),
        listed(&texts, "and"),
        listed(&usings, "or")
    ))
}

fn full_scan_refused(schema: &TableSchema, matching: &[&IndexDef], s: &Select) -> CliError {
    let texts: Vec<String> = matching.iter().map(|def| index_text(schema, def)).collect();
    let what = match &texts[..] {
        [one] => format!("index {one}: drop ALLOW FULL SCAN to read through it"),
        _ => format!(
            "indexes {}: drop ALLOW FULL SCAN and add USING INDEX with one of them",
            listed(&texts, "and")
        ),
    };
    CliError::invalid(format!(
        "ALLOW FULL SCAN reads by the primary key {}, which the WHERE clause (on {}) does not \
         fit, and it turns off the automatic index pick; the WHERE clause matches {what}",
        key_list(schema, schema.primary_key().len()),
        where_fields(s).join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use ringstore_model::table::{FieldType, IndexId, IndexState, Name, TableId};

    use super::*;
    use crate::error::CODE_INVALID;
    use crate::{parse_script, Statement};

    /// `people (id, city, age, name)`, primary key `id`, with an index of each `(name, fields,
    /// state)`.
    fn people(indexes: &[(&str, &[usize], IndexState)]) -> CatalogTable {
        let schema = TableSchema::builder(TableId(1), "people")
            .field("id", FieldType::Long)
            .field("city", FieldType::String)
            .field("age", FieldType::Integer)
            .field("name", FieldType::String)
            .primary_key(&["id"])
            .build()
            .expect("valid schema");
        let defs = indexes
            .iter()
            .zip(2..)
            .map(|(&(name, fields, state), id)| {
                let name = Name::new(name).expect("a valid name");
                IndexDef::new(name, IndexId(id), fields.to_vec(), state)
            })
            .collect();
        CatalogTable::new(schema, 1).with_indexes(defs)
    }

    /// Field positions of `people`.
    const ID: usize = 0;
    const CITY: usize = 1;
    const AGE: usize = 2;
    const NAME: usize = 3;

    fn select(text: &str) -> Select {
        let mut statements = parse_script(text).expect("parses");
        assert_eq!(statements.len(), 1);
        let Statement::Select(s) = statements.remove(0) else { panic!("a SELECT: {text}") };
        s
    }

    fn pick(t: &CatalogTable, text: &str) -> Result<Pick> {
        pick_index(t, &select(text))
    }

    fn picked(name: &str) -> Pick {
        Pick::Index(name.to_owned())
    }

    #[test]
    fn the_one_matching_index_is_picked() {
        let t = people(&[
            ("city_age", &[CITY, AGE], IndexState::Ready),
            ("by_age", &[AGE], IndexState::Ready),
        ]);
        for (text, expected) in [
            ("SELECT * FROM people WHERE city = 'Oslo'", "city_age"),
            ("SELECT * FROM people WHERE age = 3 AND city = 'Oslo'", "city_age"),
            ("SELECT * FROM people WHERE city = NULL", "city_age"),
            // A range on the field after the equalities.
            ("SELECT * FROM people WHERE city = 'Oslo' AND age > 30", "city_age"),
            ("SELECT * FROM people WHERE city = 'Oslo' AND age BETWEEN 1 AND 9", "city_age"),
            // A range on the first field: city_age has city first, so only by_age fits.
            ("SELECT * FROM people WHERE age > 30", "by_age"),
            ("SELECT * FROM people WHERE 20 < age <= 30", "by_age"),
            ("SELECT * FROM people WHERE age = 3", "by_age"),
            // ORDER BY, LIMIT and VERSIONS play no part (the index's rules check them later).
            ("SELECT * FROM people WHERE city = 'Oslo' ORDER BY age DESC LIMIT 2", "city_age"),
            ("SELECT * FROM people WHERE age = 3 VERSIONS 2", "by_age"),
        ] {
            assert_eq!(pick(&t, text).expect(text), picked(expected), "{text}");
        }
    }

    #[test]
    fn an_index_that_is_not_ready_is_picked_too() {
        for state in [IndexState::Building, IndexState::Deleting] {
            let t = people(&[("city_age", &[CITY, AGE], state)]);
            let text = "SELECT * FROM people WHERE city = 'Oslo'";
            assert_eq!(pick(&t, text).expect(text), picked("city_age"), "{state:?}");
        }
    }

    #[test]
    fn two_matching_indexes_are_an_error_naming_both() {
        let t = people(&[
            ("city_age", &[CITY, AGE], IndexState::Ready),
            ("by_city", &[CITY], IndexState::Building),
            ("by_age", &[AGE], IndexState::Ready),
        ]);
        let text = "SELECT * FROM people WHERE city = 'Oslo'";
        let e = pick(&t, text).expect_err("ambiguous");
        assert_eq!(e.code, CODE_INVALID);
        assert_eq!(
            e.message,
            "the WHERE clause (on city) matches 2 indexes of table people, city_age (city, age) \
             and by_city (city), and the CLI does not choose between indexes: add USING INDEX \
             city_age or USING INDEX by_city"
        );
        // With a range on age only city_age fits: by_city has no second field.
        let text = "SELECT * FROM people WHERE city = 'Oslo' AND age < 9";
        assert_eq!(pick(&t, text).expect(text), picked("city_age"));
        // Written, USING INDEX settles it (the pick is never asked).
        let s = select("SELECT * FROM people WHERE city = 'Oslo' USING INDEX by_city");
        assert_eq!(s.using_index.as_deref(), Some("by_city"));
    }

    #[test]
    fn a_where_clause_that_fits_no_index_is_left_to_the_primary_key() {
        let t = people(&[
            ("city_age", &[CITY, AGE], IndexState::Ready),
            ("by_name", &[NAME], IndexState::Ready),
        ]);
        for text in [
            // Not a leading prefix of city_age.
            "SELECT * FROM people WHERE age = 3",
            // A range on a field that is not the next one: name is no field of city_age, and
            // age follows no equality on city.
            "SELECT * FROM people WHERE city = 'Oslo' AND name > 'a'",
            "SELECT * FROM people WHERE age > 30",
            // A range on the next field, but after every field of by_name.
            "SELECT * FROM people WHERE name = 'x' AND age > 3",
            // A field of neither index.
            "SELECT * FROM people WHERE city = 'Oslo' AND name = 'x'",
            // Equalities on every field, then one more.
            "SELECT * FROM people WHERE city = 'Oslo' AND age = 3 AND name = 'x'",
            // Two range fields.
            "SELECT * FROM people WHERE city > 'a' AND age > 3",
        ] {
            assert_eq!(pick(&t, text).expect(text), Pick::NoMatch, "{text}");
        }
        let bare = people(&[]);
        let text = "SELECT * FROM people WHERE city = 'Oslo'";
        assert_eq!(pick(&bare, text).expect(text), Pick::NoMatch);
    }

    #[test]
    fn a_where_clause_on_the_primary_key_keeps_the_primary_key() {
        // Indexes whose fields the primary key's WHERE clauses also fit.
        let t = people(&[
            ("by_id", &[ID], IndexState::Ready),
            ("id_city", &[ID, CITY], IndexState::Ready),
        ]);
        for text in [
            "SELECT * FROM people WHERE id = 3",
            "SELECT * FROM people WHERE id > 3",
            "SELECT * FROM people WHERE 3 <= id < 9 ORDER BY id DESC",
            // Empty: a full scan (refused without ALLOW FULL SCAN), as before.
            "SELECT * FROM people",
            "SELECT * FROM people LIMIT 2 ALLOW FULL SCAN",
        ] {
            assert_eq!(pick(&t, text).expect(text), Pick::PrimaryKey, "{text}");
        }
        // Past the primary key, id_city fits and by_id does not.
        let text = "SELECT * FROM people WHERE id = 3 AND city = 'Oslo'";
        assert_eq!(pick(&t, text).expect(text), picked("id_city"));
    }

    #[test]
    fn a_key_field_off_the_key_prefix_can_pick_an_index() {
        let schema = TableSchema::builder(TableId(1), "orders")
            .field("userid", FieldType::String)
            .field("orderid", FieldType::Long)
            .primary_key(&["userid", "orderid"])
            .build()
            .expect("valid schema");
        let name = Name::new("by_order").expect("a valid name");
        let def = IndexDef::new(name, IndexId(2), vec![1], IndexState::Ready);
        let t = CatalogTable::new(schema, 1).with_indexes(vec![def]);
        let text = "SELECT * FROM orders WHERE orderid = 101";
        assert_eq!(pick(&t, text).expect(text), picked("by_order"));
        let text = "SELECT * FROM orders WHERE userid = 'abc' AND orderid = 101";
        assert_eq!(pick(&t, text).expect(text), Pick::PrimaryKey);
    }

    #[test]
    fn allow_full_scan_turns_the_pick_off() {
        let t = people(&[("city_age", &[CITY, AGE], IndexState::Ready)]);
        let text = "SELECT * FROM people WHERE city = 'Oslo' ALLOW FULL SCAN";
        let e = pick(&t, text).expect_err(text);
        assert_eq!(e.code, CODE_INVALID);
        assert_eq!(
            e.message,
            "ALLOW FULL SCAN reads by the primary key (id), which the WHERE clause (on city) does \
             not fit, and it turns off the automatic index pick; the WHERE clause matches index \
             city_age (city, age): drop ALLOW FULL SCAN to read through it"
        );
        let two = people(&[
            ("city_age", &[CITY, AGE], IndexState::Ready),
            ("by_city", &[CITY], IndexState::Ready),
        ]);
        let e = pick(&two, text).expect_err(text);
        assert!(
            e.message.ends_with(
                "matches indexes city_age (city, age) and by_city (city): drop ALLOW FULL SCAN \
                 and add USING INDEX with one of them"
            ),
            "{e}"
        );
        // Nothing matches: the primary key refuses it as before.
        let text = "SELECT * FROM people WHERE name = 'x' ALLOW FULL SCAN";
        assert_eq!(pick(&t, text).expect(text), Pick::NoMatch);
    }
}
