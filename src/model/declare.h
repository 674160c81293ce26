// Typed declarations of kernel options and planted mutations. Each owner (the generic kernel, each architecture)
// declares its options and mutations once, in its own options.h: an enum of ids, and a table of declarations with
// designated fields, in the enum's order. Model code tests an option or a mutation by its enum value (a bit test on
// KernelConfig); only profiles, the command line and listings use the names.
//
// Contract: a declaration table lists every enum value once, in order (checked by TLBSIM_DECLARE_SPACE at compile
// time); the spaces' bit ranges do not overlap (checked in model/options.cpp); names are the enum values' spellings.
#pragma once

#include <bitset>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

#include "model/arch.h"

namespace tlbsim::kernel {

// A kernel release, major.minor ("5.17"). Contract: parse() accepts only digits '.' digits.
struct KernelVersion {
  int major = 0;
  int minor = 0;
  auto operator<=>(const KernelVersion&) const = default;
  std::string str() const { return std::to_string(major) + "." + std::to_string(minor); }
  // Throws InputError naming `where` when `text` is not a version.
  static KernelVersion parse(std::string_view text, std::string_view where);
};

// One kernel option: a seed's change, a later fix or a reviewed variant, on or off per profile.
template <class Id>
struct OptionDecl {
  Id id;
  std::string_view name;                 // the id's spelling (TLBSIM_ID)
  Arch arch = Arch::kAny;                // the code it changes
  KernelVersion since;                   // the first release of the era it is modeled on (inclusive)
  KernelVersion until;                   // the last (inclusive)
  std::string_view seed = "";            // "000".."004", or "" for an option that is no seed's change
  std::string_view depends_on = "";      // an option that must also be on
  std::string_view conflicts_with = "";  // an option that must be off (another variant of one change)
  std::string_view doc;                  // one line for `tlbsim list options`
};

// One planted bug: a plausible mistake in the modeled kernel that the checker must catch.
template <class Id>
struct MutationDecl {
  Id id;
  std::string_view name;
  std::string_view area;       // generation, cpumask, ipi, batching, lazy_mm, asid, powerpc
  Arch arch = Arch::kAny;      // the code it breaks
  std::string_view scenarios;  // comma-separated checker scenarios that should catch it
  std::string_view kernel;     // the kernel profile the mutation suite runs it against
  std::string_view doc;
};

// `.id = Enum::name, .name = "name"`: the first two designated fields of a declaration.
#define TLBSIM_ID(Enum, NAME) .id = Enum::NAME, .name = #NAME

// KernelConfig's option and mutation masks: kDeclOwnerBits bits for each of up to kDeclBits / kDeclOwnerBits owners.
inline constexpr std::size_t kDeclBits = 128;
inline constexpr std::size_t kDeclOwnerBits = 32;
using DeclBits = std::bitset<kDeclBits>;

// Where an owner's ids sit in KernelConfig's bit masks: specialized by TLBSIM_DECLARE_SPACE.
template <class E>
struct DeclSpace;

template <class E>
concept OptionId = std::is_enum_v<E> && requires {
  { DeclSpace<E>::kBase } -> std::convertible_to<unsigned>;
  {DeclSpace<E>::kOptionDeclTable};
};
template <class E>
concept MutationId = std::is_enum_v<E> && requires {
  { DeclSpace<E>::kBase } -> std::convertible_to<unsigned>;
  {DeclSpace<E>::kMutationDeclTable};
};

// Whether `table` lists ids 0, 1, 2, ... in order.
template <class Decl, std::size_t N>
constexpr bool ids_in_order(const Decl (&table)[N]) {
  for (std::size_t i = 0; i < N; ++i) {
    if (static_cast<std::size_t>(table[i].id) != i) return false;
  }
  return true;
}

// The bit of id `e` in KernelConfig's masks.
template <class E>
constexpr unsigned decl_bit(E e) {
  return DeclSpace<E>::kBase + static_cast<unsigned>(e);
}

}  // namespace tlbsim::kernel

// Declares where an owner's option enum or mutation enum (ENUM, declared by KIND = OptionDecl or MutationDecl in
// TABLE) sits in KernelConfig's masks (DeclBits): bits BASE..BASE+31. Owners: the generic kernel 0, x86 32, powerpc 64,
// arm64 96 (a fifth owner widens kDeclBits).
#define TLBSIM_DECLARE_SPACE(ENUM, BASE, KIND, TABLE)                                         \
  template <>                                                                                 \
  struct tlbsim::kernel::DeclSpace<ENUM> {                                                    \
    static constexpr unsigned kBase = BASE;                                                   \
    static constexpr std::span<const ::tlbsim::kernel::KIND<ENUM>> k##KIND##Table{TABLE};     \
    static_assert(::tlbsim::kernel::ids_in_order(TABLE), #TABLE " lists " #ENUM " in order"); \
    static_assert(BASE % ::tlbsim::kernel::kDeclOwnerBits == 0 &&                             \
                      BASE + std::size(TABLE) <= ::tlbsim::kernel::kDeclBits &&               \
                      std::size(TABLE) <= ::tlbsim::kernel::kDeclOwnerBits,                   \
                  #TABLE ": 32 bits per owner");                                              \
  }
