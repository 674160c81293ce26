// Models mm/compaction.c's compact_zone as a user of page migration (docs/model.md, "Compaction"; the trees read are
// named there): sysctl_compaction_handler -> compact_nodes -> compact_node -> compact_zone -> isolate_migratepages
// (isolate_migratepages_block) and migrate_pages(..., MR_COMPACTION).
#include "mm/compaction.h"

#include <stdexcept>
#include <vector>

#include "mm/migrate.h"

namespace tlbsim::kernel {

namespace {

// isolate_migratepages_block over [*pfn, end) of node `nid`: under the node's LRU lock, each anonymous page that a
// process maps (one with an anon rmap; PageLRU, not locked by another migration) is taken off the LRU
// (isolate_lru_page), up to COMPACT_CLUSTER_MAX. Advances *pfn past what it scanned (cc->migrate_pfn).
sim::Task<std::vector<Pfn>> isolate_migratepages(PerCpu& self, std::uint16_t nid, std::uint64_t* pfn,
                                                 std::uint64_t end) {
  FrameAllocator& frames = self.k.frames();
  std::vector<Pfn> isolated;
  for (; *pfn < end && isolated.size() < COMPACT_CLUSTER_MAX; ++*pfn) {
    const Pfn p{*pfn};
    if (frames.nid(p) != nid || !frames.anon_rmap(p) || frames.page_locked(p)) continue;
    isolated.push_back(p);
    co_await self.cpu.delay(self.k.machine().kernel.lru_update);  // isolate_lru_page, and the copy's putback
  }
  co_return isolated;
}

}  // namespace

sim::Task<std::uint64_t> compact_node(PerCpu& self, std::uint16_t nid, const std::function<void()>& on_migrated) {
  // compact_zone: the migrate scanner from the zone's start to where the free scanner would meet it; the model has
  // no free scanner (compaction_alloc takes a free frame of the node), so the scan covers every frame that exists
  // when it starts.
  std::uint64_t migrated = 0;
  const std::uint64_t end = self.k.frames().nr_frames();
  for (std::uint64_t pfn = 1; pfn < end;) {
    const std::vector<Pfn> pages = co_await isolate_migratepages(self, nid, &pfn, end);
    if (pages.empty()) continue;
    migrated += co_await migrate_pages_compaction(self, pages, on_migrated);
  }
  co_return migrated;
}

bool has_proactive_compaction(const KernelConfig& config) { return config.version >= KernelVersion{5, 9}; }

sim::Task<std::uint64_t> proactive_compact_node(PerCpu& self, std::uint16_t nid,
                                                const std::function<void()>& on_migrated) {
  if (!has_proactive_compaction(self.k.config())) {
    throw std::logic_error("proactive_compact_node: proactive compaction is v5.9+ (facd6b8ab7f1)");
  }
  co_return co_await compact_node(self, nid, on_migrated);
}

sim::Task<std::uint64_t> sysctl_compact_memory(PerCpu& self, std::function<void()> on_migrated) {
  co_await self.cpu.delay(self.k.machine().kernel.syscall);
  std::uint64_t migrated = 0;
  for (std::uint32_t nid = 0; nid < self.k.nr_node_ids(); ++nid) {
    migrated += co_await compact_node(self, static_cast<std::uint16_t>(nid), on_migrated);
  }
  self.k.events().on_syscall_return(self.id);
  co_return migrated;
}

}  // namespace tlbsim::kernel
