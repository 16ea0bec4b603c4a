//! What the index statements do to the catalog (CREATE INDEX, DROP INDEX), and the two changes
//! only the engine makes: an index's new state (BUILDING to READY) and forgetting an index whose
//! entries are gone (after DELETING).
//!
//! An index gets its id from the catalog's table id counter, so ids of tables and indexes never
//! meet and an index's entries (keyed by its id) never share a prefix with any table's rows.

use super::contents::{Catalog, CatalogTable};
use super::{unknown, CatalogError, CatalogResult, Outcome, Plan};
use crate::table::index_def::{IndexDef, IndexId, IndexState};
use crate::table::limits::{INDEXES_PER_TABLE_MAX, INDEX_FIELDS_MAX};
use crate::table::{Name, TableError, TableId};

impl Catalog {
    /// CREATE INDEX: a new index in state BUILDING, or the existing one with IF NOT EXISTS.
    pub(super) fn plan_create_index(
        &self,
        table: &Name,
        index: &Name,
        fields: &[Name],
        if_not_exists: bool,
    ) -> CatalogResult<Plan> {
        let current = self.by_name(table).ok_or_else(|| unknown(table))?;
        if let Some(existing) = current.index(index.as_str()) {
            let id = existing.id();
            if if_not_exists {
                let outcome = Outcome::IndexAlreadyExists { table: current.id(), index: id };
                return Ok(Plan::Unchanged(outcome));
            }
            return Err(CatalogError::IndexExists {
                table: table.to_string(),
                index: index.to_string(),
                id: id.0,
                state: existing.state().name(),
            });
        }
        if current.indexes.len() >= INDEXES_PER_TABLE_MAX {
            return Err(CatalogError::TooManyIndexes { table: table.to_string() });
        }
        let positions = index_fields(current, index, fields)?;
        let id = self.next_id;
        let next_id = id
            .checked_add(1)
            .ok_or(CatalogError::TableIdsExhausted { last: id.wrapping_sub(1) })?;
        let def = IndexDef::new(index.clone(), IndexId(id), positions, IndexState::Building);
        let mut changed = current.clone();
        changed.indexes.push(def);
        let mut next = self.clone();
        next.next_id = next_id;
        next.by_id.insert(changed.id(), changed);
        let outcome = Outcome::IndexCreated {
            table: current.id(),
            index: IndexId(id),
            state: IndexState::Building,
        };
        Ok(Plan::Change { next, outcome })
    }

    /// DROP INDEX: the index becomes DELETING (again, if a drop was under way); the engine then
    /// removes its entries and forgets it ([`Catalog::without_index`]).
    pub(super) fn plan_drop_index(
        &self,
        table: &Name,
        index: &Name,
        if_exists: bool,
    ) -> CatalogResult<Plan> {
        let current = self.by_name(table).ok_or_else(|| unknown(table))?;
        let Some(def) = current.index(index.as_str()) else {
            if if_exists {
                return Ok(Plan::Unchanged(Outcome::NoIndexDropped));
            }
            let known = current.indexes.iter().map(|i| i.name().as_str()).collect::<Vec<_>>();
            let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
            let (table, index) = (table.to_string(), index.to_string());
            return Err(CatalogError::UnknownIndex { table, index, known });
        };
        let (table_id, index_id) = (current.id(), def.id());
        let next = self
            .with_index_state(table_id, index_id, IndexState::Deleting)
            .expect("the index was just found");
        Ok(Plan::Change {
            next,
            outcome: Outcome::IndexDropped { table: table_id, index: index_id },
        })
    }

    /// This catalog with index `index` of table `table` in `state`; None if there is no such
    /// index. The engine writes it like any change (`catalog_file.rs`).
    pub fn with_index_state(
        &self,
        table: TableId,
        index: IndexId,
        state: IndexState,
    ) -> Option<Catalog> {
        let mut next = self.clone();
        let def = next.by_id.get_mut(&table)?.indexes.iter_mut().find(|i| i.id() == index)?;
        def.state = state;
        Some(next)
    }

    /// This catalog without index `index` of table `table` (its entries are gone); None if there
    /// is no such index. Its id is never given again.
    pub fn without_index(&self, table: TableId, index: IndexId) -> Option<Catalog> {
        let mut next = self.clone();
        let indexes = &mut next.by_id.get_mut(&table)?.indexes;
        let at = indexes.iter().position(|i| i.id() == index)?;
        indexes.remove(at);
        Some(next)
    }
}

/// The positions of an index's fields in its table, checked: 1..=[`INDEX_FIELDS_MAX`] fields,
/// each a field of the table, none twice. Every field type is indexable
/// ([`crate::table::index_def::is_indexable`]).
fn index_fields(table: &CatalogTable, index: &Name, fields: &[Name]) -> CatalogResult<Vec<usize>> {
    let schema = table.schema();
    let (table_name, index_name) = (schema.name().to_string(), index.to_string());
    if fields.is_empty() || fields.len() > INDEX_FIELDS_MAX {
        let given = fields.len();
        return Err(CatalogError::IndexFieldCount { table: table_name, index: index_name, given });
    }
    let mut positions = Vec::with_capacity(fields.len());
    for field in fields {
        let Some((position, f)) = schema.field(field.as_str()) else {
            let field = field.to_string();
            return Err(CatalogError::Table(TableError::UnknownField { table: table_name, field }));
        };
        if positions.contains(&position) {
            let field = field.to_string();
            return Err(CatalogError::IndexFieldRepeated {
                table: table_name,
                index: index_name,
                field,
            });
        }
        debug_assert!(crate::table::index_def::is_indexable(f.ty()));
        positions.push(position);
    }
    Ok(positions)
}

/// Checks an index read from the catalog file against its table: what [`index_fields`] checks
/// when the index is made.
pub(super) fn check_loaded_index(table: &CatalogTable, def: &IndexDef) -> Result<(), String> {
    let fields = table.schema().fields().len();
    let name = def.name();
    if def.fields().is_empty() || def.fields().len() > INDEX_FIELDS_MAX {
        return Err(format!("index {name} has {} fields", def.fields().len()));
    }
    for (i, &position) in def.fields().iter().enumerate() {
        if position >= fields {
            return Err(format!("index {name}: field index {position} is out of range"));
        }
        if def.fields()[..i].contains(&position) {
            return Err(format!("index {name}: field index {position} appears twice"));
        }
    }
    Ok(())
}
