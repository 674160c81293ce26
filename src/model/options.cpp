#include "model/options.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "arch/arm64/options.h"
#include "arch/powerpc/options.h"
#include "arch/x86/options.h"
#include "kernel/options.h"
#include "util/error.h"

namespace tlbsim::kernel {

KernelVersion KernelVersion::parse(std::string_view text, std::string_view where) {
  KernelVersion v;
  const auto dot = text.find('.');
  auto digits = [](std::string_view s) {
    return !s.empty() && s.size() <= 3 &&
           std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
  };
  if (dot == std::string_view::npos || !digits(text.substr(0, dot)) || !digits(text.substr(dot + 1))) {
    throw InputError(fmt::format("{}: '{}' is not a kernel version (expected MAJOR.MINOR, e.g. 5.17)", where, text));
  }
  v.major = std::stoi(std::string(text.substr(0, dot)));
  v.minor = std::stoi(std::string(text.substr(dot + 1)));
  return v;
}

namespace {

template <class E>
void add_options(std::vector<OptionInfo>& out) {
  for (const auto& d : DeclSpace<E>::kOptionDeclTable) {
    out.push_back({decl_bit(d.id), d.name, d.arch, d.since, d.until, d.seed, d.depends_on, d.conflicts_with, d.doc});
  }
}

template <class E>
void add_mutations(std::vector<MutationInfo>& out) {
  for (const auto& d : DeclSpace<E>::kMutationDeclTable) {
    out.push_back({decl_bit(d.id), d.name, d.area, d.arch, d.scenarios, d.kernel, d.doc});
  }
}

template <class Info>
std::vector<Info> sorted(std::vector<Info> v) {
  std::sort(v.begin(), v.end(), [](const Info& a, const Info& b) { return a.name < b.name; });
  return v;
}

// The owners' spaces: each is kDeclOwnerBits wide and starts at a multiple of it (TLBSIM_DECLARE_SPACE), so distinct
// bases are disjoint.
static_assert(DeclSpace<Option>::kBase != DeclSpace<x86::Option>::kBase &&
              DeclSpace<Option>::kBase != DeclSpace<powerpc::Option>::kBase &&
              DeclSpace<x86::Option>::kBase != DeclSpace<powerpc::Option>::kBase &&
              DeclSpace<arm64::Option>::kBase != DeclSpace<Option>::kBase &&
              DeclSpace<arm64::Option>::kBase != DeclSpace<x86::Option>::kBase &&
              DeclSpace<arm64::Option>::kBase != DeclSpace<powerpc::Option>::kBase);
static_assert(DeclSpace<Mutation>::kBase != DeclSpace<x86::Mutation>::kBase &&
              DeclSpace<Mutation>::kBase != DeclSpace<powerpc::Mutation>::kBase &&
              DeclSpace<x86::Mutation>::kBase != DeclSpace<powerpc::Mutation>::kBase &&
              DeclSpace<arm64::Mutation>::kBase != DeclSpace<Mutation>::kBase &&
              DeclSpace<arm64::Mutation>::kBase != DeclSpace<x86::Mutation>::kBase &&
              DeclSpace<arm64::Mutation>::kBase != DeclSpace<powerpc::Mutation>::kBase);

template <class Info>
const Info& named(std::span<const Info> all, std::string_view kind, std::string_view name, std::string_view where) {
  for (const Info& i : all) {
    if (i.name == name) return i;
  }
  std::string known;
  for (const Info& i : all) known += fmt::format("{}{}", known.empty() ? "" : ", ", i.name);
  throw InputError(fmt::format("{}: unknown {} '{}' (known: {})", where, kind, name, known));
}

bool bit_set(const DeclBits& bits, unsigned bit) { return bits.test(bit); }

}  // namespace

std::span<const OptionInfo> all_options() {
  static const std::vector<OptionInfo> all = [] {
    std::vector<OptionInfo> v;
    add_options<Option>(v);
    add_options<x86::Option>(v);
    add_options<powerpc::Option>(v);
    add_options<arm64::Option>(v);
    return sorted(std::move(v));
  }();
  return all;
}

std::span<const MutationInfo> all_mutations() {
  static const std::vector<MutationInfo> all = [] {
    std::vector<MutationInfo> v;
    add_mutations<Mutation>(v);
    add_mutations<x86::Mutation>(v);
    add_mutations<powerpc::Mutation>(v);
    add_mutations<arm64::Mutation>(v);
    return sorted(std::move(v));
  }();
  return all;
}

const OptionInfo& option_named(std::string_view name, std::string_view where) {
  return named(all_options(), "option", name, where);
}

const OptionInfo& option_named(std::string_view name, Arch arch, std::string_view where) {
  // One Kconfig symbol may be modeled for several architectures (ARCH_WANT_BATCHED_UNMAP_TLB_FLUSH: powerpc's seed
  // 001 and arm64's v6.6): the kernel's own architecture's declaration first.
  for (const OptionInfo& i : all_options()) {
    if (i.name == name && arch_matches(i.arch, arch)) return i;
  }
  return option_named(name, where);
}

const MutationInfo& mutation_named(std::string_view name, std::string_view where) {
  return named(all_mutations(), "mutation", name, where);
}

void set_option(KernelConfig& cfg, std::string_view name, bool value, std::string_view where) {
  const OptionInfo& i = option_named(name, cfg.arch, where);
  if (!arch_matches(i.arch, cfg.arch)) {
    throw InputError(fmt::format("{}: option '{}' exists only for {}, not for this kernel's arch {}", where, name,
                                 to_string(i.arch), to_string(cfg.arch)));
  }
  if (cfg.version < i.since || cfg.version > i.until) {
    throw InputError(fmt::format("{}: option '{}' is modeled for Linux {}..{}, not for this kernel's version {}", where,
                                 name, i.since.str(), i.until.str(), cfg.version.str()));
  }
  cfg.option_bits.set(i.bit, value);
}

void validate_options(const KernelConfig& cfg, std::string_view where) {
  for (const OptionInfo& i : all_options()) {
    if (!bit_set(cfg.option_bits, i.bit)) continue;
    if (!i.depends_on.empty() && !bit_set(cfg.option_bits, option_named(i.depends_on, i.arch, where).bit)) {
      throw InputError(fmt::format("{}: option '{}' needs option '{}' on", where, i.name, i.depends_on));
    }
    if (!i.conflicts_with.empty() && bit_set(cfg.option_bits, option_named(i.conflicts_with, i.arch, where).bit)) {
      throw InputError(fmt::format("{}: options '{}' and '{}' are variants of one change; turn one off", where, i.name,
                                   i.conflicts_with));
    }
  }
}

std::vector<std::string> enabled_options(const KernelConfig& cfg) {
  std::vector<std::string> out;
  for (const OptionInfo& i : all_options()) {
    if (bit_set(cfg.option_bits, i.bit)) out.emplace_back(i.name);
  }
  return out;
}

std::vector<std::string> planted_mutations(const KernelConfig& cfg) {
  std::vector<std::string> out;
  for (const MutationInfo& i : all_mutations()) {
    if (bit_set(cfg.mutation_bits, i.bit)) out.emplace_back(i.name);
  }
  return out;
}

std::string describe_option(const OptionInfo& o) {
  const std::string seed = o.seed.empty() ? "-" : fmt::format("seed {}", o.seed);
  const std::string rel = o.since == o.until ? o.since.str() : fmt::format("{}..{}", o.since.str(), o.until.str());
  return fmt::format("[{}, {} {}] {}", seed, to_string(o.arch), rel, o.doc);
}

void set_mutation(KernelConfig& cfg, std::string_view name, std::string_view where) {
  const MutationInfo& m = mutation_named(name, where);
  if (!arch_matches(m.arch, cfg.arch)) {
    throw InputError(fmt::format("{}: mutation '{}' breaks {} code, but the kernel is {}", where, name,
                                 to_string(m.arch), to_string(cfg.arch)));
  }
  if (bit_set(cfg.mutation_bits, m.bit)) throw InputError(fmt::format("{} {}: given twice", where, name));
  cfg.mutation_bits.set(m.bit);
}

}  // namespace tlbsim::kernel
