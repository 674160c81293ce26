#include "check/oracle.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <nlohmann/json.hpp>

#include "kernel/kernel.h"
#include "mm/mm_types.h"

namespace tlbsim::check {

namespace {
constexpr std::size_t kHistory = 4096;
constexpr std::size_t kMaxViolations = 100;
}  // namespace

Oracle::Oracle(const kernel::FrameAllocator& frames, const hw::PfnHolders& holders, std::vector<const hw::Tlb*> tlbs,
               std::function<int(CpuId)> loaded_tag)
    : frames_(frames),
      holders_(holders),
      tlbs_(std::move(tlbs)),
      loaded_tag_(std::move(loaded_tag)),
      by_cpu_(tlbs_.size()),
      user_mm_(tlbs_.size(), 0) {}

std::unique_ptr<Oracle> Oracle::attach(kernel::Kernel& k) {
  std::vector<const hw::Tlb*> tlbs;
  for (std::uint32_t c = 0; c < k.ncpus(); ++c) tlbs.push_back(&k.percpu(CpuId{c}).tlb);
  auto o = std::make_unique<Oracle>(k.frames(), k.pfn_holders(), std::move(tlbs),
                                    [&k](CpuId c) { return k.percpu(c).tlb_tag(); });
  k.subscribe(*o);
  o->kernel_ = &k;
  return o;
}

Oracle::~Oracle() {
  if (kernel_ != nullptr) kernel_->unsubscribe(*this);
}

void Oracle::on_mm_free(std::uint32_t mm_id, const std::string& users, sim::SimTime now) {
  if (users.empty()) return;
  report(now, CpuId{0}, mm_id, Vpn{0}, fmt::format("mm {} freed (__mmdrop) while still in use:{}", mm_id, users));
}

void Oracle::report_refcount(CpuId cpu, std::uint32_t mm_id, const char* counter, std::int64_t value,
                             sim::SimTime now) {
  report(now, cpu, mm_id, Vpn{0}, fmt::format("{} of mm {} went below zero ({}) on cpu{}", counter, mm_id, value,
                                              cpu.get()));
}

void Oracle::report_kernel_warning(CpuId cpu, std::uint32_t mm_id, const std::string& what, sim::SimTime now) {
  report(now, cpu, mm_id, Vpn{0}, fmt::format("WARN on cpu{}: {}", cpu.get(), what));
}

void Oracle::on_frame_reuse(Pfn pfn, sim::SimTime now) {
  // Only the CPUs whose TLBs hold the frame can map it (ascending, as a scan of every CPU would report them), and
  // those that ever cached a 2 MiB translation.
  const std::vector<std::uint32_t>* cpus = &holders_.of(pfn.get());
  std::vector<std::uint32_t> both;
  if (!holders_.huge().empty()) {
    std::set_union(cpus->begin(), cpus->end(), holders_.huge().begin(), holders_.huge().end(),
                   std::back_inserter(both));
    cpus = &both;
  }
  for (const std::uint32_t c : *cpus) {
    if (user_mm_[c] == 0) continue;  // a lazy CPU runs kernel code only; switching back checks the generation
    const int tag = loaded_tag_(CpuId{static_cast<std::uint32_t>(c)});
    if (tag >= 0 && tlbs_[c]->maps_pfn(Asid{static_cast<std::uint16_t>(tag)}, pfn)) {
      report(now, CpuId{static_cast<std::uint32_t>(c)}, user_mm_[c], Vpn{0},
             fmt::format("frame {} reused while cpu{} (running a task of mm {}) still maps it in its TLB", pfn.get(),
                         c, user_mm_[c]));
    }
  }
}

void Oracle::report(sim::SimTime at, CpuId cpu, std::uint32_t mm, Vpn vpn, std::string what) {
  if (violations_.size() < kMaxViolations) violations_.push_back(Violation{at, cpu, mm, vpn, std::move(what)});
}

std::uint32_t Oracle::find_in_flight(const RemovalKey& key, std::uint32_t* prev) const {
  const auto [pfn, mm, vpn] = key;
  std::uint32_t before = kNone;
  for (std::uint32_t n = pfn < head_by_pfn_.size() ? head_by_pfn_[pfn] : kNone; n != kNone; n = pool_[n].next) {
    if (pool_[n].r.mm == mm && pool_[n].r.vpn == vpn) {
      if (prev != nullptr) *prev = before;
      return n;
    }
    before = n;
  }
  return kNone;
}

void Oracle::erase_in_flight(std::uint64_t pfn, std::uint32_t node, std::uint32_t prev) {
  (prev == kNone ? head_by_pfn_[pfn] : pool_[prev].next) = pool_[node].next;
  pool_[node].live = false;
  pool_[node].next = free_;
  free_ = node;
}

void Oracle::on_pte_removed(const kernel::MmStruct& mm, Vpn v, const kernel::Pte& old, CpuId by, sim::SimTime now) {
  const std::uint64_t pfn = old.pfn.get();
  const RemovalKey key{pfn, mm.id(), v.get()};
  const Removal r{mm.id(), v.get(), pfn, by, now};
  if (const std::uint32_t n = find_in_flight(key); n != kNone) {
    pool_[n].r = r;
  } else {
    if (pfn >= head_by_pfn_.size()) head_by_pfn_.resize(pfn + 1, kNone);
    std::uint32_t node = free_;
    if (node != kNone) {
      free_ = pool_[node].next;
    } else {
      node = static_cast<std::uint32_t>(pool_.size());
      pool_.emplace_back();
    }
    pool_[node] = InFlight{r, head_by_pfn_[pfn], true};
    head_by_pfn_[pfn] = node;
  }
  by_cpu_[by.get()].push_back(key);
  history_.push_back(r);
  if (history_.size() > kHistory) history_.pop_front();
}

void Oracle::on_syscall_return(CpuId cpu) {
  for (const auto& key : by_cpu_[cpu.get()]) {
    std::uint32_t prev = kNone;
    if (const std::uint32_t n = find_in_flight(key, &prev); n != kNone) erase_in_flight(std::get<0>(key), n, prev);
  }
  by_cpu_[cpu.get()].clear();
}

void Oracle::on_range_synced(CpuId, const kernel::MmStruct& mm, std::uint64_t start, std::uint64_t end) {
  const std::uint64_t first = start >> kernel::kPageShift, last = end >> kernel::kPageShift;
  for (std::uint32_t n = 0; n < pool_.size(); ++n) {
    const Removal& r = pool_[n].r;
    if (!pool_[n].live || r.mm != mm.id() || r.vpn < first || r.vpn >= last) continue;
    std::uint32_t prev = kNone;
    find_in_flight(RemovalKey{r.pfn, r.mm, r.vpn}, &prev);
    erase_in_flight(r.pfn, n, prev);
  }
}

void Oracle::on_page_replaced(const kernel::MmStruct& mm, Vpn v, Pfn page, CpuId by, sim::SimTime now) {
  if (frames_.pins(page) == 0) return;
  const CpuId pinner = frames_.pinned_by(page);
  report(now, pinner, mm.id(), v,
         fmt::format("cpu{} replaced pfn {} by a copy while cpu{} holds a GUP pin on it (taken after the reference "
                     "count check): what is written through the pin is lost",
                     by.get(), page.get(), pinner.get()));
}

void Oracle::on_frame_free(Pfn pfn, sim::SimTime now) {
  if (pfn.get() < head_by_pfn_.size()) {
    for (std::uint32_t n = head_by_pfn_[pfn.get()]; n != kNone;) {
      const std::uint32_t next = pool_[n].next;
      erase_in_flight(pfn.get(), n, kNone);
      n = next;
    }
  }
  if (frames_.use(pfn) != kernel::FrameUse::kPageTable) return;
  for (std::size_t c = 0; c < tlbs_.size(); ++c) {
    const int tag = loaded_tag_(CpuId{static_cast<std::uint32_t>(c)});
    if (tag >= 0 && tlbs_[c]->pwc_holds_for(Asid{static_cast<std::uint16_t>(tag)}, pfn.get())) {
      report(now, CpuId{static_cast<std::uint32_t>(c)}, 0, Vpn{0},
             fmt::format("page-table page (pfn {}) freed while cpu{}'s paging-structure cache still points into it "
                         "with that address space loaded (PCID {}): a speculative walk may use the reused page",
                         pfn.get(), c, tag));
    }
  }
}

std::string Oracle::describe_last_removal(std::uint32_t mm, Vpn v, Pfn pfn) const {
  for (auto it = history_.rbegin(); it != history_.rend(); ++it) {
    if (it->mm == mm && it->vpn == v.get() && it->pfn == pfn.get()) {
      return fmt::format("removed by cpu{} at {}; the flush for that removal should have dropped it", it->by.get(),
                         sim::format_duration(it->at.time_since_epoch()));
    }
  }
  return "removed earlier (no record left)";
}

void Oracle::on_tlb_hit(CpuId cpu, const kernel::MmStruct& mm, Vpn v, const hw::Translation& t, sim::SimTime now) {
  ++checks_;
  if (t.mm_id != mm.id()) {
    report(now, cpu, mm.id(), v,
           fmt::format("cpu{} used a translation of mm {} while running mm {}: vpn {:#x} -> pfn {}", cpu.get(),
                       t.mm_id, mm.id(), v.get(), t.pfn.get()));
    return;
  }
  const auto truth = mm.pgd.lookup(v);
  const bool stale = !truth || truth->protnone || truth->pfn != t.pfn || (t.writable && !truth->writable);
  if (!stale) return;
  if (find_in_flight(RemovalKey{t.pfn.get(), mm.id(), v.get()}) != kNone) return;  // removal not yet complete
  const std::string now_maps = truth ? fmt::format("pfn {}{}", truth->pfn.get(),
                                                   truth->protnone   ? " protnone"
                                                   : truth->writable ? " rw"
                                                                     : " ro")
                                     : std::string("nothing");
  report(now, cpu, mm.id(), v,
         fmt::format("cpu{} hit a stale translation of mm {}: vpn {:#x} -> pfn {}{} (page tables now map {}); {}",
                     cpu.get(), mm.id(), v.get(), t.pfn.get(), t.writable ? " rw" : " ro", now_maps,
                     describe_last_removal(mm.id(), v, t.pfn)));
}

nlohmann::json Oracle::to_json() const {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& v : violations_) {
    out.push_back({{"time_ns", sim::to_nanoseconds(v.at.time_since_epoch())},
                   {"cpu", v.cpu.get()},
                   {"mm", v.mm},
                   {"vpn", v.vpn.get()},
                   {"what", v.what}});
  }
  return out;
}

}  // namespace tlbsim::check
