// The kernel events that observers subscribe to, as the kernel's tracepoints are subscribed to: the checker's
// oracle (check/oracle.h) is one subscriber. The kernel model reports them where they happen and never asks an
// observer anything back.
//
// Contract: every hook has an empty default; a subscriber overrides the ones it needs. Hooks run synchronously, at
// the simulated instant of the event, and must not touch modeled state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/tlb.h"
#include "mm/pgtable.h"
#include "sim/ids.h"
#include "sim/time.h"

namespace tlbsim::kernel {

class MmStruct;

class KernelEvents {
 public:
  virtual ~KernelEvents() = default;
  // A PTE of `mm` for `v` that mapped `old` was cleared or replaced by CPU `by`.
  virtual void on_pte_removed(const MmStruct& mm, Vpn v, const Pte& old, CpuId by, sim::SimTime now);
  // The system call or fault running on `cpu` returned.
  virtual void on_syscall_return(CpuId cpu);
  // A system call on `cpu` that held mmap_lock for write changed the PTEs of [start, end) of `mm` and is about to
  // return (mprotect): every earlier removal of a PTE there, by any CPU, must be complete now, so a user access
  // after it must not hit a translation those removals took away (what flush_tlb_batched_pending provides against
  // reclaim's deferred flush). Reported just before on_syscall_return.
  virtual void on_range_synced(CpuId cpu, const MmStruct& mm, std::uint64_t start, std::uint64_t end);
  // The kernel replaced `page`, which mapped `v` of `mm`, by a copy, and drops its mapping's reference
  // (khugepaged's release_pte_pages): a GUP pin still held on it now points at a page no longer mapped, and what is
  // written through it is lost (the collapse's reference count check must have seen every pin).
  virtual void on_page_replaced(const MmStruct& mm, Vpn v, Pfn page, CpuId by, sim::SimTime now);
  // A frame is being freed (free_pages), or a freed frame allocated again.
  virtual void on_frame_free(Pfn pfn, sim::SimTime now);
  virtual void on_frame_reuse(Pfn pfn, sim::SimTime now);
  // The task running on `cpu` is now a user task of mm `mm_id` (0: a kernel thread or idle): sched_switch, as far as
  // an observer needs it. Reported by whoever switches tasks, never by the TLB code.
  virtual void set_user_context(CpuId cpu, std::uint32_t mm_id);
  // __mmdrop freed mm `mm_id`; `users` names any CPU whose CR3 or task whose active_mm still uses it.
  virtual void on_mm_free(std::uint32_t mm_id, const std::string& users, sim::SimTime now);
  // A reference count went below zero.
  virtual void report_refcount(CpuId cpu, std::uint32_t mm_id, const char* counter, std::int64_t value,
                               sim::SimTime now);
  // A WARN_ON in the modeled kernel fired.
  virtual void report_kernel_warning(CpuId cpu, std::uint32_t mm_id, const std::string& what, sim::SimTime now);
  // A user access by `cpu` with `mm` loaded hit TLB entry `t` for `v`.
  virtual void on_tlb_hit(CpuId cpu, const MmStruct& mm, Vpn v, const hw::Translation& t, sim::SimTime now);
};

// The kernel's side: forwards each event to every subscriber, in the order they subscribed.
class KernelEventFanout final : public KernelEvents {
 public:
  void subscribe(KernelEvents& e) { subs_.push_back(&e); }
  void unsubscribe(KernelEvents& e) { std::erase(subs_, &e); }
  void on_pte_removed(const MmStruct& mm, Vpn v, const Pte& old, CpuId by, sim::SimTime now) override {
    for (KernelEvents* s : subs_) s->on_pte_removed(mm, v, old, by, now);
  }
  void on_syscall_return(CpuId cpu) override {
    for (KernelEvents* s : subs_) s->on_syscall_return(cpu);
  }
  void on_range_synced(CpuId cpu, const MmStruct& mm, std::uint64_t start, std::uint64_t end) override {
    for (KernelEvents* s : subs_) s->on_range_synced(cpu, mm, start, end);
  }
  void on_page_replaced(const MmStruct& mm, Vpn v, Pfn page, CpuId by, sim::SimTime now) override {
    for (KernelEvents* s : subs_) s->on_page_replaced(mm, v, page, by, now);
  }
  void on_frame_free(Pfn pfn, sim::SimTime now) override {
    for (KernelEvents* s : subs_) s->on_frame_free(pfn, now);
  }
  void on_frame_reuse(Pfn pfn, sim::SimTime now) override {
    for (KernelEvents* s : subs_) s->on_frame_reuse(pfn, now);
  }
  void set_user_context(CpuId cpu, std::uint32_t mm_id) override {
    for (KernelEvents* s : subs_) s->set_user_context(cpu, mm_id);
  }
  void on_mm_free(std::uint32_t mm_id, const std::string& users, sim::SimTime now) override {
    for (KernelEvents* s : subs_) s->on_mm_free(mm_id, users, now);
  }
  void report_refcount(CpuId cpu, std::uint32_t mm_id, const char* counter, std::int64_t value,
                       sim::SimTime now) override {
    for (KernelEvents* s : subs_) s->report_refcount(cpu, mm_id, counter, value, now);
  }
  void report_kernel_warning(CpuId cpu, std::uint32_t mm_id, const std::string& what, sim::SimTime now) override {
    for (KernelEvents* s : subs_) s->report_kernel_warning(cpu, mm_id, what, now);
  }
  void on_tlb_hit(CpuId cpu, const MmStruct& mm, Vpn v, const hw::Translation& t, sim::SimTime now) override {
    for (KernelEvents* s : subs_) s->on_tlb_hit(cpu, mm, v, t, now);
  }

 private:
  std::vector<KernelEvents*> subs_;  // not owned; each outlives the kernel's run
};

}  // namespace tlbsim::kernel
