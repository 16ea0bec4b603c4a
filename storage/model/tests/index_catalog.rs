//! Index DDL (issue 15): both grammars give the same statements, the catalog checks an index
//! (unknown field, a field twice, too many fields or indexes, a duplicate name) with errors that
//! say what was wrong, gives index ids from the table id counter, keeps the state, and its file
//! keeps indexes across a round trip (and reads the format without indexes).

use ringstore_model::ddl::{parse, parse_cli, parse_sql, Statement};
use ringstore_model::table::catalog::{decode_catalog, encode_catalog, CATALOG_HEADER_BYTES};
use ringstore_model::table::limits::{INDEXES_PER_TABLE_MAX, INDEX_FIELDS_MAX};
use ringstore_model::table::*;

const TABLE: &str = "CREATE TABLE people (team STRING, id LONG, name STRING, age INTEGER, \
                     active BOOLEAN, PRIMARY KEY (SHARD(team), id))";

fn n(name: &str) -> Name {
    Name::new(name).expect("succeeds")
}

fn one(text: &str) -> Statement {
    let mut statements = parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    assert_eq!(statements.len(), 1, "{statements:?}");
    statements.remove(0)
}

/// Runs each statement on `catalog`, as the engine does (without the file).
fn apply(catalog: &mut Catalog, text: &str) -> Result<Vec<Outcome>, CatalogError> {
    let mut outcomes = Vec::new();
    for statement in parse(text).expect("parses") {
        match catalog.plan(&statement)? {
            Plan::Unchanged(o) => outcomes.push(o),
            Plan::Change { next, outcome } => {
                *catalog = next;
                outcomes.push(outcome);
            }
        }
    }
    Ok(outcomes)
}

#[test]
fn sql_and_the_admin_cli_give_the_same_statements() {
    let create = Statement::CreateIndex {
        table: n("people"),
        index: n("by_age"),
        fields: vec![n("age"), n("name")],
        if_not_exists: false,
        wait: false,
    };
    assert_eq!(one("CREATE INDEX by_age ON people (age, name)"), create);
    assert_eq!(one("create index by_age on people(age,name);"), create);
    assert_eq!(one("plan add-index -name by_age -table people -field age -field name"), create);
    // -wait is for the client (it waits for READY); the statement is otherwise the same.
    let waiting = match create.clone() {
        Statement::CreateIndex { table, index, fields, if_not_exists, .. } => {
            Statement::CreateIndex { table, index, fields, if_not_exists, wait: true }
        }
        other => other,
    };
    assert_eq!(
        one("plan add-index -name by_age -table people -field age -field name -wait"),
        waiting
    );
    assert_eq!(
        parse_cli("plan add-index -table people -wait -field age -name by_age -field name")
            .expect("succeeds"),
        vec![waiting.clone()],
        "flags in any order, fields in their order"
    );
    let Statement::CreateIndex { if_not_exists, .. } =
        one("CREATE INDEX IF NOT EXISTS by_age ON people (age, name)")
    else {
        panic!()
    };
    assert!(if_not_exists);
    let Statement::CreateIndex { if_not_exists, .. } =
        one("plan add-index -name i -table people -field age -if-not-exists")
    else {
        panic!()
    };
    assert!(if_not_exists);

    let drop = Statement::DropIndex { table: n("people"), index: n("by_age"), if_exists: false };
    assert_eq!(one("DROP INDEX by_age ON people"), drop);
    assert_eq!(one("plan remove-index -name by_age -table people -wait"), drop);
    assert_eq!(
        one("DROP INDEX IF EXISTS by_age ON people"),
        Statement::DropIndex { table: n("people"), index: n("by_age"), if_exists: true }
    );
    assert_eq!(one("SHOW INDEXES ON people"), Statement::ShowIndexes { table: n("people") });
    // A script: the table, then its index.
    let script = "table create -name t\nadd-field -type LONG -name k\nadd-field -type BOOLEAN \
                  -name b\nprimary-key -field k\nexit\nplan add-table -name t -wait\n\
                  plan add-index -name by_b -table t -field b -wait\n";
    let statements = parse(script).expect("script parses");
    assert!(matches!(statements[0], Statement::CreateTable { .. }));
    assert!(
        matches!(&statements[1], Statement::CreateIndex { index, .. } if index.as_str() == "by_b")
    );
}

#[test]
fn syntax_and_name_errors_say_what_was_wrong() {
    let e = parse_sql("CREATE INDEX by_age people (age)").expect_err("an error");
    assert!(e.to_string().contains("ON"), "{e}");
    let e = parse_sql("CREATE INDEX by_age ON people").expect_err("an error");
    assert!(e.to_string().contains("indexed fields"), "{e}");
    let e = parse_sql("CREATE INDEX by_age ON people ()").expect_err("an error");
    assert!(e.to_string().contains("indexed field name"), "{e}");
    let e = parse_sql("CREATE VIEW v").expect_err("an error");
    assert!(e.to_string().contains("TABLE or INDEX"), "{e}");
    let e = parse_sql("SHOW INDEXES people").expect_err("an error");
    assert!(e.to_string().contains("ON"), "{e}");
    let e = parse_sql("CREATE INDEX \"bad-name\" ON people (age)").expect_err("an error");
    assert_eq!(e.code(), 101);
    assert!(e.to_string().contains("index name"), "{e}");
    let e = parse_cli("plan add-index -name i -table people").expect_err("an error");
    assert!(e.to_string().contains("-field"), "{e}");
    let e = parse_cli("plan add-index -name i -field a").expect_err("an error");
    assert!(e.to_string().contains("-table"), "{e}");
    let e =
        parse_cli("plan add-index -name i -table t -field a -colour red").expect_err("an error");
    assert!(e.to_string().contains("-if-not-exists"), "{e}");
}

#[test]
fn the_catalog_checks_an_index_and_gives_it_an_id_from_the_table_counter() {
    let mut catalog = Catalog::default();
    apply(&mut catalog, TABLE).expect("succeeds");
    let table = catalog.get("people").expect("succeeds").id();
    let outcomes =
        apply(&mut catalog, "CREATE INDEX by_age ON people (age, active)").expect("succeeds");
    let index = IndexId(table.0 + 1);
    assert_eq!(outcomes, [Outcome::IndexCreated { table, index, state: IndexState::Building }]);
    assert_eq!(catalog.next_id(), TableId(table.0 + 2), "tables and indexes share the counter");
    let def = catalog.get("people").expect("succeeds").index("by_age").expect("succeeds").clone();
    assert_eq!((def.fields(), def.state()), (&[3, 4][..], IndexState::Building));

    let err = |text: &str, catalog: &mut Catalog| apply(catalog, text).expect_err(text);
    let e = err("CREATE INDEX by_age ON people (name)", &mut catalog);
    assert_eq!(e.code(), 504);
    assert!(e.to_string().contains("BUILDING") && e.to_string().contains("IF NOT EXISTS"), "{e}");
    let same = apply(&mut catalog, "CREATE INDEX IF NOT EXISTS by_age ON people (name)")
        .expect("succeeds");
    assert_eq!(same, [Outcome::IndexAlreadyExists { table, index }]);
    let e = err("CREATE INDEX x ON people (nope)", &mut catalog);
    assert_eq!(e.code(), 202);
    assert!(e.to_string().contains("nope"), "{e}");
    let e = err("CREATE INDEX x ON people (age, name, age)", &mut catalog);
    assert_eq!(e.code(), 507);
    assert!(e.to_string().contains("age"), "{e}");
    let fields = ["age"; INDEX_FIELDS_MAX + 1].join(", ");
    let e = err(&format!("CREATE INDEX x ON people ({fields})"), &mut catalog);
    assert_eq!(e.code(), 508);
    assert!(e.to_string().contains("INDEX_FIELDS_MAX"), "{e}");
    assert_eq!(err("CREATE INDEX x ON nobody (age)", &mut catalog).code(), 201);
    let e = err("DROP INDEX nope ON people", &mut catalog);
    assert_eq!(e.code(), 505);
    assert!(e.to_string().contains("by_age"), "the message lists the indexes: {e}");
    assert_eq!(
        apply(&mut catalog, "DROP INDEX IF EXISTS nope ON people").expect("succeeds"),
        [Outcome::NoIndexDropped]
    );

    // Up to the limit, then 506.
    for i in 1..INDEXES_PER_TABLE_MAX {
        apply(&mut catalog, &format!("CREATE INDEX i{i} ON people (name)")).expect("succeeds");
    }
    let e = err("CREATE INDEX one_more ON people (name)", &mut catalog);
    assert_eq!(e.code(), 506);
    assert!(e.to_string().contains("INDEXES_PER_TABLE_MAX"), "{e}");

    // DROP INDEX: DELETING, until the engine forgets it.
    let dropped = apply(&mut catalog, "DROP INDEX by_age ON people").expect("succeeds");
    assert_eq!(dropped, [Outcome::IndexDropped { table, index }]);
    assert_eq!(
        catalog.get("people").expect("succeeds").index("by_age").expect("succeeds").state(),
        IndexState::Deleting
    );
    let forgotten = catalog.without_index(table, index).expect("succeeds");
    assert!(forgotten.get("people").expect("succeeds").index("by_age").is_none());
    assert!(catalog.without_index(table, IndexId(9999)).is_none());
    let Outcome::Indexes(shown) =
        &apply(&mut catalog, "SHOW INDEXES ON people").expect("succeeds")[0]
    else {
        panic!()
    };
    assert_eq!(shown.indexes().len(), INDEXES_PER_TABLE_MAX);
    // ALTER keeps the indexes.
    apply(&mut catalog, "ALTER TABLE people WITH VERSIONS 2").expect("succeeds");
    assert_eq!(catalog.get("people").expect("succeeds").indexes().len(), INDEXES_PER_TABLE_MAX);
}

#[test]
fn the_catalog_file_keeps_indexes_and_reads_the_format_without_them() {
    let mut catalog = Catalog::default();
    apply(&mut catalog, TABLE).expect("succeeds");
    apply(&mut catalog, "CREATE INDEX a ON people (age); CREATE INDEX b ON people (name, active)")
        .expect("succeeds");
    let t = catalog.get("people").expect("succeeds");
    let next = catalog
        .with_index_state(t.id(), t.index("a").expect("succeeds").id(), IndexState::Ready)
        .expect("succeeds");
    let bytes = encode_catalog(&next);
    assert_eq!(decode_catalog(&bytes).expect("succeeds"), next);

    // Format 1: the same table records without their index section.
    let mut plain = Catalog::default();
    apply(&mut plain, TABLE).expect("succeeds");
    let v2 = encode_catalog(&plain);
    let mut body = v2[CATALOG_HEADER_BYTES..].to_vec();
    assert_eq!(body.pop(), Some(0), "a table without indexes ends with an index count of 0");
    let mut v1 = v2[..CATALOG_HEADER_BYTES].to_vec();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    v1[20..24].copy_from_slice(&(body.len() as u32).to_le_bytes());
    v1[24..28].copy_from_slice(&crc32(&body).to_le_bytes());
    let header_crc = crc32(&v1[..28]);
    v1[28..32].copy_from_slice(&header_crc.to_le_bytes());
    v1.extend_from_slice(&body);
    assert_eq!(decode_catalog(&v1).expect("succeeds"), plain);

    // A bad state tag is damage that names itself.
    let mut damaged = bytes.clone();
    let at = damaged.len() - 2 * 2 - 1 - 1; // b's state: before its field count and 2 fields
    damaged[at] = 9;
    let crc = crc32(&damaged[CATALOG_HEADER_BYTES..]);
    damaged[24..28].copy_from_slice(&crc.to_le_bytes());
    let header_crc = crc32(&damaged[..28]);
    damaged[28..32].copy_from_slice(&header_crc.to_le_bytes());
    let e = decode_catalog(&damaged).expect_err("bad state");
    assert!(e.contains("state tag 9"), "{e}");
}

/// CRC32C, as the catalog file uses it (Castagnoli, bitwise).
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0x82F6_3B78 } else { crc >> 1 };
        }
    }
    !crc
}

/// Two shards' copies of a table whose index is built on each on its own: the node's answer is
/// READY only when both are, and copies that differ otherwise do not merge.
#[test]
fn a_node_reports_an_index_ready_only_when_every_shard_has_built_it() {
    use ringstore_model::table::catalog::{Catalog, Outcome, Plan};
    use ringstore_model::table::IndexState::{Building, Deleting, Ready};
    assert_eq!(Ready.least_ready(Ready), Ready);
    assert_eq!(Ready.least_ready(Building), Building);
    assert_eq!(Building.least_ready(Ready), Building);
    assert_eq!(Building.least_ready(Deleting), Deleting);
    let mut c = Catalog::default();
    let text = "CREATE TABLE t (id LONG, v INTEGER, PRIMARY KEY (id)); CREATE INDEX by_v ON t (v)";
    for st in ringstore_model::ddl::parse(text).expect("parses") {
        let Ok(Plan::Change { next, .. }) = c.plan(&st) else { panic!("a change") };
        c = next;
    }
    let t = c.get("t").expect("table").clone();
    let index = t.indexes()[0].id();
    let ready = c.with_index_state(t.id(), index, Ready).expect("index");
    let (a, b) = (ready.get("t").expect("t"), c.get("t").expect("t"));
    let merged = a.merged_states(b).expect("the same table");
    assert_eq!(merged.indexes()[0].state(), Building);
    assert_eq!(a.merged_states(a).expect("same").indexes()[0].state(), Ready);
    let shown = Outcome::Indexes(a.clone()).merged_states(&Outcome::Indexes(b.clone()));
    assert!(matches!(shown, Some(Outcome::Indexes(t)) if t.indexes()[0].state() == Building));
    let created = Outcome::IndexCreated { table: t.id(), index, state: Ready };
    let building = Outcome::IndexCreated { table: t.id(), index, state: Building };
    assert_eq!(created.merged_states(&building), Some(building.clone()));
    let other = Outcome::IndexCreated { table: t.id(), index: IndexId(index.0 + 1), state: Ready };
    assert_eq!(created.merged_states(&other), None, "another index is a disagreement");
    assert_eq!(ready.without_build_progress(), c.without_build_progress());
    assert_eq!(ready.for_shard(Some(&c)), c, "a copy never claims another shard's build");
    assert_eq!(ready.for_shard(Some(&ready)), ready);
}
