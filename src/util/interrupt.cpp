// The SIGINT handler behind InterruptGuard.
#include "util/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include "util/atomic_file.h"

namespace tlbsim {

namespace {

std::atomic<bool> g_stop{false};  // written by the signal handler: a lock-free atomic is async-signal-safe
struct sigaction g_previous;

void on_sigint(int sig) {
  if (g_stop.exchange(true)) {  // the second Ctrl-C ends the process, without leaving temporary files behind
    remove_temporary_files_on_signal();
    ::signal(sig, SIG_DFL);
    ::raise(sig);
    return;
  }
  static const char kMessage[] = "\ntlbsim: interrupted; finishing the running points (Ctrl-C again to abandon them)\n";
  [[maybe_unused]] const ssize_t n = ::write(STDERR_FILENO, kMessage, sizeof kMessage - 1);
}

}  // namespace

InterruptGuard::InterruptGuard() {
  static_assert(std::atomic<bool>::is_always_lock_free);
  g_stop = false;
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // a second Ctrl-C takes the default action, from the handler
  ::sigaction(SIGINT, &sa, &g_previous);
}

InterruptGuard::~InterruptGuard() { ::sigaction(SIGINT, &g_previous, nullptr); }

const std::atomic<bool>& InterruptGuard::stop_flag() const { return g_stop; }

}  // namespace tlbsim
