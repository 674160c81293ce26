// Self-registration of named implementations (patterns, workloads, options, mutations), so that `tlbsim list`
// enumerates them and nothing dispatches on names with a switch statement.
#pragma once

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace tlbsim {

// The registry of implementations of one interface. Contract: entries are added during static initialisation
// only (through TLBSIM_REGISTER), and are immutable afterwards; names are unique per interface.
template <class Interface>
class Registry {
 public:
  struct Entry {
    std::string name;
    std::string description;
    std::function<std::unique_ptr<Interface>()> make;
  };

  static bool add(Entry e) {
    auto& v = entries();
    if (std::any_of(v.begin(), v.end(), [&](const Entry& x) { return x.name == e.name; })) return false;
    v.push_back(std::move(e));
    std::sort(v.begin(), v.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });
    return true;
  }
  static const std::vector<Entry>& list() { return entries(); }
  static const Entry* find(std::string_view name) {
    for (const Entry& e : entries()) {
      if (e.name == name) return &e;
    }
    return nullptr;
  }
  // Makes the named implementation or throws InputError naming what exists.
  static std::unique_ptr<Interface> make(std::string_view kind, std::string_view name) {
    if (const Entry* e = find(name)) return e->make();
    std::string known;
    for (const Entry& e : entries()) known += (known.empty() ? "" : ", ") + e.name;
    throw InputError("unknown " + std::string(kind) + " '" + std::string(name) + "' (known: " + known + ")");
  }

 private:
  static std::vector<Entry>& entries() {
    static std::vector<Entry> v;
    return v;
  }
};

#define TLBSIM_CONCAT_INNER(a, b) a##b
#define TLBSIM_CONCAT(a, b) TLBSIM_CONCAT_INNER(a, b)
// Registers Impl (default-constructible, derived from Interface) under a name with a one-line description.
#define TLBSIM_REGISTER(Interface, Impl, name, description)                                              \
  [[maybe_unused]] static const bool TLBSIM_CONCAT(tlbsim_registered_, __LINE__) =                      \
      ::tlbsim::Registry<Interface>::add({name, description, [] { return std::unique_ptr<Interface>(new Impl()); }})

}  // namespace tlbsim
