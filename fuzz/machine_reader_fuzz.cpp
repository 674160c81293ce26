// Fuzzes the machine-file reader: any input must parse or raise InputError, never crash or throw otherwise.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "hw/machine.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const tlbsim::hw::Machine m = tlbsim::hw::parse_machine(text, "fuzz.toml");
    const tlbsim::hw::Topology topo(m.topology);  // a machine that parses must also build
    (void)topo;
  } catch (const tlbsim::InputError&) {
  }
  return 0;
}
