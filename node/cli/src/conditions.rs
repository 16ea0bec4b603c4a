//! WHERE clauses: `AND`-joined equalities on key fields plus a range on at most one field.
//!
//! Each comparison is normalised to "field op literal" (`5 < f` is `f > 5`), so the Lindorm form
//! `123 < orderid < 456` is two bounds of one field. Bounds of the range field combine into one
//! [`RangeSpec`]; a field with two lower (or two upper) bounds, or a field with both an equality
//! and a range, is an error at that field's condition. Bounds on a second (third ...) field are
//! only noted in [`Conditions::more_range_fields`]: whether that is "only one field may have a
//! range" or "that field is not a key field" takes the schema, which the runner has. Equalities keep the
//! order they are written in: the parser has no schema, so matching them to the primary key is the
//! caller's work.

use std::ops::Bound;

use super::ast::RangeSpec;
use super::cursor::{Cursor, Result};
use super::error::Problem;
use super::lex::{Kind, Punct};
use super::literal::Literal;

/// A parsed WHERE clause.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Conditions {
    pub key: Vec<(String, Literal)>,
    pub range: Option<RangeSpec>,
    /// Fields other than `range`'s with a bound, each once, in the order written.
    pub more_range_fields: Vec<String>,
}

/// A comparison operator, as written or turned around.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    /// The operator with its sides swapped: `a < f` is `f > a`.
    fn flipped(self) -> Op {
        match self {
            Op::Eq => Op::Eq,
            Op::Lt => Op::Gt,
            Op::Le => Op::Ge,
            Op::Gt => Op::Lt,
            Op::Ge => Op::Le,
        }
    }
}

const OPERATOR_EXPECTED: &str = "a comparison: =, <, <=, > or >=";

/// `conditions = condition { AND condition }`, after `WHERE`.
pub(crate) fn parse(c: &mut Cursor<'_>) -> Result<Conditions> {
    let mut conditions = Conditions::default();
    loop {
        condition(c, &mut conditions)?;
        if !c.eat_keyword("AND") {
            return Ok(conditions);
        }
    }
}

/// `f op lit`, `f BETWEEN lit AND lit`, or `lit op f [op lit]`.
fn condition(c: &mut Cursor<'_>, out: &mut Conditions) -> Result<()> {
    if c.at_name() {
        let (field, at) = c.name("a field name")?;
        if c.eat_keyword("BETWEEN") {
            let low = c.literal()?;
            c.expect_keyword("AND")?;
            let high = c.literal()?;
            out.bound(c, &field, at, Op::Ge, low)?;
            return out.bound(c, &field, at, Op::Le, high);
        }
        let op = operator(c, true)?;
        let value = c.literal()?;
        return out.add(c, field, at, op, value);
    }
    let value = match c.peek().map(|t| t.kind) {
        Some(Kind::Number | Kind::String | Kind::Binary | Kind::Word) => c.literal()?,
        _ => return Err(c.syntax("a condition: a field name or a value")),
    };
    let op = operator(c, true)?;
    let (field, at) = c.name("a field name")?;
    out.add(c, field.clone(), at, op.flipped(), value)?;
    if op == Op::Eq || !at_operator(c) {
        return Ok(());
    }
    let second = operator(c, false)?;
    let value = c.literal()?;
    out.bound(c, &field, at, second, value)
}

fn at_operator(c: &Cursor<'_>) -> bool {
    [Punct::Eq, Punct::Lt, Punct::Le, Punct::Gt, Punct::Ge].iter().any(|p| c.at_punct(*p))
}

/// A comparison operator; `=` only where `equality` allows it.
fn operator(c: &mut Cursor<'_>, equality: bool) -> Result<Op> {
    let ops = [(Punct::Lt, Op::Lt), (Punct::Le, Op::Le), (Punct::Gt, Op::Gt), (Punct::Ge, Op::Ge)];
    if equality && c.eat_punct(Punct::Eq) {
        return Ok(Op::Eq);
    }
    match ops.iter().find(|(p, _)| c.at_punct(*p)) {
        Some((p, op)) => {
            c.eat_punct(*p);
            Ok(*op)
        }
        None if equality => Err(c.syntax(OPERATOR_EXPECTED)),
        None => Err(c.syntax("a range comparison: <, <=, > or >=")),
    }
}

impl Conditions {
    fn add(
        &mut self,
        c: &Cursor<'_>,
        field: String,
        at: usize,
        op: Op,
        value: Literal,
    ) -> Result<()> {
        if op != Op::Eq {
            return self.bound(c, &field, at, op, value);
        }
        if self.key.iter().any(|(f, _)| *f == field) {
            return Err(c.invalid(at, Problem::FieldTwice { field }));
        }
        let ranged = self.range.iter().map(|r| &r.field).chain(&self.more_range_fields);
        if ranged.into_iter().any(|f| *f == field) {
            return Err(c.invalid(at, Problem::EqualityAndRange { field }));
        }
        self.key.push((field, value));
        Ok(())
    }

    /// Adds the bound `field op value` (op is not `=`) to the range.
    fn bound(
        &mut self,
        c: &Cursor<'_>,
        field: &str,
        at: usize,
        op: Op,
        value: Literal,
    ) -> Result<()> {
        if self.key.iter().any(|(f, _)| f == field) {
            return Err(c.invalid(at, Problem::EqualityAndRange { field: field.to_owned() }));
        }
        if self.range.as_ref().is_some_and(|r| r.field != field) {
            if !self.more_range_fields.iter().any(|f| f == field) {
                self.more_range_fields.push(field.to_owned());
            }
            return Ok(());
        }
        let range = self.range.get_or_insert_with(|| RangeSpec {
            field: field.to_owned(),
            start: Bound::Unbounded,
            end: Bound::Unbounded,
        });
        let (slot, side, bound) = match op {
            Op::Gt => (&mut range.start, "lower", Bound::Excluded(value)),
            Op::Ge => (&mut range.start, "lower", Bound::Included(value)),
            Op::Lt => (&mut range.end, "upper", Bound::Excluded(value)),
            // `=` never gets here (`add` keeps equalities); it would be an inclusive bound.
            Op::Le | Op::Eq => (&mut range.end, "upper", Bound::Included(value)),
        };
        if !matches!(slot, Bound::Unbounded) {
            return Err(c.invalid(at, Problem::BoundTwice { field: field.to_owned(), side }));
        }
        *slot = bound;
        Ok(())
    }
}
