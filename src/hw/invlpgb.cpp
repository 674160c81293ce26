#include "hw/invlpgb.h"

namespace tlbsim::hw {

void apply_invlpgb(const Invlpgb& op, Tlb& tlb) {
  switch (op.kind) {
    case Invlpgb::Kind::kVa: {
      // Each page from vpn, stride_shift apart; Tlb::invlpg also drops a 2 MiB entry covering it and the
      // paging-structure entries above it (INVLPGB_FLAG_FINAL_ONLY is never set by Linux).
      const std::uint64_t step = std::uint64_t{1} << (op.stride_shift - 12);
      for (std::uint32_t i = 0; i < op.nr; ++i) tlb.invlpg(op.pcid, Vpn{op.vpn.get() + i * step}, op.last_level);
      break;
    }
    case Invlpgb::Kind::kPcid:
      tlb.flush_tag(op.pcid);
      break;
    case Invlpgb::Kind::kAllNonGlobals:
      tlb.flush_all();  // the model's TLBs hold no global (kernel) entries
      break;
  }
}

}  // namespace tlbsim::hw
