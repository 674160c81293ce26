// Fuzzes the reader of a real kernel's ftrace text (`tlbsim offcpu`): any input must read, with or without a task
// filter, or raise InputError, never crash or throw otherwise; a read profile must print.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "trace/ftrace_offcpu.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  for (const char* comm : {"", "storm"}) {
    try {
      const tlbsim::trace::FtraceOffCpu r = tlbsim::trace::read_ftrace_offcpu(text, "fuzz.txt", comm);
      (void)r.profile.table(3);
      (void)r.profile.to_json(0).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);  // as the CLI
      (void)r.profile.folded();
    } catch (const tlbsim::InputError&) {
    }
  }
  return 0;
}
