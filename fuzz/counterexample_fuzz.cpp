// Fuzzes the counterexample-file reader (`tlbsim check --replay FILE`): any input must parse or raise InputError,
// never crash or throw otherwise. A file that parses names a valid target and decisions of the scenario's CPUs.
#include <cstddef>
#include <cstdint>
#include <string>

#include "check/counterexample.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const tlbsim::check::Counterexample cx = tlbsim::check::parse_counterexample(text, "fuzz.json");
    // What parses writes back as it was read.
    if (tlbsim::check::parse_counterexample(tlbsim::check::to_json_text(cx), "again.json").decisions != cx.decisions) {
      __builtin_trap();
    }
  } catch (const tlbsim::InputError&) {
  }
  return 0;
}
