// vm-scalability case-lru-file-mmap-read (teawater/vm-scalability @124eb93a, usemem.c @0734e953): one usemem per
// CPU, each a single-threaded process that maps its own sparse file read-only and MAP_SHARED (`-f FILE
// --readonly`) and reads every 8-byte word once, in order; the files together are far larger than memory, so the
// page cache turns over through reclaim. The model bounds memory per node (docs/model.md, "lru_file_mmap_read"),
// starts in the steady state (the page cache full of mapped pages of the readers' files), and reclaims by direct
// reclaim in the faulting reader (mm/vmscan.cpp) and by each node's kswapd, which an allocation below the low
// watermark wakes onto its CPU (mm/kswapd.cpp). Reports pages read per second (ops = pages read), and the
// readers' user and system time after the warm-up (counters user_time_ns / sys_time_ns), as `time ./run` would;
// kswapd's time is its own (vmscan.kswapd_time_ns), as `time` does not see it.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <vector>

#include "mm/memory.h"
#include "mm/vmscan.h"
#include "util/memory_budget.h"
#include "util/registry.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

using kernel::kPageSize;

// Page-cache capacity per reader, in the model's 4 KiB pages (1 MiB): a scaled-down memory (docs/model.md).
// `--param memory_pages=N` changes it.
constexpr std::uint64_t kPagesPerReader = 256;
// The files together are this many times memory: ROTATE_BYTES = 4 TiB (hw_vars) against an assumed 256 GiB.
// `--param file_pages=N` sets each reader's file size in pages instead.
constexpr std::uint64_t kFileToMemoryRatio = 16;
// Each node's min watermark: 1/64 of its page-cache capacity, at least two reclaim batches (an estimate: the
// kernel's min_free_kbytes would be a few pages of memory this small).
constexpr std::uint64_t kMinWatermarkDivisor = 64;
// The simulator's own memory per page of page cache (struct page, its mapping, LRU and page-table entries), measured
// as peak RSS over full caches of 2 x 2048 and 2 x 8192 pages (87 bytes a page) and 16 x 1024 and 16 x 4096 (106),
// rounded up: for refusing a run that cannot fit, not for accounting.
constexpr std::uint64_t kBytesPerCachedPage = 128;
// usemem's do_rw_once with step = sizeof(long): one load per 8-byte word of every PAGE_SIZE page (64 KiB on powerpc,
// ArchMmu::page_size, though a model page spans 4 KiB of addresses). The model looks up the TLB once per
// eighth of the page (a chunk) and charges the chunk's other loads as compute (one L1 hit each; docs/calibration.md).
constexpr std::uint64_t kChunksPerPage = 8;

// The reader's CPU time: the open segment since `t0` is user or system time; interrupt time within a user segment
// is system time (powerpc VIRT_CPU_ACCOUNTING_NATIVE: vtime_flush charges hardirq time with
// account_system_index_time, i.e. to the interrupted task's stime). Only time after `from` (the warm-up) counts.
struct CpuTime {
  sim::SimTime from{};
  sim::SimTime t0{};
  sim::Duration irq0{0};
  bool user = false;
  bool open = false;

  void begin(kernel::PerCpu& self, bool user_mode) {
    t0 = self.cpu.now();
    irq0 = self.k.counters().irq_time[self.id.get()];
    user = user_mode;
    open = true;
  }
  // Closes the segment at `now` (the current time, or the end of the run).
  void end(kernel::PerCpu& self, sim::SimTime now) {
    open = false;
    if (now <= from) return;
    kernel::KernelCounters& c = self.k.counters();
    const sim::Duration total = now - std::max(t0, from);
    if (!user) {
      c.sys_time += total;
      return;
    }
    const sim::Duration in_irq = std::min(c.irq_time[self.id.get()] - irq0, total);
    c.user_time += total - in_irq;
    c.sys_time += in_irq;
  }
};

struct Reader {
  kernel::PerCpu* cpu = nullptr;
  kernel::MmStruct* mm = nullptr;
  kernel::File* file = nullptr;
  std::uint64_t addr = 0;    // the mapping of the whole file
  std::uint64_t first = 0;   // the first page not read before the run (the prefilled ones were)
  std::uint64_t npages = 0;  // the file's size in pages
  CpuTime time;
};

sim::Task<void> reader_task(kernel::PerCpu& self, kernel::Vmscan& vm, Reader& r, sim::SimTime end,
                            std::uint64_t& pages_read) {
  self.cpu.local_irq_disable();
  co_await self.k.arch().switch_mm_irqs_off(self, *r.mm);
  co_await self.cpu.local_irq_enable();
  self.k.events().set_user_context(self.id, r.mm->id());
  kernel::MmStruct& mm = *r.mm;
  const sim::Duration word = self.k.machine().coherence.l1_hit;
  const std::uint64_t words_per_chunk = self.k.arch().page_size() / 8 / kChunksPerPage;
  const std::uint64_t chunk_bytes = kPageSize / kChunksPerPage;  // the addresses the chunk's loads stand for
  for (std::uint64_t index = r.first; index < r.npages && self.cpu.now() < end; ++index) {
    const std::uint64_t page_addr = r.addr + index * kPageSize;
    const Vpn v = kernel::vpn_of(page_addr);
    for (std::uint64_t chunk = 0; chunk < kChunksPerPage; ++chunk) {
      const std::uint64_t addr = page_addr + chunk * chunk_bytes;
      // A preemption point in user mode: the node's kswapd, woken onto this CPU, takes it for its turn.
      if (vm.kswapd_due(self)) {
        const sim::SimTime t0 = self.cpu.now();
        co_await vm.kswapd_run(self);
        const sim::SimTime t1 = std::min(self.cpu.now(), end);
        if (t1 > r.time.from) vm.stats.kswapd_time += t1 - std::max(t0, r.time.from);
      }
      if (!mm.pgd.lookup(v)) {
        // The load will fault: filemap_fault finds no page and reads the hole (page_cache_read, with direct
        // reclaim when the node is at its min watermark) before the fault maps it (do_read_fault).
        r.time.begin(self, false);
        if (!r.file->pages.contains(index)) co_await vm.page_cache_read(self, *r.file, index);
        co_await kernel::user_access(self, mm, addr, false);
        const auto pte = mm.pgd.lookup(v);
        if (pte && vm.page(pte->pfn) == nullptr) co_await vm.adopt(self, *r.file, index, pte->pfn);
        r.time.end(self, self.cpu.now());
        r.time.begin(self, true);
      } else {
        r.time.begin(self, true);
        co_await kernel::user_access(self, mm, addr, false);
      }
      co_await self.cpu.delay(word * static_cast<std::int64_t>(words_per_chunk - 1));
      r.time.end(self, self.cpu.now());
    }
    if (self.cpu.now() >= r.time.from && self.cpu.now() < end) ++pages_read;
  }
}

class LruFileMmapRead final : public Workload {
 public:
  std::string metric_name() const override { return "pages_read_per_sec"; }
  std::string unit() const override { return "pages/s"; }

  void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) override {
    const auto& topo = k.sys().topology();
    const auto& tp = topo.params();
    const std::uint32_t cores = tp.sockets * tp.cores_per_socket;
    if (p.threads == 0 || p.threads > k.ncpus()) {
      throw InputError("--threads: lru_file_mmap_read runs one usemem per CPU, at most " + std::to_string(k.ncpus()) +
                       " here");
    }
    const std::uint64_t memory_pages =
        p.param("memory_pages", kPagesPerReader, 4 * kernel::SWAP_CLUSTER_MAX, 65536,
                "page-cache capacity per reader, in 4 KiB pages");
    const std::uint64_t file_pages = p.param("file_pages", kFileToMemoryRatio * memory_pages, memory_pages + 1,
                                             std::uint64_t{1} << 30, "each reader's sparse file, in 4 KiB pages");
    // Refuse up front what would not fit (issue 32): the page cache is the run's memory.
    check_memory_need(std::uint64_t{p.threads} * memory_pages * kBytesPerCachedPage,
                      fmt::format("lru_file_mmap_read with {} readers x memory_pages={}", p.threads, memory_pages));
    // The scheduler spreads the readers over cores first, then SMT threads; they do not migrate in the model.
    std::vector<CpuId> cpus;
    std::vector<std::vector<std::uint32_t>> by_node(tp.sockets);
    for (std::uint32_t i = 0; i < p.threads; ++i) {
      const std::uint32_t core = i % cores;
      cpus.push_back(topo.cpu_at(core / tp.cores_per_socket, core % tp.cores_per_socket, i / cores));
      by_node[topo.socket_of(cpus.back())].push_back(i);
    }
    std::vector<std::uint64_t> present(tp.sockets), min_wmark(tp.sockets);
    for (std::uint32_t n = 0; n < tp.sockets; ++n) {
      present[n] = by_node[n].size() * memory_pages;
      min_wmark[n] = std::max<std::uint64_t>(2 * kernel::SWAP_CLUSTER_MAX, present[n] / kMinWatermarkDivisor);
    }
    vmscan_ = std::make_unique<kernel::Vmscan>(k, present, min_wmark);
    // ROTATE_BYTES / nr_task per file.
    readers_.resize(p.threads);
    for (std::uint32_t i = 0; i < p.threads; ++i) {
      Reader& r = readers_[i];
      r.cpu = &k.percpu(cpus[i]);
      r.time.from = sim::kTimeZero + p.warmup;
      r.mm = &k.new_mm();
      r.file = &k.new_file(file_pages * kPageSize);
      r.npages = file_pages;
      // usemem: open(O_RDONLY), mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0), done before the run.
      r.addr = r.mm->get_unmapped_area(file_pages * kPageSize);
      r.mm->insert_vma(kernel::Vma{r.addr, r.addr + file_pages * kPageSize, false, true, r.file, 0, nullptr});
      vmscan_->add_file(*r.file);
    }
    prefill(by_node);
    ops.assign(p.threads, 0);
    const sim::SimTime end = sim::kTimeZero + p.warmup + p.duration;
    for (std::uint32_t i = 0; i < p.threads; ++i) {
      kernel::PerCpu& pc = k.percpu(cpus[i]);
      pc.cpu.start(reader_task(pc, *vmscan_, readers_[i], end, ops[i]));
    }
  }

  void finish(kernel::Kernel&, sim::SimTime end) override {
    for (Reader& r : readers_) {
      if (r.time.open) r.time.end(*r.cpu, end);
    }
  }

 private:
  // The steady state the run starts in: each node's page cache is full down to its min watermark with pages
  // the node's readers mapped earlier, on the inactive list in runs of PAGEVEC_SIZE per reader (lru_cache_add
  // drains a CPU's pagevec at once), alternately not yet scanned and scanned once (a use-once page is scanned
  // twice, so in the steady state half the list is each).
  void prefill(const std::vector<std::vector<std::uint32_t>>& by_node) {
    for (std::uint32_t n = 0; n < by_node.size(); ++n) {
      if (by_node[n].empty()) continue;
      kernel::PgData& pgdat = vmscan_->node(n);
      const std::uint64_t target = pgdat.present_pages - pgdat.watermark_min;
      std::uint64_t filled = 0, run = 0;
      while (filled < target) {
        for (std::uint32_t i : by_node[n]) {
          Reader& r = readers_[i];
          for (std::size_t j = 0; j < kernel::PAGEVEC_SIZE && filled < target; ++j, ++filled) {
            vmscan_->prefill(*r.file, r.first++, n, run % 2 == 1);
          }
          ++run;
        }
      }
    }
  }

  std::unique_ptr<kernel::Vmscan> vmscan_;
  std::vector<Reader> readers_;
};

TLBSIM_REGISTER(
    Workload, LruFileMmapRead, "lru_file_mmap_read",
    "vm-scalability case-lru-file-mmap-read: one usemem per CPU reads its own sparse file via mmap; reclaim");

}  // namespace
}  // namespace tlbsim::workloads
