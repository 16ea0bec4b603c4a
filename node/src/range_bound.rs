//! A range bound of the protocol (a scan's range on a key field, an index query's range on an
//! index field) in the table layer's form.

use ringstore_net::request::Bound;
use ringstore_storage::table::RangeBound;

/// A range bound in the table layer's form (None: open, or a NULL the decoder let through).
pub(crate) fn bound(b: &Option<Bound<'_>>) -> Option<RangeBound> {
    let b = b.as_ref()?;
    Some(RangeBound { value: b.value.to_value()?, inclusive: b.inclusive })
}
