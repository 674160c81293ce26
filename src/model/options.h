// Kernel options and mutations by name: the union of every owner's declarations (kernel/options.h,
// arch/x86/options.h, arch/powerpc/options.h), for profiles, --option, --mutation and `tlbsim list`.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"

namespace tlbsim::kernel {

// An option's declaration without its typed id: `bit` is its bit in KernelConfig::option_bits.
struct OptionInfo {
  unsigned bit = 0;
  std::string_view name;
  Arch arch = Arch::kAny;
  KernelVersion since, until;
  std::string_view seed, depends_on, conflicts_with, doc;
};

// A mutation's declaration without its typed id: `bit` is its bit in KernelConfig::mutation_bits.
struct MutationInfo {
  unsigned bit = 0;
  std::string_view name;
  std::string_view area;
  Arch arch = Arch::kAny;
  std::string_view scenarios, kernel, doc;
};

// Every declared option (mutation), sorted by name.
std::span<const OptionInfo> all_options();
std::span<const MutationInfo> all_mutations();
// The declaration named `name`; throws InputError naming `where` and the known names when there is none.
const OptionInfo& option_named(std::string_view name, std::string_view where);
// The same, preferring the declaration for `arch` where one name is declared for several architectures.
const OptionInfo& option_named(std::string_view name, Arch arch, std::string_view where);
const MutationInfo& mutation_named(std::string_view name, std::string_view where);

// Sets option `name` to `value` in `cfg`. Throws InputError (naming `where`) for an unknown option, or one that does
// not exist for cfg.arch at cfg.version.
void set_option(KernelConfig& cfg, std::string_view name, bool value, std::string_view where);
// Checks the options that are on against their dependencies and conflicts. Throws InputError naming `where`.
void validate_options(const KernelConfig& cfg, std::string_view where);
// The names of the options that are on (mutations planted), sorted.
std::vector<std::string> enabled_options(const KernelConfig& cfg);
std::vector<std::string> planted_mutations(const KernelConfig& cfg);
// One line for `tlbsim list options`: seed, arch, releases, description.
std::string describe_option(const OptionInfo& o);
// Plants mutation `name` in `cfg`. Throws InputError (naming `where`) for an unknown mutation, one whose code is not
// this kernel's architecture, or one given twice.
void set_mutation(KernelConfig& cfg, std::string_view name, std::string_view where);

}  // namespace tlbsim::kernel
