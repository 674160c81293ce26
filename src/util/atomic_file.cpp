#include "util/atomic_file.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "util/error.h"

namespace tlbsim {

namespace {

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
  throw InputError("cannot " + what + " '" + path + "': " + std::strerror(err));
}

// The temporary files of live writers, in storage a signal handler may read: fixed arrays, no allocation.
// A slot is free (0), being filled (1) or holds a path to remove on a signal (2).
constexpr int kSlots = 64;
constexpr std::size_t kPathBytes = 4096;
std::array<std::array<char, kPathBytes>, kSlots> g_paths{};
std::array<std::atomic<int>, kSlots> g_state{};
std::once_flag g_handlers_installed;

void on_terminating_signal(int sig) {
  remove_temporary_files_on_signal();
  ::signal(sig, SIG_DFL);
  ::raise(sig);  // delivered when the handler returns: the process ends as the signal's default action ends it
}

// Installs the removal handler for each terminating signal whose disposition is still the default; a handler
// someone else installed (InterruptGuard's) is left alone and calls remove_temporary_files_on_signal() itself.
void install_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = on_terminating_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

int register_temporary(const std::string& tmp) {
  std::call_once(g_handlers_installed, install_handlers);
  if (tmp.size() >= kPathBytes) return -1;  // not removed on a signal; still removed on every other path
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_state[i].compare_exchange_strong(expected, 1)) {
      std::memcpy(g_paths[i].data(), tmp.c_str(), tmp.size() + 1);
      g_state[i].store(2);
      return i;
    }
  }
  return -1;
}

void unregister_temporary(int slot) {
  if (slot >= 0) g_state[slot].store(0);
}

}  // namespace

void remove_temporary_files_on_signal() noexcept {
  for (int i = 0; i < kSlots; ++i) {
    if (g_state[i].load() == 2) ::unlink(g_paths[i].data());
  }
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw InputError("an output path is empty");
  std::error_code ec;
  if (std::filesystem::is_directory(path_, ec)) throw InputError("cannot write '" + path_ + "': is a directory");
  tmp_ = path_ + ".tmp.XXXXXX";
  fd_ = ::mkstemp(tmp_.data());
  if (fd_ < 0) {
    const int err = errno;
    const std::filesystem::path p(path_);
    const std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
    if (err == ENOENT && !std::filesystem::is_directory(dir, ec)) {
      throw InputError("cannot write '" + path_ + "': directory '" + dir.string() + "' does not exist");
    }
    fail("write", path_, err);
  }
  slot_ = register_temporary(tmp_);
}

AtomicFileWriter::~AtomicFileWriter() { discard(); }

void AtomicFileWriter::discard() noexcept {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
    ::unlink(tmp_.c_str());
  }
  unregister_temporary(slot_);
  slot_ = -1;
}

void AtomicFileWriter::write(std::string_view bytes) {
  if (fd_ < 0) throw InputError("cannot write '" + path_ + "': already closed");
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + off, bytes.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      discard();
      fail("write", path_, err);
    }
    off += static_cast<std::size_t>(n);
  }
  written_ += bytes.size();
}

void AtomicFileWriter::commit() {
  if (fd_ < 0) throw InputError("cannot write '" + path_ + "': already closed");
  if (::fchmod(fd_, 0644) != 0 || ::fsync(fd_) != 0) {
    const int err = errno;
    discard();
    fail("flush", path_, err);
  }
  const int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp_.c_str());
    unregister_temporary(slot_);
    slot_ = -1;
    fail("close", path_, err);
  }
  const int renamed = ::rename(tmp_.c_str(), path_.c_str());
  const int err = errno;
  if (renamed != 0) ::unlink(tmp_.c_str());
  unregister_temporary(slot_);
  slot_ = -1;
  if (renamed != 0) fail("rename into place", path_, err);
}

void write_file_atomic(const std::string& path, std::string_view content) {
  AtomicFileWriter w(path);
  w.write(content);
  w.commit();
}

void check_output_path(const std::string& path, std::string_view option) {
  try {
    AtomicFileWriter probe(path);  // removed again by its destructor
  } catch (const InputError& e) {
    throw InputError(std::string(option) + " " + path + ": " + e.what());
  }
}

void make_directories(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw InputError("cannot create directory '" + dir + "': " + (ec ? ec.message() : "not a directory"));
  }
}

std::string read_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below as not a regular file.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) fail("read", path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    fail("read", path, err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    const char* what = S_ISDIR(st.st_mode)    ? "a directory"
                       : S_ISFIFO(st.st_mode) ? "a FIFO"
                       : S_ISCHR(st.st_mode)  ? "a character device"
                       : S_ISBLK(st.st_mode)  ? "a block device"
                       : S_ISSOCK(st.st_mode) ? "a socket"
                                              : "not a regular file";
    throw InputError("cannot read '" + path + "': it is " + what + ", not a regular file");
  }
  if (static_cast<std::uint64_t>(st.st_size) > kMaxInputFileBytes) {
    ::close(fd);
    throw InputError("cannot read '" + path + "': " + std::to_string(st.st_size) + " bytes is larger than the " +
                     std::to_string(kMaxInputFileBytes >> 20) + " MiB an input file may have");
  }
  std::string text;
  text.resize(static_cast<std::size_t>(st.st_size));
  std::size_t off = 0;
  for (;;) {
    if (off == text.size()) {
      if (text.size() > kMaxInputFileBytes) break;
      text.resize(text.size() + 4096);  // the file grew since fstat (procfs reports 0): read on, within the limit
    }
    const ssize_t n = ::read(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      fail("read", path, err);
    }
    if (n == 0) break;
    off += static_cast<std::size_t>(n);
  }
  ::close(fd);
  if (off > kMaxInputFileBytes) {
    throw InputError("cannot read '" + path + "': larger than the " + std::to_string(kMaxInputFileBytes >> 20) +
                     " MiB an input file may have");
  }
  text.resize(off);
  return text;
}

}  // namespace tlbsim
