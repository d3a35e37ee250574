//! Bindings for the Spin interfaces spin-lite gives a component, generated
//! from their WIT (`../wit/deps/spin@2.0.0`, Spin's own text of them). Every
//! `wasi:*` interface is wasmtime-wasi / wasmtime-wasi-http's own, linked in
//! `state.rs`.

wasmtime::component::bindgen!({
    path: "../wit/deps/spin@2.0.0",
    inline: "
        package spin-lite:host;
        world spin-imports {
            import fermyon:spin/sqlite@2.0.0;
            import fermyon:spin/postgres@2.0.0;
            import fermyon:spin/variables@2.0.0;
        }
    ",
    world: "spin-lite:host/spin-imports",
    imports: { default: async | trappable },
    require_store_data_send: true,
    with: {
        // The resources' types, from modules that do not import this one
        // (so the edge goes one way).
        "fermyon:spin/sqlite.connection": crate::sqlite::databases::Connection,
        "fermyon:spin/postgres.connection": crate::postgres::pool::Connection,
    },
});
