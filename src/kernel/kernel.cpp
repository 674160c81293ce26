#include "kernel/kernel.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernel/barrier.h"
#include "kernel/sched/sched.h"
#include "kernel/smp.h"
#include "mm/shmem.h"
#include "trace/tracer.h"
#include "util/error.h"

namespace tlbsim::kernel {

std::string_view irq_row(int vector) {
  switch (vector) {
    case CALL_FUNCTION_VECTOR: return "Function call interrupts";
    case CALL_FUNCTION_SINGLE_VECTOR: return "Single function call interrupts";
    case LOCAL_TIMER_VECTOR: return "Local timer interrupts";
    case RESCHEDULE_VECTOR:
      return "Rescheduling interrupts";
    default: return "TLB shootdowns";  // v3.3's INVALIDATE_TLB_VECTOR_START + n
  }
}

PerCpu::PerCpu(Kernel& kernel, sim::Cpu& c, const hw::TlbParams& tlb_params, hw::CoherenceModel& model,
               std::uint32_t ncpus)
    : k(kernel),
      cpu(c),
      id(c.id()),
      tlb(tlb_params),
      arch_state(kernel.arch().alloc_cpu_state(model)),
      call_single_queue_line(model.add_line("call_single_queue")),
      model_(model),
      ncpus_(ncpus) {}

Csd& PerCpu::csd_for(CpuId target) {
  if (csds_.empty()) csds_.resize(ncpus_);  // at the first IPI this CPU sends: n^2 slots would take 19 MB at 1,536
  auto& slot = csds_[target.get()];
  if (!slot) slot = std::make_unique<Csd>(Csd{{0, model_.add_line("csd")}, nullptr, nullptr});
  return *slot;
}

Kernel::Kernel(hw::System& sys, KernelConfig config)
    : sys_(sys), config_(config), arch_(find_arch_mmu(config.arch, config.version)), counters_(sys.topology().cpu_count()) {
  if (arch_ == nullptr) {
    throw InputError("no modeled " + std::string(to_string(config.arch)) + " code for Linux " + config.version.str() +
                     " (modeled: " + modeled_arch_eras() + ")");
  }
  // An x86 kernel may run on a POWER model (its cr3 writes are priced as PID switches there), but powerpc code
  // flushes with tlbie, which only a powerpc64 machine file prices.
  if (config.arch == Arch::kPowerpc && !sys.machine().tlb.tlbie) {
    throw InputError(fmt::format("a powerpc kernel needs a powerpc64 machine: machine '{}' ({}) has no [tlb] tlbie",
                                 sys.machine().name, sys.machine().arch));
  }
  if (config.arch == Arch::kArm64 && !sys.machine().tlb.tlbi_is) {
    throw InputError(fmt::format("an arm64 kernel needs an aarch64 machine: machine '{}' ({}) has no [tlb] tlbi_is",
                                 sys.machine().name, sys.machine().arch));
  }
  const std::uint32_t n = sys.topology().cpu_count();
  counters_.register_stats(stats_);
  arch_->register_stats(stats_, n);
  shoot_lazies_.register_stats(stats_);
  tag_holders_ = hw::TagHolders(sys.machine().tlb.tag_bits);
  tag_holders_attached_ = arch_->broadcasts_tlb_invalidations();
  for (std::uint32_t i = 0; i < n; ++i) {
    percpu_.push_back(std::make_unique<PerCpu>(*this, sys.cpu(CpuId{i}), sys.machine().tlb, sys.coherence(), n));
    percpu_.back()->tlb.attach_holders(&pfn_holders_, i);
    if (tag_holders_attached_) percpu_.back()->tlb.attach_tag_holders(&tag_holders_);
    sys.cpu(CpuId{i}).set_irq_handler(this);
  }
  frames_.set_free_observer([this](Pfn p) { events_.on_frame_free(p, sys_.scheduler().now()); });
  frames_.set_reuse_observer([this](Pfn p) { events_.on_frame_reuse(p, sys_.scheduler().now()); });
  init_mm_ = std::make_unique<MmStruct>(0, sys.coherence(), n, frames_, true, arch_->spinlock_kind());
  init_mm_->context = arch_->init_new_context(*this, *init_mm_);
  // Every CPU starts in init_mm.
  for (auto& pc : percpu_) {
    pc->cr3_mm = init_mm_.get();
    arch_->init_cpu(*pc, *init_mm_);
  }
}

Kernel::~Kernel() = default;

void Kernel::free_mm(MmStruct& mm) {
  std::string users;
  for (const auto& pc : percpu_) {
    if (pc->cr3_mm == &mm) users += " cpu" + std::to_string(pc->id.get()) + "'s CR3";
  }
  if (sched_ != nullptr) {
    for (const auto& t : sched_->tasks()) {
      if (t->active_mm == &mm && t->state != TaskState::TASK_DEAD) users += " task " + std::to_string(t->pid) + "'s active_mm";
    }
  }
  events_.on_mm_free(mm.id(), users, sys_.scheduler().now());
  mm.freed = true;
  ++counters_.mm_freed;
}

std::int64_t jiffies_at(sim::SimTime now, std::int64_t hz) {
  return now.time_since_epoch() / (sim::milliseconds(1000) / std::max<std::int64_t>(hz, 1));
}

MmStruct& Kernel::new_mm() {
  mms_.push_back(std::make_unique<MmStruct>(static_cast<std::uint32_t>(mms_.size() + 1), sys_.coherence(), ncpus(),
                                            frames_, false, arch_->spinlock_kind()));
  mms_.back()->context = arch_->init_new_context(*this, *mms_.back());
  return *mms_.back();
}

ShmemSwap& Kernel::shmem_swap() {
  if (!shmem_swap_) shmem_swap_ = std::make_unique<ShmemSwap>(*this);
  return *shmem_swap_;
}

File& Kernel::new_file(std::uint64_t size) {
  files_.push_back(std::make_unique<File>());
  files_.back()->id = static_cast<std::uint32_t>(files_.size());
  files_.back()->size = size;
  return *files_.back();
}

// Hardware, not kernel code: while user page tables are loaded the CPU may walk them speculatively. The model
// re-walks the CPU's most recently demand-filled addresses at each interrupt entry, filling the TLB where a PTE
// is present and the paging-structure cache where the leaf table exists (docs/model.md).
void Kernel::speculative_walks(PerCpu& self) {
  MmStruct* mm = self.cr3_mm;
  if (mm == nullptr || mm->is_init_mm()) return;
  const Asid tag{static_cast<std::uint16_t>(self.tlb_tag())};
  for (std::uint64_t raw : self.tlb.recent_vpns()) {
    const Vpn v{raw};
    if (raw == 0) continue;
    const PteTable* t = mm->pgd.table(v);
    if (t == nullptr) continue;
    self.tlb.pwc_fill(tag, t->frame.get(), Vpn{table_index(v) * kPtesPerTable}, Vpn{(table_index(v) + 1) * kPtesPerTable});
    if (const auto pte = mm->pgd.walk(self.id, v); pte && !pte->protnone)
      self.tlb.fill(tag, v, hw::Translation{pte->pfn, pte->writable, mm->id()}, true);
  }
}

// sysvec_call_function / sysvec_call_function_single: interrupt entry, then the call queue, then exit.
sim::Task<void> Kernel::handle_irq(sim::Cpu& cpu, int vector) {
  PerCpu& self = percpu(cpu.id());
  const sim::SimTime entered = cpu.now();
  const bool ipi = vector != LOCAL_TIMER_VECTOR;
  if (tracer_ != nullptr) {
    tracer_->irq_entry(cpu, vector, ipi ? fmt::format("IPI handler ({})", irq_row(vector)) : "local timer interrupt",
                       irq_row(vector), ipi);
  }
  speculative_walks(self);
  co_await cpu.delay(sys_.ipi().params().handler_entry);
  if (vector == CALL_FUNCTION_VECTOR || vector == CALL_FUNCTION_SINGLE_VECTOR) {
    ++counters_.irq_call_count[cpu.id().get()];
    co_await flush_smp_call_function_queue(self);
  } else if (vector == RESCHEDULE_VECTOR) {
    // sysvec_reschedule_ipi -> scheduler_ipi: TIF_NEED_RESCHED is already set; the interrupt only woke the CPU.
    ++counters_.irq_resched_count;
  } else if (vector == LOCAL_TIMER_VECTOR && sched_ != nullptr) {
    ++counters_.irq_timer_count;
    co_await sched_->timer_interrupt(self);
  } else {
    co_await arch_->handle_arch_irq(self, vector);
  }
  co_await cpu.delay(sys_.ipi().params().handler_exit);
  // The return from the interrupt: x86's IRET is serializing (Intel SDM vol. 3A, 9.3), so the handler's stores
  // leave the store buffer first; powerpc's rfid is context-synchronizing only.
  serializing_instruction(sys_.memory(), cpu);
  counters_.irq_time[cpu.id().get()] += cpu.now() - entered;
  if (tracer_ != nullptr) tracer_->irq_exit(cpu, vector, irq_row(vector), ipi);
}

void Kernel::trace_tlb_flush(PerCpu& self, TlbFlushReason reason, std::int64_t pages) {
  counters_.trace(reason);
  if (tracer_ != nullptr) tracer_->tlb_flush(self.cpu, static_cast<int>(reason), trace_name(reason), pages);
}

void Kernel::trace_ipi_send(PerCpu& self, std::span<const CpuId> targets, int vector) {
  if (tracer_ == nullptr) return;
  std::vector<sim::SimTime> arrivals;
  sys_.ipi().arrivals(self.id, targets, self.cpu.now(), arrivals);
  tracer_->ipi_send(self.cpu, targets, arrivals, vector, irq_row(vector));
}

}  // namespace tlbsim::kernel
