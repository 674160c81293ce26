// Fuzzes the workload-file reader: any input must parse (and resolve its values) or raise InputError, never crash
// or throw otherwise.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "util/error.h"
#include "workloads/file/workload_file.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    const tlbsim::workloads::WorkloadFile f = tlbsim::workloads::parse_workload_file(text, "fuzz.toml");
    tlbsim::workloads::resolve_values(f, nullptr);
  } catch (const tlbsim::InputError&) {
  }
  return 0;
}
