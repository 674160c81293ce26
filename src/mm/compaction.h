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

// kcompactd, the per-node compaction thread (v4.6, 698b1b30627c "mm, compaction: introduce kcompactd"), bound to its
// node's CPUs (kcompactd: set_cpus_allowed_ptr(cpumask_of_node)). Up to v5.8 it compacts only when kswapd wakes it
// for a high-order allocation (wakeup_kcompactd returns at once for order 0), which the model never makes. From v5.9
// (facd6b8ab7f1 "mm: proactive compaction", Nitin Gupta) its wait times out every HPAGE_FRAG_CHECK_INTERVAL_MSEC, and
// when should_proactive_compact_node finds the node's fragmentation score above the high watermark it runs
// proactive_compact_node (HPAGE_FRAG_CHECK_INTERVAL_MSEC is 500 ms; the model runs the pass from the checker's
// scenarios, not on a timer). Read in Rtoax/linux-5.10.13 @04a0507a (mm/compaction.c: kcompactd, kcompactd_do_work,
// proactive_compact_node, compact_node); the v6.12 tree docs/model.md names folds the pass into
// compact_node(pgdat, proactive), MIGRATE_SYNC_LIGHT when proactive.
bool has_proactive_compaction(const KernelConfig& config);

// proactive_compact_node of node `nid`, run by kcompactd on `self`: a kernel thread, so the CPU runs it lazily in
// whatever mm it had loaded (the caller switches to it: context_switch's enter_lazy_tlb). compact_zone of the node's
// zone with order -1, MIGRATE_SYNC_LIGHT, ignore_skip_hint and whole_zone, as compact_node's but for the mode
// (MIGRATE_SYNC), which the model's anonymous pages do not tell apart (neither waits on writeback they never have).
// The model keeps no fragmentation score: the pass covers the whole zone, where __compact_finished ends the kernel's
// once the zone's score falls to the low watermark. Returns the pages migrated.
sim::Task<std::uint64_t> proactive_compact_node(PerCpu& self, std::uint16_t nid,
                                                const std::function<void()>& on_migrated = {});

}  // namespace tlbsim::kernel
