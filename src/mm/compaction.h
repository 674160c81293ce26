// Memory compaction as its users run it without mmap_lock (mm/compaction.c: sysctl_compaction_handler ->
// compact_nodes -> compact_node -> compact_zone; kcompactd from v4.6 runs the same compact_zone): the migrate scanner
// isolates the pages of a node by physical address, whatever process maps them, and migrate_pages (mm/migrate.h)
// finds each page's mappings by the reverse map. Nothing keeps the mapping process from munmap, mremap, mprotect or
// madvise of the page meanwhile, which is what the compaction scenarios race.
#pragma once

#include <cstdint>
#include <functional>

#include "kernel/kernel.h"

namespace tlbsim::kernel {

// COMPACT_CLUSTER_MAX (SWAP_CLUSTER_MAX, include/linux/swap.h): the pages isolate_migratepages takes before each
// migrate_pages call.
inline constexpr std::uint64_t COMPACT_CLUSTER_MAX = 32;

// A write to /proc/sys/vm/compact_memory by the task on `self` (sysctl_compaction_handler -> compact_nodes): every
// node is compacted whole (compact_node, ignore_skip_hint). Returns the pages migrated; `on_migrated`, if given, is
// called as each page's migration completes (pgmigrate_success, compact_migrate_scanned is not kept).
sim::Task<std::uint64_t> sysctl_compact_memory(PerCpu& self, std::function<void()> on_migrated = {});

// compact_zone of node `nid` (each modeled node has one zone): the migrate scanner walks the node's frames from the
// lowest, isolating up to COMPACT_CLUSTER_MAX anonymous pages at a time (isolate_migratepages_block), each batch
// migrated (migrate_pages with compaction_alloc, MR_COMPACTION). Returns the pages migrated.
sim::Task<std::uint64_t> compact_node(PerCpu& self, std::uint16_t nid, const std::function<void()>& on_migrated);

}  // namespace tlbsim::kernel
