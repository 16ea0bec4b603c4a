//! The programs that only talk to a node do not link the engine: the normal dependencies of the
//! client library (`ringstore-net`), `ringstore-cli`, `ringstore-load` and the table model
//! (`ringstore-model`) include neither `ringstore-storage` nor glommio (and so no io_uring), so
//! they build and run on any OS. Asked of `cargo tree`, as a reader would check it by hand, from
//! the workspace's Cargo.lock (`--locked --offline`: nothing is resolved or downloaded).

use std::path::Path;
use std::process::Command;

/// Crates a client-side program must not depend on, directly or through another crate.
const ENGINE_CRATES: [&str; 2] = ["ringstore-storage", "glommio"];

/// The crates that must stay free of them.
const CLIENT_CRATES: [&str; 4] =
    ["ringstore-model", "ringstore-net", "ringstore-cli", "ringstore-loadgen"];

/// Every package in `package`'s normal (non-dev, non-build) dependency closure, by name.
fn normal_dependencies(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(cargo)
        .current_dir(&workspace)
        .args(["tree", "--locked", "--offline", "-e", "normal", "--prefix", "none"])
        .args(["--format", "{p}", "-p", package])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("cargo tree prints UTF-8");
    text.lines().filter_map(|line| line.split_whitespace().next()).map(str::to_string).collect()
}

#[test]
fn client_crates_do_not_link_the_engine() {
    for package in CLIENT_CRATES {
        let deps = normal_dependencies(package);
        assert!(deps.iter().any(|d| d == package), "cargo tree -p {package} lists {package}");
        for engine in ENGINE_CRATES {
            assert!(!deps.iter().any(|d| d == engine), "{package} depends on {engine}: {deps:?}");
        }
    }
}

/// The check can fail: the engine crate itself does depend on glommio.
#[test]
fn the_check_sees_glommio_under_the_engine() {
    let deps = normal_dependencies("ringstore-storage");
    assert!(deps.iter().any(|d| d == "glommio"), "{deps:?}");
    assert!(deps.iter().any(|d| d == "ringstore-model"), "{deps:?}");
}
