// A run's statistics, each owned by its subsystem and registered there by name, as /proc/vmstat items and
// tracepoints are. The owner keeps its counters as plain fields it increments (no lookup by name in model code) and
// registers each field once, with its name (the key in `run`'s JSON), a one-line description and its kind. `run`
// renders the registry generically, as JSON and as its table, over the measured window (after the warm-up).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "sim/time.h"

namespace tlbsim::kernel {

// How a registered field reads.
enum class StatKind : std::uint8_t {
  kCount,           // std::uint64_t: a count
  kPerCpu,          // std::vector<std::uint64_t> by CPU: reported as its sum (kStatPerCpuArray: also per CPU)
  kList,            // std::vector<std::uint64_t> by index (idle states): reported as the array
  kDuration,        // sim::Duration: reported in ns
  kDurationPerCpu,  // std::vector<sim::Duration> by CPU: reported as its sum, in ns
  kSource,          // a set of counters its owner renders as a JSON object (cache lines by class)
};

// Flags of a registered field.
inline constexpr unsigned kStatSummary = 1u;      // listed by `run --counters summary`
inline constexpr unsigned kStatGate = 2u;         // its section is shown when one of its gate fields is nonzero
inline constexpr unsigned kStatPerCpuArray = 4u;  // kPerCpu: the per-CPU array too, as "<name> per cpu"

// Contract: one per Kernel. A registered field is read (never written) by the registry; its owner outlives the
// registry or drop()s its fields first. Registration order is the table's order.
class Stats {
 public:
  Stats();
  ~Stats();
  Stats(const Stats&) = delete;
  Stats& operator=(const Stats&) = delete;

  // A kSource field's current values: numbers (integers are counts; others are durations in ns, to the ps), in
  // objects of any depth.
  using Source = std::function<nlohmann::json()>;

  struct Stat {
    std::string name;  // where it sits under the run JSON's "counters": '/' separates levels ("radix/tlbie_pid")
    std::string description;
    StatKind kind = StatKind::kCount;
    const void* field = nullptr;  // the owner's field, of the type `kind` says (none for kSource)
    Source source;
    unsigned flags = 0;
    std::string section;  // shown when one of the section's gate fields is nonzero (always when it has none)
    const void* owner = nullptr;
  };
  // One line of the text table.
  struct Row {
    std::string label, value, description;
    bool summary = false;
  };

  // Registers an owner's fields (in `section`, when not empty).
  class Registrar {
   public:
    Registrar(Stats& stats, const void* owner, std::string_view section)
        : stats_(stats), owner_(owner), section_(section) {}
    Registrar& count(std::string_view name, std::string_view description, const std::uint64_t& v, unsigned flags = 0);
    Registrar& per_cpu(std::string_view name, std::string_view description, const std::vector<std::uint64_t>& v,
                       unsigned flags = 0);
    Registrar& list(std::string_view name, std::string_view description, const std::vector<std::uint64_t>& v,
                    unsigned flags = 0);
    Registrar& duration(std::string_view name, std::string_view description, const sim::Duration& v,
                        unsigned flags = 0);
    Registrar& duration_per_cpu(std::string_view name, std::string_view description,
                                const std::vector<sim::Duration>& v, unsigned flags = 0);
    Registrar& source(std::string_view name, std::string_view description, Source f, unsigned flags = 0);

   private:
    Registrar& add(std::string_view name, std::string_view description, StatKind kind, const void* field,
                   unsigned flags, Source f = {});
    Stats& stats_;
    const void* owner_;
    std::string section_;
  };

  Registrar registrar(const void* owner, std::string_view section = {}) { return Registrar(*this, owner, section); }
  // Unregisters every field `owner` registered (an owner that dies before the kernel).
  void drop(const void* owner);
  const std::vector<Stat>& stats() const { return stats_; }

  // Starts the reported window now (at the warm-up's end): reports then give what was counted since.
  void snapshot();
  // Every shown field, counted over the window, nested by name. A section is shown by the whole run's counts.
  nlohmann::json to_json() const;
  // The table of to_json(), in registration order: a kSource object gives one row per member.
  std::vector<Row> rows() const;

 private:
  nlohmann::json value(const Stat& s) const;  // the field's count since the snapshot
  bool shown(const Stat& s) const;

  std::vector<Stat> stats_;
  // At the snapshot: each field's value (by index in stats_), as value() read it without a snapshot.
  std::vector<nlohmann::json> base_;
};

}  // namespace tlbsim::kernel
