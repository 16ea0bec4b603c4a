//! The table catalog on the simulated disk: CREATE, DROP, DESCRIBE and SHOW TABLES executed from
//! parsed DDL (including the seed's `myProducts` admin CLI script) survive a reload; table ids are
//! never reused; a change is durable once `apply` returns, even if every unsynced byte is then
//! lost; a crash or an I/O fault at any point inside `apply` leaves the old catalog or the new one,
//! never a broken one; and a damaged catalog file is a typed error naming the file. The async code
//! runs under `futures_lite::future::block_on`, since the simulated disk needs no glommio.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use futures_lite::future::{block_on, poll_once};
use ringstore_storage::ddl::{parse, Statement};
use ringstore_storage::disk::sim::{SimConfig, SimDisk, SimOp};
use ringstore_storage::table::catalog::{Catalog, CatalogError, Outcome};
use ringstore_storage::table::catalog_file;
use ringstore_storage::table::{FieldType, TableError, TableId};
use ringstore_storage::table::{OpError, CATALOG_FILE, CATALOG_TMP_FILE};

const DIR: &str = "/store";

const SEED_SCRIPT: &str = "\
## Enter into table creation mode
table create -name myProducts
## Now add the fields
add-field -type STRING -name productName
add-field -type STRING -name productType
add-field -type ENUM -name color -enum-values blue,green,red
add-field -type ENUM -name size -enum-values small,medium,blue
add-field -type INTEGER -name inventoryCount
## A primary key must be defined for every table
primary-key -field productName
## Exit table creation mode
exit
plan add-table -name myProducts -wait
";

fn dir() -> &'static Path {
    Path::new(DIR)
}

fn one(text: &str) -> Statement {
    let mut statements = parse(text).expect("DDL parses");
    assert_eq!(statements.len(), 1);
    statements.remove(0)
}

fn load(disk: &SimDisk) -> Catalog {
    block_on(catalog_file::load(disk, dir())).expect("catalog loads")
}

fn apply(disk: &SimDisk, catalog: &mut Catalog, text: &str) -> Result<Outcome, OpError> {
    block_on(catalog_file::apply(catalog, disk, dir(), &one(text)))
}

fn create(name: &str) -> String {
    format!("CREATE TABLE {name} (id LONG, v STRING, PRIMARY KEY (id)) USING TTL 2 DAYS")
}

fn names(catalog: &Catalog) -> Vec<String> {
    catalog.tables().map(|t| t.name().to_string()).collect()
}

#[test]
fn ddl_round_trips_through_a_reload() {
    let disk = SimDisk::new(SimConfig::new(1));
    let mut catalog = load(&disk);
    assert_eq!(names(&catalog), Vec::<String>::new());
    let sql = "CREATE TABLE events (k STRING, at TIMESTAMP, n INTEGER, \
               PRIMARY KEY (SHARD(k), at DESC)) WITH VERSIONS 3";
    assert_eq!(
        apply(&disk, &mut catalog, sql).expect("create"),
        Outcome::Created { id: TableId(1) }
    );
    assert_eq!(
        apply(&disk, &mut catalog, &create("b")).expect("create"),
        Outcome::Created { id: TableId(2) }
    );
    let reloaded = load(&disk);
    assert_eq!(reloaded, catalog);
    let events = reloaded.get("events").expect("events exists").clone();
    assert_eq!((events.id(), events.schema_version()), (TableId(1), 1));
    assert_eq!(events.schema().options().max_versions, 3);
    assert!(events.schema().primary_key()[1].desc);
    assert_eq!(events.schema().shard_key_len(), 1);
    assert_eq!(reloaded.get("b").expect("b").schema().options().ttl_seconds, Some(172_800));
    assert_eq!(reloaded.get_by_id(TableId(2)).map(|t| t.name().to_string()), Some("b".into()));

    let mut catalog = reloaded;
    let shown = apply(&disk, &mut catalog, "SHOW TABLES").expect("show");
    let Outcome::Tables(shown) = shown else { panic!("SHOW TABLES gave {shown:?}") };
    assert_eq!(shown.iter().map(|n| n.as_str()).collect::<Vec<_>>(), ["b", "events"]);
    let described = apply(&disk, &mut catalog, "DESCRIBE TABLE events").expect("describe");
    assert_eq!(described, Outcome::Described(events));

    assert_eq!(
        apply(&disk, &mut catalog, "DROP TABLE events").expect("drop"),
        Outcome::Dropped { id: TableId(1) }
    );
    assert_eq!(names(&load(&disk)), ["b"]);
}

#[test]
fn errors_and_if_clauses() {
    let disk = SimDisk::new(SimConfig::new(2));
    let mut catalog = load(&disk);
    apply(&disk, &mut catalog, &create("t")).expect("create");
    let dup = apply(&disk, &mut catalog, &create("t")).expect_err("duplicate");
    assert!(
        matches!(dup, OpError::Catalog(CatalogError::TableExists { ref table, id: 1 }) if table == "t"),
        "{dup}"
    );
    assert_eq!(dup.code(), 501);
    let again = create("t").replace("TABLE", "TABLE IF NOT EXISTS");
    assert_eq!(
        apply(&disk, &mut catalog, &again).expect("no-op"),
        Outcome::AlreadyExists { id: TableId(1) }
    );
    for text in ["DROP TABLE nope", "DESCRIBE TABLE nope"] {
        let e = apply(&disk, &mut catalog, text).expect_err("unknown table");
        assert!(
            matches!(e, OpError::Catalog(CatalogError::Table(TableError::UnknownTable { .. }))),
            "{e}"
        );
        assert_eq!(e.code(), 201);
    }
    let drop = apply(&disk, &mut catalog, "DROP TABLE IF EXISTS nope").expect("no-op");
    assert_eq!(drop, Outcome::NothingDropped);
    assert_eq!(load(&disk), catalog);
}

#[test]
fn ids_are_never_reused() {
    let disk = SimDisk::new(SimConfig::new(3));
    let mut catalog = load(&disk);
    apply(&disk, &mut catalog, &create("a")).expect("create a");
    apply(&disk, &mut catalog, &create("b")).expect("create b");
    apply(&disk, &mut catalog, "DROP TABLE b").expect("drop b");
    // A reload must remember that id 2 was used although no table holds it now.
    let mut catalog = load(&disk);
    assert_eq!(catalog.next_id(), TableId(3));
    let again = apply(&disk, &mut catalog, &create("b")).expect("create b again");
    assert_eq!(again, Outcome::Created { id: TableId(3) });
    apply(&disk, &mut catalog, "DROP TABLE a").expect("drop a");
    let c = apply(&disk, &mut catalog, &create("c")).expect("create c");
    assert_eq!(c, Outcome::Created { id: TableId(4) });
}

#[test]
fn seed_cli_script_creates_my_products() {
    let disk = SimDisk::new(SimConfig::new(4));
    let mut catalog = load(&disk);
    for statement in parse(SEED_SCRIPT).expect("seed script parses") {
        block_on(catalog_file::apply(&mut catalog, &disk, dir(), &statement)).expect("apply");
    }
    let catalog = load(&disk);
    let table = catalog.get("myProducts").expect("myProducts exists");
    assert_eq!(table.id(), TableId(1));
    let schema = table.schema();
    let fields: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(fields, ["productName", "productType", "color", "size", "inventoryCount"]);
    let colors = FieldType::Enum(vec!["blue".into(), "green".into(), "red".into()]);
    assert_eq!(schema.field("color").map(|(_, f)| f.ty().clone()), Some(colors));
    assert_eq!(schema.key_field(0).name().as_str(), "productName");
    assert_eq!(schema.shard_key_len(), 1);
}

/// Running the seed's admin script a second time is refused with 501, and the message says how
/// an admin script ignores an existing table; with `-if-not-exists` the script runs again.
#[test]
fn seed_cli_script_runs_again_with_if_not_exists() {
    let disk = SimDisk::new(SimConfig::new(6));
    let mut catalog = load(&disk);
    for statement in parse(SEED_SCRIPT).expect("seed script parses") {
        block_on(catalog_file::apply(&mut catalog, &disk, dir(), &statement)).expect("apply");
    }
    let again = one(SEED_SCRIPT);
    let e = block_on(catalog_file::apply(&mut catalog, &disk, dir(), &again)).expect_err("exists");
    assert_eq!(e.code(), 501);
    let text = e.to_string();
    assert!(text.contains("plan add-table -name myProducts -if-not-exists"), "{text}");
    let idempotent = SEED_SCRIPT.replace("-wait", "-wait -if-not-exists");
    let outcome = block_on(catalog_file::apply(&mut catalog, &disk, dir(), &one(&idempotent)));
    assert_eq!(outcome.expect("ignored"), Outcome::AlreadyExists { id: TableId(1) });
}

#[test]
fn applied_change_survives_losing_all_unsynced_data() {
    let disk = SimDisk::new(SimConfig::new(5));
    let mut catalog = load(&disk);
    apply(&disk, &mut catalog, &create("a")).expect("create");
    disk.crash_losing_all_unsynced();
    assert_eq!(names(&load(&disk)), ["a"]);
    apply(&disk, &mut catalog, "DROP TABLE a").expect("drop");
    disk.crash_losing_all_unsynced();
    assert_eq!(names(&load(&disk)), Vec::<String>::new());
}

/// Builds a catalog with table `a`, then runs `b`'s CREATE with `interrupt` applied, crashes, and
/// checks that the reloaded catalog is exactly the old one or the new one.
fn assert_old_or_new(seed: u64, interrupt: impl FnOnce(&SimDisk, &mut Catalog, &Statement)) {
    let disk = SimDisk::new(SimConfig::new(seed));
    let mut catalog = load(&disk);
    apply(&disk, &mut catalog, &create("a")).expect("create a");
    let old = catalog.clone();
    let statement = one(&create("b"));
    // The expected new catalog, computed on a scratch disk.
    let scratch = SimDisk::new(SimConfig::new(0));
    let _ = load(&scratch);
    let mut new = old.clone();
    block_on(catalog_file::apply(&mut new, &scratch, dir(), &statement)).expect("model");
    interrupt(&disk, &mut catalog, &statement);
    disk.crash();
    let loaded = load(&disk);
    assert!(loaded == old || loaded == new, "seed {seed}: {:?}", names(&loaded));
    assert!(!disk.file_names().iter().any(|p| p.ends_with(CATALOG_TMP_FILE)));
}

#[test]
fn io_fault_inside_apply_leaves_old_or_new_catalog() {
    for seed in 0..50 {
        for op in [SimOp::Write, SimOp::Fsync] {
            assert_old_or_new(seed, |disk, catalog, statement| {
                disk.fail_next(op);
                let e = block_on(catalog_file::apply(catalog, disk, dir(), statement))
                    .expect_err("fault");
                assert_eq!(e.code(), 503);
                // The catalog refuses further changes until it is loaded again.
                let e = block_on(catalog_file::apply(catalog, disk, dir(), statement))
                    .expect_err("poisoned");
                assert!(e.to_string().contains("refuses writes"), "{e}");
            });
        }
    }
}

#[test]
fn crash_at_every_step_of_apply_leaves_old_or_new_catalog() {
    for steps in 0..12 {
        for seed in 0..20 {
            assert_old_or_new(seed * 100 + steps, |disk, catalog, statement| {
                // Every simulated disk operation yields once, so polling `steps` times stops the
                // write after a given number of operations; dropping the future is the crash.
                let mut apply: Pin<Box<dyn Future<Output = _> + '_>> =
                    Box::pin(catalog_file::apply(catalog, disk, dir(), statement));
                for _ in 0..steps {
                    if block_on(poll_once(&mut apply)).is_some() {
                        break;
                    }
                }
            });
        }
    }
}

#[test]
fn damaged_catalog_file_is_a_typed_error() {
    let disk = SimDisk::new(SimConfig::new(6));
    let mut catalog = load(&disk);
    apply(&disk, &mut catalog, &create("a")).expect("create");
    let path = dir().join(CATALOG_FILE);
    let good = disk.file_bytes(&path).expect("catalog file exists");
    let body_end = 32 + u32::from_le_bytes(good[20..24].try_into().expect("4 bytes")) as usize;
    let mut damaged: Vec<Vec<u8>> = (0..body_end)
        .map(|i| {
            let mut bytes = good.clone();
            bytes[i] ^= 0x40;
            bytes
        })
        .collect();
    damaged.extend((0..body_end).map(|len| good[..len].to_vec()));
    for bytes in damaged {
        disk.set_file_bytes(&path, bytes);
        let e = block_on(catalog_file::load(&disk, dir())).expect_err("damage is detected");
        let OpError::CatalogStore(ringstore_storage::Error::CorruptFile { file, what }) = &e else {
            panic!("not a corrupt-file error: {e:?}")
        };
        assert_eq!(file, &path);
        assert!(!what.is_empty());
    }
    disk.set_file_bytes(&path, good);
    assert_eq!(load(&disk), catalog);
}

#[test]
fn leftover_tmp_file_is_ignored_and_removed() {
    let disk = SimDisk::new(SimConfig::new(7));
    let mut catalog = load(&disk);
    apply(&disk, &mut catalog, &create("a")).expect("create");
    let tmp = dir().join(CATALOG_TMP_FILE);
    disk.set_file_bytes(&tmp, b"half a catalog".to_vec());
    assert_eq!(load(&disk), catalog);
    assert_eq!(disk.file_bytes(&tmp), None);
}
