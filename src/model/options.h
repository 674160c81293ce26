// Kernel options as self-registered entries (`tlbsim list options`): each names a KernelConfig field, the seed it
// belongs to, and the architecture and kernel releases it exists for.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "util/registry.h"

namespace tlbsim::kernel {

struct OptionInfo {
  bool KernelConfig::*field = nullptr;
  std::string_view arch;  // "x86", "powerpc", or "any"
  KernelVersion since;    // the first release of the era the option is modeled on (inclusive)
  KernelVersion until;    // the last (inclusive)
  std::string_view seed;  // "000".."004", or "" for an option that is no seed's change
  std::string_view depends_on;  // an option that must also be on, or ""
  std::string_view conflicts_with;  // an option that must be off, or ""
};

// Contract: info() is constant; the registered name equals the KernelConfig field's name.
class KernelOption {
 public:
  virtual ~KernelOption() = default;
  virtual OptionInfo info() const = 0;
};

// Sets option `name` to `value` in `cfg`. Throws InputError (naming `where`) for an unknown option, or one that does
// not exist for cfg.arch at cfg.version.
void set_option(KernelConfig& cfg, std::string_view name, bool value, std::string_view where);
// Checks the options that are on against their dependencies and conflicts. Throws InputError naming `where`.
void validate_options(const KernelConfig& cfg, std::string_view where);
// The names of the options that are on, sorted.
std::vector<std::string> enabled_options(const KernelConfig& cfg);
// One line for `tlbsim list options`: seed, arch, releases, description.
std::string describe_option(const Registry<KernelOption>::Entry& e);

}  // namespace tlbsim::kernel

#define TLBSIM_KERNEL_OPTION(NAME, ARCH, SINCE_MAJ, SINCE_MIN, UNTIL_MAJ, UNTIL_MIN, SEED, DEPENDS, CONFLICTS, DESC) \
  namespace {                                                                                                         \
  class Option_##NAME final : public ::tlbsim::kernel::KernelOption {                                                 \
   public:                                                                                                            \
    ::tlbsim::kernel::OptionInfo info() const override {                                                              \
      return {&::tlbsim::kernel::KernelConfig::NAME, ARCH, {SINCE_MAJ, SINCE_MIN}, {UNTIL_MAJ, UNTIL_MIN}, SEED,      \
              DEPENDS, CONFLICTS};                                                                                    \
    }                                                                                                                 \
  };                                                                                                                  \
  }                                                                                                                   \
  TLBSIM_REGISTER(::tlbsim::kernel::KernelOption, Option_##NAME, #NAME, DESC)
