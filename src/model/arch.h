// The modeled architectures, one spelling each: the kernel's ARCH names ("x86", "powerpc", "arm64"), as kernel profiles
// and declarations say them. Machine files describe hardware and name it as `uname -m` does ("x86_64", "powerpc64",
// "aarch64").
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace tlbsim::kernel {

enum class Arch : std::uint8_t {
  kAny,  // a declaration for every architecture
  kX86,
  kPowerpc,
  kArm64,
};

constexpr std::string_view to_string(Arch a) {
  switch (a) {
    case Arch::kX86:
      return "x86";
    case Arch::kPowerpc:
      return "powerpc";
    case Arch::kArm64:
      return "arm64";
    case Arch::kAny:
      break;
  }
  return "any";
}

// "x86", "powerpc" or "arm64" (a kernel profile's `arch`); nullopt for anything else.
constexpr std::optional<Arch> parse_arch(std::string_view s) {
  if (s == "x86") return Arch::kX86;
  if (s == "powerpc") return Arch::kPowerpc;
  if (s == "arm64") return Arch::kArm64;
  return std::nullopt;
}

// Whether a declaration for `decl` applies to a kernel of `kernel`.
constexpr bool arch_matches(Arch decl, Arch kernel) { return decl == Arch::kAny || decl == kernel; }

}  // namespace tlbsim::kernel
