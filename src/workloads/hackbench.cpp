// rt-tests hackbench (src/hackbench/hackbench.c) in its default mode, as seed 002 ran it (`hackbench --groups 20
// --loops 10000`): processes (fork), AF_UNIX stream socketpairs (`--param pipe=1`: pipes, hackbench -p), 20 fds
// and 100-byte messages. Each group has 20 receivers, each reading from its own socket, and 20 senders that each
// write one message to every receiver per loop; all 40 tasks of a group are separate processes with their own mm (`--param threads=1`: hackbench -T, every
// task a thread of the one hackbench process, sharing its mm). --threads gives the number of groups.
// hackbench times a fixed amount of work; the model runs for the simulated duration and reports messages
// delivered per second, from which `tlbsim reproduce` derives the time of the seed's command (docs/model.md).
#include <memory>
#include <vector>

#include "fs/pipe.h"
#include "net/unix/af_unix.h"
#include "util/registry.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

namespace {

constexpr std::uint32_t kNumFds = 20;     // hackbench default num_fds (--param fds)
constexpr std::uint32_t kDatasize = 100;  // hackbench default datasize (bytes)
constexpr std::uint64_t kLoops = 100;     // hackbench default loops (--param loops)
static_assert(kDatasize == 100, "kSkbTruesize100 is derived for 100-byte messages");

// One group's channels: receiver j reads from socks[j] (a socketpair, the default) or pipes[j] (hackbench -p).
struct Group {
  Group(hw::CoherenceModel& m, kernel::SpinlockKind locks, std::uint32_t fds, bool pipe) {
    for (std::uint32_t i = 0; i < fds; ++i) {
      if (pipe)
        pipes.push_back(std::make_unique<kernel::Pipe>(m, locks));
      else
        socks.push_back(std::make_unique<kernel::UnixStreamPair>(m, locks));
    }
  }
  std::size_t size() const { return pipes.empty() ? socks.size() : pipes.size(); }
  std::vector<std::unique_ptr<kernel::UnixStreamPair>> socks;
  std::vector<std::unique_ptr<kernel::Pipe>> pipes;
};

// write(out_fd, data, DATASIZE) to receiver j, and the system call's return to user mode.
sim::Task<void> send_one(kernel::Sched& s, kernel::TaskStruct& t, Group& g, std::size_t j) {
  if (g.pipes.empty()) {
    co_await kernel::unix_stream_sendmsg(s, t, *g.socks[j], kernel::kSkbTruesize100);
  } else {
    co_await kernel::pipe_write(s, t, *g.pipes[j], kDatasize);
  }
  co_await s.exit_to_user_mode(t);
}

// Receiver j's read(in_fd, data + done, DATASIZE - done), repeated until a whole message has come; each read
// returns to user mode.
sim::Task<void> receive_one(kernel::Sched& s, kernel::TaskStruct& t, Group& g, std::size_t j) {
  if (g.pipes.empty()) {
    co_await kernel::unix_stream_recvmsg(s, t, *g.socks[j], kernel::kSkbTruesize100);
    co_await s.exit_to_user_mode(t);
    co_return;
  }
  for (std::uint32_t done = 0; done < kDatasize;) {
    done += co_await kernel::pipe_read(s, t, *g.pipes[j], kDatasize - done);
    co_await s.exit_to_user_mode(t);
  }
}

// sender(): for each loop, one message to each receiver of the group.
sim::Task<void> sender(kernel::Sched& s, kernel::TaskStruct& t, Group& g, sim::SimTime end) {
  while (s.cpu_of(t).cpu.now() < end) {
    for (std::size_t j = 0; j < g.size(); ++j) co_await send_one(s, t, g, j);
  }
}

// receiver(): reads messages from its socket or pipe; counts each one read after the warm-up.
sim::Task<void> receiver(kernel::Sched& s, kernel::TaskStruct& t, Group& g, std::size_t j, sim::SimTime from,
                         sim::SimTime end, std::uint64_t& messages) {
  while (s.cpu_of(t).cpu.now() < end) {
    co_await receive_one(s, t, g, j);
    if (s.cpu_of(t).cpu.now() >= from) ++messages;
  }
}

class Hackbench final : public Workload {
 public:
  std::string metric_name() const override { return "messages_per_sec"; }
  std::string unit() const override { return "messages/s"; }
  void start(kernel::Kernel& k, const WorkloadParams& p, std::vector<std::uint64_t>& ops) override {
    if (p.threads == 0 || p.threads > 200) throw InputError("--threads: hackbench groups must be 1..200");
    // hackbench -f: senders and receivers per group, one socketpair per receiver.
    const auto fds = static_cast<std::uint32_t>(p.param("fds", kNumFds, 1, 256, "senders and receivers per group"));
    // hackbench -l: messages each sender sends to each receiver. The run is for a fixed time; its rate gives the
    // time hackbench would print for this many loops.
    loops_ = p.param("loops", kLoops, 1, 1'000'000'000, "messages from each sender to each receiver");
    messages_ = static_cast<std::uint64_t>(p.threads) * fds * fds * loops_;
    // hackbench -T (threads) against -P (processes, the default): pthread_create shares the parent's mm, fork
    // gives each worker its own.
    const bool threads = p.param("threads", 0, 0, 1, "1: workers are threads of one process (hackbench -T)") == 1;
    // hackbench -p: pipes instead of AF_UNIX socketpairs.
    const bool pipe = p.param("pipe", 0, 0, 1, "1: messages go over pipes (hackbench -p)") == 1;
    sched_ = std::make_unique<kernel::Sched>(k);
    sched_->start();
    ops.assign(p.threads, 0);
    const sim::SimTime from = sim::kTimeZero + p.warmup, end = from + p.duration;
    kernel::Sched& s = *sched_;
    // hackbench forks every worker from one parent; fork balancing spreads new tasks over idle CPUs, which the
    // model stands in for by placing worker n on CPU n % ncpus.
    std::uint32_t n = 0;
    kernel::MmStruct* const shared_mm = threads ? &k.new_mm() : nullptr;
    const auto worker_mm = [&k, shared_mm]() -> kernel::MmStruct* { return shared_mm ? shared_mm : &k.new_mm(); };
    for (std::uint32_t grp = 0; grp < p.threads; ++grp) {
      groups_.push_back(std::make_unique<Group>(k.sys().coherence(), k.arch().spinlock_kind(), fds, pipe));
      Group& g = *groups_.back();
      std::uint64_t& counter = ops[grp];
      for (std::uint32_t i = 0; i < fds; ++i) {
        s.create_task("hackbench-rx", worker_mm(), CpuId{n++ % k.ncpus()},
                      [&s, &g, i, from, end, &counter](kernel::TaskStruct& t) {
                        return receiver(s, t, g, i, from, end, counter);
                      });
      }
      for (std::uint32_t i = 0; i < fds; ++i) {
        s.create_task("hackbench-tx", worker_mm(), CpuId{n++ % k.ncpus()},
                      [&s, &g, end](kernel::TaskStruct& t) { return sender(s, t, g, end); });
      }
    }
  }

  // hackbench's "Time:": its groups x fds x fds x loops messages at the simulated rate.
  nlohmann::json benchmark_report(double messages_per_sec) const override {
    if (messages_per_sec <= 0) return nullptr;
    return {{"loops", loops_}, {"messages", messages_}, {"time_s", static_cast<double>(messages_) / messages_per_sec}};
  }

 private:
  std::unique_ptr<kernel::Sched> sched_;
  std::vector<std::unique_ptr<Group>> groups_;
  std::uint64_t loops_ = kLoops;
  std::uint64_t messages_ = 0;
};

TLBSIM_REGISTER(Workload, Hackbench, "hackbench",
                "rt-tests hackbench: 20 fds, 100-byte messages over unix socketpairs (pipe=1: pipes), processes "
                "(threads=1: threads); --threads = groups");

}  // namespace
}  // namespace tlbsim::workloads
