// A workload's own parameters, given on the command line as `--param NAME=VALUE`: read by the workload with a
// default, range-checked, and every error names the workload, the parameter and what was expected.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace tlbsim::workloads {

// Contract: each workload reads its parameters in start(), before it builds anything; run_workload then calls
// finish(), which rejects a parameter the workload never read (a misspelt name is an error, not a default).
class WorkloadArgs {
 public:
  WorkloadArgs() = default;
  // `items` are NAME=VALUE strings, as --param gives them; a malformed item or a repeated name is an InputError.
  WorkloadArgs(std::string workload, const std::vector<std::string>& items);

  // The integer parameter `name` in min..max, or `fallback` when it is not given. `doc` says what it is, for the
  // error that lists the workload's parameters.
  std::uint64_t integer(const std::string& name, std::uint64_t fallback, std::uint64_t min, std::uint64_t max,
                        const std::string& doc);
  // The parameters as given, for the run's JSON.
  const std::map<std::string, std::string>& given() const { return values_; }
  // Rejects parameters never read, listing those the workload has.
  void finish() const;

 private:
  std::string workload_;
  std::map<std::string, std::string> values_;
  std::set<std::string> read_;
  std::vector<std::string> known_;  // "name (doc, default N)", in the order the workload read them
};

}  // namespace tlbsim::workloads
