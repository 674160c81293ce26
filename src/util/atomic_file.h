// Writing output files atomically: readers see the old file or the whole new one, never a torn write; and a
// temporary file is removed when the process is interrupted (SIGINT, SIGTERM, SIGHUP) while it is being written.
#pragma once

#include <string>
#include <string_view>

namespace tlbsim {

// One output file being written: its bytes go to a temporary file beside `path`, which commit() flushes to disk
// and renames over `path`. Contract: the constructor throws InputError naming the path when the directory is
// missing or unwritable (so a command can open its outputs before a long run); while the writer lives, its
// temporary file is listed for removal if a terminating signal arrives; destruction without commit() removes it.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  // Appends; throws InputError naming the path when the disk is full or the write fails.
  void write(std::string_view bytes);
  // Flushes, closes and renames into place; throws InputError naming the path on failure.
  void commit();
  const std::string& path() const { return path_; }
  std::size_t bytes_written() const { return written_; }

 private:
  void discard() noexcept;

  std::string path_;
  std::string tmp_;
  int fd_ = -1;
  int slot_ = -1;  // in the signal-time removal list
  std::size_t written_ = 0;
};

// Writes `content` to a temporary file beside `path`, flushes it to disk, and renames it over `path`.
// Throws InputError naming the path and the system's reason when the directory is missing, unwritable or full.
void write_file_atomic(const std::string& path, std::string_view content);

// Throws InputError naming `option` and `path` when a file could not be created there: the directory is missing
// or unwritable, or the path is a directory. Creates and removes a probe file, so it checks what the system
// allows rather than what permission bits suggest (a root user in /proc is refused here, not after the run).
void check_output_path(const std::string& path, std::string_view option);

// Removes every temporary file of a live AtomicFileWriter. Async-signal-safe: for signal handlers that end the
// process by another route (InterruptGuard's second Ctrl-C).
void remove_temporary_files_on_signal() noexcept;

// Creates a directory and its parents unless they exist; throws InputError naming it when it cannot.
void make_directories(const std::string& dir);

// The largest input file read_file accepts.
inline constexpr std::size_t kMaxInputFileBytes = std::size_t{64} << 20;

// Reads a whole regular file of at most kMaxInputFileBytes; throws InputError naming the path when it cannot, when
// it is not a regular file (a directory, a FIFO, a device such as /dev/zero), or when it is larger.
std::string read_file(const std::string& path);

}  // namespace tlbsim
