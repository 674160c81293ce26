// arm64's kernel options and planted mutations, declared once (model/declare.h).
#pragma once

#include "model/declare.h"

namespace tlbsim::arm64 {

using kernel::Arch;
using kernel::MutationDecl;
using kernel::OptionDecl;

enum class Option : std::uint8_t {
  ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH,
  batched_pending_flush_tlb_mm,
};

inline constexpr OptionDecl<Option> kOptions[] = {
    // Barry Song and Yicong Yang, "arm64: support batched/deferred tlb shootdown during page reclamation/migration"
    // (43b3dfdd0455, merged for v6.6): arm64 selects ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH. arch_tlbbatch_add_pending
    // issues the
    // page's TLBI VALE1IS without waiting (__flush_tlb_page_nosync), arch_tlbbatch_flush is one dsb(ish), and
    // arch_flush_tlb_batched_pending (mprotect, munmap and mremap racing with reclaim) is dsb(ish) too.
    // Posted on v6.3-rc (v8) and v6.4-rc (v9), so it also applies to the v6.5 profile (linux-6.5-arm64-batched: the
    // series as measured).
    {TLBSIM_ID(Option, ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH), .arch = Arch::kArm64, .since = {6, 4}, .until = {6, 6},
     .doc = "v6.6 (43b3dfdd0455): reclaim issues each page's TLBI at once and waits with one dsb(ish) per batch"},
    // Not posted with the series: arch_flush_tlb_batched_pending does flush_tlb_mm(mm), as x86's does, instead of a
    // dsb(ish), which completes only the TLBIs of the CPU that executes it (F10, docs/findings.md).
    {TLBSIM_ID(Option, batched_pending_flush_tlb_mm), .arch = Arch::kArm64, .since = {6, 6}, .until = {6, 6},
     .depends_on = "ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH",
     .doc = "later fix of F10: arch_flush_tlb_batched_pending is flush_tlb_mm(mm), not a local dsb(ish)"},
};

enum class Mutation : std::uint8_t {
  flush_context_skips_reserved_asids,
  flush_context_skips_tlb_flush_pending,
  switch_context_fastpath_plain_store,
  flush_tlb_skips_dsb_ish,
  flush_tlb_skips_dsb_ishst,
};

inline constexpr MutationDecl<Mutation> kMutations[] = {
    {TLBSIM_ID(Mutation, flush_context_skips_reserved_asids), .area = "rollover", .arch = Arch::kArm64,
     .scenarios = "asid_rollover_running", .kernel = "linux-6.6-arm64",
     .doc = "flush_context does not reserve each CPU's active ASID: an mm still running keeps an ASID reallocated"},
    {TLBSIM_ID(Mutation, flush_context_skips_tlb_flush_pending), .area = "rollover", .arch = Arch::kArm64,
     .scenarios = "asid_rollover_reuse", .kernel = "linux-6.6-arm64",
     .doc = "flush_context queues no local_flush_tlb_all: a CPU keeps the old generation's entries of a reused ASID"},
    {TLBSIM_ID(Mutation, switch_context_fastpath_plain_store), .area = "rollover", .arch = Arch::kArm64,
     .scenarios = "asid_rollover_fastpath", .kernel = "linux-6.6-arm64",
     .doc = "check_and_switch_context's fast path sets active_asids with a plain store, not cmpxchg_relaxed"},
    {TLBSIM_ID(Mutation, flush_tlb_skips_dsb_ish), .area = "tlbi", .arch = Arch::kArm64,
     .scenarios = "madvise_vs_access", .kernel = "linux-6.6-arm64",
     .doc = "the flushes issue their TLBIs with no dsb(ish) after them: the page is freed before they complete"},
    {TLBSIM_ID(Mutation, flush_tlb_skips_dsb_ishst), .area = "barrier", .arch = Arch::kArm64,
     .scenarios = "madvise_vs_access", .kernel = "linux-6.6-arm64",
     .doc = "the flushes have no dsb(ishst) before their TLBIs: a walk may refill the old PTE after the TLBI"},
};

}  // namespace tlbsim::arm64

TLBSIM_DECLARE_SPACE(tlbsim::arm64::Option, 96, OptionDecl, tlbsim::arm64::kOptions);
TLBSIM_DECLARE_SPACE(tlbsim::arm64::Mutation, 96, MutationDecl, tlbsim::arm64::kMutations);
