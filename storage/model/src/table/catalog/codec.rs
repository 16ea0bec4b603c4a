//! The catalog file's bytes: a 32-byte header (magic, format version, counts, CRC32C of the body
//! and of the header) and a body of length-prefixed table records. `docs/FORMAT.md` ("Catalog
//! file") draws it byte by byte.
//!
//! Decoding trusts nothing: every length is checked against the bytes that remain before it is
//! used, nothing is allocated from a length read from the file, and each decoded table goes
//! through [`TableSchemaBuilder::build`] again, so a schema that loads is as valid as one that was
//! created. Errors are strings saying what is wrong and where; the caller adds the file name.

use std::collections::BTreeSet;

use super::contents::{Catalog, CatalogTable};
use super::indexes::check_loaded_index;
use crate::table::index_def::{IndexDef, IndexId, IndexState};
use crate::table::limits::INDEXES_PER_TABLE_MAX;
use crate::table::{FieldType, Name, TableId, TableSchema, TableSchemaBuilder};

/// `"RINGCAT\0"`.
pub const CATALOG_MAGIC: [u8; 8] = *b"RINGCAT\0";
/// 2: each table record ends with its secondary indexes. Version 1 files (no index section) are
/// read as tables without indexes.
pub const CATALOG_FORMAT_VERSION: u32 = 2;
/// The format before secondary indexes, still read.
const CATALOG_FORMAT_NO_INDEXES: u32 = 1;
pub const CATALOG_HEADER_BYTES: usize = 32;

/// Field type tags; 0 is never written so that a zeroed region does not decode as a type.
const TYPE_TAGS: [(u8, &str); 9] = [
    (1, "INTEGER"),
    (2, "LONG"),
    (3, "FLOAT"),
    (4, "DOUBLE"),
    (5, "STRING"),
    (6, "BINARY"),
    (7, "BOOLEAN"),
    (8, "ENUM"),
    (9, "TIMESTAMP"),
];

/// The whole file content (without the DMA padding the writer adds).
pub fn encode(catalog: &Catalog) -> Vec<u8> {
    let mut body = Vec::new();
    for table in catalog.by_id.values() {
        encode_table(&mut body, table);
    }
    let body_len = u32::try_from(body.len()).expect("catalog body fits a u32 length");
    let table_count = u32::try_from(catalog.by_id.len()).expect("table count fits a u32");
    let mut out = Vec::with_capacity(CATALOG_HEADER_BYTES + body.len());
    out.extend_from_slice(&CATALOG_MAGIC);
    out.extend_from_slice(&CATALOG_FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&table_count.to_le_bytes());
    out.extend_from_slice(&catalog.next_id.to_le_bytes());
    out.extend_from_slice(&body_len.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    let header_crc = crc32c::crc32c(&out);
    out.extend_from_slice(&header_crc.to_le_bytes());
    assert_eq!(out.len(), CATALOG_HEADER_BYTES);
    out.extend_from_slice(&body);
    out
}

/// One table record (the catalog body's unit, `docs/FORMAT.md` "Catalog file"), also the body
/// of the protocol's Describe response.
pub fn encode_table_record(table: &CatalogTable) -> Vec<u8> {
    let mut out = Vec::new();
    encode_table(&mut out, table);
    out
}

/// Decodes and checks exactly one table record (no bytes may follow it).
pub fn decode_table_record(bytes: &[u8]) -> Result<CatalogTable, String> {
    let mut r = Reader { bytes, pos: 0 };
    let table = decode_table(&mut r, true)?;
    if r.pos != bytes.len() {
        return Err(format!("{} bytes after the table record", bytes.len() - r.pos));
    }
    Ok(table)
}

fn encode_table(out: &mut Vec<u8>, table: &CatalogTable) {
    let schema = &table.schema;
    let options = schema.options();
    out.extend_from_slice(&schema.id().0.to_le_bytes());
    out.extend_from_slice(&table.schema_version.to_le_bytes());
    put_str(out, schema.name().as_str());
    out.extend_from_slice(&options.max_versions.to_le_bytes());
    // TTL 0 is not a valid TTL (the builder requires 1..), so it can stand for "none".
    out.extend_from_slice(&options.ttl_seconds.unwrap_or(0).to_le_bytes());
    out.extend_from_slice(&options.max_version_offset_seconds.to_le_bytes());
    let field_count = u16::try_from(schema.fields().len()).expect("field count fits a u16");
    out.extend_from_slice(&field_count.to_le_bytes());
    for field in schema.fields() {
        put_str(out, field.name().as_str());
        put_type(out, field.ty());
    }
    out.push(schema.primary_key().len() as u8);
    for key in schema.primary_key() {
        let index = u16::try_from(key.field).expect("key field index fits a u16");
        out.extend_from_slice(&index.to_le_bytes());
        out.push(u8::from(key.desc));
    }
    out.push(schema.shard_key_len() as u8);
    encode_indexes(out, &table.indexes);
}

/// The index section of a table record: a count, then each index's id, name, state and fields.
fn encode_indexes(out: &mut Vec<u8>, indexes: &[IndexDef]) {
    out.push(u8::try_from(indexes.len()).expect("INDEXES_PER_TABLE_MAX fits a u8"));
    for index in indexes {
        out.extend_from_slice(&index.id().0.to_le_bytes());
        put_str(out, index.name().as_str());
        out.push(index.state().tag());
        out.push(u8::try_from(index.fields().len()).expect("INDEX_FIELDS_MAX fits a u8"));
        for &field in index.fields() {
            let field = u16::try_from(field).expect("field index fits a u16");
            out.extend_from_slice(&field.to_le_bytes());
        }
    }
}

fn put_type(out: &mut Vec<u8>, ty: &FieldType) {
    let tag = TYPE_TAGS.iter().find(|(_, name)| *name == ty.name()).map(|(tag, _)| *tag);
    out.push(tag.expect("every field type has a tag"));
    if let FieldType::Enum(values) = ty {
        let count = u32::try_from(values.len()).expect("ENUM value count fits a u32");
        out.extend_from_slice(&count.to_le_bytes());
        for value in values {
            put_str(out, value);
        }
    }
}

/// Names and ENUM values are checked names of at most 255 ASCII bytes.
fn put_str(out: &mut Vec<u8>, text: &str) {
    let len = u16::try_from(text.len()).expect("a checked name fits a u16 length");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(text.as_bytes());
}

/// Parses and checks a whole catalog file; the bytes after the body (DMA padding) are ignored.
pub fn decode(bytes: &[u8]) -> Result<Catalog, String> {
    let header = bytes.get(..CATALOG_HEADER_BYTES).ok_or_else(|| {
        format!("only {} bytes; the header is {CATALOG_HEADER_BYTES}", bytes.len())
    })?;
    let field = |at: usize| {
        u32::from_le_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]])
    };
    if header[..8] != CATALOG_MAGIC {
        return Err("bad magic (not a catalog file)".into());
    }
    if crc32c::crc32c(&header[..28]) != field(28) {
        return Err("header checksum mismatch".into());
    }
    let version = field(8);
    if version != CATALOG_FORMAT_VERSION && version != CATALOG_FORMAT_NO_INDEXES {
        return Err(format!(
            "format version {version} (this build reads {CATALOG_FORMAT_NO_INDEXES} and \
             {CATALOG_FORMAT_VERSION})"
        ));
    }
    let body_len = field(20) as usize;
    let body = bytes.get(CATALOG_HEADER_BYTES..).and_then(|rest| rest.get(..body_len)).ok_or_else(
        || format!("body of {body_len} bytes runs past the end of the {}-byte file", bytes.len()),
    )?;
    if crc32c::crc32c(body) != field(24) {
        return Err("body checksum mismatch".into());
    }
    decode_body(body, field(12), field(16), version == CATALOG_FORMAT_VERSION)
}

fn decode_body(
    body: &[u8],
    table_count: u32,
    next_id: u32,
    with_indexes: bool,
) -> Result<Catalog, String> {
    let mut catalog = Catalog { next_id, ..Catalog::default() };
    let mut r = Reader { bytes: body, pos: 0 };
    let mut index_ids = BTreeSet::new();
    for _ in 0..table_count {
        let start = r.pos;
        let table = decode_table(&mut r, with_indexes)
            .map_err(|e| format!("table record at body offset {start}: {e}"))?;
        check_index_ids(&table, next_id, &mut index_ids)
            .map_err(|e| format!("table record at body offset {start}: {e}"))?;
        catalog
            .insert_loaded(table)
            .map_err(|e| format!("table record at body offset {start}: {e}"))?;
    }
    if let Some(id) = index_ids.iter().find(|id| catalog.get_by_id(TableId(**id)).is_some()) {
        return Err(format!("id {id} is both a table's and an index's"));
    }
    if r.pos != body.len() {
        return Err(format!("{} bytes after the last table record", body.len() - r.pos));
    }
    Ok(catalog)
}

/// Index ids are given from the table id counter: each below `next_id`, none twice.
fn check_index_ids(
    table: &CatalogTable,
    next_id: u32,
    seen: &mut BTreeSet<u32>,
) -> Result<(), String> {
    for index in table.indexes() {
        let id = index.id().0;
        if id < super::FIRST_TABLE_ID || id >= next_id {
            return Err(format!("index id {id} is outside 1..{next_id}"));
        }
        if !seen.insert(id) {
            return Err(format!("index id {id} appears twice"));
        }
    }
    Ok(())
}

fn decode_table(r: &mut Reader<'_>, with_indexes: bool) -> Result<CatalogTable, String> {
    let id = TableId(r.u32()?);
    let schema_version = r.u32()?;
    let name = r.str()?;
    let mut builder = TableSchema::builder(id, name).max_versions(r.u32()?);
    let ttl = r.u64()?;
    if ttl != 0 {
        builder = builder.ttl_seconds(ttl);
    }
    builder = builder.max_version_offset_seconds(r.u64()?);
    let mut names = Vec::new();
    for _ in 0..r.u16()? {
        let field = r.str()?;
        builder = builder.field(field, decode_type(r)?);
        names.push(field);
    }
    builder = decode_keys(r, builder, &names)?;
    let schema = builder.build().map_err(|e| format!("invalid schema: {e}"))?;
    let mut table = CatalogTable { schema, schema_version, indexes: Vec::new() };
    if with_indexes {
        table.indexes = decode_indexes(r, &table)?;
    }
    Ok(table)
}

/// The index section of a table record, each index checked against the table.
fn decode_indexes(r: &mut Reader<'_>, table: &CatalogTable) -> Result<Vec<IndexDef>, String> {
    let count = usize::from(r.u8()?);
    if count > INDEXES_PER_TABLE_MAX {
        return Err(format!("{count} indexes, over INDEXES_PER_TABLE_MAX"));
    }
    let mut indexes: Vec<IndexDef> = Vec::with_capacity(count);
    for _ in 0..count {
        let id = IndexId(r.u32()?);
        let name = r.str()?;
        let name = Name::new(name).map_err(|e| format!("index name {name:?}: {e}"))?;
        let tag = r.u8()?;
        let state = IndexState::from_tag(tag)
            .ok_or_else(|| format!("index {name}: unknown state tag {tag}"))?;
        let mut fields = Vec::new();
        for _ in 0..r.u8()? {
            fields.push(usize::from(r.u16()?));
        }
        if indexes.iter().any(|i| i.name() == &name) {
            return Err(format!("index {name} appears twice"));
        }
        let def = IndexDef::new(name, id, fields, state);
        check_loaded_index(table, &def)?;
        indexes.push(def);
    }
    Ok(indexes)
}

fn decode_keys(
    r: &mut Reader<'_>,
    mut builder: TableSchemaBuilder,
    names: &[&str],
) -> Result<TableSchemaBuilder, String> {
    let mut key = Vec::new();
    for _ in 0..r.u8()? {
        let index = usize::from(r.u16()?);
        let name =
            *names.get(index).ok_or_else(|| format!("key field index {index} out of range"))?;
        let desc = match r.u8()? {
            0 => false,
            1 => true,
            other => return Err(format!("key DESC flag {other} is not 0 or 1")),
        };
        builder = builder.primary_key_field(name, desc);
        key.push(name);
    }
    let shard_len = usize::from(r.u8()?);
    let shard = key
        .get(..shard_len)
        .ok_or_else(|| format!("shard key length {shard_len} over the key length"))?;
    Ok(builder.shard_key(shard))
}

fn decode_type(r: &mut Reader<'_>) -> Result<FieldType, String> {
    Ok(match r.u8()? {
        1 => FieldType::Integer,
        2 => FieldType::Long,
        3 => FieldType::Float,
        4 => FieldType::Double,
        5 => FieldType::String,
        6 => FieldType::Binary,
        7 => FieldType::Boolean,
        8 => {
            // Each value takes at least 2 bytes, so a huge count fails on the bytes that remain
            // instead of allocating; the builder then checks the count against its limit.
            let mut values = Vec::new();
            for _ in 0..r.u32()? {
                values.push(r.str()?.to_owned());
            }
            FieldType::Enum(values)
        }
        9 => FieldType::Timestamp,
        other => return Err(format!("unknown field type tag {other}")),
    })
}

/// A cursor over the body that reports where it ran out.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, len: usize) -> Result<&'a [u8], String> {
        let out = self.bytes.get(self.pos..).and_then(|rest| rest.get(..len)).ok_or_else(|| {
            format!("{len} bytes at body offset {} run past the end of the body", self.pos)
        })?;
        self.pos += len;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn str(&mut self) -> Result<&'a str, String> {
        let len = usize::from(self.u16()?);
        let at = self.pos;
        std::str::from_utf8(self.take(len)?)
            .map_err(|_| format!("name at body offset {at} is not UTF-8"))
    }
}

/// Keeps the tag table and [`FieldType::name`] in step.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tag_decodes_to_its_type_name() {
        for (tag, name) in TYPE_TAGS {
            let bytes = [tag, 1, 0, 0, 0, 1, 0, b'a'];
            let ty = decode_type(&mut Reader { bytes: &bytes, pos: 0 }).expect("tag decodes");
            assert_eq!(ty.name(), name);
        }
    }

    #[test]
    fn huge_enum_count_fails_without_allocating() {
        let bytes = [8, 0xFF, 0xFF, 0xFF, 0xFF];
        let err = decode_type(&mut Reader { bytes: &bytes, pos: 0 }).expect_err("truncated");
        assert!(err.contains("run past the end"), "{err}");
    }
}
