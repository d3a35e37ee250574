#!/usr/bin/env python3
"""Attributes each sample of `perf script -F comm,tid,ip,sym,dso` (dwarf call
graphs, leaf first) to a stage of serving a request: a sample whose leaf is in
the kernel by the kind of kernel work; one whose leaf is JIT code (no symbol:
the component's compiled wasm) as component code; any other by the first
stage below whose pattern matches a frame anywhere in its stack.

    perf script ... | stages.py [CPU_US_PER_REQUEST]
"""
import re, sys, collections

STAGES = [
    ("SQLite (the sqlite3 library)", r"^sqlite3|rusqlite::"),
    ("host call: SQLite (book_host::sqlite: pool, params, rows)", r"book_host::sqlite"),
    ("host call: variables", r"book_host::variables|spin::variables"),
    ("logging (the component's stdout/stderr writes)", r"wasmtime_wasi::cli|stdio|Stdout|Stderr"),
    ("wasi-http: request/response resources, fields, body streams", r"wasmtime_wasi_http|wasmtime_wasi_io|wasmtime_wasi::p2::|ResourceTable"),
    ("instantiation and teardown (store, instance, memory reset)", r"instantiate|InstancePre|Store<.*>::new|StoreOpaque::new|StoreInner|State::new|drop_in_place<wasmtime::runtime::store|drop_in_place<book_host::server::Instance|pooling|decommit|MemoryImageSlot|WasiCtxBuilder|ComponentInstance::new|OnDemand|vm::instance::Instance::new|OwnedImports|allocate_instance|lookup_vmdef|Instantiator|initialize_and_return_funcref|ModuleRegistry::store_code|CompiledFunctionsTable|store_invariant_func|push_export|cranelift_bforest|StoreOpaque.*drop|Drop for wasmtime"),
    ("host-call and ABI glue (wasmtime component calls, lifting/lowering, fibers)", r"HostFn|component::func|typed::|Lower|Lift|wasm_to_array|array_to_wasm|host_task|wasmtime_fiber|fiber|traphandlers|call_handle|libcalls"),
    ("HTTP: accept, parse, serialise (hyper)", r"hyper::|httparse|^http::|hyper_util|tokio::net::tcp|TcpListener"),
    ("server glue (book_host::server)", r"book_host::server"),
    ("tokio runtime (task scheduling, timers, I/O driver)", r"tokio::"),
]
KERNEL = [
    ("kernel: thread wake-ups, switches, futex", r"schedule|switch|futex|wake|ttwu|enqueue|dequeue|pick_next|update_curr|_raw_spin_unlock_irqrestore|select_task|balance|newidle|nohz|sched|idle|__cond_resched"),
    ("kernel: TCP/loopback socket I/O and epoll", r"tcp_|ip_|sock|skb|net_|netif|loopback|__dev|inet|recv|send|epoll|ep_|__x64_sys_write|__x64_sys_read|do_softirq|__local_bh|napi|rx_"),
    ("kernel: memory (faults, madvise, pagemap)", r"page|fault|madvise|mm_|tlb|pte|pmd|memcg|folio|lru|pagemap|clear_user|copy_user|mprotect|mmap|vma"),
]

def kind_of_kernel(frames):
    for name, rx in KERNEL:
        for sym, dso in frames:
            if dso.startswith("[kernel") and re.search(rx, sym):
                return name
    return "kernel: other"

def classify(frames):
    sym0, dso0 = frames[0]
    if dso0.startswith("[kernel"):
        # The leaf's kind; a write to the log file counts as logging.
        if any(re.search(r"ext4|vfs_write|pipe_write|tty", s) for s, d in frames if d.startswith("[kernel")) \
                and not any(re.search(r"tcp_|sock", s) for s, d in frames):
            return "logging (the component's stdout/stderr writes)"
        return kind_of_kernel(frames)
    if sym0 == "[unknown]" and ("perf-" in dso0 or dso0 in ("[unknown]", "//anon")):
        return "component code (the component's compiled wasm)"
    for name, rx in STAGES:
        for sym, dso in frames:
            if re.search(rx, sym):
                return name
    if re.search(r"^_?mi_|mimalloc", sym0):
        return "allocator (mimalloc), unattributed"
    return "other (libc, unattributed)"

def frames_of(block):
    out = []
    for line in block[1:]:
        m = re.match(r"\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$", line)
        if m:
            sym = re.sub(r"\+0x[0-9a-f]+$", "", m.group(2))
            dso = m.group(3)
            out.append((sym, dso.split("/")[-1]))
    return out

stages = collections.Counter(); total = 0
block = []
def flush():
    global total
    fr = frames_of(block) if block else []
    if fr:
        stages[classify(fr)] += 1; total += 1
for line in sys.stdin:
    if not line.strip():
        flush(); block = []
    else:
        block.append(line.rstrip("\n"))
flush()
cpu_us = float(sys.argv[1]) if len(sys.argv) > 1 else None
for name, n in stages.most_common():
    extra = f"  ~{n / total * cpu_us:5.1f} us/request" if cpu_us else ""
    print(f"{n * 100 / total:5.1f} %{extra}  {name}")
print(f"samples {total}")
