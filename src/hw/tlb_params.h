// The shape and costs of each CPU's TLB hardware (machine-file section [tlb]). Behaviour is modeled by the
// architecture layer; these are its parameters.
#pragma once

#include <cstdint>
#include <optional>

#include "sim/time.h"

namespace tlbsim::hw {

enum class TlbTag : std::uint8_t {
  kNone,  // x86 without PCID: every CR3 write flushes non-global entries
  kPcid,  // x86 PCID (12 bits)
  kPid,   // powerpc radix PID
  kAsid,  // arm64 ASID (8 or 16 bits, ID_AA64MMFR0_EL1.ASIDBits)
};
const char* to_string(TlbTag t);

struct TlbParams {
  std::uint32_t entries = 0;  // second-level TLB entries for 4 KiB pages
  std::uint32_t ways = 0;     // associativity; divides entries
  // Entries for 2 MiB pages (PMD-mapped THPs) and their associativity; 0: as many as for 4 KiB pages (a second-level
  // TLB shared by both sizes, modeled as a second array of the same shape: docs/model.md).
  std::uint32_t huge_entries = 0;
  std::uint32_t huge_ways = 0;
  TlbTag tag = TlbTag::kNone;
  std::uint32_t tag_bits = 0;
  sim::Duration page_walk{0};        // a miss whose page walk hits in the caches
  sim::Duration invlpg{0};           // invalidate one page in the current tag
  sim::Duration flush_tag{0};        // invalidate every entry of one tag
  sim::Duration flush_all{0};        // invalidate everything
  sim::Duration cr3_write{0};        // address-space switch without flush
  sim::Duration cr3_write_flush{0};  // address-space switch that flushes non-global entries
  std::optional<sim::Duration> tlbie;  // powerpc: broadcast invalidation round trip
  std::optional<sim::Duration> tlbiel_lpid;  // powerpc: local flush of every entry of the partition (both scopes)
  // x86 broadcast invalidation (AMD INVLPGB/TLBSYNC, Zen 3 and later; hw/invlpgb.h): the issue cost of one INVLPGB,
  // the wait of a TLBSYNC for the issuing CPU's INVLPGBs to complete everywhere, and the most pages one INVLPGB
  // takes (CPUID Fn8000_0008 EDX[15:0] + 1). None on a machine without the instructions (X86_FEATURE_INVLPGB off).
  std::optional<sim::Duration> invlpgb;
  std::optional<sim::Duration> tlbsync;
  std::uint32_t invlpgb_count_max = 0;
  // arm64 broadcast invalidation (TLBI ...IS; hw/invlpgb.h's queue): the issue cost of one TLBI to the Inner
  // Shareable domain, and the wait of a DSB ISH for the CPU's outstanding TLBIs to complete on every CPU.
  std::optional<sim::Duration> tlbi_is;
  std::optional<sim::Duration> dsb_ish;
};

}  // namespace tlbsim::hw
