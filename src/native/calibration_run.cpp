#include "native/calibration_run.h"

#include <ctime>
#include <fstream>

#if defined(__linux__)
#include <sys/utsname.h>
#endif

namespace tlbsim::native {

namespace {

std::string cpuinfo_field(const std::string& key) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(key) && line.find(':') != std::string::npos) {
      const std::size_t c = line.find(':');
      const std::size_t b = line.find_first_not_of(" \t", c + 1);
      return b == std::string::npos ? "" : line.substr(b);
    }
  }
  return "";
}

}  // namespace

HostInfo host_info() {
  HostInfo h;
#if defined(__linux__)
  utsname u{};
  if (uname(&u) == 0) h.machine = u.machine, h.release = u.release, h.hostname = u.nodename;
#endif
  if (const std::string m = cpuinfo_field("model name"); !m.empty())
    h.cpu_model = m;
  else if (const std::string c = cpuinfo_field("cpu"); !c.empty())
    h.cpu_model = c;
  std::string flags = cpuinfo_field("flags");
  flags.push_back(' ');
  h.pcid = flags.starts_with("pcid ") || flags.find(" pcid ") != std::string::npos;
  return h;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

}  // namespace tlbsim::native
