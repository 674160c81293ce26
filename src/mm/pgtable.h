// Page tables and the physical page allocator: the truth against which the oracle checks every TLB hit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/ids.h"

namespace tlbsim::kernel {

inline constexpr std::uint64_t kPageShift = 12;
inline constexpr std::uint64_t kPageSize = std::uint64_t{1} << kPageShift;
inline constexpr std::uint64_t kPtesPerTable = 512;  // one PTE page maps 2 MiB

inline constexpr std::uint64_t kPmdShift = 21;                                 // PMD_SHIFT: one PMD entry maps 2 MiB
inline constexpr std::uint64_t kHpagePmdSize = std::uint64_t{1} << kPmdShift;  // HPAGE_PMD_SIZE
inline constexpr std::uint64_t kHpagePmdNr = kPtesPerTable;                    // HPAGE_PMD_NR
inline constexpr std::uint64_t kPudShift = 30;                                 // PUD_SHIFT: one PUD entry maps 1 GiB
inline constexpr std::uint64_t kPudSize = std::uint64_t{1} << kPudShift;       // PUD_SIZE

inline Vpn vpn_of(std::uint64_t vaddr) { return Vpn{vaddr >> kPageShift}; }
inline std::uint64_t table_index(Vpn v) { return v.get() / kPtesPerTable; }

// What a frame currently holds, for the oracle's reports.
enum class FrameUse : std::uint8_t { kFree, kAnon, kPageCache, kPageTable, kZeroPage };

struct Pte;
class PageTables;
class MmStruct;

// An anonymous page's reverse map as struct page keeps it: page->mapping (PAGE_MAPPING_ANON, the anon_vma) and
// page->index (linear_page_index of the address it was first mapped at: __page_set_anon_rmap, v3.3-v6.13). The
// model's fork shares no anonymous page, so the anon_vma is stood for by the one mm that maps the page; an rmap walk
// visits that mm's VMAs that have an anon_vma (rmap_walk_anon, mm/rmap.h).
struct AnonRmap {
  MmStruct* mm = nullptr;  // not owned; an MmStruct outlives the run (Kernel::free_mm only marks it freed)
  std::uint64_t index = 0;
};

// What the hardware page walkers read of page-table entries under a weak memory model (the checker's POWER model,
// mm/pte_visibility.h). None is installed by default: every walk reads the current entry. Contract: stored() is
// called after each change of a 4 KiB PTE that a walk can see (set, clear) with its value as a walk would read it
// before and after; walk() returns what `cpu`'s walker reads, the current value or an older one.
class PteVisibility {
 public:
  virtual ~PteVisibility() = default;
  virtual void stored(const PageTables& pt, Vpn v, const std::optional<Pte>& before,
                      const std::optional<Pte>& after) = 0;
  virtual std::optional<Pte> walk(CpuId cpu, const PageTables& pt, Vpn v, const std::optional<Pte>& now) = 0;
  // A TLB invalidation completed on `cpu` (tlbie reaching it, or its own tlbiel): no walk it began earlier survives.
  virtual void invalidated(CpuId cpu) = 0;
  // `pt` is being destroyed: a later table at its address is a new one.
  virtual void forget(const PageTables& pt) = 0;
};

// Physical memory. Freed frames are reused last-in first-out, so a frame freed too early is reused soon and a
// stale translation to it is caught quickly. Contract: free() calls the free observer before the frame can be
// reused (the oracle marks removals complete there).
class FrameAllocator {
 public:
  // A frame on NUMA node `nid` (the node of the allocating CPU for anonymous faults and migration targets; node 0
  // for the rest, docs/model.md).
  Pfn alloc(FrameUse use, std::uint16_t nid = 0);
  // A THP's frames: kHpagePmdNr contiguous new frames (never reused ones), the first returned. They are freed one
  // by one, as a split THP's pages are.
  Pfn alloc_huge(FrameUse use, std::uint16_t nid);
  // A frame above every frame handed out so far (compaction_alloc: the free scanner takes free pages from the top of
  // the zone, above the migrate scanner).
  Pfn alloc_high(FrameUse use, std::uint16_t nid);
  void free(Pfn pfn);
  FrameUse use(Pfn pfn) const { return pfn.get() < use_.size() ? use_[pfn.get()] : FrameUse::kFree; }
  // page_to_nid.
  std::uint16_t nid(Pfn pfn) const { return pfn.get() < page_.size() ? page_[pfn.get()].nid : 0; }
  // page_cpupid_xchg_last, as far as the model keeps it: the node of the last NUMA hinting fault on the page
  // (kNoLastNid after allocation: cpupid_pid_unset). Returns the previous value.
  static constexpr std::int32_t kNoLastNid = -1;
  std::int32_t xchg_last_nid(Pfn pfn, std::int32_t nid);
  void set_last_nid(Pfn pfn, std::int32_t nid) { page_[pfn.get()].last_nid = nid; }
  std::int32_t last_nid(Pfn pfn) const { return page_[pfn.get()].last_nid; }
  // PG_locked of a page as NUMA migration of a THP takes it (trylock_page, folio_trylock) and drops it (unlock_page;
  // the waiters are woken through the mm's page wait queue). The model lets the lock stand for the THP's isolation
  // from the LRU too (docs/model.md).
  bool trylock_page(Pfn pfn);
  void unlock_page(Pfn pfn) { page_[pfn.get()].locked = false; }
  bool page_locked(Pfn pfn) const { return pfn.get() < page_.size() && page_[pfn.get()].locked; }
  // page_add_new_anon_rmap (folio_add_new_anon_rmap) and folio_migrate_mapping's copy of mapping and index: sets
  // the reverse map of a newly mapped anonymous page. Only pages a fault, a copy-on-write or a migration maps get one
  // (docs/model.md, "Compaction"); a reused frame starts without.
  void set_anon_rmap(Pfn pfn, AnonRmap r);
  std::optional<AnonRmap> anon_rmap(Pfn pfn) const;
  // The frames ever handed out (max_pfn for a scanner; frame 0 is the zero page).
  std::uint64_t nr_frames() const { return use_.size(); }
  // GUP pins (the reference get_user_pages_fast takes with FOLL_PIN, try_grab_folio): the count and the CPU that
  // took the last one, for the oracle. Few pages are ever pinned, so they are kept apart from the per-frame state.
  void pin(Pfn pfn, CpuId by);
  void unpin(Pfn pfn);
  std::uint32_t pins(Pfn pfn) const;
  CpuId pinned_by(Pfn pfn) const;
  // The huge zero page (mm_get_huge_zero_page): 512 frames of FrameUse::kZeroPage on node 0, allocated at the first
  // call and never freed (the kernel's shrinker that frees it when no PMD maps it is not modeled).
  Pfn huge_zero_page();
  std::uint64_t allocated() const { return allocated_; }
  std::uint64_t frees() const { return frees_; }
  void set_free_observer(std::function<void(Pfn)> f) { on_free_ = std::move(f); }
  // Called when a frame that was freed is handed out again.
  void set_reuse_observer(std::function<void(Pfn)> f) { on_reuse_ = std::move(f); }
  // The walkers' view of page tables under a weak memory model (nullptr: the current entries).
  void set_pte_visibility(PteVisibility* v) { pte_visibility_ = v; }
  PteVisibility* pte_visibility() const { return pte_visibility_; }

 private:
  std::vector<FrameUse> use_{FrameUse::kZeroPage};  // frame 0 is the shared zero page
  std::optional<Pfn> huge_zero_;
  struct PageNuma {
    std::uint16_t nid = 0;
    bool locked = false;
    std::int32_t last_nid = kNoLastNid;
  };
  std::vector<PageNuma> page_{PageNuma{}};  // by frame, as use_
  std::vector<AnonRmap> anon_;              // by frame, up to the highest frame that got one
  std::vector<std::uint64_t> free_list_;
  std::map<std::uint64_t, std::pair<std::uint32_t, CpuId>> pins_;  // by frame: count, last pinner
  std::uint64_t allocated_ = 0;
  std::uint64_t frees_ = 0;
  std::function<void(Pfn)> on_free_;
  std::function<void(Pfn)> on_reuse_;
  PteVisibility* pte_visibility_ = nullptr;
};

struct Pte {
  Pfn pfn;
  bool present = false;
  bool writable = false;
  bool anon = false;
  // A migration entry (make_migration_entry, mm/migrate.c): not present, naming the page under migration (`pfn`)
  // and whether its PTE was writable. A fault on it waits for the migration (migration_entry_wait).
  bool migration = false;
  // pte_protnone (a NUMA hinting PTE, change_prot_numa): present to the kernel, which still counts it as mapping
  // `pfn`, but not to the MMU, so any access faults (do_numa_page). `writable` keeps the write permission to restore
  // (x86 keeps _PAGE_RW in it; the saved-write bit, pte_mk_savedwrite, before v6.2 on powerpc).
  bool protnone = false;
  // Returned by lookup for a page of a PMD-mapped THP: the PMD, not a PTE, maps it (`pfn` is this page's frame).
  bool huge = false;
};

// A PMD that maps a THP (pmd_trans_huge): its first frame and permissions, and the PTE table deposited for a later
// split (pgtable_trans_huge_deposit).
struct HugePmd {
  Pfn page;
  bool writable = false;
  Pfn deposit;
  // is_huge_zero_pmd: the PMD maps the huge zero page (read-only, shared by every such PMD, never freed).
  bool zero = false;
  // pmd_protnone: a NUMA hinting PMD (change_huge_pmd with MM_CP_PROT_NUMA), as Pte::protnone: the kernel still
  // counts it as mapping the THP, the MMU does not; `writable` keeps the write permission to restore.
  bool protnone = false;
  // A PMD migration entry (set_pmd_migration_entry, v4.14+ with CONFIG_ARCH_ENABLE_THP_MIGRATION): not present,
  // naming the THP under migration (`page`); `writable` says which entry (make_writable_migration_entry). A fault on
  // it waits for the migration (pmd_migration_entry_wait).
  bool migration = false;
};

// A leaf page-table page: 512 PTEs. Upper levels are not modeled as pages (see docs/model.md).
struct PteTable {
  Pfn frame;  // the physical page holding this table
  std::vector<Pte> ptes = std::vector<Pte>(kPtesPerTable);
  std::uint32_t present = 0;  // entries that are not none: present PTEs and migration entries
};

// An address space's page tables. Contract: every change goes through set/clear so the present counts and the
// oracle's view stay exact.
class PageTables {
 public:
  explicit PageTables(FrameAllocator& frames) : frames_(frames) {}
  ~PageTables();
  PageTables(const PageTables&) = delete;
  PageTables& operator=(const PageTables&) = delete;

  std::optional<Pte> lookup(Vpn v) const;
  // What `cpu`'s hardware page walker reads for v: lookup(v), or under a weak memory model possibly an older value
  // (FrameAllocator::pte_visibility).
  std::optional<Pte> walk(CpuId cpu, Vpn v) const;
  // The leaf table covering v, if allocated.
  const PteTable* table(Vpn v) const;
  // Installs a PTE, allocating the leaf table if needed.
  void set(Vpn v, const Pte& pte);
  // Clears a present PTE (ptep_get_and_clear) and returns what it held (nothing, and no change, for a none PTE or a
  // migration entry).
  std::optional<Pte> clear(Vpn v);
  // The migration entry at v, if v holds one.
  std::optional<Pte> migration_entry(Vpn v) const;
  // Clears the migration entry at v (zap_pte_range's pte_clear of a non-present entry); false if there is none.
  bool clear_migration_entry(Vpn v);
  // Detaches the leaf table covering v if it maps nothing; returns its frame for the caller to free after the
  // TLB flush (pte_free_tlb).
  std::optional<Pfn> detach_empty_table(Vpn v);
  std::size_t table_count() const { return tables_.size(); }

  // The THP mapped by the PMD covering v, if it maps one (a hinting PMD or a PMD migration entry included).
  const HugePmd* huge_pmd(Vpn v) const;
  // set_pmd_at of a THP over the 2 MiB covering v. Contract: no PTE table and no THP is there.
  void set_huge_pmd(Vpn v, const HugePmd& pmd);
  // pmdp_huge_get_and_clear: the THP's PMD cleared; returns what it held.
  std::optional<HugePmd> clear_huge_pmd(Vpn v);
  // __split_huge_pmd_locked's end: the THP's PMD becomes its deposited PTE table, whose 512 PTEs map the THP's pages
  // with its permissions (pmd_populate). A hinting PMD's PTEs are ordinary ones (mk_pte with vma->vm_page_prot, the
  // write bit kept); a PMD migration entry's are 512 PTE migration entries of the THP's pages.
  void split_huge_pmd(Vpn v);
  // pmdp_collapse_flush's clear: the PTE table covering v is unlinked and returned (nothing if there is none), and
  // pmd_populate of it back (a collapse that failed).
  std::optional<PteTable> unlink_table(Vpn v);
  void relink_table(Vpn v, PteTable t);

 private:
  FrameAllocator& frames_;
  std::unordered_map<std::uint64_t, PteTable> tables_;
  std::unordered_map<std::uint64_t, HugePmd> huge_;  // by table index
};

}  // namespace tlbsim::kernel
