#include "check/scenario.h"

#include "mm/memory.h"

namespace tlbsim::check {

sim::Task<bool> user_touch(kernel::PerCpu& self, kernel::MmStruct& mm, std::uint64_t addr, bool write) {
  bool segv = false;
  try {
    co_await kernel::user_access(self, mm, addr, write);
  } catch (const kernel::Sigsegv&) {
    segv = true;
  }
  co_return !segv;
}

}  // namespace tlbsim::check
