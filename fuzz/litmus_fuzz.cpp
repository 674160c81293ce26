// Fuzzes the litmus reader (`tlbsim litmus FILE`): any input must parse or raise InputError (Unsupported is one),
// never crash or throw otherwise; what parses also runs (a few schedules) without a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "check/litmus/litmus.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const tlbsim::check::litmus::LitmusTest t = tlbsim::check::litmus::parse_litmus(text, "fuzz.litmus");
    tlbsim::check::litmus::run_litmus(t, tlbsim::hw::MemoryModel::kTso, 20);
    tlbsim::check::litmus::run_litmus(t, tlbsim::hw::MemoryModel::kPower, 20);  // with its address dependencies
  } catch (const tlbsim::InputError&) {
  }
  return 0;
}
