// powerpc's kernel options and planted mutations, declared once (model/declare.h).
#pragma once

#include "model/declare.h"

namespace tlbsim::powerpc {

using kernel::Arch;
using kernel::MutationDecl;
using kernel::OptionDecl;

enum class Option : std::uint8_t {
  exit_flush_lazy_tlbs,
  ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH,
  batched_unmap_flush_lpid,
  radix_flush_smp_mb,
};

inline constexpr OptionDecl<Option> kOptions[] = {
    // Seed 004 patch 5 (powerpc/64s/radix: combine final TLB flush and lazy tlb mm shootdown IPIs): the final exit
    // flush is done by IPI + tlbiel to mm_cpumask, and each target also switches a lazy use of the mm to init_mm.
    {TLBSIM_ID(Option, exit_flush_lazy_tlbs), .arch = Arch::kPowerpc, .since = {6, 2}, .until = {6, 2}, .seed = "004",
     .depends_on = "MMU_LAZY_TLB_SHOOTDOWN",
     .doc = "patch 5/5: radix__tlb_flush of a fullmm gather IPIs mm_cpumask (exit_flush_lazy_tlbs) + tlbiel"},
    // Seed 001 (2017 RFC), ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH on POWER: reclaim defers flushes into
    // arch_tlbflush_unmap_batch (a cpumask and the list of mms) and flushes once per batch by IPI, each target
    // flushing each listed mm's PID locally with tlbiel.
    {TLBSIM_ID(Option, ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH), .arch = Arch::kPowerpc, .since = {4, 14}, .until = {4, 14},
     .seed = "001",
     .doc = "RFC 2/2 as posted: reclaim batches radix flushes, one IPI per batch, each target tlbiels each mm"},
    // The follow-up variant: each target flushes the whole LPID instead of each mm.
    {TLBSIM_ID(Option, batched_unmap_flush_lpid), .arch = Arch::kPowerpc, .since = {4, 14}, .until = {4, 14},
     .seed = "001", .depends_on = "ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH",
     .doc = "follow-up: the batch IPI handler flushes the whole LPID (256 tlbiel) instead of each mm"},
    // Not a seed: the later upstream fix of F9 (docs/findings.md). v4.14's radix flushes read active_cpus and
    // mm_cpumask (mm_is_thread_local) with no barrier after the PTE clears; radix_tlb.c of v5.3-v5.9 (ammarfaizi2/
    // linux-block @095c2233) and v6.5 put smp_mb() first ("Order loads of mm_cpumask vs previous stores to clear
    // ptes before the invalidate"). The commit that added it is not identified here.
    {TLBSIM_ID(Option, radix_flush_smp_mb), .arch = Arch::kPowerpc, .since = {4, 14}, .until = {4, 14},
     .doc = "later fix: smp_mb() before mm_is_thread_local in the v4.14 radix flushes (present by v5.3)"},
};

enum class Mutation : std::uint8_t {
  radix_tlbiel_with_remote_cpus,
  radix_switch_mm_skips_smp_mb,
  radix_flush_skips_smp_mb,
  radix_tlbi_skips_ptesync,
};

inline constexpr MutationDecl<Mutation> kMutations[] = {
    {TLBSIM_ID(Mutation, radix_tlbiel_with_remote_cpus), .area = "powerpc", .arch = Arch::kPowerpc,
     .scenarios = "madvise_vs_access", .kernel = "linux-6.2-ppc",
     .doc = "the radix flush uses the local tlbiel although another CPU is in mm_cpumask"},
    {TLBSIM_ID(Mutation, radix_switch_mm_skips_smp_mb), .area = "barrier", .arch = Arch::kPowerpc,
     .scenarios = "join_vs_madvise", .kernel = "linux-6.2-ppc",
     .doc = "switch_mm_irqs_off has no smp_mb() between the mm_cpumask store and the PID load (and the page walks)"},
    {TLBSIM_ID(Mutation, radix_flush_skips_smp_mb), .area = "barrier", .arch = Arch::kPowerpc,
     .scenarios = "join_vs_madvise", .kernel = "linux-6.2-ppc",
     .doc = "the v6.2 radix flushes have no smp_mb() between the PTE clears and flush_type_needed's mm_cpumask loads"},
    {TLBSIM_ID(Mutation, radix_tlbi_skips_ptesync), .area = "barrier", .arch = Arch::kPowerpc,
     .scenarios = "madvise_vs_access", .kernel = "linux-4.14-ppc",
     .doc = "the tlbie and tlbiel sequences have no ptesync before the invalidation: a walk may refill the old PTE"},
};

}  // namespace tlbsim::powerpc

TLBSIM_DECLARE_SPACE(tlbsim::powerpc::Option, 64, OptionDecl, tlbsim::powerpc::kOptions);
TLBSIM_DECLARE_SPACE(tlbsim::powerpc::Mutation, 64, MutationDecl, tlbsim::powerpc::kMutations);
