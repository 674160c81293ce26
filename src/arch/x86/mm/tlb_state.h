// x86's arch state (arch/x86/include/asm/tlbflush.h and asm/mmu.h, v5.17): the per-CPU cpu_tlbstate and
// cpu_tlbstate_shared, struct flush_tlb_info, and mm_context_t. The generic kernel holds them only as ArchCpuState and
// ArchMmContext (kernel/arch_mmu.h); the accessors at the end cast them back.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "hw/invlpgb.h"
#include "hw/memory.h"
#include "kernel/kernel.h"

namespace tlbsim::x86 {

// TLB_NR_DYN_ASIDS: "6 should be plenty and struct tlb_state will fit in two cache lines".
inline constexpr std::uint16_t TLB_NR_DYN_ASIDS = 6;
// tlb_single_page_flush_ceiling (pages): beyond it a range flush becomes a full flush.
inline constexpr std::uint64_t tlb_single_page_flush_ceiling = 33;
inline constexpr std::uint64_t TLB_FLUSH_ALL = ~std::uint64_t{0};

struct TlbContext {
  std::uint64_t ctx_id = 0;
  std::uint64_t tlb_gen = 0;
};

// struct tlb_state (cpu_tlbstate). Plain per-CPU data: only its CPU reads or writes it.
struct TlbState {
  kernel::MmStruct* loaded_mm = nullptr;  // the mm whose page tables CR3 points to
  std::uint16_t loaded_mm_asid = 0;
  std::uint16_t next_asid = 1;
  std::array<TlbContext, TLB_NR_DYN_ASIDS> ctxs{};
  // The v3.3 era's struct tlb_state (arch/x86/include/asm/tlbflush.h of v3.3): the mm whose page tables this CPU
  // has or had loaded, and TLBSTATE_OK / TLBSTATE_LAZY (0 until the CPU first runs a user mm: `{&init_mm, 0}`).
  kernel::MmStruct* active_mm = nullptr;
  int state = 0;
};

inline constexpr int TLBSTATE_OK = 1;
inline constexpr int TLBSTATE_LAZY = 2;

// v6.15 (broadcast_tlb_flush): ASIDs [0, TLB_NR_DYN_ASIDS) are per-CPU slots; [TLB_NR_DYN_ASIDS,
// MAX_ASID_AVAILABLE) are global, the same on every CPU (arch/x86/include/asm/tlbflush.h).
inline bool is_dyn_asid(std::uint16_t asid) { return asid < TLB_NR_DYN_ASIDS; }
inline bool is_global_asid(std::uint16_t asid) { return !is_dyn_asid(asid); }

// kern_pcid(asid): PCID 0 is left for PCID-unaware code.
inline std::uint16_t kern_pcid(std::uint16_t asid) { return static_cast<std::uint16_t>(asid + 1); }

// struct flush_tlb_info. mm == nullptr flushes every mm whose tlb_gen moved (arch_tlbbatch_flush).
struct FlushTlbInfo {
  kernel::MmStruct* mm = nullptr;
  std::uint64_t start = 0;  // virtual addresses
  std::uint64_t end = 0;    // TLB_FLUSH_ALL for a full flush
  std::uint64_t new_tlb_gen = 0;
  std::uint32_t initiating_cpu = 0;
  std::uint8_t stride_shift = 12;
  bool freed_tables = false;
  bool trim_cpumask = false;  // seed 002's later fix: this flush also reaches CPUs that left the mm
};

// One CPU's x86 state. Contract: `tlbstate` and `flush_tlb_info` are touched only by their own CPU; `is_lazy` and
// `loaded_mm_id` are read by other CPUs and live on modeled lines.
struct CpuState final : kernel::ArchCpuState {
  explicit CpuState(hw::CoherenceModel& model)
      : is_lazy{false, model.add_line("cpu_tlbstate_shared")}, loaded_mm_id{0, model.add_line("cpu_tlbstate")} {
    loaded_mm_asid.line = loaded_mm_id.line;
  }
  TlbState tlbstate;
  hw::Shared<bool> is_lazy;  // cpu_tlbstate_shared.is_lazy
  // cpu_tlbstate.loaded_mm as other CPUs read it (should_flush_tlb, with the should_trim_cpumask option): the mm's
  // id, kLoadedMmSwitching while switching. Only kernels with that remote reader model its stores (docs/model.md).
  static constexpr std::uint32_t kLoadedMmSwitching = ~std::uint32_t{0};
  hw::Shared<std::uint32_t> loaded_mm_id;
  // cpu_tlbstate.loaded_mm_asid as finish_asid_transition reads it remotely (v6.15, BROADCAST_TLB_FLUSH only; the
  // CPU's own reads use tlbstate.loaded_mm_asid), on loaded_mm's line.
  hw::Shared<std::uint16_t> loaded_mm_asid{0, LineId{}};
  // Hardware, not kernel state: the INVLPGBs this CPU issued that no TLBSYNC of it has waited for yet.
  hw::InvlpgbQueue invlpgb;
  // The per-CPU flush_tlb_info (get_flush_tlb_info), reused by every flush this CPU initiates.
  FlushTlbInfo flush_tlb_info;
};

// mm_context_t (arch/x86/include/asm/mmu.h).
struct MmContext final : kernel::ArchMmContext {
  explicit MmContext(std::uint64_t id, hw::CoherenceModel& model)
      : ctx_id(id), tlb_gen{0, model.add_line("mm.tlb_gen")} {
    next_trim_cpumask.line = tlb_gen.line;
    global_asid.line = asid_transition.line = model.add_line("mm.context.global_asid");
  }
  std::uint64_t ctx_id = 0;           // never reused
  hw::Shared<std::uint64_t> tlb_gen;  // atomic64_t, on its own line
  // Seed 002's later fix (should_trim_cpumask): the jiffies after which a flush next trims mm_cpumask, next to
  // tlb_gen; init_new_context sets it to jiffies + HZ.
  hw::Shared<std::int64_t> next_trim_cpumask{0, LineId{}};
  // v6.15 (CONFIG_BROADCAST_TLB_FLUSH): the mm's global ASID (0: none; read with smp_load_acquire) and whether some
  // CPU may still run it on a dynamic ASID (mm_in_asid_transition), together on their own line.
  hw::Shared<std::uint16_t> global_asid{0, LineId{}};
  hw::Shared<bool> asid_transition{false, LineId{}};
};

// this_cpu_ptr(&cpu_tlbstate) and friends: `pc`'s x86 state (any CPU's, for the cross-CPU readers).
inline CpuState& cpu_state(kernel::PerCpu& pc) { return static_cast<CpuState&>(*pc.arch_state); }
inline TlbState& cpu_tlbstate(kernel::PerCpu& pc) { return cpu_state(pc).tlbstate; }
// mm->context.
inline MmContext& context(kernel::MmStruct& mm) { return static_cast<MmContext&>(*mm.context); }
inline const MmContext& context(const kernel::MmStruct& mm) { return static_cast<const MmContext&>(*mm.context); }

}  // namespace tlbsim::x86
