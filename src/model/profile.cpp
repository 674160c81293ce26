#include "model/profile.h"

#include <fmt/format.h>

#include <algorithm>

#include "kernel/arch_mmu.h"
#include "model/options.h"
#include "util/atomic_file.h"
#include "util/error.h"
#include "util/param_reader.h"

namespace tlbsim::kernel {

KernelProfile parse_kernel_profile(std::string_view text, const std::string& name, const std::string& origin) {
  const TomlDocument doc = TomlDocument::parse(text, origin);
  ParamReader top(doc.root(), origin, "kernel profile");
  KernelProfile p;
  p.name = name;
  p.origin = origin;
  ParamReader k = top.section("kernel");
  p.description = k.string("description");
  p.config.arch = *parse_arch(k.choice("arch", {"x86", "powerpc", "arm64"}));
  p.config.version = KernelVersion::parse(k.string("version"), k.where_key("version"));
  if (find_arch_mmu(p.config.arch, p.config.version) == nullptr) {
    throw InputError(fmt::format("{}: no modeled {} code for Linux {} (modeled: {})", k.where_key("version"),
                                 to_string(p.config.arch), p.config.version.str(), modeled_arch_eras()));
  }
  p.seed = k.optional_string("seed").value_or("");
  p.role = k.optional_string("role").value_or("base");
  if (auto hz = k.optional_integer("HZ", 100, 1000)) p.config.HZ = static_cast<std::uint32_t>(*hz);
  if (p.role != "base" && p.role != "before" && p.role != "after" && p.role != "variant") {
    k.fail("role", fmt::format("'{}' is not one of base, before, after, variant", p.role));
  }
  k.finish();
  if (auto opts = top.optional_section("options")) {
    for (const std::string& key : opts->keys()) {
      const bool on = opts->boolean(key);
      set_option(p.config, key, on, opts->where_key(key));
    }
    opts->finish();
  }
  top.finish();
  validate_options(p.config, origin);
  return p;
}

namespace {

std::string stem_of(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.ends_with(".toml")) base.resize(base.size() - 5);
  return base;
}

}  // namespace

KernelProfile load_kernel_profile(std::string_view name_or_path) {
  const std::string arg(name_or_path);
  if (arg.find('/') != std::string::npos || arg.ends_with(".toml")) {
    return parse_kernel_profile(tlbsim::read_file(arg), stem_of(arg), arg);
  }
  for (const auto& f : builtin_kernel_files()) {
    if (f.name == arg) return parse_kernel_profile(f.text, arg, fmt::format("builtin:{}", f.name));
  }
  throw InputError(fmt::format("unknown kernel '{}' (known: {}; or give a path to a .toml kernel profile)", arg,
                               fmt::join(builtin_kernel_names(), ", ")));
}

std::string default_kernel_for(std::string_view machine_arch) {
  if (machine_arch == "powerpc64") return "linux-6.2-ppc";
  if (machine_arch == "aarch64") return "linux-6.6-arm64";
  return "linux-5.17";
}

void apply_option_override(KernelConfig& cfg, std::string_view assignment) {
  const std::string where = fmt::format("--option {}", assignment);
  const auto eq = assignment.find('=');
  if (eq == std::string_view::npos) throw InputError(where + ": expected NAME=on or NAME=off");
  const std::string_view name = assignment.substr(0, eq);
  const std::string_view value = assignment.substr(eq + 1);
  bool on = false;
  if (value == "on" || value == "true" || value == "1") {
    on = true;
  } else if (value != "off" && value != "false" && value != "0") {
    throw InputError(fmt::format("{}: value '{}' is not on or off", where, value));
  }
  set_option(cfg, name, on, where);
}

void apply_option_overrides(KernelConfig& cfg, const std::vector<std::string>& assignments) {
  std::vector<std::string_view> names;
  for (const std::string& a : assignments) {
    const std::string_view name = std::string_view(a).substr(0, a.find('='));
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      throw InputError(fmt::format("--option {}: '{}' is given twice", a, name));
    }
    names.push_back(name);
    apply_option_override(cfg, a);
  }
}

std::vector<std::string> builtin_kernel_names() {
  std::vector<std::string> out;
  for (const auto& f : builtin_kernel_files()) out.emplace_back(f.name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace tlbsim::kernel
