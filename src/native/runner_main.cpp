// tlbsim-native: the native benchmarks as a small static program, run inside a QEMU guest by `tlbsim validate
// --qemu`. Usage: tlbsim-native SECONDS WORKLOAD:THREADS... ; prints one line "TLBSIM-ROW {json}" per run, with
// the guest's kernel release and the counters before and after.
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>

#include "native/host.h"
#include "native/proc_counters.h"
#include "native/workloads.h"

#if defined(__linux__)
#include <sys/utsname.h>
#endif

int main(int argc, char** argv) {
  using namespace tlbsim::native;
  if (argc < 3) {
    std::fprintf(stderr, "usage: tlbsim-native SECONDS WORKLOAD:THREADS...\n");
    return 2;
  }
  try {
    const double seconds = std::stod(argv[1]);
    std::string release = "unknown";
#if defined(__linux__)
    utsname u{};
    if (uname(&u) == 0) release = u.release;
#endif
    const HostTopology host = read_host_topology();
    const TlbFlushTracepoint trace(host.cpus.back().cpu + 1);
    for (int i = 2; i < argc; ++i) {
      const std::string arg = argv[i];
      const std::size_t colon = arg.find(':');
      if (colon == std::string::npos) throw std::invalid_argument("expected WORKLOAD:THREADS, got " + arg);
      const std::string workload = arg.substr(0, colon);
      const auto threads = static_cast<std::uint32_t>(std::stoul(arg.substr(colon + 1)));
      const NativeRun r = run_native_workload(workload, threads, seconds / 5, seconds, host, &trace);
      const nlohmann::json j = {{"release", release},
                                {"cpus", host.cpus.size()},
                                {"workload", r.workload},
                                {"threads", r.threads},
                                {"seconds", r.seconds},
                                {"ops", r.ops},
                                {"before", to_json(r.before)},
                                {"after", to_json(r.after)},
                                {"tracepoint", trace.available() ? "" : trace.why()}};
      std::printf("TLBSIM-ROW %s\n", j.dump().c_str());
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tlbsim-native: %s\n", e.what());
    std::printf("TLBSIM-ERROR %s\n", e.what());
    return 1;
  }
  return 0;
}
