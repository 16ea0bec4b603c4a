//! Request messages: the body of each request opcode, decoded in place from the receive buffer
//! ([`Request::decode`]) and encoded by clients ([`Request::encode`]). `docs/PROTOCOL.md`
//! ("Requests") is the byte-level reference; this file and that section change together.
//!
//! Decoding allocates nothing for Get, Put, Update, Delete, MultiGet, MultiDelete and Scan: names,
//! keys and rows stay borrowed ([`FieldList`]). Execute collects its operations in a vector, and
//! IndexQuery its equal values (at most [`INDEX_FIELDS_MAX`]).

use ringstore_model::table::{Condition, RowToken, VersionSelect};
use ringstore_model::Durability;

use crate::fields::FieldList;
use crate::frame::{Flags, Opcode};
use crate::wire::{Reader, ValueRef, WireError, WireResult, Writer};

/// Most operations in one Execute request: the table layer's execute limit, which a decoder
/// checks before it collects the operations (a larger count is [`WireError::TooManyOperations`]).
pub use ringstore_model::constants::EXECUTE_OPS_MAX;

/// Most equal values in one IndexQuery request: an index has at most this many fields (a larger
/// count is [`WireError::TooManyIndexValues`], refused before any value is read).
pub use ringstore_model::table::limits::INDEX_FIELDS_MAX;

/// Option bits of a write (`WriteOptions::write`).
const OPT_VERSION: u8 = 1 << 0;
const OPT_TTL: u8 = 1 << 1;
const OPT_RETURN_ROW: u8 = 1 << 2;

/// Flag bits of a range request.
const RANGE_REVERSE: u8 = 1 << 0;
const RANGE_ALLOW_FULL_SCAN: u8 = 1 << 1;

/// Flag bits of an index query.
const INDEX_REVERSE: u8 = 1 << 0;
const INDEX_KEYS_ONLY: u8 = 1 << 1;

/// Bits of a range's bounds.
const BOUND_START: u8 = 1 << 0;
const BOUND_START_INCLUSIVE: u8 = 1 << 1;
const BOUND_END: u8 = 1 << 2;
const BOUND_END_INCLUSIVE: u8 = 1 << 3;
/// A range on a field follows (its name, then the present bounds).
const BOUND_FIELD: u8 = 1 << 4;
const BOUND_BITS: u8 =
    BOUND_START | BOUND_START_INCLUSIVE | BOUND_END | BOUND_END_INCLUSIVE | BOUND_FIELD;

/// The condition, version, TTL and return-row flag of a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WriteOptions {
    pub condition: Condition,
    /// Client version (ms since the epoch); the shard's clock when None.
    pub version: Option<u64>,
    /// Per-row TTL overriding the table's.
    pub ttl_seconds: Option<u64>,
    /// On a failed condition, also return the current row.
    pub return_row: bool,
}

/// What a write does (the body of Put, Update and Delete; one operation of Execute).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WriteBody<'a> {
    Put {
        row: FieldList<'a>,
    },
    /// `set`: NULL clears a field.
    Update {
        key: FieldList<'a>,
        set: FieldList<'a>,
    },
    Delete {
        key: FieldList<'a>,
    },
}

impl<'a> WriteBody<'a> {
    pub fn opcode(&self) -> Opcode {
        match self {
            WriteBody::Put { .. } => Opcode::Put,
            WriteBody::Update { .. } => Opcode::Update,
            WriteBody::Delete { .. } => Opcode::Delete,
        }
    }

    /// The fields that hold the key (a put's row holds its key fields).
    pub fn key(&self) -> FieldList<'a> {
        match *self {
            WriteBody::Put { row } => row,
            WriteBody::Update { key, .. } | WriteBody::Delete { key } => key,
        }
    }
}

/// One end of a range on a key field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bound<'a> {
    pub value: ValueRef<'a>,
    pub inclusive: bool,
}

/// The body of MultiGet, MultiDelete and Scan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RangeBody<'a> {
    /// A leading prefix of the primary key.
    pub key: FieldList<'a>,
    /// The key field after `key` the range is on, and the range; None: no range.
    pub range: Option<(&'a str, Option<Bound<'a>>, Option<Bound<'a>>)>,
    pub reverse: bool,
    pub allow_full_scan: bool,
    /// Rows per page (the table layer checks the bounds).
    pub limit: u32,
    /// The previous page's resume token.
    pub resume: Option<&'a [u8]>,
    /// Reads only.
    pub versions: VersionSelect,
}

impl<'a> RangeBody<'a> {
    /// Every row under `key`, forward, `limit` rows per page.
    pub fn new(key: FieldList<'a>, limit: u32) -> RangeBody<'a> {
        RangeBody {
            key,
            range: None,
            reverse: false,
            allow_full_scan: false,
            limit,
            resume: None,
            versions: VersionSelect::Newest,
        }
    }
}

/// The body of IndexQuery: a page of one secondary index's entries, in index order.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexBody<'a> {
    pub index: &'a str,
    /// Values of the first index fields, in index order; NULL asks for rows without a value.
    pub equal: Vec<ValueRef<'a>>,
    /// A range on the index field after `equal`: its start and end (None: open on that side;
    /// NULL is never in a range, so a NULL bound is refused by the decoder).
    pub range: Option<(Option<Bound<'a>>, Option<Bound<'a>>)>,
    /// Highest entries first.
    pub reverse: bool,
    /// The indexed values and primary keys only, without reading the rows.
    pub keys_only: bool,
    /// Entries per page (the table layer checks the bounds).
    pub limit: u32,
    /// The previous page's resume token.
    pub resume: Option<&'a [u8]>,
}

impl<'a> IndexBody<'a> {
    /// Every entry of `index` under `equal`, forward, with rows, `limit` entries per page.
    pub fn new(index: &'a str, equal: Vec<ValueRef<'a>>, limit: u32) -> IndexBody<'a> {
        IndexBody {
            index,
            equal,
            range: None,
            reverse: false,
            keys_only: false,
            limit,
            resume: None,
        }
    }
}

/// A decoded request body.
#[derive(Debug, Clone, PartialEq)]
pub enum Request<'a> {
    Ping,
    Hello,
    Stats,
    Ddl {
        text: &'a str,
    },
    Describe {
        table: &'a str,
    },
    Get {
        table: &'a str,
        key: FieldList<'a>,
        versions: VersionSelect,
    },
    /// Put, Update or Delete (the opcode is the body's kind).
    Write {
        table: &'a str,
        body: WriteBody<'a>,
        options: WriteOptions,
    },
    Execute {
        table: &'a str,
        abort_on_failure: bool,
        ops: Vec<(WriteBody<'a>, WriteOptions)>,
    },
    MultiGet {
        table: &'a str,
        range: RangeBody<'a>,
    },
    MultiDelete {
        table: &'a str,
        range: RangeBody<'a>,
    },
    Scan {
        table: &'a str,
        range: RangeBody<'a>,
    },
    IndexQuery {
        table: &'a str,
        query: IndexBody<'a>,
    },
}

impl<'a> Request<'a> {
    pub fn opcode(&self) -> Opcode {
        match self {
            Request::Ping => Opcode::Ping,
            Request::Hello => Opcode::Hello,
            Request::Stats => Opcode::Stats,
            Request::Ddl { .. } => Opcode::Ddl,
            Request::Describe { .. } => Opcode::Describe,
            Request::Get { .. } => Opcode::Get,
            Request::Write { body, .. } => body.opcode(),
            Request::Execute { .. } => Opcode::Execute,
            Request::MultiGet { .. } => Opcode::MultiGet,
            Request::MultiDelete { .. } => Opcode::MultiDelete,
            Request::Scan { .. } => Opcode::Scan,
            Request::IndexQuery { .. } => Opcode::IndexQuery,
        }
    }

    /// The table a data request names.
    pub fn table(&self) -> Option<&'a str> {
        match *self {
            Request::Get { table, .. }
            | Request::Write { table, .. }
            | Request::Execute { table, .. }
            | Request::MultiGet { table, .. }
            | Request::MultiDelete { table, .. }
            | Request::Scan { table, .. }
            | Request::IndexQuery { table, .. } => Some(table),
            Request::Describe { table } => Some(table),
            _ => None,
        }
    }

    /// Decodes the body of a request with opcode `opcode`; every byte must be used.
    pub fn decode(opcode: Opcode, body: &'a [u8]) -> WireResult<Request<'a>> {
        let mut r = Reader::new(body);
        let req = match opcode {
            Opcode::Ping => Request::Ping,
            Opcode::Hello => Request::Hello,
            Opcode::Stats => Request::Stats,
            Opcode::Ddl => Request::Ddl { text: r.text("DDL text")? },
            Opcode::Describe => Request::Describe { table: r.name("table")? },
            Opcode::Get => Request::Get {
                table: r.name("table")?,
                key: FieldList::read(&mut r)?,
                versions: read_versions(&mut r)?,
            },
            Opcode::Put | Opcode::Update | Opcode::Delete => {
                let table = r.name("table")?;
                let body = read_write_body(&mut r, opcode)?;
                Request::Write { table, body, options: read_write_options(&mut r)? }
            }
            Opcode::Execute => read_execute(&mut r)?,
            Opcode::MultiGet => {
                Request::MultiGet { table: r.name("table")?, range: read_range(&mut r)? }
            }
            Opcode::MultiDelete => {
                Request::MultiDelete { table: r.name("table")?, range: read_range(&mut r)? }
            }
            Opcode::Scan => Request::Scan { table: r.name("table")?, range: read_range(&mut r)? },
            Opcode::IndexQuery => {
                Request::IndexQuery { table: r.name("table")?, query: read_index_query(&mut r)? }
            }
        };
        r.finish()?;
        Ok(req)
    }

    /// Appends the body to `w`.
    pub fn encode(&self, w: &mut Writer) {
        match self {
            Request::Ping | Request::Hello | Request::Stats => {}
            Request::Ddl { text } => w.bytes(text.as_bytes()),
            Request::Describe { table } => w.name(table),
            Request::Get { table, key, versions } => {
                w.name(table);
                key.write(w);
                write_versions(w, *versions);
            }
            Request::Write { table, body, options } => {
                w.name(table);
                write_write_body(w, body);
                write_write_options(w, options);
            }
            Request::Execute { table, abort_on_failure, ops } => {
                w.name(table);
                w.u8(u8::from(*abort_on_failure));
                assert!(ops.len() <= EXECUTE_OPS_MAX, "more than EXECUTE_OPS_MAX operations");
                w.u16(ops.len() as u16);
                for (body, options) in ops {
                    w.u8(body.opcode() as u8);
                    write_write_body(w, body);
                    write_write_options(w, options);
                }
            }
            Request::MultiGet { table, range }
            | Request::MultiDelete { table, range }
            | Request::Scan { table, range } => {
                w.name(table);
                write_range(w, range);
            }
            Request::IndexQuery { table, query } => {
                w.name(table);
                write_index_query(w, query);
            }
        }
    }
}

/// The durability a write request asks for (header flag bits 1-2).
pub fn durability_of(flags: Flags) -> Result<Durability, u8> {
    match flags.durability_code() {
        0 => Ok(Durability::Sync),
        1 => Ok(Durability::WriteNoSync),
        2 => Ok(Durability::NoSync),
        other => Err(other),
    }
}

/// The header flags of a request with this durability.
pub fn durability_flags(durability: Durability) -> Flags {
    let code = match durability {
        Durability::Sync => 0,
        Durability::WriteNoSync => 1,
        Durability::NoSync => 2,
    };
    Flags(code << Flags::DURABILITY_SHIFT)
}

fn bad(at: usize, what: &'static str, value: u64) -> WireError {
    WireError::BadEnum { at, what, value }
}

fn read_versions(r: &mut Reader<'_>) -> WireResult<VersionSelect> {
    let at = r.position();
    Ok(match r.u8("version selection")? {
        0 => VersionSelect::Newest,
        1 => VersionSelect::Latest(r.u32("versions")?),
        2 => VersionSelect::Range {
            from: r.u64("version range start")?,
            to: r.u64("version range end")?,
            max: r.u32("versions")?,
        },
        other => return Err(bad(at, "version selection", u64::from(other))),
    })
}

fn write_versions(w: &mut Writer, v: VersionSelect) {
    match v {
        VersionSelect::Newest => w.u8(0),
        VersionSelect::Latest(n) => {
            w.u8(1);
            w.u32(n);
        }
        VersionSelect::Range { from, to, max } => {
            w.u8(2);
            w.u64(from);
            w.u64(to);
            w.u32(max);
        }
    }
}

/// A Get or Put body read in one pass, for a caller that consumes each field as it is read (the
/// node's inline put, `node/src/inline.rs`, and its look-ahead of Gets, `node/src/frame_batch.rs`):
/// the table name, then the key's or row's pairs one at a time, then what follows them (a Get's
/// version selection, a Put's write options). It accepts exactly the bodies [`Request::decode`]
/// accepts for [`Opcode::Get`] and [`Opcode::Put`] and yields the same table, pairs and the rest,
/// but reads each pair once: decoding a [`FieldList`] walks it to check it and iterating walks it
/// again.
#[derive(Debug, Clone)]
pub struct FieldsReader<'a> {
    r: Reader<'a>,
    /// Pairs not read yet.
    left: usize,
}

impl<'a> FieldsReader<'a> {
    /// Reads the table name and the field count.
    pub fn new(body: &'a [u8]) -> WireResult<(&'a str, FieldsReader<'a>)> {
        let mut r = Reader::new(body);
        let table = r.name("table")?;
        let left = crate::fields::read_count(&mut r)?;
        Ok((table, FieldsReader { r, left }))
    }

    /// The next `(name, value)` pair, None after the last.
    pub fn next_pair(&mut self) -> WireResult<Option<(&'a str, ValueRef<'a>)>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let name = self.r.name("field name")?;
        let value = self.r.value()?;
        Ok(Some((name, value)))
    }

    /// A Put's end: reads the pairs left, then the write options, and checks that the body
    /// ends there.
    pub fn finish_put(mut self) -> WireResult<WriteOptions> {
        self.skip_pairs()?;
        let options = read_write_options(&mut self.r)?;
        self.r.finish()?;
        Ok(options)
    }

    /// A Get's end: reads the pairs left, then the version selection, and checks that the body
    /// ends there.
    pub fn finish_get(mut self) -> WireResult<VersionSelect> {
        self.skip_pairs()?;
        let versions = read_versions(&mut self.r)?;
        self.r.finish()?;
        Ok(versions)
    }

    fn skip_pairs(&mut self) -> WireResult<()> {
        while self.next_pair()?.is_some() {}
        Ok(())
    }
}

fn read_write_body<'a>(r: &mut Reader<'a>, opcode: Opcode) -> WireResult<WriteBody<'a>> {
    Ok(match opcode {
        Opcode::Put => WriteBody::Put { row: FieldList::read(r)? },
        Opcode::Update => WriteBody::Update { key: FieldList::read(r)?, set: FieldList::read(r)? },
        _ => WriteBody::Delete { key: FieldList::read(r)? },
    })
}

fn write_write_body(w: &mut Writer, body: &WriteBody<'_>) {
    match body {
        WriteBody::Put { row } => row.write(w),
        WriteBody::Update { key, set } => {
            key.write(w);
            set.write(w);
        }
        WriteBody::Delete { key } => key.write(w),
    }
}

/// Bytes of a write's options: condition (1), token (8), option bits (1), version (8), TTL (8).
const WRITE_OPTIONS_BYTES: usize = 26;

fn read_write_options(r: &mut Reader<'_>) -> WireResult<WriteOptions> {
    // The common case in one bounds check: no condition and known option bits. Anything else,
    // including every error, is read field by field below.
    if let Some(b) = r.peek::<WRITE_OPTIONS_BYTES>() {
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let (kind, token, bits) = (b[0], u64_at(1), b[9]);
        if kind == 0 && token == 0 && bits & !(OPT_VERSION | OPT_TTL | OPT_RETURN_ROW) == 0 {
            let (version, ttl) = (u64_at(10), u64_at(18));
            r.take(WRITE_OPTIONS_BYTES, "write options")?;
            return Ok(WriteOptions {
                condition: Condition::Always,
                version: (bits & OPT_VERSION != 0).then_some(version),
                ttl_seconds: (bits & OPT_TTL != 0).then_some(ttl),
                return_row: bits & OPT_RETURN_ROW != 0,
            });
        }
    }
    let at = r.position();
    let kind = r.u8("condition")?;
    let token = r.u64("condition token")?;
    let condition = match kind {
        0 => Condition::Always,
        1 => Condition::IfAbsent,
        2 => Condition::IfPresent,
        3 => Condition::IfVersion(RowToken(token)),
        other => return Err(bad(at, "condition", u64::from(other))),
    };
    if kind != 3 && token != 0 {
        return Err(bad(at + 1, "condition token without IfVersion", token));
    }
    let at = r.position();
    let bits = r.u8("write options")?;
    if bits & !(OPT_VERSION | OPT_TTL | OPT_RETURN_ROW) != 0 {
        return Err(bad(at, "write option bits", u64::from(bits)));
    }
    let version = r.u64("version")?;
    let ttl = r.u64("TTL seconds")?;
    Ok(WriteOptions {
        condition,
        version: (bits & OPT_VERSION != 0).then_some(version),
        ttl_seconds: (bits & OPT_TTL != 0).then_some(ttl),
        return_row: bits & OPT_RETURN_ROW != 0,
    })
}

fn write_write_options(w: &mut Writer, o: &WriteOptions) {
    let (kind, token) = match o.condition {
        Condition::Always => (0, 0),
        Condition::IfAbsent => (1, 0),
        Condition::IfPresent => (2, 0),
        Condition::IfVersion(t) => (3, t.0),
    };
    w.u8(kind);
    w.u64(token);
    let mut bits = 0;
    if o.version.is_some() {
        bits |= OPT_VERSION;
    }
    if o.ttl_seconds.is_some() {
        bits |= OPT_TTL;
    }
    if o.return_row {
        bits |= OPT_RETURN_ROW;
    }
    w.u8(bits);
    w.u64(o.version.unwrap_or(0));
    w.u64(o.ttl_seconds.unwrap_or(0));
}

fn read_execute<'a>(r: &mut Reader<'a>) -> WireResult<Request<'a>> {
    let table = r.name("table")?;
    let at = r.position();
    let abort_on_failure = match r.u8("abort flag")? {
        0 => false,
        1 => true,
        other => return Err(bad(at, "abort flag", u64::from(other))),
    };
    let at = r.position();
    let count = usize::from(r.u16("operation count")?);
    if count > EXECUTE_OPS_MAX {
        return Err(WireError::TooManyOperations { at, count });
    }
    // Each operation takes at least 20 bytes, so the count is bounded by the body as well.
    let mut ops = Vec::with_capacity(count.min(r.left() / 20));
    for _ in 0..count {
        let at = r.position();
        let opcode = match r.u8("operation")? {
            17 => Opcode::Put,
            18 => Opcode::Update,
            19 => Opcode::Delete,
            other => return Err(bad(at, "operation (17 Put, 18 Update, 19 Delete)", other.into())),
        };
        let body = read_write_body(r, opcode)?;
        ops.push((body, read_write_options(r)?));
    }
    Ok(Request::Execute { table, abort_on_failure, ops })
}

fn read_bound<'a>(
    r: &mut Reader<'a>,
    present: bool,
    inclusive: bool,
) -> WireResult<Option<Bound<'a>>> {
    if !present {
        return Ok(None);
    }
    Ok(Some(Bound { value: r.value()?, inclusive }))
}

/// The bound bits of a range (0: no range), checked.
fn read_bound_bits(r: &mut Reader<'_>) -> WireResult<u8> {
    let at = r.position();
    let bounds = r.u8("range bounds")?;
    if bounds & !BOUND_BITS != 0 || (bounds != 0 && bounds & BOUND_FIELD == 0) {
        return Err(bad(at, "range bound bits", u64::from(bounds)));
    }
    Ok(bounds)
}

/// The start and end of a range whose bound bits are `bounds`.
type Ends<'a> = (Option<Bound<'a>>, Option<Bound<'a>>);

fn read_ends<'a>(r: &mut Reader<'a>, bounds: u8) -> WireResult<Ends<'a>> {
    let start = read_bound(r, bounds & BOUND_START != 0, bounds & BOUND_START_INCLUSIVE != 0)?;
    let end = read_bound(r, bounds & BOUND_END != 0, bounds & BOUND_END_INCLUSIVE != 0)?;
    Ok((start, end))
}

/// The bound bits of a range with these ends.
fn bound_bits(start: &Option<Bound<'_>>, end: &Option<Bound<'_>>) -> u8 {
    let bits = |bound: &Option<Bound<'_>>, has: u8, incl: u8| match bound {
        None => 0,
        Some(b) => has | if b.inclusive { incl } else { 0 },
    };
    BOUND_FIELD
        | bits(start, BOUND_START, BOUND_START_INCLUSIVE)
        | bits(end, BOUND_END, BOUND_END_INCLUSIVE)
}

fn read_resume<'a>(r: &mut Reader<'a>) -> WireResult<Option<&'a [u8]>> {
    let at = r.position();
    match r.u8("resume flag")? {
        0 => Ok(None),
        1 => Ok(Some(r.bytes("resume token")?)),
        other => Err(bad(at, "resume flag", u64::from(other))),
    }
}

fn write_resume(w: &mut Writer, resume: Option<&[u8]>) {
    match resume {
        None => w.u8(0),
        Some(token) => {
            w.u8(1);
            w.bytes(token);
        }
    }
}

fn read_range<'a>(r: &mut Reader<'a>) -> WireResult<RangeBody<'a>> {
    let key = FieldList::read(r)?;
    let bounds = read_bound_bits(r)?;
    let range = if bounds == 0 {
        None
    } else {
        let field = r.name("range field")?;
        let (start, end) = read_ends(r, bounds)?;
        Some((field, start, end))
    };
    let at = r.position();
    let flags = r.u8("range flags")?;
    if flags & !(RANGE_REVERSE | RANGE_ALLOW_FULL_SCAN) != 0 {
        return Err(bad(at, "range flag bits", u64::from(flags)));
    }
    let limit = r.u32("limit")?;
    let resume = read_resume(r)?;
    Ok(RangeBody {
        key,
        range,
        reverse: flags & RANGE_REVERSE != 0,
        allow_full_scan: flags & RANGE_ALLOW_FULL_SCAN != 0,
        limit,
        resume,
        versions: read_versions(r)?,
    })
}

fn write_range(w: &mut Writer, b: &RangeBody<'_>) {
    b.key.write(w);
    match &b.range {
        None => w.u8(0),
        Some((field, start, end)) => {
            w.u8(bound_bits(start, end));
            w.name(field);
            for b in [start, end].into_iter().flatten() {
                w.value(&b.value);
            }
        }
    }
    let mut flags = 0;
    if b.reverse {
        flags |= RANGE_REVERSE;
    }
    if b.allow_full_scan {
        flags |= RANGE_ALLOW_FULL_SCAN;
    }
    w.u8(flags);
    w.u32(b.limit);
    write_resume(w, b.resume);
    write_versions(w, b.versions);
}

fn read_index_query<'a>(r: &mut Reader<'a>) -> WireResult<IndexBody<'a>> {
    let index = r.name("index")?;
    let at = r.position();
    let count = usize::from(r.u8("equal value count")?);
    if count > INDEX_FIELDS_MAX {
        return Err(WireError::TooManyIndexValues { at, count });
    }
    let mut equal = Vec::with_capacity(count);
    for _ in 0..count {
        equal.push(r.value()?);
    }
    let bounds = read_bound_bits(r)?;
    let range = if bounds == 0 { None } else { Some(read_index_ends(r, bounds)?) };
    let at = r.position();
    let flags = r.u8("index query flags")?;
    if flags & !(INDEX_REVERSE | INDEX_KEYS_ONLY) != 0 {
        return Err(bad(at, "index query flag bits", u64::from(flags)));
    }
    Ok(IndexBody {
        index,
        equal,
        range,
        reverse: flags & INDEX_REVERSE != 0,
        keys_only: flags & INDEX_KEYS_ONLY != 0,
        limit: r.u32("limit")?,
        resume: read_resume(r)?,
    })
}

/// The ends of an index query's range: as a Range's, but NULL is never a bound (NULL sorts
/// before every value and is asked for with an equal value instead).
fn read_index_ends<'a>(r: &mut Reader<'a>, bounds: u8) -> WireResult<Ends<'a>> {
    let at = r.position();
    let ends = read_ends(r, bounds)?;
    let null = |b: &Option<Bound<'_>>| matches!(b, Some(Bound { value: ValueRef::Null, .. }));
    if null(&ends.0) || null(&ends.1) {
        return Err(bad(at, "index range bound of type NULL (tag)", 0));
    }
    Ok(ends)
}

fn write_index_query(w: &mut Writer, q: &IndexBody<'_>) {
    w.name(q.index);
    assert!(q.equal.len() <= INDEX_FIELDS_MAX, "more than INDEX_FIELDS_MAX equal values");
    w.u8(q.equal.len() as u8);
    for value in &q.equal {
        w.value(value);
    }
    match &q.range {
        None => w.u8(0),
        Some((start, end)) => {
            w.u8(bound_bits(start, end));
            for b in [start, end].into_iter().flatten() {
                w.value(&b.value);
            }
        }
    }
    let mut flags = 0;
    if q.reverse {
        flags |= INDEX_REVERSE;
    }
    if q.keys_only {
        flags |= INDEX_KEYS_ONLY;
    }
    w.u8(flags);
    w.u32(q.limit);
    write_resume(w, q.resume);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::FieldsBuf;

    fn round_trip(req: &Request<'_>) {
        let mut w = Writer::default();
        req.encode(&mut w);
        let got = Request::decode(req.opcode(), &w.buf).expect("decodes");
        assert_eq!(&got, req);
        for cut in 0..w.buf.len() {
            assert!(Request::decode(req.opcode(), &w.buf[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = w.buf.clone();
        longer.push(0);
        assert!(Request::decode(req.opcode(), &longer).is_err(), "trailing byte accepted");
    }

    #[test]
    fn every_request_round_trips_and_every_truncation_fails() {
        let key = FieldsBuf::of([("id", ValueRef::Long(7))]);
        let row = FieldsBuf::of([("id", ValueRef::Long(7)), ("name", ValueRef::String("x"))]);
        let set = FieldsBuf::of([("name", ValueRef::Null)]);
        let options = WriteOptions {
            condition: Condition::IfVersion(RowToken(99)),
            version: Some(5),
            ttl_seconds: Some(60),
            return_row: true,
        };
        let mut range = RangeBody::new(key.list(), 10);
        range.range = Some((
            "ts",
            Some(Bound { value: ValueRef::Long(1), inclusive: true }),
            Some(Bound { value: ValueRef::Long(9), inclusive: false }),
        ));
        range.reverse = true;
        range.resume = Some(b"resume");
        range.versions = VersionSelect::Range { from: 1, to: 2, max: 3 };
        let mut open = RangeBody::new(FieldList::empty(), 5);
        open.allow_full_scan = true;
        open.range = Some(("ts", None, Some(Bound { value: ValueRef::Long(3), inclusive: true })));
        let requests = [
            Request::Ping,
            Request::Hello,
            Request::Stats,
            Request::Ddl { text: "CREATE TABLE t (id LONG, PRIMARY KEY (id))" },
            Request::Describe { table: "t" },
            Request::Get { table: "t", key: key.list(), versions: VersionSelect::Latest(3) },
            Request::Write {
                table: "t",
                body: WriteBody::Put { row: row.list() },
                options: WriteOptions::default(),
            },
            Request::Write {
                table: "t",
                body: WriteBody::Update { key: key.list(), set: set.list() },
                options,
            },
            Request::Write {
                table: "t",
                body: WriteBody::Delete { key: key.list() },
                options: WriteOptions { condition: Condition::IfPresent, ..Default::default() },
            },
            Request::Execute {
                table: "t",
                abort_on_failure: true,
                ops: vec![
                    (WriteBody::Put { row: row.list() }, WriteOptions::default()),
                    (WriteBody::Delete { key: key.list() }, options),
                ],
            },
            Request::MultiGet { table: "t", range },
            Request::MultiDelete { table: "t", range: RangeBody::new(key.list(), 100) },
            Request::Scan { table: "t", range: open },
        ];
        for req in &requests {
            round_trip(req);
        }
    }

    #[test]
    fn bad_enumerations_are_wire_errors() {
        let mut w = Writer::default();
        w.name("t");
        FieldList::empty().write(&mut w);
        w.u8(7); // no such version selection
        let err = Request::decode(Opcode::Get, &w.buf).expect_err("bad selection");
        assert!(err.to_string().contains("version selection"), "{err}");

        let mut w = Writer::default();
        w.name("t");
        FieldList::empty().write(&mut w);
        w.u8(1); // IfAbsent ...
        w.u64(42); // ... with a token
        w.u8(0);
        w.u64(0);
        w.u64(0);
        let err = Request::decode(Opcode::Delete, &w.buf).expect_err("token without IfVersion");
        assert!(err.to_string().contains("IfVersion"), "{err}");
    }

    /// An Execute over `EXECUTE_OPS_MAX` operations is refused by its count, before any
    /// operation is read, with the count and the limit.
    #[test]
    fn an_execute_over_the_operation_limit_names_it() {
        let mut w = Writer::default();
        w.name("t");
        w.u8(0);
        w.u16(EXECUTE_OPS_MAX as u16 + 1);
        let err = Request::decode(Opcode::Execute, &w.buf).expect_err("too many operations");
        assert_eq!(err, WireError::TooManyOperations { at: 3, count: 1001 });
        assert_eq!(err.code(), 710);
        let message = err.to_string();
        assert!(message.ends_with("is 1001; the limit is 1000 (EXECUTE_OPS_MAX)"), "{message}");
    }

    #[test]
    fn index_queries_round_trip_and_every_truncation_fails() {
        let requests = [
            Request::IndexQuery { table: "t", query: IndexBody::new("by_city", vec![], 10) },
            Request::IndexQuery {
                table: "t",
                query: IndexBody {
                    index: "by_city_age",
                    equal: vec![ValueRef::String("Oslo"), ValueRef::Null],
                    range: Some((
                        Some(Bound { value: ValueRef::Integer(3), inclusive: false }),
                        Some(Bound { value: ValueRef::Integer(9), inclusive: true }),
                    )),
                    reverse: true,
                    keys_only: true,
                    limit: 7,
                    resume: Some(b"entry"),
                },
            },
            Request::IndexQuery {
                table: "t",
                query: IndexBody {
                    range: Some((None, None)),
                    ..IndexBody::new("i", vec![ValueRef::Long(1)], 1)
                },
            },
        ];
        for req in &requests {
            round_trip(req);
        }
    }

    /// An IndexQuery with more equal values than an index has fields is refused by its count,
    /// before any value is read, naming the limit; a NULL range bound is refused too.
    #[test]
    fn index_query_counts_and_null_bounds_are_refused() {
        let mut w = Writer::default();
        w.name("t");
        w.name("i");
        w.u8(INDEX_FIELDS_MAX as u8 + 1);
        let err = Request::decode(Opcode::IndexQuery, &w.buf).expect_err("too many values");
        assert_eq!(err, WireError::TooManyIndexValues { at: 4, count: INDEX_FIELDS_MAX + 1 });
        assert_eq!(err.code(), 710);
        assert!(err.to_string().contains("the limit is 8 (INDEX_FIELDS_MAX"), "{err}");

        let mut w = Writer::default();
        w.name("t");
        w.name("i");
        w.u8(0);
        w.u8(BOUND_FIELD | BOUND_START);
        w.value(&ValueRef::Null);
        w.u8(0);
        w.u32(10);
        w.u8(0);
        let err = Request::decode(Opcode::IndexQuery, &w.buf).expect_err("NULL bound");
        assert!(err.to_string().contains("NULL"), "{err}");
    }

    /// The IndexQuery example of docs/PROTOCOL.md: the document's bytes are the encoder's.
    #[test]
    fn documented_index_query_example() {
        let mut query = IndexBody::new("city_age", vec![ValueRef::String("Oslo")], 100);
        query.range = Some((Some(Bound { value: ValueRef::Integer(30), inclusive: false }), None));
        let mut w = Writer::default();
        Request::IndexQuery { table: "people", query }.encode(&mut w);
        let hex: Vec<String> = w.buf.iter().map(|b| format!("{b:02X}")).collect();
        let doc = include_str!("../../docs/PROTOCOL.md");
        let documented = "06 70 65 6F 70 6C 65  08 63 69 74 79 5F 61 67 65  01  05 04 00 00 00 4F 73 6C 6F  11  01 1E 00 00 00  00  64 00 00 00  00";
        assert!(doc.contains(documented), "the example moved in PROTOCOL.md");
        assert_eq!(hex.join(" "), documented.split_whitespace().collect::<Vec<_>>().join(" "));
    }

    /// The Get example of docs/PROTOCOL.md ("Requests"): the document's bytes are the encoder's.
    #[test]
    fn documented_get_example() {
        let key = FieldsBuf::of([("id", ValueRef::Long(7))]);
        let mut w = Writer::default();
        Request::Get { table: "users", key: key.list(), versions: VersionSelect::Newest }
            .encode(&mut w);
        let hex: Vec<String> = w.buf.iter().map(|b| format!("{b:02X}")).collect();
        let doc = include_str!("../../docs/PROTOCOL.md");
        let documented = "05 75 73 65 72 73  01 00  02 69 64  02 07 00 00 00 00 00 00 00  00";
        assert!(doc.contains(documented), "the example moved in PROTOCOL.md");
        assert_eq!(hex.join(" "), documented.split_whitespace().collect::<Vec<_>>().join(" "));
    }

    #[test]
    fn durability_flags_round_trip() {
        for d in [Durability::Sync, Durability::WriteNoSync, Durability::NoSync] {
            assert_eq!(durability_of(durability_flags(d)), Ok(d));
        }
        assert_eq!(durability_of(Flags(3 << Flags::DURABILITY_SHIFT)), Err(3));
    }

    /// `body` whole, cut at every length, with a trailing byte, and with each byte flipped: the
    /// bodies two decoders must agree on.
    fn mangled(body: &[u8]) -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = (0..=body.len()).map(|cut| body[..cut].to_vec()).collect();
        all.push([body, &[0]].concat());
        for at in 0..body.len() {
            let mut bad = body.to_vec();
            bad[at] ^= 0xFF;
            all.push(bad);
        }
        all
    }

    /// Checks that the two decoders agree on every body: the same value or the same error, and
    /// that both outcomes occur.
    fn assert_agree<'b, T: PartialEq + std::fmt::Debug>(
        bodies: &'b [Vec<u8>],
        decoded: impl Fn(&'b [u8]) -> WireResult<T>,
        read: impl Fn(&'b [u8]) -> WireResult<T>,
    ) {
        let (mut accepted, mut refused) = (0, 0);
        for body in bodies {
            match (decoded(body), read(body)) {
                (Ok(a), Ok(b)) => {
                    assert_eq!(a, b, "the same request for {body:?}");
                    accepted += 1;
                }
                (Err(a), Err(b)) => {
                    assert_eq!(a, b, "the same error for {body:?}");
                    refused += 1;
                }
                (a, b) => panic!("decode {a:?} but FieldsReader {b:?} for {body:?}"),
            }
        }
        assert!(accepted >= 2 && refused > 20, "{accepted} accepted, {refused} refused");
    }

    /// A Put's table, pairs and options.
    type PutParts<'a> = (&'a str, Vec<(&'a str, ValueRef<'a>)>, WriteOptions);

    /// What a [`FieldsReader`] makes of `body`, the first `take` pairs read one by one:
    /// the same shape as `Request::decode`'s Put.
    fn read_put(body: &[u8], take: usize) -> WireResult<PutParts<'_>> {
        let (table, mut r) = FieldsReader::new(body)?;
        let mut pairs = Vec::new();
        while pairs.len() < take {
            let Some(pair) = r.next_pair()? else { break };
            pairs.push(pair);
        }
        let skipped = r.clone();
        let options = r.finish_put()?;
        // The pairs `finish_put` skipped, for the comparison.
        let mut rest = skipped;
        while let Some(pair) = rest.next_pair()? {
            pairs.push(pair);
        }
        Ok((table, pairs, options))
    }

    #[test]
    fn fields_reader_accepts_and_yields_what_decode_does_for_a_put() {
        let row = FieldsBuf::of([
            ("id", ValueRef::Long(7)),
            ("name", ValueRef::String("x")),
            ("gone", ValueRef::Null),
        ]);
        let options = WriteOptions {
            condition: Condition::IfVersion(RowToken(99)),
            version: Some(5),
            ttl_seconds: Some(60),
            return_row: true,
        };
        let mut bodies = Vec::new();
        // The condition takes the options' field-by-field read, the others its one-check read.
        let unconditional = WriteOptions { condition: Condition::Always, ..options };
        for (row, options) in [
            (row.list(), options),
            (row.list(), unconditional),
            (FieldList::empty(), WriteOptions::default()),
        ] {
            let mut w = Writer::default();
            Request::Write { table: "t", body: WriteBody::Put { row }, options }.encode(&mut w);
            bodies.extend(mangled(&w.buf));
        }
        let decoded = |body| {
            Ok(match Request::decode(Opcode::Put, body)? {
                Request::Write { table, body: WriteBody::Put { row }, options } => {
                    (table, row.iter().collect(), options)
                }
                other => panic!("a Put body decoded as {other:?}"),
            })
        };
        // Some pairs read one by one, the rest skipped by `finish_put`.
        assert_agree(&bodies, decoded, |body| read_put(body, body.len() % 4));
    }

    #[test]
    fn fields_reader_accepts_and_yields_what_decode_does_for_a_get() {
        let key = FieldsBuf::of([("id", ValueRef::Long(7)), ("at", ValueRef::String("x"))]);
        let mut bodies = Vec::new();
        for versions in [VersionSelect::Newest, VersionSelect::Range { from: 1, to: 2, max: 3 }] {
            let mut w = Writer::default();
            Request::Get { table: "t", key: key.list(), versions }.encode(&mut w);
            bodies.extend(mangled(&w.buf));
        }
        let read_get = |body| -> WireResult<(&str, Vec<_>, VersionSelect)> {
            let (table, mut r) = FieldsReader::new(body)?;
            let mut pairs = Vec::new();
            while let Some(pair) = r.next_pair()? {
                pairs.push(pair);
            }
            Ok((table, pairs, r.finish_get()?))
        };
        let decoded = |body| {
            Ok(match Request::decode(Opcode::Get, body)? {
                Request::Get { table, key, versions } => (table, key.iter().collect(), versions),
                other => panic!("a Get body decoded as {other:?}"),
            })
        };
        assert_agree(&bodies, decoded, read_get);
    }
}
