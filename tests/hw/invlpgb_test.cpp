#include "hw/invlpgb.h"

#include <gtest/gtest.h>

#include <vector>

namespace tlbsim::hw {
namespace {

TlbParams params() {
  TlbParams p;
  p.entries = 64;
  p.ways = 4;
  p.tag = TlbTag::kPcid;
  p.tag_bits = 12;
  return p;
}

// An INVLPGB takes effect only at the TLBSYNC of the CPU that issued it, and then in every TLB.
TEST(Invlpgb, TakesEffectEverywhereAtTheIssuersTlbsync) {
  std::vector<Tlb> tlbs(3, Tlb(params()));
  for (Tlb& t : tlbs) {
    for (std::uint64_t v = 0x100; v < 0x110; ++v) t.fill(Asid{7}, Vpn{v}, Translation{Pfn{v}, true, 1});
    t.fill(Asid{8}, Vpn{0x100}, Translation{Pfn{1}, true, 2});
  }
  InvlpgbQueue q;
  q.issue(Invlpgb{Invlpgb::Kind::kVa, Asid{7}, Vpn{0x100}, 8, 12});
  EXPECT_FALSE(q.empty());
  for (const Tlb& t : tlbs) EXPECT_TRUE(t.peek(Asid{7}, Vpn{0x100}).has_value());  // still outstanding
  q.complete([&](auto&& apply) {
    for (Tlb& t : tlbs) apply(t);
  });
  EXPECT_TRUE(q.empty());
  for (const Tlb& t : tlbs) {
    for (std::uint64_t v = 0x100; v < 0x108; ++v) EXPECT_FALSE(t.peek(Asid{7}, Vpn{v}).has_value()) << v;
    EXPECT_TRUE(t.peek(Asid{7}, Vpn{0x108}).has_value());  // beyond the 8 pages
    EXPECT_TRUE(t.peek(Asid{8}, Vpn{0x100}).has_value());  // another PCID
  }
}

TEST(Invlpgb, PcidAndAllNonGlobalsAndThePmdStride) {
  Tlb t(params());
  t.fill(Asid{7}, Vpn{0x200}, Translation{Pfn{1}, true, 1});
  t.fill(Asid{7}, Vpn{0x400}, Translation{Pfn{2}, true, 1});
  t.fill(Asid{8}, Vpn{0x200}, Translation{Pfn{3}, true, 2});
  // PMD stride: page 0x200 and, 512 pages on, 0x400; not 0x201.
  t.fill(Asid{7}, Vpn{0x201}, Translation{Pfn{4}, true, 1});
  apply_invlpgb(Invlpgb{Invlpgb::Kind::kVa, Asid{7}, Vpn{0x200}, 2, 21}, t);
  EXPECT_FALSE(t.peek(Asid{7}, Vpn{0x200}).has_value());
  EXPECT_FALSE(t.peek(Asid{7}, Vpn{0x400}).has_value());
  EXPECT_TRUE(t.peek(Asid{7}, Vpn{0x201}).has_value());
  apply_invlpgb(Invlpgb{Invlpgb::Kind::kPcid, Asid{7}, Vpn{0}, 1, 12}, t);
  EXPECT_FALSE(t.peek(Asid{7}, Vpn{0x201}).has_value());
  EXPECT_TRUE(t.peek(Asid{8}, Vpn{0x200}).has_value());
  apply_invlpgb(Invlpgb{}, t);
  EXPECT_FALSE(t.peek(Asid{8}, Vpn{0x200}).has_value());
}

}  // namespace
}  // namespace tlbsim::hw
