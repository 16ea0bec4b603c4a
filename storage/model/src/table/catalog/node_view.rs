//! One node's view of catalogs that its shards keep apart (issue 15): an index is built on each
//! shard on its own, so while a build runs one shard's copy may say READY where another's says
//! BUILDING. Everything else is the same on every shard (DDL is applied everywhere in the same
//! order). These functions tell such copies apart from ones that really differ, and give the
//! node's answer: an index is READY only when it is READY on every shard.

use super::contents::{Catalog, CatalogTable};
use super::Outcome;
use crate::table::index_def::IndexState;

impl IndexState {
    /// The state a node reports for an index that is `self` on one shard and `other` on
    /// another: DELETING if either is, else BUILDING if either is, else READY.
    pub fn least_ready(self, other: IndexState) -> IndexState {
        match (self, other) {
            (IndexState::Deleting, _) | (_, IndexState::Deleting) => IndexState::Deleting,
            (IndexState::Building, _) | (_, IndexState::Building) => IndexState::Building,
            (IndexState::Ready, IndexState::Ready) => IndexState::Ready,
        }
    }
}

impl CatalogTable {
    /// `self` and `other` (two shards' copies) as one: None if they differ in anything but
    /// their indexes' states, else the table with each index in the least ready of its states.
    pub fn merged_states(&self, other: &CatalogTable) -> Option<CatalogTable> {
        let same_shape = self.schema == other.schema
            && self.schema_version == other.schema_version
            && self.indexes.len() == other.indexes.len();
        if !same_shape {
            return None;
        }
        let mut merged = self.clone();
        for (mine, theirs) in merged.indexes.iter_mut().zip(&other.indexes) {
            if mine.with_state(theirs.state()) != *theirs {
                return None;
            }
            *mine = mine.with_state(mine.state().least_ready(theirs.state()));
        }
        Some(merged)
    }
}

impl Outcome {
    /// Two shards' outcomes of the same statement as one (see [`CatalogTable::merged_states`]):
    /// None if they differ in anything but index states (a CREATE INDEX that is READY on one
    /// shard, whose table had no rows there, and BUILDING on another is BUILDING).
    pub fn merged_states(&self, other: &Outcome) -> Option<Outcome> {
        match (self, other) {
            (
                Outcome::IndexCreated { table, index, state },
                Outcome::IndexCreated { table: t2, index: i2, state: s2 },
            ) if table == t2 && index == i2 => Some(Outcome::IndexCreated {
                table: *table,
                index: *index,
                state: state.least_ready(*s2),
            }),
            (Outcome::Described(a), Outcome::Described(b)) => {
                a.merged_states(b).map(Outcome::Described)
            }
            (Outcome::Indexes(a), Outcome::Indexes(b)) => a.merged_states(b).map(Outcome::Indexes),
            (a, b) => (a == b).then(|| a.clone()),
        }
    }
}

impl Catalog {
    /// This catalog with every READY index BUILDING: two shards' copies that agree on this agree
    /// on everything but how far their builds have got.
    pub fn without_build_progress(&self) -> Catalog {
        let mut next = self.clone();
        for table in next.by_id.values_mut() {
            for index in &mut table.indexes {
                if index.state() == IndexState::Ready {
                    *index = index.with_state(IndexState::Building);
                }
            }
        }
        next
    }

    /// This catalog, to be copied over `target` (another shard's copy, None if it has none or
    /// it does not decode): every index READY here that is not READY in `target` becomes
    /// BUILDING, so the copy never says READY for an index that shard has not built.
    pub fn for_shard(&self, target: Option<&Catalog>) -> Catalog {
        let mut next = self.clone();
        for table in next.by_id.values_mut() {
            let theirs = target.and_then(|c| c.get_by_id(table.id()));
            for index in &mut table.indexes {
                let built = theirs
                    .and_then(|t| t.indexes().iter().find(|i| i.id() == index.id()))
                    .is_some_and(|i| i.state() == IndexState::Ready);
                if index.state() == IndexState::Ready && !built {
                    *index = index.with_state(IndexState::Building);
                }
            }
        }
        next
    }
}
