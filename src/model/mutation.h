// Mutations: named, plausible bugs planted in the modeled kernel so that the checker can prove it catches them.
// Each is registered beside the code it breaks and is on only when `--mutation NAME` asks for it, never in a
// normal run or a kernel profile.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "model/config.h"
#include "util/registry.h"

namespace tlbsim::kernel {

struct MutationInfo {
  std::string_view area;       // generation, cpumask, ipi, batching, lazy_mm, asid, powerpc
  std::string_view arch;       // "x86", "powerpc" or "any": the code it breaks
  std::string_view scenarios;  // comma-separated checker scenarios that should catch it
  std::string_view kernel;     // the kernel profile the mutation suite runs it against
};

// Contract: info() is constant; the registered name is what model code passes to KernelConfig::mutated().
class Mutation {
 public:
  virtual ~Mutation() = default;
  virtual MutationInfo info() const = 0;
};

// Turns mutation `name` on in `cfg`. Throws InputError (naming `where`) for an unknown mutation or one whose code
// is not this kernel's architecture.
void set_mutation(KernelConfig& cfg, std::string_view name, std::string_view where);

}  // namespace tlbsim::kernel

#define TLBSIM_MUTATION(NAME, AREA, ARCH, SCENARIOS, KERNEL, DESC)                    \
  namespace {                                                                          \
  class Mutation_##NAME final : public ::tlbsim::kernel::Mutation {                    \
   public:                                                                             \
    ::tlbsim::kernel::MutationInfo info() const override {                             \
      return {AREA, ARCH, SCENARIOS, KERNEL};                                          \
    }                                                                                  \
  };                                                                                   \
  }                                                                                    \
  TLBSIM_REGISTER(::tlbsim::kernel::Mutation, Mutation_##NAME, #NAME, DESC)
