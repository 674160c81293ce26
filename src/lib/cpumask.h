// mm_cpumask and other shared CPU masks: a bitset whose words live on modeled cache lines (512 CPUs per line),
// so setting, clearing and scanning bits cost what they cost on the machine.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "hw/coherence.h"
#include "hw/memory.h"
#include "sim/task.h"

namespace tlbsim::kernel {

// A plain CPU bitmap (a local `struct cpumask` on the stack or in per-CPU data: no sharing cost). Masks of up to
// 512 CPUs live inline, so copying one on the flush path allocates nothing.
class Cpumask {
 public:
  explicit Cpumask(std::uint32_t ncpus = 0) : n_(ncpus), nwords_((ncpus + 63) / 64) {
    if (nwords_ > kInlineWords) heap_.assign(nwords_, 0);
  }
  void set(CpuId c) { data()[c.get() / 64] |= bit(c); }
  void clear(CpuId c) { data()[c.get() / 64] &= ~bit(c); }
  bool test(CpuId c) const { return (data()[c.get() / 64] & bit(c)) != 0; }
  void clear_all() { std::fill(data(), data() + nwords_, 0); }
  bool empty() const { return next(0) == n_; }
  std::uint32_t weight() const {
    std::uint32_t n = 0;
    for (std::uint32_t i = 0; i < nwords_; ++i) n += static_cast<std::uint32_t>(std::popcount(data()[i]));
    return n;
  }
  std::uint32_t size() const { return n_; }
  // The first 64 CPUs' bits, as the checker's replay shows a mask.
  std::uint64_t shown_value() const { return nwords_ > 0 ? data()[0] : 0; }
  Cpumask& operator|=(const Cpumask& o) {
    for (std::uint32_t i = 0; i < nwords_; ++i) data()[i] |= o.data()[i];
    return *this;
  }
  bool operator==(const Cpumask& o) const { return n_ == o.n_ && std::equal(data(), data() + nwords_, o.data()); }
  // The first set CPU at or after `from`, or size() (cpumask_next).
  std::uint32_t next(std::uint32_t from) const {
    if (from >= n_) return n_;
    std::uint32_t i = from / 64;
    std::uint64_t w = data()[i] & (~std::uint64_t{0} << (from % 64));
    for (;;) {
      if (w != 0) return std::min(n_, i * 64 + static_cast<std::uint32_t>(std::countr_zero(w)));
      if (++i >= nwords_) return n_;
      w = data()[i];
    }
  }
  template <class F>
  void for_each(F&& f) const {
    for (std::uint32_t c = next(0); c < n_; c = next(c + 1)) f(CpuId{c});
  }
  // The first set CPU other than `but`, or size() when none (cpumask_any_but).
  std::uint32_t any_but(CpuId but) const {
    const std::uint32_t first = next(0);
    return first != but.get() ? first : next(first + 1);
  }

 private:
  static constexpr std::uint32_t kInlineWords = 8;
  static std::uint64_t bit(CpuId c) { return std::uint64_t{1} << (c.get() % 64); }
  std::uint64_t* data() { return nwords_ <= kInlineWords ? inline_.data() : heap_.data(); }
  const std::uint64_t* data() const { return nwords_ <= kInlineWords ? inline_.data() : heap_.data(); }
  std::uint32_t n_;
  std::uint32_t nwords_;
  std::array<std::uint64_t, kInlineWords> inline_{};
  std::vector<std::uint64_t> heap_;
};

// A cpumask shared between CPUs (mm_cpumask): its value, and the modeled lines its words sit on.
// Contract: bit operations are atomic RMWs on the line that holds the bit; reading the whole mask reads every
// line (as cpumask iteration does). Under the checker's POWER model (hw::Memory::power) a mask of one line is a
// location of the storage model: a load may read an older value, cpumask_set_cpu and cpumask_clear_cpu are
// relaxed RMWs (powerpc's set_bit and clear_bit have no barrier) and the test_and_ ones fully ordered (value-returning
// atomics). Elsewhere the value is kept beside the lines, and every access takes effect when its step completes.
class SharedCpumask {
 public:
  static constexpr std::uint32_t kCpusPerLine = 512;

  SharedCpumask(hw::CoherenceModel& model, std::uint32_t ncpus, const char* name) : value_{Cpumask(ncpus), {}} {
    for (std::uint32_t i = 0; i < (ncpus + kCpusPerLine - 1) / kCpusPerLine; ++i)
      lines_.push_back(model.add_line(name));
    value_.line = lines_.front();
  }

  LineId line_of(CpuId c) const { return lines_[c.get() / kCpusPerLine]; }
  const std::vector<LineId>& lines() const { return lines_; }
  // The value without modeled cost (for the oracle, assertions and dumps only): the coherence-latest one.
  const Cpumask& peek() const { return value_.value; }

  // cpumask_set_cpu: a locked bit-set on the bit's line.
  sim::Task<void> set_cpu(hw::Memory& mem, sim::Cpu& cpu, CpuId c, sim::SourceSite site = sim::SourceSite::current()) {
    if (weak(mem)) {
      co_await mem.rmw_relaxed(
          cpu, value_, [c](const Cpumask& m) { return with(m, c, true); }, site);
      co_return;
    }
    co_await mem.touch(cpu, line_of(c), hw::Access::kRmw, site);
    value_.value.set(c);
  }
  // cpumask_clear_cpu: a locked bit-clear on the bit's line.
  sim::Task<void> clear_cpu(hw::Memory& mem, sim::Cpu& cpu, CpuId c,
                            sim::SourceSite site = sim::SourceSite::current()) {
    if (weak(mem)) {
      co_await mem.rmw_relaxed(
          cpu, value_, [c](const Cpumask& m) { return with(m, c, false); }, site);
      co_return;
    }
    co_await mem.touch(cpu, line_of(c), hw::Access::kRmw, site);
    value_.value.clear(c);
  }
  // cpumask_test_cpu: a plain load of the bit's line.
  sim::Task<bool> test_cpu(hw::Memory& mem, sim::Cpu& cpu, CpuId c, sim::SourceSite site = sim::SourceSite::current()) {
    if (weak(mem)) {
      const Cpumask m = co_await mem.read(cpu, value_, site);
      co_return m.test(c);
    }
    co_await mem.touch(cpu, line_of(c), hw::Access::kLoad, site);
    co_return value_.value.test(c);
  }
  // cpumask_test_and_clear_cpu: a locked RMW that returns the old bit.
  sim::Task<bool> test_and_clear_cpu(hw::Memory& mem, sim::Cpu& cpu, CpuId c,
                                     sim::SourceSite site = sim::SourceSite::current()) {
    if (weak(mem)) {
      const Cpumask old = co_await mem.rmw(
          cpu, value_, [c](const Cpumask& m) { return with(m, c, false); }, site);
      co_return old.test(c);
    }
    co_await mem.touch(cpu, line_of(c), hw::Access::kRmw, site);
    const bool was = value_.value.test(c);
    value_.value.clear(c);
    co_return was;
  }
  // cpumask_test_and_set_cpu: a locked RMW that returns the old bit.
  sim::Task<bool> test_and_set_cpu(hw::Memory& mem, sim::Cpu& cpu, CpuId c,
                                   sim::SourceSite site = sim::SourceSite::current()) {
    if (weak(mem)) {
      const Cpumask old = co_await mem.rmw(
          cpu, value_, [c](const Cpumask& m) { return with(m, c, true); }, site);
      co_return old.test(c);
    }
    co_await mem.touch(cpu, line_of(c), hw::Access::kRmw, site);
    const bool was = value_.value.test(c);
    value_.value.set(c);
    co_return was;
  }
  // A snapshot of the whole mask, reading each of its lines (for_each_cpu, cpumask_copy, cpumask_any_but).
  sim::Task<Cpumask> read(hw::Memory& mem, sim::Cpu& cpu, sim::SourceSite site = sim::SourceSite::current()) {
    if (weak(mem)) {
      const Cpumask m = co_await mem.read(cpu, value_, site);
      co_return m;
    }
    for (LineId l : lines_) co_await mem.touch(cpu, l, hw::Access::kLoad, site);
    co_return value_.value;
  }

 private:
  static Cpumask with(Cpumask m, CpuId c, bool set) {
    if (set)
      m.set(c);
    else
      m.clear(c);
    return m;
  }
  bool weak(const hw::Memory& mem) const { return lines_.size() == 1 && mem.power() != nullptr; }
  hw::Shared<Cpumask> value_;
  std::vector<LineId> lines_;
};

}  // namespace tlbsim::kernel
