//! Secondary index definitions (issue 15): an index's name, id, fields and state, as the catalog
//! keeps them with their table.
//!
//! An index is a set of key-only records in the store of the shard that owns the rows (the seed
//! document's "key-only index view records"): one entry per row, keyed by the index id, the
//! row's indexed field values and its primary key, with an empty value (`key/index.rs` encodes
//! them; `docs/FORMAT.md` "Index entries" draws the bytes). The state is the seed's metadata
//! record: BUILDING while the entries of existing rows are being written (writes already keep
//! the index up to date), READY once every row has its entry (only then is it read), DELETING
//! while its entries are being removed after DROP INDEX.

use std::fmt;

use super::name::Name;
use super::types::FieldType;

/// The id of an index: given from the catalog's table id counter, so no index id is ever a
/// table's id and an index's entries never share a key prefix with rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct IndexId(pub u32);

/// Where an index is in its life (the seed's BUILDING / READY / DELETING metadata states).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IndexState {
    /// Created; writes keep it up to date, existing rows are being indexed. Not readable.
    Building,
    /// Every row has its entry: readable.
    Ready,
    /// Dropped; its entries are being removed. Not readable, not maintained.
    Deleting,
}

impl IndexState {
    /// Every state, in tag order.
    pub const ALL: [IndexState; 3] =
        [IndexState::Building, IndexState::Ready, IndexState::Deleting];

    /// The state's name, as DDL output and error messages show it.
    pub fn name(self) -> &'static str {
        match self {
            IndexState::Building => "BUILDING",
            IndexState::Ready => "READY",
            IndexState::Deleting => "DELETING",
        }
    }

    /// The state's byte in the catalog file (`docs/FORMAT.md`, "Catalog file"); 0 is never
    /// written, so zeroed bytes do not decode as a state.
    pub fn tag(self) -> u8 {
        match self {
            IndexState::Building => 1,
            IndexState::Ready => 2,
            IndexState::Deleting => 3,
        }
    }

    /// The state of a catalog file byte, if it is one.
    pub fn from_tag(tag: u8) -> Option<IndexState> {
        IndexState::ALL.into_iter().find(|s| s.tag() == tag)
    }

    /// Whether writes of rows keep this index's entries up to date.
    pub fn is_maintained(self) -> bool {
        matches!(self, IndexState::Building | IndexState::Ready)
    }
}

impl fmt::Display for IndexState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One secondary index of a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDef {
    pub(crate) name: Name,
    pub(crate) id: IndexId,
    /// The indexed fields, as indexes into the table's [`TableSchema::fields`], in index order.
    ///
    /// [`TableSchema::fields`]: super::TableSchema::fields
    pub(crate) fields: Vec<usize>,
    pub(crate) state: IndexState,
}

impl IndexDef {
    /// An index as a client knows it (from a Describe response, say); the catalog checks the
    /// ones it makes and loads.
    pub fn new(name: Name, id: IndexId, fields: Vec<usize>, state: IndexState) -> IndexDef {
        IndexDef { name, id, fields, state }
    }

    pub fn name(&self) -> &Name {
        &self.name
    }

    pub fn id(&self) -> IndexId {
        self.id
    }

    /// The indexed fields, as indexes into the table's fields, in index order.
    pub fn fields(&self) -> &[usize] {
        &self.fields
    }

    pub fn state(&self) -> IndexState {
        self.state
    }

    /// The same index in state `state`.
    pub fn with_state(&self, state: IndexState) -> IndexDef {
        IndexDef { state, ..self.clone() }
    }
}

/// Whether a field of type `ty` may be indexed: every key type and BOOLEAN, which is every type
/// there is. FLOAT and DOUBLE values that keys refuse get a place in the order (NaN sorts after
/// +inf, -0.0 is 0.0), and a STRING or BINARY value over [`INDEX_VALUE_BYTES_MAX`] is refused
/// when it is written. The match is exhaustive so that a new type must decide.
///
/// [`INDEX_VALUE_BYTES_MAX`]: super::limits::INDEX_VALUE_BYTES_MAX
pub fn is_indexable(ty: &FieldType) -> bool {
    match ty {
        FieldType::Integer
        | FieldType::Long
        | FieldType::Float
        | FieldType::Double
        | FieldType::String
        | FieldType::Binary
        | FieldType::Boolean
        | FieldType::Enum(_)
        | FieldType::Timestamp => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_tags_round_trip_and_zero_is_none() {
        for state in IndexState::ALL {
            assert_eq!(IndexState::from_tag(state.tag()), Some(state));
        }
        assert_eq!(IndexState::from_tag(0), None);
        assert_eq!(IndexState::from_tag(4), None);
        assert!(!IndexState::Deleting.is_maintained());
        assert!(IndexState::Building.is_maintained() && IndexState::Ready.is_maintained());
    }
}
