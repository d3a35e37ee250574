//! The wasmtime engine: its configuration for serving one component to many
//! short requests.

use std::path::Path;

use anyhow::Result;
use wasmtime::{Cache, CacheConfig, Config, Engine, InstanceAllocationStrategy};

/// One engine for the process: the compilation cache (under the state dir)
/// makes a restart skip compilation; the pooling allocator (room for
/// `instances`) and copy-on-write memory images make a fresh instance per
/// request cheap; epoch interruption lets running guest code yield and be
/// stopped (see `http`).
pub fn engine(state_dir: &Path, instances: u32) -> Result<Engine> {
    let mut config = Config::new();
    config.memory_init_cow(true);
    config.epoch_interruption(true);
    let mut cache = CacheConfig::new();
    cache.with_directory(state_dir.join("cache"));
    match Cache::new(cache) {
        Ok(cache) => {
            config.cache(Some(cache));
        }
        Err(e) => eprintln!("warning: compilation cache disabled: {e:#}"),
    }

    /// Dirty memory per instance reset by memset rather than madvise: more
    /// than a request of our component touches (its stack, data and heap).
    const MEMORY_KEEP_RESIDENT_BYTES: usize = 1 << 20;
    const TABLE_KEEP_RESIDENT_BYTES: usize = 64 << 10;
    let mut pooling = wasmtime::PoolingAllocationConfig::default();
    pooling
        .total_component_instances(instances)
        // A Rust wasip2 component is a handful of core instances (the
        // program, the WASI adapter and glue), with one or two memories.
        .max_core_instances_per_component(16)
        .max_memories_per_component(4)
        .max_tables_per_component(8)
        .total_core_instances(instances * 8)
        .total_memories(instances * 2)
        .total_tables(instances * 4)
        .total_stacks(instances)
        .max_memory_size(256 << 20)
        // Reset a finished instance's memory by rewriting only the pages it
        // dirtied (found with Linux's PAGEMAP_SCAN, 6.7+), instead of
        // madvise-ing the whole memory away: no TLB shootdown across cores
        // and no page faults when the next instance touches the same pages.
        // Measured: madvise, TLB shootdowns and page faults were 35 % of the
        // host's CPU; `GET /book/1` went from 14,000 to 21,500 req/s.
        .pagemap_scan(wasmtime::Enabled::Auto)
        .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT_BYTES)
        .table_keep_resident(TABLE_KEEP_RESIDENT_BYTES);
    let mut pooled = config.clone();
    pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling));
    match Engine::new(&pooled) {
        Ok(engine) => Ok(engine),
        Err(e) => {
            eprintln!(
                "warning: pooling allocator unavailable ({e}); allocating instances on demand"
            );
            Ok(Engine::new(&config)?)
        }
    }
}
