// Page-cache reclaim, reduced to what a use-once file-read workload needs, modeled on Linux v4.14 mm/vmscan.c
// (shrink_inactive_list, shrink_page_list, page_check_references), mm/swap.c (lru_cache_add's per-CPU pagevec),
// mm/filemap.c (page_cache_read of a hole), mm/rmap.c (rmap_walk_file, page_referenced, try_to_unmap with
// TTU_BATCH_FLUSH) and mm/page_alloc.c (the zonelist walk against the watermarks, which falls back to another node,
// wakes the kswapds or sends an allocation into direct reclaim).
// Memory is bounded per node (a parameter, see docs/model.md); each node keeps one inactive file LRU under its
// lru_lock. The batched flush itself is mm/rmap.cpp's (try_to_unmap_one, try_to_unmap_flush).
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "kernel/kernel.h"
#include "kernel/locking/locks.h"
#include "mm/rmap.h"

namespace tlbsim::kernel {

// SWAP_CLUSTER_MAX: pages isolated per shrink_inactive_list call, and direct reclaim's nr_to_reclaim.
inline constexpr std::uint64_t SWAP_CLUSTER_MAX = 32;
// PAGEVEC_SIZE (v4.14): lru_cache_add moves pages to the LRU 14 at a time from a per-CPU pagevec.
inline constexpr std::size_t PAGEVEC_SIZE = 14;

// The struct page state reclaim reads, per frame of the page cache.
struct CachePage {
  File* mapping = nullptr;  // page->mapping (nullptr: not a page-cache page of this model)
  std::uint64_t index = 0;  // page->index
  std::uint32_t node = 0;   // page_to_nid
  bool young = false;       // the accessed bit of its one PTE (set when the PTE is installed, see docs/model.md)
  bool referenced = false;  // PG_referenced
};

// One PTE that maps a page, as rmap_walk_file finds it: the mapping's mm and the virtual page.
struct RmapHit {
  MmStruct* mm = nullptr;
  Vpn vpn;
};

// The node's kswapd thread (mm/vmscan.c kswapd()), as far as this model schedules it: asleep on kswapd_wait, or
// runnable on the CPU it was woken on, sharing that CPU with the task there in CFS slices (docs/model.md).
struct Kswapd {
  bool runnable = false;                        // woken and not yet back asleep (balanced)
  bool in_balance_pgdat = false;                // preempted inside balance_pgdat (a new call counts a pageoutrun)
  CpuId cpu{0};                                 // the CPU it was woken on (wake_affine: the waker's)
  sim::SimTime turn{};                          // when it next gets that CPU
  std::unique_ptr<TlbflushUnmapBatch> tlb_ubc;  // kswapd's own current->tlb_ubc
  std::uint32_t kswapd_failures = 0;            // pgdat->kswapd_failures: balance_pgdat runs that reclaimed nothing
};

// struct pglist_data, reduced: the node's free page count against its watermarks, the inactive file LRU
// (front = tail, the oldest page; back = head), lru_lock and kswapd.
struct PgData {
  PgData(hw::CoherenceModel& model, std::uint64_t present, std::uint64_t min_wmark, SpinlockKind lock_kind);
  Spinlock lru_lock;
  std::uint32_t node_id = 0;  // pgdat->node_id
  // lruvec->inactive_age (v4.14 mm/workingset.c): the node's eviction clock, one atomic increment per page that
  // __remove_mapping evicts (workingset_eviction); the model has one memcg, hence one lruvec per node.
  hw::Shared<long> inactive_age;
  std::uint64_t present_pages;   // page-cache pages this node can hold
  std::uint64_t watermark_min;   // min_wmark_pages
  std::uint64_t watermark_low;   // low_wmark_pages: below it an allocation wakes kswapd
  std::uint64_t watermark_high;  // high_wmark_pages: kswapd reclaims until the node is above it
  std::uint64_t nr_used = 0;     // allocated page-cache pages
  std::deque<Pfn> inactive_file;
  Kswapd kswapd;
  std::uint64_t nr_free() const { return nr_used >= present_pages ? 0 : present_pages - nr_used; }
};

// struct scan_control, reduced to who reclaims: direct reclaim (the allocating task) or kswapd, and the task's
// tlb_ubc (current->tlb_ubc).
// DEF_PRIORITY: direct reclaim's first pass scans 1/4096 of each LRU list.
inline constexpr int DEF_PRIORITY = 12;

struct ScanControl {
  TlbflushUnmapBatch* tlb_ubc = nullptr;
  bool kswapd = false;  // current_is_kswapd()
  int priority = DEF_PRIORITY;
  std::uint64_t nr_reclaimed = 0;
};

// Contract: one Vmscan per Kernel (installed as Kernel::vmscan by its owner); all page-cache pages of files
// registered with add_file are allocated and freed here. Each CPU has its own pagevec; the workload's one task
// on each CPU (tasks do not migrate in this model) and each node's kswapd have their own reclaim batch.
// Reclaim's counters (/proc/vmstat allocstall, pgscan_direct, pgsteal_direct, pgactivate, and kswapd's
// pgscan_kswapd, pgsteal_kswapd, pageoutrun), from vmscan.cpp and kswapd.cpp, and kswapd's own CPU time after the
// warm-up (not the workload's: `time` does not see it). Registered while the Vmscan lives.
struct VmscanStats {
  std::uint64_t allocstall = 0, pgscan_direct = 0, pgsteal_direct = 0, pgactivate = 0;
  std::uint64_t pgscan_kswapd = 0, pgsteal_kswapd = 0, pageoutrun = 0;
  sim::Duration kswapd_time{0};
  void register_stats(Stats& stats) const;
};

class Vmscan {
 public:
  // `present_pages_per_node[n]`: the node's page-cache capacity; `min_wmark[n]` its min watermark.
  Vmscan(Kernel& k, std::vector<std::uint64_t> present_pages_per_node, std::vector<std::uint64_t> min_wmark);
  ~Vmscan();
  Vmscan(const Vmscan&) = delete;
  Vmscan& operator=(const Vmscan&) = delete;

  VmscanStats stats;

  std::uint32_t node_of(CpuId c) const { return k_.sys().topology().socket_of(c); }
  PgData& node(std::uint32_t n) { return *nodes_[n]; }
  std::uint32_t nr_nodes() const { return static_cast<std::uint32_t>(nodes_.size()); }
  const CachePage* page(Pfn p) const {
    return p.get() < pages_.size() && pages_[p.get()].mapping ? &pages_[p.get()] : nullptr;
  }

  // Puts `file`'s page cache under this reclaim (its mapping->tree_lock). Its VMAs are in file.i_mmap, linked there
  // by MmStruct::insert_vma.
  void add_file(File& file);
  // The run's initial condition: page `index` of `file` is cached on `node`, mapped by its first mapping, on the LRU
  // head, having been scanned once already (young clear, PG_referenced set) or not.
  void prefill(File& file, std::uint64_t index, std::uint32_t node, bool scanned_once);

  // filemap_fault's miss path for a hole of a sparse file: __page_cache_alloc (alloc_page_node below), zero-fill
  // (the hole's readpage), add_to_page_cache_lru through this CPU's pagevec.
  sim::Task<void> page_cache_read(PerCpu& self, File& file, std::uint64_t index);
  // The node a page-cache allocation on `self` takes its page from (v4.14 __alloc_pages_nodemask): the first node
  // of the zonelist above its low watermark; else the slow path wakes every node's kswapd and takes the first
  // node above its min watermark; else direct reclaim (try_to_free_pages) and the first node above min, or this
  // CPU's node.
  sim::Task<std::uint32_t> alloc_page_node(PerCpu& self);
  // The zonelist of `nid` (ZONELIST_FALLBACK): `nid` first, then the other nodes in turn.
  std::vector<std::uint32_t> zonelist(std::uint32_t nid) const;
  // A page-cache frame that the fault path allocated itself (a page reclaimed between page_cache_read and the
  // fault): account it here and put it on the LRU like any other.
  sim::Task<void> adopt(PerCpu& self, File& file, std::uint64_t index, Pfn pfn);

  // try_to_free_pages from `self` (do_try_to_free_pages): from DEF_PRIORITY down to 0, shrink_zones runs
  // shrink_node on every node of `self`'s zonelist, until SWAP_CLUSTER_MAX pages are reclaimed. Returns them.
  sim::Task<std::uint64_t> try_to_free_pages(PerCpu& self);

  // --- kswapd (mm/kswapd.cpp) ---
  // wakeup_kswapd from the allocation slow path on `self`: wakes the node's kswapd onto `self` unless it is
  // already awake, hopeless (kswapd_failures) or the node is balanced.
  void wakeup_kswapd(PerCpu& self, PgData& pgdat);
  // Whether `self`'s node's kswapd is due to run on `self` now (a preemption point of the task there).
  bool kswapd_due(PerCpu& self);
  // kswapd on `self` for one CFS slice, or until balance_pgdat balances the node and it goes back to sleep.
  sim::Task<void> kswapd_run(PerCpu& self);
  // CFS's slice for each of two equal tasks sharing a CPU: sched_latency, scaled by the CPU count, halved.
  sim::Duration kswapd_slice() const;

 private:
  // shrink_node -> shrink_node_memcg for direct reclaim at sc.priority: scans the inactive file list's size >>
  // priority pages, SWAP_CLUSTER_MAX at a time; below DEF_PRIORITY it stops once this node's call has reclaimed
  // SWAP_CLUSTER_MAX. Adds what it reclaimed to sc.nr_reclaimed.
  sim::Task<void> shrink_node(PerCpu& self, PgData& pgdat, ScanControl& sc);
  // Isolates up to `nr_to_scan` pages from the list's tail and reclaims what it can.
  sim::Task<std::uint64_t> shrink_inactive_list(PerCpu& self, PgData& pgdat, ScanControl& sc, bool& isolated_any,
                                                std::uint64_t nr_to_scan = SWAP_CLUSTER_MAX);
  sim::Task<std::uint64_t> shrink_page_list(PerCpu& self, PgData& pgdat, ScanControl& sc, std::vector<Pfn>& page_list,
                                            std::vector<Pfn>& keep);
  // pgdat_balanced: the node's free pages are above its high watermark.
  static bool pgdat_balanced(const PgData& pgdat) { return pgdat.nr_free() > pgdat.watermark_high; }
  // lru_cache_add: onto this CPU's pagevec; __pagevec_lru_add under lru_lock when it fills.
  sim::Task<void> lru_cache_add(PerCpu& self, Pfn pfn);
  sim::Task<void> pagevec_lru_add(PerCpu& self, std::vector<Pfn>& pvec);
  // rmap_walk_file: the PTEs that map the page now, in i_mmap order (page_vma_mapped_walk checks each PTE maps it).
  std::vector<RmapHit> mapped_at(Pfn pfn) const;
  CachePage& info(Pfn p);
  void free_page(Pfn p);

  Kernel& k_;
  std::vector<std::unique_ptr<PgData>> nodes_;
  // By pfn. A deque: growing it keeps references valid, and shrink_page_list holds one across its awaits.
  std::deque<CachePage> pages_;
  // mapping->tree_lock of each mapped file (v4.14 struct address_space), guarding its page-cache radix tree.
  std::unordered_map<const File*, std::unique_ptr<Spinlock>> tree_lock_;
  std::vector<std::vector<Pfn>> pagevecs_;                // per CPU: lru_add_pvec
  std::vector<std::unique_ptr<TlbflushUnmapBatch>> ubc_;  // per CPU: current->tlb_ubc of the workload's task
};

}  // namespace tlbsim::kernel
