// The points journal of a sweep (DIR/points.jsonl): a header line naming the grid, then one JSON line per finished
// point, appended and flushed to disk as each point finishes, so an interrupted sweep keeps every finished point.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sweep/grid.h"

namespace tlbsim::sweep {

// What a sweep keeps of one simulated point.
struct PointResult {
  GridPoint point;
  double value = 0;  // the grid's metric
  std::string unit;  // the workload's unit for its own figure, or the metric's dotted path
  std::uint64_t ops = 0;
  std::uint64_t events = 0;
  std::uint64_t violations = 0;
};

nlohmann::json point_to_json(const PointResult& p);

struct Journal {
  Grid grid;
  Shard shard;
  std::vector<PointResult> points;  // in the order they finished
  std::size_t valid_bytes = 0;      // up to the last complete line (a killed writer may leave half a line)
};

// A journal's text, read from `path`; nullopt when it holds no complete line. A last line without its newline (a
// writer killed mid-line) is dropped, and cut off by the next append. Throws InputError "PATH:LINE: sweep journal:
// ..." when a complete line is not what a sweep writes: not JSON, a missing, unknown or wrong-typed field, a point
// index outside the header's grid, a point whose kernel, threads or seed disagree with its index, a point of
// another shard, or a point journaled twice.
std::optional<Journal> parse_journal(std::string_view text, const std::string& path);
// The journal in `path`, or nullopt when there is none (parse_journal).
std::optional<Journal> read_journal(const std::string& path);

// Holds an advisory lock (flock(2)) on DIR/.sweep.lock for its lifetime, so that two sweeps (or a sweep and a merge)
// never write one directory at once. Throws InputError when another process holds it, or the file cannot be made.
class DirectoryLock {
 public:
  explicit DirectoryLock(const std::string& dir);
  ~DirectoryLock();
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;

 private:
  int fd_ = -1;
};

// ".sweep.lock", the lock file DirectoryLock holds inside a sweep's output directory.
inline constexpr const char* kLockName = ".sweep.lock";

// Appends points to a journal. Contract: append() is called under one lock; each line is written with a single
// write() and fsync()ed before append() returns. Errors (a full disk) throw InputError naming the path.
class JournalWriter {
 public:
  // keep_bytes == 0: a new journal with a header for grid and shard; otherwise an existing one, cut to
  // keep_bytes (its complete lines) and appended to.
  JournalWriter(std::string path, const Grid& grid, Shard shard, std::size_t keep_bytes);
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;
  void append(const PointResult& p);

 private:
  void write_line(const std::string& line);
  std::string path_;
  int fd_ = -1;
};

// "points.jsonl", the journal's name inside a sweep's output directory.
inline constexpr const char* kJournalName = "points.jsonl";

}  // namespace tlbsim::sweep
