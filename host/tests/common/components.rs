//! The tests' Spin component, with no wasm toolchain: a core module in WAT
//! made a component (`wit-component`) against the repository's `wit/`.

use std::path::{Path, PathBuf};

/// The statements the probe runs on `/d/LABEL`, each request in turn: one
/// more row, then the row count as text.
const SQL: [&str; 3] = [
    "CREATE TABLE IF NOT EXISTS hits (n INTEGER)",
    "INSERT INTO hits VALUES (1)",
    "SELECT CAST(count(*) AS TEXT) FROM hits",
];

/// The probe: a Spin HTTP component that answers 200 with, by path,
/// - `/v/NAME`: the variable `NAME` (`fermyon:spin/variables`), or
///   `error:N` with N the error's case (1: undefined);
/// - `/e`: its environment, one `NAME=VALUE` line each;
/// - `/d/LABEL`: after one more row in the SQLite database `LABEL`, the
///   number of rows, or `error:N` (0: no-such-database, 1: access-denied,
///   4: io, then its message);
/// - `/p/`: the same on the PostgreSQL database at the variable
///   `pg_address` (errors: `error:N` and the message; 0:
///   connection-failed, 2: query-failed);
/// - `/z/`: on that database, the number of rows of a query that has none.
fn probe_wat() -> String {
    let data: String = SQL
        .iter()
        .enumerate()
        .map(|(i, sql)| format!("  (data (i32.const {}) \"{sql}\")\n", i * 64))
        .collect();
    let [create, insert, select] = SQL.map(str::len);
    format!(
        r#"(module
  (import "wasi:http/types@0.2.6" "[method]incoming-request.path-with-query" (func $path (param i32 i32)))
  (import "wasi:http/types@0.2.6" "[constructor]fields" (func $fields (result i32)))
  (import "wasi:http/types@0.2.6" "[constructor]outgoing-response" (func $response (param i32) (result i32)))
  (import "wasi:http/types@0.2.6" "[method]outgoing-response.body" (func $body (param i32 i32)))
  (import "wasi:http/types@0.2.6" "[method]outgoing-body.write" (func $write (param i32 i32)))
  (import "wasi:http/types@0.2.6" "[static]outgoing-body.finish" (func $finish (param i32 i32 i32 i32)))
  (import "wasi:http/types@0.2.6" "[static]response-outparam.set" (func $set (param i32 i32 i32 i32 i64 i32 i32 i32 i32)))
  (import "wasi:io/streams@0.2.6" "[method]output-stream.blocking-write-and-flush" (func $flush (param i32 i32 i32 i32)))
  (import "wasi:io/streams@0.2.6" "[resource-drop]output-stream" (func $drop_stream (param i32)))
  (import "wasi:cli/environment@0.2.6" "get-environment" (func $environment (param i32)))
  (import "fermyon:spin/variables@2.0.0" "get" (func $variable (param i32 i32 i32)))
  (import "fermyon:spin/sqlite@2.0.0" "[static]connection.open" (func $open (param i32 i32 i32)))
  (import "fermyon:spin/sqlite@2.0.0" "[method]connection.execute" (func $execute (param i32 i32 i32 i32 i32 i32)))
  (import "fermyon:spin/postgres@2.0.0" "[static]connection.open" (func $pg_open (param i32 i32 i32)))
  (import "fermyon:spin/postgres@2.0.0" "[method]connection.query" (func $pg_query (param i32 i32 i32 i32 i32 i32)))
  (import "fermyon:spin/postgres@2.0.0" "[method]connection.execute" (func $pg_execute (param i32 i32 i32 i32 i32 i32)))
  (memory (export "memory") 4)
{data}  (data (i32.const 192) "error:=\n0123456789")
  (data (i32.const 256) "pg_address")
  (data (i32.const 320) "SELECT 1\nWHERE false")
  (global $heap (mut i32) (i32.const 16384))
  (global $out (mut i32) (i32.const 0))
  ;; 1024: the return area; 4096: the answer (at most 4096 bytes).
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $at i32)
    (local.set $at (i32.and (i32.add (global.get $heap) (i32.sub (local.get 2) (i32.const 1)))
                            (i32.sub (i32.const 0) (local.get 2))))
    (global.set $heap (i32.add (local.get $at) (local.get 3)))
    (if (i32.gt_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
      (then (drop (memory.grow (i32.const 4)))))
    (local.get $at))
  (func $append (param $ptr i32) (param $len i32)
    (memory.copy (i32.add (i32.const 4096) (global.get $out)) (local.get $ptr) (local.get $len))
    (global.set $out (i32.add (global.get $out) (local.get $len))))
  (func $error (param $case i32)
    (call $append (i32.const 192) (i32.const 6))
    (call $append (i32.add (i32.const 200) (local.get $case)) (i32.const 1)))
  (func $variable_answer (param $name i32) (param $len i32)
    (call $variable (local.get $name) (local.get $len) (i32.const 1024))
    (if (i32.load8_u (i32.const 1024))
      (then (call $error (i32.load8_u (i32.const 1028))))
      (else (call $append (i32.load (i32.const 1028)) (i32.load (i32.const 1032))))))
  (func $environment_answer
    (local $at i32) (local $end i32)
    (call $environment (i32.const 1024))
    (local.set $at (i32.load (i32.const 1024)))
    (local.set $end (i32.add (local.get $at) (i32.mul (i32.load (i32.const 1028)) (i32.const 16))))
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $at) (local.get $end)))
      (call $append (i32.load (local.get $at)) (i32.load offset=4 (local.get $at)))
      (call $append (i32.const 198) (i32.const 1))
      (call $append (i32.load offset=8 (local.get $at)) (i32.load offset=12 (local.get $at)))
      (call $append (i32.const 199) (i32.const 1))
      (local.set $at (i32.add (local.get $at) (i32.const 16)))
      (br $next))))
  ;; Runs statement `sql`; 1 if it failed (the answer says why).
  (func $run (param $conn i32) (param $sql i32) (param $len i32) (result i32)
    (call $execute (local.get $conn) (local.get $sql) (local.get $len) (i32.const 0) (i32.const 0) (i32.const 1024))
    (if (result i32) (i32.load8_u (i32.const 1024))
      (then
        (call $error (i32.load8_u (i32.const 1028)))
        (if (i32.eq (i32.load8_u (i32.const 1028)) (i32.const 4))
          (then (call $append (i32.load (i32.const 1032)) (i32.load (i32.const 1036)))))
        (i32.const 1))
      (else (i32.const 0))))
  (func $database_answer (param $label i32) (param $len i32)
    (local $conn i32) (local $value i32)
    (call $open (local.get $label) (local.get $len) (i32.const 1024))
    (if (i32.load8_u (i32.const 1024))
      (then (call $error (i32.load8_u (i32.const 1028))) (return)))
    (local.set $conn (i32.load (i32.const 1028)))
    (if (call $run (local.get $conn) (i32.const 0) (i32.const {create})) (then (return)))
    (if (call $run (local.get $conn) (i32.const 64) (i32.const {insert})) (then (return)))
    (if (call $run (local.get $conn) (i32.const 128) (i32.const {select})) (then (return)))
    ;; rows[0].values[0], a text value.
    (local.set $value (i32.load (i32.load (i32.const 1036))))
    (call $append (i32.load offset=8 (local.get $value)) (i32.load offset=12 (local.get $value))))
  ;; A PostgreSQL error at `at`: its case, then its message.
  (func $pg_error (param $at i32)
    (call $error (i32.load8_u (local.get $at)))
    (call $append (i32.load offset=4 (local.get $at)) (i32.load offset=8 (local.get $at))))
  ;; Executes `sql` (a result<u64, error>: the error at 8); 1 if it failed.
  (func $pg_run (param $conn i32) (param $sql i32) (param $len i32) (result i32)
    (call $pg_execute (local.get $conn) (local.get $sql) (local.get $len) (i32.const 0) (i32.const 0) (i32.const 1024))
    (if (result i32) (i32.load8_u (i32.const 1024))
      (then (call $pg_error (i32.const 1032)) (i32.const 1))
      (else (i32.const 0))))
  (func $pg_answer (param $zero i32)
    (local $conn i32) (local $value i32)
    (call $variable (i32.const 256) (i32.const 10) (i32.const 1024))
    (if (i32.load8_u (i32.const 1024))
      (then (call $error (i32.load8_u (i32.const 1028))) (return)))
    (call $pg_open (i32.load (i32.const 1028)) (i32.load (i32.const 1032)) (i32.const 1024))
    (if (i32.load8_u (i32.const 1024))
      (then (call $pg_error (i32.const 1028)) (return)))
    (local.set $conn (i32.load (i32.const 1028)))
    (if (local.get $zero)
      (then
        (call $pg_query (local.get $conn) (i32.const 320) (i32.const 20) (i32.const 0) (i32.const 0) (i32.const 1024))
        (if (i32.load8_u (i32.const 1024))
          (then (call $pg_error (i32.const 1028)) (return)))
        ;; rows.len, one digit.
        (call $append (i32.add (i32.const 200) (i32.load (i32.const 1040))) (i32.const 1))
        (return)))
    (if (call $pg_run (local.get $conn) (i32.const 0) (i32.const {create})) (then (return)))
    (if (call $pg_run (local.get $conn) (i32.const 64) (i32.const {insert})) (then (return)))
    (call $pg_query (local.get $conn) (i32.const 128) (i32.const {select}) (i32.const 0) (i32.const 0) (i32.const 1024))
    (if (i32.load8_u (i32.const 1024))
      (then (call $pg_error (i32.const 1028)) (return)))
    ;; rows[0][0], a str value.
    (local.set $value (i32.load (i32.load (i32.const 1036))))
    (call $append (i32.load offset=8 (local.get $value)) (i32.load offset=12 (local.get $value))))
  (func (export "wasi:http/incoming-handler@0.2.6#handle") (param $request i32) (param $outparam i32)
    (local $path i32) (local $len i32) (local $kind i32) (local $response i32) (local $body i32) (local $stream i32)
    ;; A reused instance starts each answer afresh.
    (global.set $out (i32.const 0))
    (call $path (local.get $request) (i32.const 1024))
    (local.set $path (i32.load (i32.const 1028)))
    (local.set $len (i32.load (i32.const 1032)))
    (local.set $kind (i32.load8_u offset=1 (local.get $path)))
    (if (i32.eq (local.get $kind) (i32.const 118)) ;; v
      (then (call $variable_answer (i32.add (local.get $path) (i32.const 3)) (i32.sub (local.get $len) (i32.const 3)))))
    (if (i32.eq (local.get $kind) (i32.const 101)) ;; e
      (then (call $environment_answer)))
    (if (i32.eq (local.get $kind) (i32.const 100)) ;; d
      (then (call $database_answer (i32.add (local.get $path) (i32.const 3)) (i32.sub (local.get $len) (i32.const 3)))))
    (if (i32.eq (local.get $kind) (i32.const 112)) ;; p
      (then (call $pg_answer (i32.const 0))))
    (if (i32.eq (local.get $kind) (i32.const 122)) ;; z
      (then (call $pg_answer (i32.const 1))))
    (local.set $response (call $response (call $fields)))
    (call $body (local.get $response) (i32.const 1024))
    (local.set $body (i32.load (i32.const 1028)))
    (call $set (local.get $outparam) (i32.const 0) (local.get $response) (i32.const 0) (i64.const 0) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0))
    (call $write (local.get $body) (i32.const 1024))
    (local.set $stream (i32.load (i32.const 1028)))
    (call $flush (local.get $stream) (i32.const 4096) (global.get $out) (i32.const 1024))
    (call $drop_stream (local.get $stream))
    (call $finish (local.get $body) (i32.const 0) (i32.const 0) (i32.const 1024)))
)"#
    )
}

const PROBE_WORLD: &str = "
package spin-lite-test:probe;
world probe {
  import wasi:cli/environment@0.2.6;
  import wasi:io/streams@0.2.6;
  import wasi:http/types@0.2.6;
  import fermyon:spin/variables@2.0.0;
  import fermyon:spin/sqlite@2.0.0;
  import fermyon:spin/postgres@2.0.0;
  export wasi:http/incoming-handler@0.2.6;
}
";

/// The probe component's bytes.
pub fn probe() -> Vec<u8> {
    component(PROBE_WORLD, &probe_wat())
}

/// A WASI 0.2 component whose `wasi:http/incoming-handler` runs `handle`
/// (a core function body, the request and the response-out in locals 0 and 1).
pub fn p2_handler(handle: &str) -> Vec<u8> {
    let wat = format!(
        r#"(component
  (import "wasi:http/types@0.2.0" (instance $types
    (export "incoming-request" (type (sub resource)))
    (export "response-outparam" (type (sub resource)))
  ))
  (alias export $types "incoming-request" (type $request))
  (alias export $types "response-outparam" (type $outparam))
  (core module $m (func (export "handle") (param i32 i32) {handle}))
  (core instance $i (instantiate $m))
  (func $handle (param "request" (own $request)) (param "response-out" (own $outparam))
    (canon lift (core func $i "handle")))
  (instance $handler (export "handle" (func $handle)))
  (export "wasi:http/incoming-handler@0.2.0" (instance $handler))
)"#
    );
    wat::parse_str(wat).expect("the WAT is valid")
}

/// A WASI 0.3 component (`wasi:http/handler@0.3.0`, lifted async with a
/// callback); `handle` is its core body, the request in local 0, and may
/// end with `$answer`: status 200 plus the requests its instance served
/// before, no body, no trailers.
pub fn p3_handler(handle: &str) -> Vec<u8> {
    let http = "wasi:http/types@0.3.0";
    let new = "[static]response.new";
    let wat = format!(
        r#"(module
  (import "{http}" "[constructor]fields" (func $fields (result i32)))
  (import "{http}" "{new}" (func $response (param i32 i32 i32 i32 i32)))
  (import "{http}" "[method]response.set-status-code" (func $status (param i32 i32) (result i32)))
  (import "{http}" "[resource-drop]request" (func $drop_request (param i32)))
  (import "{http}" "[future-new-1]{new}" (func $future (result i64)))
  (import "{http}" "[async-lower][future-write-1]{new}" (func $write (param i32 i32) (result i32)))
  (import "{http}" "[future-drop-writable-1]{new}" (func $drop_writer (param i32)))
  (import "{http}" "[future-drop-readable-2]{new}" (func $drop_reader (param i32)))
  (import "[export]wasi:http/handler@0.3.0" "[task-return]handle" (func $return (param i32 i32 i32 i64 i32 i32 i32 i32)))
  (import "$root" "[waitable-set-new]" (func $set_new (result i32)))
  (import "$root" "[waitable-join]" (func $join (param i32 i32)))
  (import "$root" "[waitable-set-drop]" (func $set_drop (param i32)))
  (import "$root" "[context-get-0]" (func $context (result i32)))
  (import "$root" "[context-set-0]" (func $set_context (param i32)))
  (memory (export "memory") 1)
  (global $served (mut i32) (i32.const 0))
  (func $answer (param $request i32) (result i32)
    (local $future i64) (local $response i32) (local $writer i32) (local $set i32)
    (call $drop_request (local.get $request))
    (local.set $future (call $future))
    (call $response (call $fields) (i32.const 0) (i32.const 0) (i32.wrap_i64 (local.get $future)) (i32.const 64))
    (local.set $response (i32.load (i32.const 64)))
    (call $drop_reader (i32.load (i32.const 68)))
    (drop (call $status (local.get $response) (i32.add (i32.const 200) (global.get $served))))
    (global.set $served (i32.add (global.get $served) (i32.const 1)))
    (call $return (i32.const 0) (local.get $response) (i32.const 0) (i64.const 0) (i32.const 0) (i32.const 0) (i32.const 0) (i32.const 0))
    ;; The trailers, ok(none) (zeroes), once the host takes them.
    (local.set $writer (i32.wrap_i64 (i64.shr_u (local.get $future) (i64.const 32))))
    (if (i32.ne (call $write (local.get $writer) (i32.const 128)) (i32.const -1))
      (then (call $drop_writer (local.get $writer)) (return (i32.const 0))))
    (local.set $set (call $set_new))
    (call $join (local.get $writer) (local.get $set))
    (call $set_context (local.get $set))
    (i32.or (i32.const 2) (i32.shl (local.get $set) (i32.const 4))))
  (func (export "[async-lift]wasi:http/handler@0.3.0#handle") (param i32) (result i32)
    {handle})
  ;; The trailers were taken (event, the writer, its result): done.
  (func (export "[callback][async-lift]wasi:http/handler@0.3.0#handle") (param i32 i32 i32) (result i32)
    (call $join (local.get 1) (i32.const 0))
    (call $drop_writer (local.get 1))
    (call $set_drop (call $context))
    (i32.const 0))
)"#
    );
    let world = "package spin-lite-test:p3;
world p3 { import wasi:http/types@0.3.0; export wasi:http/handler@0.3.0; }";
    component(world, &wat)
}

/// A core module in WAT made a component of `world` (`package:.../world NAME`,
/// against the repository's `wit/`).
fn component(world: &str, wat: &str) -> Vec<u8> {
    let wit = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../wit");
    let mut resolve = wit_parser::Resolve::default();
    resolve.push_dir(&wit).expect("the repository's wit/ parses");
    let package = resolve.push_str(Path::new("world.wit"), world).expect("the world parses");
    let world = resolve.select_world(&[package], None).unwrap();
    let mut module = wat::parse_str(wat).expect("the WAT is valid");
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .unwrap();
    wit_component::ComponentEncoder::default()
        .module(&module)
        .unwrap()
        .validate(true)
        .encode()
        .unwrap_or_else(|e| panic!("not a valid component: {e:?}"))
}
