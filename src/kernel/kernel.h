// The modeled kernel of one run: per-CPU state, address spaces, physical memory, counters, the event subscribers
// (kernel/events.h), and the interrupt entry that dispatches IPIs. Modeled functions receive the PerCpu of the CPU they
// run on.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "hw/system.h"
#include "hw/tlb.h"
#include "kernel/arch_mmu.h"
#include "kernel/events.h"
#include "kernel/fork_stats.h"
#include "mm/mm_types.h"
#include "model/config.h"
#include "model/counters.h"
#include "model/stats.h"
#include "sim/task.h"

namespace tlbsim::trace {
class Tracer;
}

namespace tlbsim::kernel {

class Kernel;
class PerCpu;
class ShmemSwap;

// x86 IPI vectors used here (numbered for the model, named as in arch/x86/include/asm/irq_vectors.h).
inline constexpr int CALL_FUNCTION_VECTOR = 1;
inline constexpr int CALL_FUNCTION_SINGLE_VECTOR = 2;
inline constexpr int LOCAL_TIMER_VECTOR = 3;
inline constexpr int RESCHEDULE_VECTOR = 4;
// The /proc/interrupts row an interrupt vector counts in ("Function call interrupts", "TLB shootdowns", ...).
std::string_view irq_row(int vector);

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

// Per-CPU kernel state. Contract: `arch_state` belongs to the architecture's code; the call queue is shared and lives
// on a modeled line.
class PerCpu {
 public:
  PerCpu(Kernel& k, sim::Cpu& cpu, const hw::TlbParams& tlb, hw::CoherenceModel& model, std::uint32_t ncpus);

  Kernel& k;
  sim::Cpu& cpu;
  CpuId id;
  hw::Tlb tlb;
  // The architecture's per-CPU state (kernel/arch_mmu.h): x86's cpu_tlbstate, for one.
  std::unique_ptr<ArchCpuState> arch_state;
  // Hardware: whose page tables the CPU translates with (x86 CR3, powerpc PIDR), and the tag its TLB entries get
  // now (x86 PCID, powerpc PID). Set by every CR3 or PID write.
  MmStruct* cr3_mm = nullptr;
  std::uint16_t hw_tag = 0;
  // call_single_queue: an llist; entries are the csds of pending cross-calls, oldest first.
  LineId call_single_queue_line;
  std::vector<Csd*> call_single_queue;
  int tlb_tag() const { return cr3_mm != nullptr ? hw_tag : -1; }
  // This CPU's csd for cross-calls to `target` (cfd_data), made on first use.
  Csd& csd_for(CpuId target);

 private:
  hw::CoherenceModel& model_;
  std::uint32_t ncpus_;
  std::vector<std::unique_ptr<Csd>> csds_;  // by target CPU, sized at first use
};

// jiffies at `now` for a kernel of `hz` ticks a second (jiffies advance whether or not the tick is modeled).
std::int64_t jiffies_at(sim::SimTime now, std::int64_t hz);

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
  // The architecture's MMU hooks for this kernel's arch and release.
  ArchMmu& arch() { return *arch_; }
  // The run's statistics, registered by their subsystems; the generic kernel's own counters; kernel/fork.c's.
  Stats& stats() { return stats_; }
  KernelCounters& counters() { return counters_; }
  // The kernel's events (kernel/events.h), delivered to every subscriber; subscribe before the run starts.
  KernelEvents& events() { return events_; }
  void subscribe(KernelEvents& observer) { events_.subscribe(observer); }
  void unsubscribe(KernelEvents& observer) { events_.unsubscribe(observer); }
  // Which CPUs' TLBs hold each frame (kept by the TLBs, for observers that check a frame's reuse).
  const hw::PfnHolders& pfn_holders() const { return pfn_holders_; }
  // Which CPUs' TLBs hold anything of each tag; kept only where the arch's invalidations are broadcast by the
  // hardware (ArchMmu::broadcasts_tlb_invalidations), else null.
  hw::TagHolders* tag_holders() { return tag_holders_attached_ ? &tag_holders_ : nullptr; }
  ShootLaziesStats& shoot_lazies_stats() { return shoot_lazies_; }
  FrameAllocator& frames() { return frames_; }
  std::uint32_t ncpus() const { return static_cast<std::uint32_t>(percpu_.size()); }
  // cpu_to_node: a socket is a NUMA node (docs/model.md).
  std::uint16_t cpu_to_node(CpuId c) { return static_cast<std::uint16_t>(sys_.topology().socket_of(c)); }
  std::uint32_t nr_node_ids() { return sys_.topology().params().sockets; }
  PerCpu& percpu(CpuId c) { return *percpu_[c.get()]; }
  MmStruct& init_mm() { return *init_mm_; }
  // __mmdrop: the mm is freed. The oracle checks that no CPU's CR3 and no task's active_mm still use it.
  void free_mm(MmStruct& mm);
  // The scheduler of this run, when the workload uses one (for the active_mm check at __mmdrop and timer
  // interrupts); it registers itself for its lifetime.
  class Sched* sched() const {
    return sched_;
  }
  void set_sched(class Sched* s) { sched_ = s; }
  // The timeline trace of this run (trace/tracer.h), when one is recorded; not owned. Tracing only observes.
  trace::Tracer* tracer() const { return tracer_; }
  void set_tracer(trace::Tracer* t) { tracer_ = t; }
  // mm_alloc + init_new_context: a fresh address space with a new ctx_id.
  MmStruct& new_mm();
  File& new_file(std::uint64_t size);
  // The swap device and reclaim state of shmem swapping (mm/shmem.h), made on first use.
  ShmemSwap& shmem_swap();

  sim::Task<void> handle_irq(sim::Cpu& cpu, int vector) override;
  // tlb:tlb_flush: counts the event and, when tracing, records it with its pages (-1: TLB_FLUSH_ALL).
  void trace_tlb_flush(PerCpu& self, TlbFlushReason reason, std::int64_t pages);
  // Records an IPI send to `targets` (starting now) in the trace, when tracing.
  void trace_ipi_send(PerCpu& self, std::span<const CpuId> targets, int vector);
  // Hardware, not kernel code: the CPU re-walks its recently used user addresses speculatively (at each
  // interrupt entry here; at any moment under the checker).
  void speculative_walks(PerCpu& self);

 private:
  hw::System& sys_;
  KernelConfig config_;
  Stats stats_;  // before its fields' owners: they may drop() theirs
  std::unique_ptr<ArchMmu> arch_;
  KernelCounters counters_;
  ShootLaziesStats shoot_lazies_;
  FrameAllocator frames_;
  hw::PfnHolders pfn_holders_;  // which CPUs' TLBs hold each frame, for the oracle's check at a frame's reuse
  hw::TagHolders tag_holders_;
  bool tag_holders_attached_ = false;
  std::vector<std::unique_ptr<PerCpu>> percpu_;
  KernelEventFanout events_;
  class Sched* sched_ = nullptr;
  trace::Tracer* tracer_ = nullptr;
  std::unique_ptr<MmStruct> init_mm_;
  std::vector<std::unique_ptr<MmStruct>> mms_;
  std::vector<std::unique_ptr<File>> files_;
  std::unique_ptr<ShmemSwap> shmem_swap_;  // last: it drops its statistics from stats_ when destroyed
};

}  // namespace tlbsim::kernel
