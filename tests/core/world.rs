//! Each build of the component, in each world, imports exactly its world in
//! `wit/` (a platform refuses a component importing an interface it lacks)
//! and exports the HTTP handler. The builds: `make build variants` (ignored
//! otherwise).

use std::collections::BTreeSet;
use std::path::Path;

use wit_parser::{Resolve, WorldId, WorldKey};

use crate::support::cells;

/// Each build and its world in wit/: `make variants`' and `make build`'s,
/// the one `make run` and the end-to-end suites serve, the default build;
/// the catalog page's, both.
const BUILDS: [(&str, &str); 7] = [
    ("target/variants/book-catalog.wasm", "book-catalog"),
    ("target/variants/book-catalog-postgres.wasm", "book-catalog-postgres"),
    ("target/variants/book-catalog-sqlite.wasm", "book-catalog-sqlite"),
    ("target/variants/book-catalog-p2.wasm", "book-catalog-p2"),
    ("target/wasm32-wasip2/release/book_catalog.wasm", "book-catalog"),
    ("target/variants/catalog-page.wasm", "catalog-page"),
    ("target/wasm32-wasip2/release/catalog_page.wasm", "catalog-page"),
];

/// A world's imports and exports as `ns:pkg/iface@version` names (with the
/// interfaces whose types its imports use, e.g. `rdbms-types`).
fn interfaces(resolve: &Resolve, world: WorldId) -> (BTreeSet<String>, BTreeSet<String>) {
    let names = |keys: Vec<&WorldKey>| {
        keys.into_iter()
            .filter_map(|key| match key {
                WorldKey::Interface(id) => resolve.id_of(*id),
                WorldKey::Name(_) => None,
            })
            .collect::<BTreeSet<_>>()
    };
    let world = &resolve.worlds[world];
    (names(world.imports.keys().collect()), names(world.exports.keys().collect()))
}

/// The world `name` of `wit/`.
fn world(name: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut resolve = Resolve::default();
    let wit = concat!(env!("CARGO_MANIFEST_DIR"), "/wit");
    let (package, _) = resolve.push_dir(wit).expect("wit/ parses");
    let world = resolve
        .select_world(&[package], Some(name))
        .unwrap_or_else(|error| panic!("world {name}: {error}"));
    interfaces(&resolve, world)
}

/// The imports and exports of the built component at `path`.
fn component(path: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let shown = path.display();
    let missing = |error| panic!("{shown} is missing ({error}): run `make build variants`");
    match wit_component::decode(&std::fs::read(path).unwrap_or_else(missing)) {
        Ok(wit_component::DecodedWasm::Component(resolve, world)) => interfaces(&resolve, world),
        Ok(_) => panic!("{shown} is not a component"),
        Err(error) => panic!("{shown} does not decode: {error:?}"),
    }
}

/// `ns:pkg/iface@1.2.3` -> (`ns:pkg/iface`, `1.2`): wasmtime's linker and
/// Spin serve an import from any patch release of the same minor version.
fn minor(name: &str) -> (&str, Option<&str>) {
    match name.split_once('@') {
        Some((base, version)) => (base, version.rsplit_once('.').map(|(minor, _)| minor)),
        None => (name, None),
    }
}

fn same_interface(a: &str, b: &str) -> bool {
    a == b || (minor(a) == minor(b) && minor(a).1.is_some())
}

fn within(names: &BTreeSet<String>, world: &BTreeSet<String>) -> Vec<String> {
    names.iter().filter(|name| !world.iter().any(|w| same_interface(name, w))).cloned().collect()
}

#[test]
fn patch_releases_match_minor_releases_do_not() {
    // a | b | whether they are the same interface
    let table = "
        wasi:io/poll@0.2.0        | wasi:io/poll@0.2.6        | same
        fermyon:spin/sqlite@2.0.1 | fermyon:spin/sqlite@2.0.0 | same
        wasi:io/poll@0.3.0        | wasi:io/poll@0.2.6        | other
        wasi:io/streams@0.2.6     | wasi:io/poll@0.2.6        | other
        fermyon:spin/sqlite@2.1.0 | fermyon:spin/sqlite@2.0.0 | other
        fermyon:spin/sqlite       | fermyon:spin/sqlite@2.0.0 | other";
    for row in table.trim().lines() {
        let [a, b, same] = cells(row);
        assert_eq!(same_interface(a, b), same == "same", "{row}");
    }
}

/// The worlds themselves: the WASI 0.3 builds import Spin's 3.x and 4.x
/// interfaces only and export `wasi:http/handler@0.3.0`, each single-store
/// world leaves the other store out, and the default world is their union;
/// the WASI 0.2 build imports Spin 2.0's interfaces only and exports the 0.2
/// handler; the catalog page imports no Spin interface and nothing of 0.3.
#[test]
fn worlds_per_build() {
    let (default, p3_exports) = world("book-catalog");
    let (postgres, _) = world("book-catalog-postgres");
    let (sqlite, _) = world("book-catalog-sqlite");
    let (p2, p2_exports) = world("book-catalog-p2");
    let names = |world: &BTreeSet<String>, part: &str| world.iter().any(|n| n.contains(part));
    assert!(postgres.contains("spin:postgres/postgres@4.2.0"), "{postgres:?}");
    assert!(!names(&postgres, "sqlite"), "{postgres:?}");
    assert!(sqlite.contains("spin:sqlite/sqlite@3.1.0"), "{sqlite:?}");
    assert!(!names(&sqlite, "postgres"), "{sqlite:?}");
    for w in [&default, &postgres, &sqlite] {
        assert!(!names(w, "fermyon:") && !names(w, "wasi:http/types@0.2"), "0.2's: {w:?}");
        assert!(w.contains("spin:variables/variables@3.0.0"), "{w:?}");
    }
    assert_eq!(default, postgres.union(&sqlite).cloned().collect());
    assert_eq!(p3_exports.into_iter().collect::<Vec<_>>(), ["wasi:http/handler@0.3.0"]);
    let spin_2_0 = ["sqlite", "postgres", "rdbms-types", "variables"]
        .map(|i| format!("fermyon:spin/{i}@2.0.0"));
    assert!(spin_2_0.iter().all(|name| p2.contains(name)), "{p2:?}");
    assert!(!names(&p2, "spin:") && !names(&p2, "@0.3"), "Spin 4.1's: {p2:?}");
    assert_eq!(p2_exports.into_iter().collect::<Vec<_>>(), ["wasi:http/incoming-handler@0.2.6"]);
    let (page, page_exports) = world("catalog-page");
    assert!(!names(&page, "spin") && !names(&page, "@0.3"), "{page:?}");
    assert_eq!(page_exports, world("book-catalog-p2").1);
}

/// In a world only because an import's types use it (`wasi:http/types`'s
/// `duration`): the page calls no clock, so its build does not import it.
const TYPES_ONLY: (&str, &str) = ("catalog-page", "wasi:clocks/monotonic-clock@0.2.6");

/// Each build imports exactly its world and exports the HTTP handler.
#[test]
#[ignore = "needs the built component and its variants (make build variants): make test runs it"]
fn each_build_imports_exactly_its_world() {
    for (path, name) in BUILDS {
        let (world_imports, world_exports) = world(name);
        let (imports, exports) = component(&Path::new(env!("CARGO_MANIFEST_DIR")).join(path));
        let undeclared = within(&imports, &world_imports);
        assert!(undeclared.is_empty(), "{path} imports {undeclared:?}, not in its world {name}");
        let unused = within(&world_imports, &imports).into_iter();
        let unused: Vec<_> = unused.filter(|i| (name, i.as_str()) != TYPES_ONLY).collect();
        assert!(unused.is_empty(), "the world {name} imports {unused:?}, which {path} does not");
        let handler =
            |e: &String| ["wasi:http/handler", "wasi:http/incoming-handler"].contains(&minor(e).0);
        let exported = exports.iter().any(handler) && within(&exports, &world_exports).is_empty();
        assert!(exported, "{path} exports {exports:?}; its world exports {world_exports:?}");
    }
}
