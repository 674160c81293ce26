// The test of "migrate_pages: batch flushing TLB" (Huang Ying, 7e12beb8ca2a, v6.4): pmbench accesses its memory
// while numactl's migratepages moves that memory between two NUMA nodes, back and forth; the figure is the pages
// migrated per second. pmbench: N threads of one process, each loading or storing (half each, pmbench's default)
// a uniformly random page of one shared region, which it has touched whole before the run; each access misses the
// caches (the region is far larger than the LLC) and costs the machine's memory latency. migratepages: a process
// of its own, pinned to the first core, calling migrate_pages(2) on pmbench's pid in a loop; pmbench's threads sit
// on the next N cores. The commit message names no machine, thread count or region size: docs/model.md
// ("Page migration") gives the choices made here.
#include <fmt/format.h>

#include <memory>

#include "kernel/sched/sched.h"
#include "mm/memory.h"
#include "mm/migrate.h"
#include "sim/rng.h"
#include "util/error.h"
#include "util/registry.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

sim::Task<void> pmbench_thread(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint64_t base, std::uint64_t pages,
                               sim::Rng rng, sim::SimTime end) {
  const sim::Duration miss = self.k.machine().coherence.memory;
  while (self.cpu.now() < end) {
    const std::uint64_t page = rng.below(pages);
    const bool write = (rng.next() & 1) != 0;
    co_await kernel::user_access(self, mm, base + page * kernel::kPageSize, write);
    co_await self.cpu.user_delay(miss);
  }
}

sim::Task<void> migratepages(kernel::PerCpu& self, kernel::MmStruct& target, sim::SimTime from, sim::SimTime end,
                             std::uint64_t& migrated) {
  const auto count = [&self, from, end, &migrated] {
    if (self.cpu.now() >= from && self.cpu.now() < end) ++migrated;
  };
  while (self.cpu.now() < end) co_await kernel::sys_migrate_pages(self, target, count);
}

class PmbenchMigrate final : public Workload {
 public:
  std::string metric_name() const override { return "pages_migrated_per_sec"; }
  std::string unit() const override { return "pages/s"; }
  bool draws_from_seed() const override { return true; }
  void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) override {
    const auto& topo = k.sys().topology();
    const std::uint32_t cores = topo.params().sockets * topo.params().cores_per_socket;
    if (p.threads == 0 || p.threads + 1 > cores) {
      throw InputError(fmt::format("--threads: pmbench_migrate pins migratepages to core 0 and pmbench's threads to "
                                   "the next cores; this machine has {} cores, so 1..{} threads",
                                   cores, cores - 1));
    }
    const std::uint64_t pages =
        p.param("pages", 4096, 512, 1 << 20, "pages of pmbench's region (its -m, in 4 KiB pages)");
    sched_ = std::make_unique<kernel::Sched>(k);
    sched_->start();
    const sim::SimTime from = sim::kTimeZero + p.warmup, end = from + p.duration;
    // pmbench's region, touched whole (written) before the run, as pmbench does before it measures.
    kernel::MmStruct& bench = k.new_mm();
    bench.map_process_image();
    bench.mm_users.value = p.threads;
    const std::uint64_t base = bench.get_unmapped_area(pages * kernel::kPageSize);
    // Written whole: the VMA has its anon_vma.
    bench.insert_vma(kernel::Vma{base, base + pages * kernel::kPageSize, true, false, nullptr, 0, nullptr}).anon_vma =
        true;
    for (std::uint64_t i = 0; i < pages; ++i) {
      const Vpn v = kernel::vpn_of(base + i * kernel::kPageSize);
      const Pfn page = k.frames().alloc(kernel::FrameUse::kAnon);
      k.frames().set_anon_rmap(page, kernel::AnonRmap{&bench, v.get()});  // the VMA's vm_pgoff is its address
      bench.pgd.set(v, kernel::Pte{page, true, true, true});
    }
    ops.assign(p.threads + 1, 0);  // ops[0]: pages migrated; pmbench's accesses are not the figure
    const auto cpu_of_core = [&topo](std::uint32_t core) {
      return topo.cpu_at(core / topo.params().cores_per_socket, core % topo.params().cores_per_socket, 0);
    };
    kernel::MmStruct& tool = k.new_mm();
    tool.map_process_image();
    kernel::PerCpu& pc0 = k.percpu(cpu_of_core(0));
    std::uint64_t& migrated = ops[0];
    pin(k, sched_->create_task("migratepages", &tool, pc0.id, [&pc0, &bench, from, end, &migrated](kernel::TaskStruct&) {
      return migratepages(pc0, bench, from, end, migrated);
    }));
    const sim::Rng rng = sim::Rng(p.seed).split(0x706d62);
    for (std::uint32_t i = 0; i < p.threads; ++i) {
      kernel::PerCpu& pc = k.percpu(cpu_of_core(i + 1));
      const sim::Rng mine = rng.split(i);
      pin(k, sched_->create_task("pmbench", &bench, pc.id, [&pc, &bench, base, pages, mine, end](kernel::TaskStruct&) {
        return pmbench_thread(pc, bench, base, pages, mine, end);
      }));
    }
  }

 private:
  static void pin(kernel::Kernel& k, kernel::TaskStruct& t) {
    const CpuId cpu = t.cpu;
    t.cpus_allowed = kernel::Cpumask(k.ncpus());
    t.cpus_allowed.set(cpu);
  }
  std::unique_ptr<kernel::Sched> sched_;
};

TLBSIM_REGISTER(Workload, PmbenchMigrate, "pmbench_migrate",
                "migratepages moves pmbench's memory between nodes while N pmbench threads access it at random "
                "(7e12beb8ca2a's test)");

}  // namespace
}  // namespace tlbsim::workloads
