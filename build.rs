//! Embeds the versioned migrations: every `migrations/<store>/NNNN_name.sql`,
//! in order, becomes an entry of `src/db/migrations.rs`'s lists, so adding a
//! migration is adding its file.

use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR");
    let mut code = String::new();
    for store in ["sqlite", "postgres"] {
        let folder = Path::new("migrations").join(store);
        println!("cargo:rerun-if-changed={}", folder.display());
        let mut names: Vec<String> = std::fs::read_dir(&folder)
            .unwrap_or_else(|error| panic!("reading {}: {error}", folder.display()))
            .map(|entry| entry.expect("a folder entry").file_name())
            .filter_map(|name| name.to_str()?.strip_suffix(".sql").map(str::to_string))
            .collect();
        names.sort();
        let _ = writeln!(
            code,
            "const {}: [Migration; {}] = [",
            store.to_ascii_uppercase(),
            names.len()
        );
        for (index, name) in names.iter().enumerate() {
            let version = index + 1;
            assert!(
                name.starts_with(&format!("{version:04}_")),
                "migrations/{store}/{name}.sql: expected the number {version:04}, in order with no gap"
            );
            let _ = writeln!(
                code,
                "    Migration {{ version: {version}, name: {name:?}, sql: include_str!(concat!(env!(\"CARGO_MANIFEST_DIR\"), \"/migrations/{store}/{name}.sql\")) }},"
            );
        }
        code.push_str("];\n");
    }
    std::fs::write(Path::new(&out).join("migrations.rs"), code).expect("writing migrations.rs");
}
