//! Fields lists inside a received body, checked once and then read in place.
//!
//! A request's key or row is a fields list (`wire.rs`: u16 count, then count x (name, value)).
//! Decoding a request walks the list once to check it ([`FieldList::read`]) and keeps only the
//! borrowed bytes and the count; [`FieldList::iter`] then yields `(name, value)` pairs straight
//! from the receive buffer, so a request needs no allocation for its fields.

use ringstore_model::table::Value;

use crate::wire::{Reader, ValueRef, WireError, WireResult, Writer, FIELDS_MAX};

/// A checked fields list borrowed from a body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldList<'a> {
    /// The encoded pairs, after the count.
    pairs: &'a [u8],
    count: usize,
}

impl<'a> FieldList<'a> {
    /// Reads and checks a fields list at the reader's position.
    pub fn read(r: &mut Reader<'a>) -> WireResult<FieldList<'a>> {
        let count = read_count(r)?;
        let start = r.position();
        let mut probe = r.clone();
        for _ in 0..count {
            probe.name("field name")?;
            probe.value()?;
        }
        let len = probe.position() - start;
        let pairs = r.take(len, "fields")?;
        Ok(FieldList { pairs, count })
    }

    /// The empty list.
    pub fn empty() -> FieldList<'static> {
        FieldList { pairs: &[], count: 0 }
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The pairs, in the order they were sent.
    pub fn iter(&self) -> FieldIter<'a> {
        FieldIter { r: Reader::new(self.pairs), left: self.count }
    }

    /// Writes the list (count and pairs) into a body.
    pub fn write(&self, w: &mut Writer) {
        w.u16(self.count as u16);
        w.buf.extend_from_slice(self.pairs);
    }

    /// The pairs as owned table values (the form the table layer takes). NULL values are kept
    /// as None (an update clearing a field); a key or row with a NULL is refused by the caller.
    pub fn to_values(&self) -> Vec<(&'a str, Option<Value>)> {
        self.iter().map(|(name, v)| (name, v.to_value())).collect()
    }
}

/// A fields list's count (u16), checked against [`FIELDS_MAX`] before any pair is read.
pub(crate) fn read_count(r: &mut Reader<'_>) -> WireResult<usize> {
    let at = r.position();
    let count = usize::from(r.u16("fields count")?);
    if count > FIELDS_MAX {
        return Err(WireError::TooManyFields { at, count });
    }
    Ok(count)
}

/// Iterator over a checked [`FieldList`].
#[derive(Debug, Clone)]
pub struct FieldIter<'a> {
    r: Reader<'a>,
    left: usize,
}

impl<'a> Iterator for FieldIter<'a> {
    type Item = (&'a str, ValueRef<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        // The list was checked when it was read, so these cannot fail; stop if they somehow do.
        let name = self.r.name("field name").ok()?;
        let value = self.r.value().ok()?;
        Some((name, value))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// An owned, encoded fields list a client builds before sending.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldsBuf {
    w: Writer,
    count: usize,
}

impl FieldsBuf {
    pub fn new() -> FieldsBuf {
        FieldsBuf::default()
    }

    /// The list of `fields`, in order.
    pub fn of<'v, I>(fields: I) -> FieldsBuf
    where
        I: IntoIterator<Item = (&'v str, ValueRef<'v>)>,
    {
        let mut buf = FieldsBuf::new();
        for (name, value) in fields {
            buf.push(name, value);
        }
        buf
    }

    /// The list of owned `(name, value)` pairs.
    pub fn of_values(fields: &[(&str, Value)]) -> FieldsBuf {
        FieldsBuf::of(fields.iter().map(|(n, v)| (*n, ValueRef::from(v))))
    }

    /// Empties the list, keeping its buffer (a client reuses one list per request).
    pub fn clear(&mut self) {
        self.w.buf.clear();
        self.count = 0;
    }

    /// Appends a pair; panics past [`FIELDS_MAX`] pairs (the server would refuse the list).
    pub fn push(&mut self, name: &str, value: ValueRef<'_>) {
        assert!(self.count < FIELDS_MAX, "more than FIELDS_MAX ({FIELDS_MAX}) fields");
        self.w.name(name);
        self.w.value(&value);
        self.count += 1;
    }

    pub fn list(&self) -> FieldList<'_> {
        FieldList { pairs: &self.w.buf, count: self.count }
    }
}

/// A value or NULL as a [`ValueRef`].
pub fn value_ref(v: Option<&Value>) -> ValueRef<'_> {
    v.map_or(ValueRef::Null, ValueRef::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checked_list_iterates_in_place() {
        let buf = FieldsBuf::of([("a", ValueRef::Integer(1)), ("s", ValueRef::String("hi"))]);
        let mut w = Writer::default();
        buf.list().write(&mut w);
        w.u8(0xEE); // the next item after the list
        let mut r = Reader::new(&w.buf);
        let list = FieldList::read(&mut r).expect("valid list");
        assert_eq!(r.u8("next").expect("the byte after the list"), 0xEE);
        let pairs: Vec<_> = list.iter().collect();
        assert_eq!(pairs, vec![("a", ValueRef::Integer(1)), ("s", ValueRef::String("hi"))]);
        assert_eq!(list.to_values()[1], ("s", Some(Value::String("hi".into()))));
    }

    #[test]
    fn truncated_list_is_refused_on_read() {
        let buf = FieldsBuf::of([("a", ValueRef::Long(5))]);
        let mut w = Writer::default();
        buf.list().write(&mut w);
        for cut in 0..w.buf.len() {
            let err = FieldList::read(&mut Reader::new(&w.buf[..cut])).expect_err("truncated");
            assert_eq!(err.code(), 710);
        }
    }

    #[test]
    fn over_limit_count_is_refused_before_reading_pairs() {
        let count = (FIELDS_MAX + 1) as u16;
        let err = FieldList::read(&mut Reader::new(&count.to_le_bytes())).expect_err("too many");
        assert!(matches!(err, WireError::TooManyFields { .. }), "{err}");
    }
}
