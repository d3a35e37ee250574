//! Each built component imports exactly its world (`wit/world.wit`: one world
//! per build variant), no more and no less, and exports the incoming HTTP
//! handler, so that Spin and `book-host` can run it and so that no variant
//! drags in an interface a platform may lack.
//!
//! The variants are the files `make variants` writes to target/variants/;
//! `make test` builds them first and runs the tests that need them (marked
//! `#[ignore]` so that `cargo test` passes where nothing is built). A missing
//! file fails the test.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use wasmtime::component::Component;
use wasmtime::{Config, Engine};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// (file under target/variants/, its world).
const VARIANTS: [(&str, &str); 3] = [
    ("book-catalog.wasm", "book-catalog"),
    ("book-catalog-postgres.wasm", "book-catalog-postgres"),
    ("book-catalog-sqlite.wasm", "book-catalog-sqlite"),
];

/// A world's imports and exports as `ns:pkg/iface@version` names (with the
/// interfaces its imports use types from, e.g. `rdbms-types`).
fn world(name: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut resolve = wit_parser::Resolve::default();
    let (pkg, _) = resolve
        .push_dir(workspace().join("wit"))
        .expect("wit/ parses");
    let world = resolve
        .select_world(&[pkg], Some(name))
        .unwrap_or_else(|e| panic!("world {name}: {e}"));
    let w = &resolve.worlds[world];
    let names = |keys: Vec<&wit_parser::WorldKey>| {
        keys.into_iter()
            .filter_map(|key| match key {
                wit_parser::WorldKey::Interface(id) => resolve.id_of(*id),
                wit_parser::WorldKey::Name(_) => None,
            })
            .collect::<BTreeSet<_>>()
    };
    (
        names(w.imports.keys().collect()),
        names(w.exports.keys().collect()),
    )
}

/// The component's imports and exports, by name.
fn component(path: &Path) -> (Vec<String>, Vec<String>) {
    // Only the component's type is needed: skip optimisation to keep the
    // test fast.
    let mut config = Config::new();
    config.cranelift_opt_level(wasmtime::OptLevel::None);
    let engine = Engine::new(&config).unwrap();
    let component = Component::from_file(&engine, path)
        .unwrap_or_else(|e| panic!("cannot load {}: {e:?}", path.display()));
    let ty = component.component_type();
    let imports = ty.imports(&engine).map(|(n, _)| n.to_string()).collect();
    let exports = ty.exports(&engine).map(|(n, _)| n.to_string()).collect();
    (imports, exports)
}

/// `ns:pkg/iface@1.2.3` -> (`ns:pkg/iface`, (1, 2, 3)).
fn split(name: &str) -> (&str, Option<(u64, u64, u64)>) {
    let Some((base, version)) = name.split_once('@') else {
        return (name, None);
    };
    let mut parts = version.split(['.', '-']).map(|p| p.parse::<u64>().ok());
    let v = match (
        parts.next().flatten(),
        parts.next().flatten(),
        parts.next().flatten(),
    ) {
        (Some(a), Some(b), Some(c)) => Some((a, b, c)),
        _ => None,
    };
    (base, v)
}

/// The same interface at the same or another patch version (a 0.2.0 import
/// is served by the world's 0.2.6, as wasmtime's linker and Spin do).
fn same_interface(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let ((abase, av), (bbase, bv)) = (split(a), split(b));
    match (av, bv) {
        (Some((a1, a2, _)), Some((b1, b2, _))) => abase == bbase && a1 == b1 && a2 == b2,
        _ => false,
    }
}

fn declared(name: &str, world: &BTreeSet<String>) -> bool {
    world.iter().any(|w| same_interface(name, w))
}

#[test]
fn declared_matching() {
    let world: BTreeSet<String> = [
        "wasi:io/poll@0.2.6".to_string(),
        "fermyon:spin/sqlite@2.0.0".into(),
    ]
    .into();
    assert!(declared("wasi:io/poll@0.2.6", &world));
    assert!(declared("wasi:io/poll@0.2.0", &world));
    assert!(!declared("wasi:io/poll@0.3.0", &world));
    assert!(!declared("wasi:io/streams@0.2.6", &world));
    assert!(declared("fermyon:spin/sqlite@2.0.1", &world));
    assert!(!declared("fermyon:spin/sqlite@2.1.0", &world));
    assert!(!declared("fermyon:spin/sqlite@3.0.0", &world));
    assert!(!declared("fermyon:spin/sqlite", &world));
}

fn is_sqlite(name: &str) -> bool {
    name.contains("sqlite")
}

fn is_postgres(name: &str) -> bool {
    name.contains("postgres") || name.contains("rdbms-types")
}

/// The worlds themselves: every store interface is Spin 2.0's, and each
/// single-store world leaves the other store out.
#[test]
fn worlds_per_variant() {
    let (default, _) = world("book-catalog");
    let (postgres, _) = world("book-catalog-postgres");
    let (sqlite, _) = world("book-catalog-sqlite");
    for name in ["fermyon:spin/sqlite@2.0.0", "fermyon:spin/postgres@2.0.0"] {
        assert!(default.contains(name), "{default:?}");
    }
    assert!(
        postgres.contains("fermyon:spin/postgres@2.0.0"),
        "{postgres:?}"
    );
    assert!(
        postgres.contains("fermyon:spin/rdbms-types@2.0.0"),
        "{postgres:?}"
    );
    assert!(!postgres.iter().any(|n| is_sqlite(n)), "{postgres:?}");
    assert!(sqlite.contains("fermyon:spin/sqlite@2.0.0"), "{sqlite:?}");
    assert!(!sqlite.iter().any(|n| is_postgres(n)), "{sqlite:?}");
    for w in [&default, &postgres, &sqlite] {
        assert!(!w.iter().any(|n| n.starts_with("spin:")), "{w:?}");
        assert!(w.contains("fermyon:spin/variables@2.0.0"), "{w:?}");
    }
    // The default world is the union of the two others.
    let union: BTreeSet<String> = postgres.union(&sqlite).cloned().collect();
    assert_eq!(default, union);
}

/// The component at `path` imports exactly the world `name` and exports the
/// HTTP handler.
fn assert_imports_exactly(path: &Path, name: &str, how_to_build: &str) {
    assert!(
        path.exists(),
        "{} is missing: {how_to_build}",
        path.display()
    );
    let (world_imports, world_exports) = world(name);
    let (imports, exports) = component(path);
    let undeclared: Vec<&String> = imports
        .iter()
        .filter(|i| !declared(i, &world_imports))
        .collect();
    assert!(
        undeclared.is_empty(),
        "{} imports {undeclared:?}, which its world {name} (wit/world.wit) does not \
         declare; the world imports {world_imports:?}",
        path.display()
    );
    let unused: Vec<&String> = world_imports
        .iter()
        .filter(|w| !imports.iter().any(|i| same_interface(i, w)))
        .collect();
    assert!(
        unused.is_empty(),
        "the world {name} (wit/world.wit) imports {unused:?}, which {} does not: \
         the world must list exactly what the variant imports (it imports {imports:?})",
        path.display()
    );
    assert!(
        exports
            .iter()
            .any(|e| split(e).0 == "wasi:http/incoming-handler" && declared(e, &world_exports)),
        "{} must export wasi:http/incoming-handler as its world does; it exports {exports:?}",
        path.display()
    );
}

#[test]
#[ignore = "needs the component's variants (make variants): make test runs it"]
fn each_variant_imports_exactly_its_world() {
    let dir = workspace().join("target/variants");
    for (file, name) in VARIANTS {
        let path = dir.join(file);
        assert_imports_exactly(
            &path,
            name,
            "run `make variants` (which `make test` runs before cargo test)",
        );
        let (imports, _) = component(&path);
        let spin_pg: Vec<&String> = imports
            .iter()
            .filter(|i| i.starts_with("spin:postgres"))
            .collect();
        assert!(
            spin_pg.is_empty(),
            "{file} imports {spin_pg:?} (Spin 3.4+ only)"
        );
        match name {
            "book-catalog-postgres" => {
                let sqlite: Vec<&String> = imports.iter().filter(|i| is_sqlite(i)).collect();
                assert!(sqlite.is_empty(), "{file} imports {sqlite:?}");
            }
            "book-catalog-sqlite" => {
                let pg: Vec<&String> = imports.iter().filter(|i| is_postgres(i)).collect();
                assert!(pg.is_empty(), "{file} imports {pg:?}");
            }
            _ => {}
        }
    }
}

/// `make build`'s component (the default build, which `make run`, the end to
/// end suite and host tests serve) matches the default world too.
#[test]
#[ignore = "needs the built component (make component): make test runs it"]
fn default_build_imports_exactly_its_world() {
    let path = std::env::var_os("BOOK_CATALOG_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/wasm32-wasip2/release/book_catalog.wasm"));
    assert_imports_exactly(
        &path,
        "book-catalog",
        "build the component first \
         (cargo build --release --locked --target wasm32-wasip2 -p book-catalog), \
         or point BOOK_CATALOG_WASM at it",
    );
}
