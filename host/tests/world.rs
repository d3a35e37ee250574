//! The built component must import nothing outside our world (`wit/`), and
//! must export the incoming HTTP handler, so that both Spin and `book-host`
//! can run it.

use std::collections::BTreeSet;
use std::path::PathBuf;

use wasmtime::component::Component;
use wasmtime::{Config, Engine};

fn workspace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn component_path() -> PathBuf {
    std::env::var_os("BOOK_CATALOG_WASM")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("target/wasm32-wasip2/release/book_catalog.wasm"))
}

/// The world's imports and exports as `ns:pkg/iface@version` names.
fn world() -> (BTreeSet<String>, BTreeSet<String>) {
    let mut resolve = wit_parser::Resolve::default();
    let (pkg, _) = resolve
        .push_dir(workspace().join("wit"))
        .expect("wit/ parses");
    let world = resolve
        .select_world(&[pkg], Some("book-catalog"))
        .expect("world book-catalog");
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

/// Declared exactly, or the same interface at another patch version (a
/// 0.2.0 import is served by the world's 0.2.6, as wasmtime's linker does).
fn declared(name: &str, world: &BTreeSet<String>) -> bool {
    if world.contains(name) {
        return true;
    }
    let (base, version) = split(name);
    world.iter().any(|w| {
        let (wbase, wversion) = split(w);
        match (version, wversion) {
            (Some((a, b, _)), Some((wa, wb, _))) => wbase == base && a == wa && b == wb,
            _ => false,
        }
    })
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

#[test]
fn component_imports_only_our_world() {
    let path = component_path();
    assert!(
        path.exists(),
        "{} is missing: build the component first \
         (cargo build --release --locked --target wasm32-wasip2 -p book-catalog), \
         or point BOOK_CATALOG_WASM at it",
        path.display()
    );
    let (world_imports, world_exports) = world();
    assert!(
        world_imports.contains("fermyon:spin/sqlite@2.0.0"),
        "{world_imports:?}"
    );

    // Only the component's type is needed: skip optimisation to keep the
    // test fast.
    let mut config = Config::new();
    config.cranelift_opt_level(wasmtime::OptLevel::None);
    let engine = Engine::new(&config).unwrap();
    let component = Component::from_file(&engine, &path).unwrap();
    let ty = component.component_type();

    let imports: Vec<String> = ty
        .imports(&engine)
        .map(|(name, _)| name.to_string())
        .collect();
    let undeclared: Vec<&String> = imports
        .iter()
        .filter(|name| !declared(name, &world_imports))
        .collect();
    assert!(
        undeclared.is_empty(),
        "the component imports {undeclared:?}, which wit/world.wit does not declare \
         (the world imports {world_imports:?})"
    );

    let exports: Vec<String> = ty
        .exports(&engine)
        .map(|(name, _)| name.to_string())
        .collect();
    assert!(
        exports
            .iter()
            .any(|e| split(e).0 == "wasi:http/incoming-handler" && declared(e, &world_exports)),
        "the component must export wasi:http/incoming-handler as the world does; it exports {exports:?}"
    );
}
