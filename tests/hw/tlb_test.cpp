#include "hw/tlb.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <tuple>
#include <vector>

namespace tlbsim::hw {
namespace {

TlbParams params() {
  TlbParams p;
  p.entries = 16;
  p.ways = 4;
  p.tag = TlbTag::kPcid;
  p.tag_bits = 12;
  return p;
}

Translation to(std::uint64_t pfn) { return Translation{Pfn{pfn}, true, 1}; }

TEST(Tlb, HitsAfterFillAndTagsSeparateAddressSpaces) {
  Tlb t(params());
  EXPECT_FALSE(t.lookup(Asid{1}, Vpn{100}));
  t.fill(Asid{1}, Vpn{100}, to(7));
  ASSERT_TRUE(t.lookup(Asid{1}, Vpn{100}));
  EXPECT_EQ(t.lookup(Asid{1}, Vpn{100})->pfn, Pfn{7});
  EXPECT_FALSE(t.lookup(Asid{2}, Vpn{100}));
  EXPECT_EQ(t.counters().hits, 2u);
  EXPECT_EQ(t.counters().misses, 2u);
}

TEST(Tlb, InvlpgDropsOnePageOfOneTag) {
  Tlb t(params());
  t.fill(Asid{1}, Vpn{100}, to(7));
  t.fill(Asid{1}, Vpn{101}, to(8));
  t.fill(Asid{2}, Vpn{100}, to(9));
  EXPECT_TRUE(t.invlpg(Asid{1}, Vpn{100}));
  EXPECT_FALSE(t.peek(Asid{1}, Vpn{100}));
  EXPECT_TRUE(t.peek(Asid{1}, Vpn{101}));
  EXPECT_TRUE(t.peek(Asid{2}, Vpn{100}));
}

TEST(Tlb, FlushTagAndFlushAllAreGenerationBased) {
  Tlb t(params());
  t.fill(Asid{1}, Vpn{1}, to(1));
  t.fill(Asid{2}, Vpn{2}, to(2));
  t.flush_tag(Asid{1});
  EXPECT_FALSE(t.peek(Asid{1}, Vpn{1}));
  EXPECT_TRUE(t.peek(Asid{2}, Vpn{2}));
  t.fill(Asid{1}, Vpn{1}, to(3));  // refilled after the flush: valid again
  EXPECT_EQ(t.peek(Asid{1}, Vpn{1})->pfn, Pfn{3});
  t.flush_all();
  EXPECT_FALSE(t.peek(Asid{1}, Vpn{1}));
  EXPECT_FALSE(t.peek(Asid{2}, Vpn{2}));
}

TEST(Tlb, EvictsLeastRecentlyUsedWayOfASet) {
  Tlb t(params());  // 4 sets of 4 ways: vpns 0, 4, 8, 12, 16 share set 0
  for (std::uint64_t v : {0, 4, 8, 12}) t.fill(Asid{1}, Vpn{v}, to(v));
  ASSERT_TRUE(t.lookup(Asid{1}, Vpn{0}));  // 0 becomes most recent; 4 is now least recent
  t.fill(Asid{1}, Vpn{16}, to(16));
  EXPECT_TRUE(t.peek(Asid{1}, Vpn{0}));
  EXPECT_FALSE(t.peek(Asid{1}, Vpn{4}));
  EXPECT_EQ(t.counters().evictions, 1u);
}

TEST(Tlb, PagingStructureCacheIsDroppedByFlushesAndCoveringInvlpg) {
  Tlb t(params());
  t.pwc_fill(Asid{1}, 42, Vpn{512}, Vpn{1024});
  EXPECT_TRUE(t.pwc_holds(42));
  t.invlpg(Asid{1}, Vpn{100});  // outside the table's range
  EXPECT_TRUE(t.pwc_holds(42));
  t.invlpg(Asid{1}, Vpn{600});
  EXPECT_FALSE(t.pwc_holds(42));
  t.pwc_fill(Asid{1}, 42, Vpn{512}, Vpn{1024});
  t.flush_tag(Asid{1});
  EXPECT_FALSE(t.pwc_holds(42));
}

// invlpg skips its scans for a tag with nothing filled since its last flush; it still counts, and still finds
// what a fill after the flush (of the TLB or of the paging-structure cache alone) cached.
TEST(Tlb, InvlpgOfATagFlushedSinceItsFillsCountsAndFindsOnlyNewerEntries) {
  Tlb t(params());
  t.fill(Asid{1}, Vpn{5}, to(50));
  t.flush_tag(Asid{1});
  EXPECT_FALSE(t.invlpg(Asid{1}, Vpn{5}));
  EXPECT_FALSE(t.invlpg(Asid{2}, Vpn{5}));  // a tag never filled
  EXPECT_EQ(t.counters().invlpg, 2u);
  t.pwc_fill(Asid{1}, 7, Vpn{0}, Vpn{512});  // the paging-structure cache alone
  ASSERT_TRUE(t.pwc_holds(7));
  EXPECT_FALSE(t.invlpg(Asid{1}, Vpn{5}));
  EXPECT_FALSE(t.pwc_holds(7)) << "the covering paging-structure entry survived invlpg";
  t.fill(Asid{1}, Vpn{5}, to(51));
  t.flush_all();
  EXPECT_FALSE(t.invlpg(Asid{1}, Vpn{5}));
  t.fill(Asid{1}, Vpn{5}, to(52));
  EXPECT_TRUE(t.invlpg(Asid{1}, Vpn{5}));
  EXPECT_FALSE(t.peek(Asid{1}, Vpn{5}).has_value());
}

TEST(Tlb, RejectsTagsWiderThanTheMachine) {
  TlbParams p = params();
  p.tag = TlbTag::kNone;
  p.tag_bits = 0;
  Tlb t(p);
  EXPECT_NO_THROW(t.fill(Asid{0}, Vpn{1}, to(1)));
  EXPECT_THROW(t.fill(Asid{1}, Vpn{1}, to(1)), std::out_of_range);
}

// Two CPUs' TLBs that keep one TagHolders.
struct TwoTlbs {
  TagHolders holders{params().tag_bits};
  PfnHolders pfns;
  Tlb t0{params()};
  Tlb t1{params()};
  TwoTlbs() {
    t0.attach_holders(&pfns, 0);
    t1.attach_holders(&pfns, 1);
    t0.attach_tag_holders(&holders);
    t1.attach_tag_holders(&holders);
  }
  std::tuple<TagHolders&, Tlb&, Tlb&> parts() { return {holders, t0, t1}; }
};

// The CPUs whose TLBs hold anything of a tag: listed from the first fill after a flush of the tag or of everything,
// until the next such flush.
TEST(TagHolders, ListTheTlbsWithFillsOfATagSinceItsLastFlush) {
  TwoTlbs two;
  auto [holders, t0, t1] = two.parts();
  EXPECT_TRUE(holders.of(Asid{5}).empty());
  t1.fill(Asid{5}, Vpn{100}, to(7));
  t1.fill(Asid{5}, Vpn{101}, to(8));
  EXPECT_EQ(holders.of(Asid{5}), (std::vector<std::uint32_t>{1}));
  t0.pwc_fill(Asid{5}, 42, Vpn{0}, Vpn{512});  // a paging-structure entry holds the tag too
  t0.fill(Asid{6}, Vpn{100}, to(9));
  EXPECT_EQ(holders.of(Asid{5}), (std::vector<std::uint32_t>{0, 1}));
  t1.invlpg(Asid{5}, Vpn{100});  // an invalidation leaves the tag's other entries: still a holder
  EXPECT_EQ(holders.of(Asid{5}), (std::vector<std::uint32_t>{0, 1}));
  t1.flush_tag(Asid{5});
  EXPECT_EQ(holders.of(Asid{5}), (std::vector<std::uint32_t>{0}));
  t0.flush_all();
  EXPECT_TRUE(holders.of(Asid{5}).empty());
  EXPECT_TRUE(holders.of(Asid{6}).empty());
  EXPECT_THROW(holders.of(Asid{4096}), std::out_of_range);  // as wide as the TLB accepts, no wider
}

// A broadcast that visits only the holders still counts in every attached TLB's counters, once.
TEST(TagHolders, EveryTlbCountsABroadcastWhetherVisitedOrNot) {
  TwoTlbs two;
  auto [holders, t0, t1] = two.parts();
  t1.fill(Asid{5}, Vpn{100}, to(7));
  holders.count_broadcast_invlpg();
  for (const std::uint32_t c : holders.of(Asid{5})) (c == 0 ? t0 : t1).invlpg_broadcast(Asid{5}, Vpn{100});
  EXPECT_FALSE(t1.peek(Asid{5}, Vpn{100}));
  holders.count_broadcast_flush_tag();
  t1.flush_tag_broadcast(Asid{5});
  for (const Tlb* t : {&t0, &t1}) {
    EXPECT_EQ(t->counters().invlpg, 1u);
    EXPECT_EQ(t->counters().flush_tag, 1u);
  }
}

}  // namespace
}  // namespace tlbsim::hw

namespace tlbsim::hw {
namespace {

// A 2 MiB entry translates each of its 512 pages to its own frame; INVLPG of any page in it drops it; a tag flush
// drops it; maps_pfn finds each of its frames; holders learn the CPU caches 2 MiB entries.
TEST(Tlb, AHugeEntryMapsItsFiveHundredTwelvePagesUntilAnyOfThemIsInvalidated) {
  TlbParams p = params();
  p.huge_entries = 4;
  p.huge_ways = 2;
  Tlb t(p);
  PfnHolders holders;
  t.attach_holders(&holders, 3);
  EXPECT_TRUE(holders.huge().empty());
  t.fill_huge(Asid{1}, Vpn{1024 + 7}, to(5000));
  EXPECT_EQ(holders.huge(), std::vector<std::uint32_t>{3});
  ASSERT_TRUE(t.lookup(Asid{1}, Vpn{1024}));
  EXPECT_EQ(t.lookup(Asid{1}, Vpn{1024})->pfn, Pfn{5000});
  EXPECT_EQ(t.peek(Asid{1}, Vpn{1024 + 511})->pfn, Pfn{5511});
  EXPECT_FALSE(t.peek(Asid{1}, Vpn{1024 + 512}));
  EXPECT_FALSE(t.peek(Asid{2}, Vpn{1024}));
  EXPECT_TRUE(t.maps_pfn(Asid{1}, Pfn{5100}));
  EXPECT_FALSE(t.maps_pfn(Asid{1}, Pfn{5512}));
  EXPECT_TRUE(t.invlpg(Asid{1}, Vpn{1024 + 300}));
  EXPECT_FALSE(t.peek(Asid{1}, Vpn{1024}));
  t.fill_huge(Asid{1}, Vpn{1024}, to(5000));
  t.flush_tag(Asid{1});
  EXPECT_FALSE(t.peek(Asid{1}, Vpn{1024 + 1}));
}

TEST(Tlb, HugeEntriesEvictTheLeastRecentlyUsedWayOfTheirSet) {
  TlbParams p = params();
  p.huge_entries = 2;
  p.huge_ways = 2;
  Tlb t(p);
  t.fill_huge(Asid{1}, Vpn{0}, to(1000));
  t.fill_huge(Asid{1}, Vpn{512}, to(2000));
  ASSERT_TRUE(t.lookup(Asid{1}, Vpn{0}));  // the first is now the more recent
  t.fill_huge(Asid{1}, Vpn{1024}, to(3000));
  EXPECT_TRUE(t.peek(Asid{1}, Vpn{0}));
  EXPECT_FALSE(t.peek(Asid{1}, Vpn{512}));
  EXPECT_TRUE(t.peek(Asid{1}, Vpn{1024}));
  EXPECT_EQ(t.counters().evictions, 1u);
}

}  // namespace
}  // namespace tlbsim::hw
