// The modeled kernel of one run: per-CPU state, address spaces, physical memory, counters, the oracle, and the
// interrupt entry that dispatches IPIs. Modeled functions receive the PerCpu of the CPU they run on.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "arch/x86/tlb_state.h"
#include "check/oracle.h"
#include "hw/system.h"
#include "hw/tlb.h"
#include "kernel/counters.h"
#include "kernel/mm.h"
#include "sim/task.h"

namespace tlbsim::kernel {

class Kernel;
class PerCpu;

// x86 IPI vectors used here (numbered for the model, named as in arch/x86/include/asm/irq_vectors.h).
inline constexpr int CALL_FUNCTION_VECTOR = 1;
inline constexpr int CALL_FUNCTION_SINGLE_VECTOR = 2;
inline constexpr int LOCAL_TIMER_VECTOR = 3;

// A cross-call function (smp_call_func_t) and a filter (smp_cond_func_t), as plain function pointers.
using SmpCallFunc = sim::Task<void> (*)(PerCpu& self, const void* info);
using SmpCondFunc = sim::Task<bool> (*)(PerCpu& self, CpuId cpu, const void* info);

// call_single_data: one per (sender, target) pair, on its own line.
struct Csd {
  static constexpr std::uint32_t CSD_FLAG_LOCK = 0x01;
  static constexpr std::uint32_t CSD_TYPE_SYNC = 0x10;
  hw::Shared<std::uint32_t> flags;
  SmpCallFunc func = nullptr;
  const void* info = nullptr;
};

// Run-time choices of the modeled kernel that are not yet named options (the seed options come later).
struct KernelConfig {
  // v5.13-v5.17 native_flush_tlb_multi open-codes the lazy filter (commit 6035152d8eeb); the benchmarked
  // kernels of seed 000 carry its revert, which uses on_each_cpu_cond_mask(tlb_is_not_lazy).
  bool open_coded_cond_mask = false;
  // Seed 000 as posted (x86/mm/tlb: avoid reading mm_tlb_gen when possible, v2): flush_tlb_func returns early
  // when f->new_tlb_gen <= local_tlb_gen and reads mm->context.tlb_gen only after that test.
  bool avoid_mm_tlb_gen_read = false;
  // The later upstream fix (x86/mm/tlb: Ignore f->new_tlb_gen when zero): the early return is skipped for
  // flushes that carry no generation (TLB_GENERATION_INVALID, as arch_tlbbatch_flush sends).
  bool ignore_invalid_tlb_gen = false;
  // Test-only breakage for checking the oracle: flush_tlb_mm_range sends no IPIs.
  bool test_skip_remote_ipis = false;
  // Test-only breakage: native_flush_tlb_multi ignores freed_tables, so lazy CPUs are skipped even then.
  bool test_ignore_freed_tables = false;
};

// Per-CPU kernel state. Contract: `tlbstate` is touched only by its own CPU; `is_lazy` and the call queue are
// shared and live on modeled lines.
class PerCpu {
 public:
  PerCpu(Kernel& k, sim::Cpu& cpu, const hw::TlbParams& tlb, hw::CoherenceModel& model, std::uint32_t ncpus);

  Kernel& k;
  sim::Cpu& cpu;
  CpuId id;
  hw::Tlb tlb;
  x86::TlbState tlbstate;
  MmStruct* cr3_mm = nullptr;  // hardware: whose page tables CR3 points to (set by every CR3 write)
  hw::Shared<bool> is_lazy;  // cpu_tlbstate_shared.is_lazy
  // call_single_queue: an llist; entries are the csds of pending cross-calls, oldest first.
  LineId call_single_queue_line;
  std::vector<Csd*> call_single_queue;
  // The per-CPU flush_tlb_info (get_flush_tlb_info), reused by every flush this CPU initiates.
  x86::FlushTlbInfo flush_tlb_info;
  int tlb_tag() const { return tlbstate.loaded_mm ? x86::kern_pcid(tlbstate.loaded_mm_asid) : -1; }
  // This CPU's csd for cross-calls to `target` (cfd_data), made on first use.
  Csd& csd_for(CpuId target);

 private:
  hw::CoherenceModel& model_;
  std::vector<std::unique_ptr<Csd>> csds_;
};

// Contract: owns everything a run of the modeled kernel needs besides the System; installs itself as every
// CPU's interrupt handler.
class Kernel final : public sim::IrqHandler {
 public:
  Kernel(hw::System& sys, KernelConfig config);
  ~Kernel() override;

  hw::System& sys() { return sys_; }
  hw::Memory& mem() { return sys_.memory(); }
  const hw::Machine& machine() const { return sys_.machine(); }
  const KernelConfig& config() const { return config_; }
  KernelCounters& counters() { return counters_; }
  check::Oracle& oracle() { return *oracle_; }
  FrameAllocator& frames() { return frames_; }
  std::uint32_t ncpus() const { return static_cast<std::uint32_t>(percpu_.size()); }
  PerCpu& percpu(CpuId c) { return *percpu_[c.get()]; }
  MmStruct& init_mm() { return *init_mm_; }
  // __mmdrop: the mm is freed. The oracle checks that no CPU's CR3 and no task's active_mm still use it.
  void free_mm(MmStruct& mm);
  // The scheduler of this run, when the workload uses one (for the oracle's active_mm check and timer
  // interrupts).
  class Sched* sched = nullptr;
  // mm_alloc + init_new_context: a fresh address space with a new ctx_id.
  MmStruct& new_mm();
  File& new_file(std::uint64_t size);

  sim::Task<void> handle_irq(sim::Cpu& cpu, int vector) override;

 private:
  void speculative_walks(PerCpu& self);
  hw::System& sys_;
  KernelConfig config_;
  KernelCounters counters_;
  FrameAllocator frames_;
  std::vector<std::unique_ptr<PerCpu>> percpu_;
  std::unique_ptr<check::Oracle> oracle_;
  std::unique_ptr<MmStruct> init_mm_;
  std::vector<std::unique_ptr<MmStruct>> mms_;
  std::vector<std::unique_ptr<File>> files_;
  std::uint64_t last_mm_ctx_id_ = 1;  // init_mm has ctx_id 1; the first user mm gets 2
};

}  // namespace tlbsim::kernel
