//! The engine for one component and many short requests: the compilation
//! cache skips compiling on restart; the pooling allocator and copy-on-write
//! images make a fresh instance per request cheap; epochs let guests yield.

use std::path::Path;

use anyhow::Result;
use wasmtime::{Cache, CacheConfig, Config, Engine, InstanceAllocationStrategy};

/// `concurrent`: for a WASI 0.3 component, the requests an instance serves
/// at once, each of which may hold a stack of its own while blocked in the
/// host. None for WASI 0.2: its stores then skip the concurrency machinery
/// (a quarter of `GET /health`'s CPU).
pub fn engine(state_dir: &Path, instances: u32, concurrent: Option<u32>) -> Result<Engine> {
    let mut config = Config::new();
    config.memory_init_cow(true);
    config.epoch_interruption(true);
    config.concurrency_support(concurrent.is_some());
    let mut cache = CacheConfig::new();
    cache.with_directory(state_dir.join("cache"));
    match Cache::new(cache) {
        Ok(cache) => _ = config.cache(Some(cache)),
        Err(e) => eprintln!("warning: compilation cache disabled: {e:#}"),
    }

    let mut pooling = wasmtime::PoolingAllocationConfig::default();
    pooling
        .total_component_instances(instances)
        // A Rust wasip2 component: a few core instances, one or two memories.
        .max_core_instances_per_component(16)
        .max_memories_per_component(4)
        .max_tables_per_component(8)
        .total_core_instances(instances * 8)
        .total_memories(instances * 2)
        .total_tables(instances * 4)
        .total_stacks(instances * (1 + concurrent.unwrap_or(0)))
        .max_memory_size(256 << 20)
        // Reset only the pages an instance dirtied (PAGEMAP_SCAN, Linux 6.7+;
        // up to 1 MiB by memset) rather than madvise the memory away: those
        // and their TLB shootdowns were 35 % of the host's CPU; `GET /book/1`
        // went from 14,000 to 21,500 req/s.
        .pagemap_scan(wasmtime::Enabled::Auto)
        .linear_memory_keep_resident(1 << 20)
        .table_keep_resident(64 << 10);
    let mut pooled = config.clone();
    pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
    Engine::new(&pooled).or_else(|e| {
        eprintln!("warning: pooling allocator unavailable ({e}); allocating instances on demand");
        Ok(Engine::new(&config)?)
    })
}
