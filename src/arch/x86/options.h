// x86's kernel options and planted mutations, declared once (model/declare.h). Model code tests them as
// `cfg.on(Option::x)` and `planted(cfg, Mutation::x)`; profiles, --option and --mutation use the names.
#pragma once

#include "model/declare.h"

namespace tlbsim::x86 {

using kernel::Arch;
using kernel::MutationDecl;
using kernel::OptionDecl;

enum class Option : std::uint8_t {
  open_coded_cond_mask,
  avoid_mm_tlb_gen_read,
  ignore_invalid_tlb_gen,
  lazy_mm_cpumask,
  should_trim_cpumask,
  should_flush_tlb_switching,
  leave_mm_cr3_when_needed,
  leave_mm_cr3_when_needed_test_first,
  flush_tlb_func_always_full,
  switch_mm_smp_mb,
  BROADCAST_TLB_FLUSH,
};

inline constexpr OptionDecl<Option> kOptions[] = {
    // Not a seed: the two forms of native_flush_tlb_multi of v5.13-v5.17. Commit 6035152d8eeb open-codes the lazy
    // filter into a cpumask before the cross-call; seed 000's benchmarked kernels carry its revert, which filters
    // with on_each_cpu_cond_mask(tlb_is_not_lazy).
    {TLBSIM_ID(Option, open_coded_cond_mask), .arch = Arch::kX86, .since = {5, 17}, .until = {5, 17},
     .doc = "v5.13-v5.17 commit 6035152d8eeb: native_flush_tlb_multi filters lazy CPUs into a cpumask first"},
    // Seed 000 (v5.17/5.18), "x86/mm/tlb: avoid reading mm_tlb_gen when possible" (v2, as posted): flush_tlb_func
    // returns early when f->new_tlb_gen <= local_tlb_gen and reads mm->context.tlb_gen after that test.
    {TLBSIM_ID(Option, avoid_mm_tlb_gen_read), .arch = Arch::kX86, .since = {5, 17}, .until = {6, 18}, .seed = "000",
     .doc = "flush_tlb_func returns early if f->new_tlb_gen <= local_tlb_gen, reading mm tlb_gen only after"},
    // Its later fix, "x86/mm/tlb: Ignore f->new_tlb_gen when zero": no early return for TLB_GENERATION_INVALID.
    {TLBSIM_ID(Option, ignore_invalid_tlb_gen), .arch = Arch::kX86, .since = {5, 17}, .until = {6, 18}, .seed = "000",
     .depends_on = "avoid_mm_tlb_gen_read",
     .doc = "later fix: no early return for f->new_tlb_gen == TLB_GENERATION_INVALID (batched flushes)"},
    // Seed 002 (v6.13), "x86,tlb: update mm_cpumask lazily" (patch 1/3 as posted): switch_mm_irqs_off leaves the CPU
    // in prev's mm_cpumask and sets next's bit only if clear; flush_tlb_func on a CPU that no longer runs f->mm
    // clears its bit there.
    {TLBSIM_ID(Option, lazy_mm_cpumask), .arch = Arch::kX86, .since = {6, 13}, .until = {6, 18}, .seed = "002",
     .doc = "switch_mm_irqs_off keeps prev's mm_cpumask bit; the first flush IPI to a non-user clears it"},
    // Its later fix, "x86,mm: only trim the mm_cpumask once a second" (Rik van Riel, v4 as posted 2024-12-04, merged
    // for v6.14): flush_tlb_mm_range sets info->trim_cpumask once per HZ per mm (should_trim_cpumask), and
    // native_flush_tlb_multi's filter (should_flush_tlb) IPIs a CPU that no longer runs the mm only then.
    {TLBSIM_ID(Option, should_trim_cpumask), .arch = Arch::kX86, .since = {6, 13}, .until = {6, 18}, .seed = "002",
     .depends_on = "lazy_mm_cpumask",
     .doc = "later fix (v6.14): flushes reach CPUs that left the mm once a second per mm (should_flush_tlb)"},
    // The fix of that fix, "x86/mm: Eliminate window where TLB flushes may be inadvertently skipped" (Dave Hansen,
    // fea4e317f9e7, 2025): switch_mm_irqs_off writes LOADED_MM_SWITCHING before it sets next's mm_cpumask bit and
    // reads tlb_gen, and should_flush_tlb IPIs a CPU in that state (docs/findings.md, F5).
    {TLBSIM_ID(Option, should_flush_tlb_switching), .arch = Arch::kX86, .since = {6, 13}, .until = {6, 18},
     .seed = "002", .depends_on = "should_trim_cpumask",
     .doc = "fix of that fix (fea4e317f9e7): LOADED_MM_SWITCHING set first; should_flush_tlb IPIs it"},
    // Seed 003 (v3.3), "x86, tlb: switch cr3 in leave_mm() only when needed", as first posted: leave_mm does
    // cpumask_test_and_clear_cpu and loads swapper_pg_dir only if the bit was set.
    {TLBSIM_ID(Option, leave_mm_cr3_when_needed), .arch = Arch::kX86, .since = {3, 3}, .until = {3, 3}, .seed = "003",
     .doc = "leave_mm: cpumask_test_and_clear_cpu, load_cr3(swapper_pg_dir) only if the bit was set"},
    // As reviewed (Linus) and merged: a read-only cpumask_test_cpu first, then the clear and the load when it was set.
    {TLBSIM_ID(Option, leave_mm_cr3_when_needed_test_first), .arch = Arch::kX86, .since = {3, 3}, .until = {3, 3},
     .seed = "003", .conflicts_with = "leave_mm_cr3_when_needed",
     .doc = "as merged (a6fca40f1d7f): read-only cpumask_test_cpu first; clear + load_cr3 only if set"},
    // An experiment, no posted change: flush_tlb_func never takes the ranged path, so every flush is a full one.
    {TLBSIM_ID(Option, flush_tlb_func_always_full), .arch = Arch::kX86, .since = {5, 17}, .until = {6, 18},
     .doc = "experiment: flush_tlb_func always flushes the whole TLB (what the ranged flush saves)"},
    // Seed 002's ordering fix, "x86/mm: Fix SMP ordering in switch_mm_irqs_off()" (83b0177a6c48, Ingo Molnar and
    // Peter Zijlstra, reported by Stephen Dolan; tip x86/urgent 2025-10-13, in v6.18): when next's mm_cpumask bit
    // is already set, no cpumask_set_cpu orders the CPU's is_lazy and loaded_mm stores before its tlb_gen load, so
    // switch_mm_irqs_off adds an smp_mb() (docs/findings.md, F8).
    {TLBSIM_ID(Option, switch_mm_smp_mb), .arch = Arch::kX86, .since = {6, 13}, .until = {6, 18}, .seed = "002",
     .depends_on = "lazy_mm_cpumask",
     .doc = "later fix (83b0177a6c48, v6.18): smp_mb() in switch_mm_irqs_off when next's mm_cpumask bit is set"},
    // Not a seed: Rik van Riel's "AMD broadcast TLB invalidation" series as merged for v6.15
    // (CONFIG_BROADCAST_TLB_FLUSH,
    // tip x86/mm): on a machine with INVLPGB (hw/invlpgb.h) an mm active on more than 3 CPUs gets a global ASID, the
    // same PCID on every CPU, and its flushes are INVLPGB + TLBSYNC instead of IPIs (arch/x86/mm/tlb_broadcast.cpp).
    {TLBSIM_ID(Option, BROADCAST_TLB_FLUSH), .arch = Arch::kX86, .since = {6, 15}, .until = {6, 18},
     .doc = "v6.15: global ASIDs for mms active on >3 CPUs, flushed by INVLPGB+TLBSYNC (machines with INVLPGB)"},
};

enum class Mutation : std::uint8_t {
  flush_sends_no_ipis,
  flush_skips_lazy_cpus_freeing_tables,
  partial_flush_skips_generations,
  switch_mm_reads_tlb_gen_before_cpumask,
  loaded_mm_switching_marked_late,
  asid_slot_reuse_skips_tlb_gen,
  asid_new_slot_skips_flush,
  lazy_return_skips_tlb_gen_check,
  lazy_flush_keeps_mm_loaded,
  lazy_return_skips_smp_mb,
  inc_mm_tlb_gen_unlocked,
  switch_mm_cpumask_skips_smp_mb,
  broadcast_flush_skips_tlbsync,
  tlbbatch_invlpgb_skips_tlbsync,
  asid_transition_skips_stragglers,
  switch_from_other_mm_skips_global_asid,
};

inline constexpr MutationDecl<Mutation> kMutations[] = {
    {TLBSIM_ID(Mutation, flush_sends_no_ipis), .area = "ipi", .arch = Arch::kX86, .scenarios = "madvise_vs_access",
     .kernel = "linux-5.17",
     .doc = "flush_tlb_mm_range flushes only locally: no IPI reaches the other CPUs in mm_cpumask"},
    {TLBSIM_ID(Mutation, flush_skips_lazy_cpus_freeing_tables), .area = "cpumask", .arch = Arch::kX86,
     .scenarios = "munmap_lazy_tables", .kernel = "linux-5.17",
     .doc = "native_flush_tlb_multi skips lazy CPUs even when page tables are freed (freed_tables ignored)"},
    {TLBSIM_ID(Mutation, partial_flush_skips_generations), .area = "generation", .arch = Arch::kX86,
     .scenarios = "cow_vs_madvise", .kernel = "linux-5.17",
     .doc = "flush_tlb_func does a partial flush even when it takes the CPU more than one generation forward"},
    {TLBSIM_ID(Mutation, switch_mm_reads_tlb_gen_before_cpumask), .area = "generation", .arch = Arch::kX86,
     .scenarios = "switch_vs_madvise", .kernel = "linux-5.17",
     .doc = "switch_mm_irqs_off reads next->context.tlb_gen before setting its bit in mm_cpumask(next)"},
    {TLBSIM_ID(Mutation, loaded_mm_switching_marked_late), .area = "cpumask", .arch = Arch::kX86,
     .scenarios = "switch_vs_madvise", .kernel = "linux-6.18",
     .doc = "switch_mm_irqs_off marks LOADED_MM_SWITCHING after reading tlb_gen; should_flush_tlb trusts it"},
    {TLBSIM_ID(Mutation, asid_slot_reuse_skips_tlb_gen), .area = "asid", .arch = Arch::kX86,
     .scenarios = "switch_vs_madvise", .kernel = "linux-5.17",
     .doc = "choose_new_asid reuses the mm's ASID slot without comparing the slot's tlb_gen with the mm's"},
    {TLBSIM_ID(Mutation, asid_new_slot_skips_flush), .area = "asid", .arch = Arch::kX86, .scenarios = "asid_reuse",
     .kernel = "linux-5.17",
     .doc = "choose_new_asid takes a recycled ASID slot without flushing the previous owner's entries"},
    {TLBSIM_ID(Mutation, lazy_return_skips_tlb_gen_check), .area = "generation", .arch = Arch::kX86,
     .scenarios = "lazy_return_vs_madvise", .kernel = "linux-5.17",
     .doc = "switch_mm_irqs_off leaving lazy mode for the same mm does not compare the mm's tlb_gen with its own"},
    {TLBSIM_ID(Mutation, lazy_flush_keeps_mm_loaded), .area = "cpumask", .arch = Arch::kX86,
     .scenarios = "munmap_lazy_tables", .kernel = "linux-5.17",
     .doc = "flush_tlb_func on a lazy CPU returns without switching to init_mm (freed page tables stay cached)"},
    {TLBSIM_ID(Mutation, lazy_return_skips_smp_mb), .area = "barrier", .arch = Arch::kX86,
     .scenarios = "lazy_reread_vs_madvise", .kernel = "linux-5.17",
     .doc = "switch_mm_irqs_off leaving lazy mode has no smp_mb() between the is_lazy store and the tlb_gen load"},
    {TLBSIM_ID(Mutation, inc_mm_tlb_gen_unlocked), .area = "barrier", .arch = Arch::kX86,
     .scenarios = "lazy_reread_vs_madvise", .kernel = "linux-5.17",
     .doc = "flush_tlb_mm_range bumps tlb_gen with a plain load and store: no full barrier before the mask reads"},
    {TLBSIM_ID(Mutation, switch_mm_cpumask_skips_smp_mb), .area = "barrier", .arch = Arch::kX86,
     .scenarios = "lazy_switch_vs_madvise", .kernel = "linux-6.18",
     .doc = "v6.18's switch_mm_irqs_off without 83b0177a6c48's smp_mb() when next's mm_cpumask bit is already set"},
    {TLBSIM_ID(Mutation, broadcast_flush_skips_tlbsync), .area = "tlbsync", .arch = Arch::kX86,
     .scenarios = "global_asid_madvise", .kernel = "linux-6.15",
     .doc = "broadcast_tlb_flush returns without __tlbsync: its INVLPGBs may not have completed anywhere"},
    {TLBSIM_ID(Mutation, tlbbatch_invlpgb_skips_tlbsync), .area = "tlbsync", .arch = Arch::kX86,
     .scenarios = "reclaim_invlpgb", .kernel = "linux-6.15",
     .doc = "arch_tlbbatch_flush's invlpgb_flush_all_nonglobals issues the INVLPGB and no TLBSYNC"},
    {TLBSIM_ID(Mutation, asid_transition_skips_stragglers), .area = "asid", .arch = Arch::kX86,
     .scenarios = "global_asid_transition", .kernel = "linux-6.15",
     .doc = "finish_asid_transition ends the transition without IPIs to CPUs still on the mm's dynamic ASID"},
    {TLBSIM_ID(Mutation, switch_from_other_mm_skips_global_asid), .area = "asid", .arch = Arch::kX86,
     .scenarios = "global_asid_switch_back", .kernel = "linux-6.15",
     .doc = "switch_mm_irqs_off from another mm takes a dynamic ASID for an mm that has a global one"},
};

}  // namespace tlbsim::x86

TLBSIM_DECLARE_SPACE(tlbsim::x86::Option, 32, OptionDecl, tlbsim::x86::kOptions);
TLBSIM_DECLARE_SPACE(tlbsim::x86::Mutation, 32, MutationDecl, tlbsim::x86::kMutations);
