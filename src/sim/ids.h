// Strong types for identifiers that must never be mixed up: CPUs, cache lines, pages, frames, ASIDs.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>

namespace tlbsim {

// A typed wrapper over an integer. Contract: no implicit conversion to or from the raw integer.
template <class Tag, class Rep = std::uint32_t>
struct StrongId {
  using rep_type = Rep;
  Rep value{};

  constexpr StrongId() = default;
  constexpr explicit StrongId(Rep v) : value(v) {}
  constexpr Rep get() const { return value; }
  friend constexpr auto operator<=>(const StrongId&, const StrongId&) = default;
};

struct CpuIdTag {};
struct LineIdTag {};
struct VpnTag {};
struct PfnTag {};
struct AsidTag {};

// A logical CPU number, as Linux enumerates CPUs on the modeled machine.
using CpuId = StrongId<CpuIdTag, std::uint32_t>;
// A modeled cache line (an index into the coherence model).
using LineId = StrongId<LineIdTag, std::uint32_t>;
// A virtual page number (virtual address >> 12).
using Vpn = StrongId<VpnTag, std::uint64_t>;
// A physical frame number.
using Pfn = StrongId<PfnTag, std::uint64_t>;
// An address-space tag held in the TLB (x86 PCID, powerpc PID).
using Asid = StrongId<AsidTag, std::uint16_t>;

}  // namespace tlbsim

template <class Tag, class Rep>
struct std::hash<tlbsim::StrongId<Tag, Rep>> {
  std::size_t operator()(const tlbsim::StrongId<Tag, Rep>& id) const noexcept { return std::hash<Rep>{}(id.value); }
};
