//! Bindings for the Spin interfaces spin-lite gives a component, generated
//! from their WIT (`../wit/deps/spin*`, Spin's own text of them). Every
//! `wasi:*` interface is wasmtime-wasi / wasmtime-wasi-http's own, linked in
//! `state.rs`. A WIT `async func` is bound with an `Accessor` (`...WithStore`
//! traits); the others block their instance while they run, as in Spin.

wasmtime::component::bindgen!({
    path: [
        "../wit/deps/spin@2.0.0",
        "../wit/deps/spin-sqlite@3.1.0",
        "../wit/deps/spin-postgres@4.2.0",
        "../wit/deps/spin-variables@3.0.0",
    ],
    inline: "
        package spin-lite:host;
        world spin-imports {
            import fermyon:spin/sqlite@2.0.0;
            import fermyon:spin/postgres@2.0.0;
            import fermyon:spin/variables@2.0.0;
            import spin:sqlite/sqlite@3.1.0;
            import spin:postgres/postgres@4.2.0;
            import spin:variables/variables@3.0.0;
        }
    ",
    world: "spin-lite:host/spin-imports",
    imports: { default: async | trappable },
    require_store_data_send: true,
    with: {
        // The resources' types, from modules that do not import this one
        // (so the edge goes one way); both versions share them.
        "fermyon:spin/sqlite.connection": crate::sqlite::databases::Connection,
        "spin:sqlite/sqlite.connection": crate::sqlite::databases::Connection,
        "fermyon:spin/postgres.connection": crate::postgres::pool::Connection,
        "spin:postgres/postgres.connection": crate::postgres::pool::Connection,
        "spin:postgres/postgres.connection-builder": crate::postgres::pool::Builder,
    },
});
