#include "model/options.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "util/error.h"

namespace tlbsim::kernel {

KernelVersion KernelVersion::parse(std::string_view text, std::string_view where) {
  KernelVersion v;
  const auto dot = text.find('.');
  auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 3 && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  };
  if (dot == std::string_view::npos || !digits(text.substr(0, dot)) || !digits(text.substr(dot + 1))) {
    throw InputError(fmt::format("{}: '{}' is not a kernel version (expected MAJOR.MINOR, e.g. 5.17)", where, text));
  }
  v.major = std::stoi(std::string(text.substr(0, dot)));
  v.minor = std::stoi(std::string(text.substr(dot + 1)));
  return v;
}

namespace {

OptionInfo info_of(std::string_view name, std::string_view where) {
  const auto* e = Registry<KernelOption>::find(name);
  if (e == nullptr) {
    std::string known;
    for (const auto& o : Registry<KernelOption>::list()) known += (known.empty() ? "" : ", ") + o.name;
    throw InputError(fmt::format("{}: unknown option '{}' (known: {})", where, name, known));
  }
  return e->make()->info();
}

}  // namespace

void set_option(KernelConfig& cfg, std::string_view name, bool value, std::string_view where) {
  const OptionInfo i = info_of(name, where);
  if (i.arch != "any" && i.arch != cfg.arch) {
    throw InputError(fmt::format("{}: option '{}' exists only for {}, not for this kernel's arch {}", where, name,
                                 i.arch, cfg.arch));
  }
  if (cfg.version < i.since || cfg.version > i.until) {
    throw InputError(fmt::format("{}: option '{}' is modeled for Linux {}..{}, not for this kernel's version {}",
                                 where, name, i.since.str(), i.until.str(), cfg.version.str()));
  }
  cfg.*i.field = value;
}

void validate_options(const KernelConfig& cfg, std::string_view where) {
  for (const auto& e : Registry<KernelOption>::list()) {
    const OptionInfo i = e.make()->info();
    if (!(cfg.*i.field)) continue;
    if (!i.depends_on.empty() && !(cfg.*info_of(i.depends_on, where).field)) {
      throw InputError(fmt::format("{}: option '{}' needs option '{}' on", where, e.name, i.depends_on));
    }
    if (!i.conflicts_with.empty() && (cfg.*info_of(i.conflicts_with, where).field)) {
      throw InputError(fmt::format("{}: options '{}' and '{}' are variants of one change; turn one off", where,
                                   e.name, i.conflicts_with));
    }
  }
}

std::vector<std::string> enabled_options(const KernelConfig& cfg) {
  std::vector<std::string> out;
  for (const auto& e : Registry<KernelOption>::list()) {
    if (cfg.*(e.make()->info().field)) out.push_back(e.name);
  }
  return out;
}

std::string describe_option(const Registry<KernelOption>::Entry& e) {
  const OptionInfo i = e.make()->info();
  const std::string seed = i.seed.empty() ? "-" : fmt::format("seed {}", i.seed);
  const std::string rel = i.since == i.until ? i.since.str() : fmt::format("{}..{}", i.since.str(), i.until.str());
  return fmt::format("[{}, {} {}] {}", seed, i.arch, rel, e.description);
}

}  // namespace tlbsim::kernel
