// x86 per-CPU TLB state (arch/x86/include/asm/tlbflush.h, v5.17): cpu_tlbstate, written only by its own CPU,
// and struct flush_tlb_info.
#pragma once

#include <array>
#include <cstdint>

namespace tlbsim::kernel {
class MmStruct;
}

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

}  // namespace tlbsim::x86
