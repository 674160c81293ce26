#include "model/mutation.h"

#include <algorithm>
#include <stdexcept>

#include "util/error.h"

namespace tlbsim::kernel {

void set_mutation(KernelConfig& cfg, std::string_view name, std::string_view where) {
  const auto m = Registry<Mutation>::make("mutation", name);
  const std::string_view arch = m->info().arch;
  if (arch != "any" && arch != cfg.arch) {
    throw InputError(std::string(where) + ": mutation '" + std::string(name) + "' breaks " + std::string(arch) +
                     " code, but the kernel is " + cfg.arch);
  }
  if (cfg.mutated(name)) throw InputError(std::string(where) + " " + std::string(name) + ": given twice");
  cfg.mutations.emplace_back(name);
}

bool KernelConfig::mutated(std::string_view name) const {
  if (mutations.empty()) return false;
  if (Registry<Mutation>::find(name) == nullptr) {
    throw std::logic_error("model code asks for unregistered mutation " + std::string(name));
  }
  return std::find(mutations.begin(), mutations.end(), name) != mutations.end();
}

}  // namespace tlbsim::kernel
