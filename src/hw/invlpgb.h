// AMD's broadcast TLB invalidation (AMD64 Architecture Programmer's Manual vol. 3, INVLPGB and TLBSYNC; Zen 3 and
// later): an INVLPGB issued by one CPU invalidates the matching entries, and the paging-structure entries above them,
// in every CPU's TLB, its own included, without interrupting any of them. It is weakly ordered and asynchronous: a
// TLBSYNC on the issuing CPU waits until every INVLPGB that CPU issued has completed system-wide.
//
// Contract: an issued invalidation may take effect anywhere up to the TLBSYNC that waits for it; the model applies it
// at that TLBSYNC, the latest moment the architecture allows (an INVLPGB never followed by a TLBSYNC of its CPU stays
// outstanding). Each CPU's outstanding INVLPGBs are its own hardware state.
#pragma once

#include <cstdint>
#include <vector>

#include "hw/tlb.h"
#include "sim/ids.h"

namespace tlbsim::hw {

// One INVLPGB, as far as what it matches: rax's VA and PCID valid bits, ecx's page count and stride, edx's PCID.
struct Invlpgb {
  enum class Kind : std::uint8_t {
    kVa,             // INVLPGB_FLAG_PCID | INVLPGB_FLAG_VA: `nr` pages of one PCID from `vpn`, `stride_shift` apart
    kPcid,           // INVLPGB_FLAG_PCID: every non-global entry of one PCID
    kAllNonGlobals,  // INVLPGB_MODE_ALL_NONGLOBALS: every non-global entry of every PCID
  };
  Kind kind = Kind::kAllNonGlobals;
  Asid pcid{0};
  Vpn vpn{0};
  std::uint32_t nr = 1;
  std::uint8_t stride_shift = 12;  // 12 (PTE_STRIDE) or 21 (PMD_STRIDE)
  bool last_level = false;         // arm64 TLBI VALE1IS: leaf entries only, the walk caches are kept
};

// Makes `op` take effect in `tlb` (at the TLBSYNC that completes it).
void apply_invlpgb(const Invlpgb& op, Tlb& tlb);

// The INVLPGBs one CPU has issued and no TLBSYNC of it has waited for yet. arm64's broadcast TLBIs (TLBI ...IS) have
// the same contract with DSB ISH in TLBSYNC's place (Arm ARM, "TLB maintenance instructions": a TLBI is complete only
// once a DSB of the PE that issued it completes), and use the same queue: kVa is TLBI VAE1IS/VALE1IS, kPcid TLBI
// ASIDE1IS.
class InvlpgbQueue {
 public:
  void issue(const Invlpgb& op) {
    pending_.push_back(op);
    ++issued_;
  }
  bool empty() const { return pending_.empty(); }
  // TLBSYNC: the outstanding invalidations complete in every TLB `for_each_tlb` visits; the queue is emptied.
  template <class ForEachTlb>
  void complete(ForEachTlb&& for_each_tlb) {
    if (pending_.empty()) return;
    for_each_tlb([&](Tlb& tlb) {
      for (const Invlpgb& op : pending_) apply_invlpgb(op, tlb);
    });
    pending_.clear();
  }
  std::uint64_t issued() const { return issued_; }

 private:
  std::vector<Invlpgb> pending_;
  std::uint64_t issued_ = 0;
};

}  // namespace tlbsim::hw
