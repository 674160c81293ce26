// Reading and appending the points journal.
#include "sweep/journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/json_reader.h"

namespace tlbsim::sweep {

nlohmann::json point_to_json(const PointResult& p) {
  return {{"index", p.point.index}, {"kernel", p.point.kernel}, {"threads", p.point.threads},
          {"seed", p.point.seed},   {"value", p.value},         {"unit", p.unit},
          {"ops", p.ops},           {"events", p.events},       {"violations", p.violations}};
}

namespace {

constexpr const char* kComponent = "sweep journal";

PointResult point_from_json(JsonReader& r, const Grid& grid) {
  PointResult p;
  p.point.index = r.unsigned_integer("index", 0, grid_size(grid) - 1);
  p.point.kernel = r.string("kernel");
  p.point.threads = static_cast<std::uint32_t>(r.unsigned_integer("threads", 1, kMaxGridThreads));
  p.point.seed = r.unsigned_integer("seed", 0, kMaxGridSeed);
  p.value = r.number("value");
  p.unit = r.string("unit");
  p.ops = r.unsigned_integer("ops", 0, UINT64_MAX);
  p.events = r.unsigned_integer("events", 0, UINT64_MAX);
  p.violations = r.unsigned_integer("violations", 0, UINT64_MAX);
  r.finish();
  const GridPoint want = grid_point(grid, p.point.index);
  if (p.point.kernel != want.kernel) {
    r.fail("kernel", fmt::format("point {} of the header's grid has kernel \"{}\", not \"{}\"", want.index, want.kernel,
                                 p.point.kernel));
  }
  if (p.point.threads != want.threads) {
    r.fail("threads", fmt::format("point {} of the header's grid has {} threads, not {}", want.index, want.threads,
                                  p.point.threads));
  }
  if (p.point.seed != want.seed) {
    r.fail("seed",
           fmt::format("point {} of the header's grid has seed {}, not {}", want.index, want.seed, p.point.seed));
  }
  return p;
}

}  // namespace

std::optional<Journal> parse_journal(std::string_view text, const std::string& path) {
  Journal j;
  std::size_t at = 0, line_no = 0;
  std::map<std::size_t, std::size_t> line_of;  // the line that journaled each point index
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  // half a line from a killed writer: dropped, and cut on the next append
    ++line_no;
    const std::string where = fmt::format("{}:{}", path, line_no);
    const nlohmann::json line = parse_json_text(text.substr(at, end - at), where, kComponent);
    if (line_no == 1) {
      if (!line.is_object() || !line.contains("tlbsim_sweep") || !line.contains("grid")) {
        throw InputError(fmt::format("{}: not a tlbsim sweep journal (no header line)", where));
      }
      JsonReader header(line, where, kComponent);
      if (const std::uint64_t v = header.unsigned_integer("tlbsim_sweep", 0, UINT32_MAX); v != 1) {
        header.fail("tlbsim_sweep", fmt::format("version {} is not 1, the version this tlbsim reads", v));
      }
      header.object("grid");  // marks it read; its own reader checks it
      j.grid = grid_from_json(line.at("grid"), where, kComponent, "grid");
      if (header.has("shard")) {
        const std::string shard = header.string("shard");
        try {
          j.shard = parse_shard(shard);
        } catch (const InputError&) {
          header.fail("shard", fmt::format("'{}' is not i/N with 1 <= i <= N", shard));
        }
      }
      header.finish();
    } else {
      JsonReader r(line, where, kComponent);
      PointResult p = point_from_json(r, j.grid);
      if (!j.shard.owns(p.point.index)) {
        r.fail("index", fmt::format("point {} is not in this journal's shard {}/{}", p.point.index, j.shard.index,
                                    j.shard.count));
      }
      if (const auto [it, fresh] = line_of.emplace(p.point.index, line_no); !fresh) {
        r.fail("index", fmt::format("point {} is journaled already, on line {}", p.point.index, it->second));
      }
      j.points.push_back(std::move(p));
    }
    at = end + 1;
    j.valid_bytes = at;
  }
  if (line_no == 0) return std::nullopt;  // created but no header yet: as if absent
  return j;
}

std::optional<Journal> read_journal(const std::string& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  return parse_journal(read_file(path), path);
}

DirectoryLock::DirectoryLock(const std::string& dir) {
  const std::string path = dir + "/" + kLockName;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw InputError(fmt::format("cannot open '{}': {}", path, std::strerror(errno)));
  int rc;
  do {
    rc = ::flock(fd_, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) {
      throw InputError(
          fmt::format("'{}' is in use by another tlbsim sweep or merge (it holds {}); wait for it to end, "
                      "or choose another output directory",
                      dir, path));
    }
    throw InputError(fmt::format("cannot lock '{}': {}", path, std::strerror(err)));
  }
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);  // closing the last descriptor releases the lock
}

JournalWriter::JournalWriter(std::string path, const Grid& grid, Shard shard, std::size_t keep_bytes)
    : path_(std::move(path)) {
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (keep_bytes == 0 ? O_TRUNC : 0);
  fd_ = ::open(path_.c_str(), flags, 0644);
  if (fd_ < 0) throw InputError(fmt::format("cannot open '{}' for writing: {}", path_, std::strerror(errno)));
  if (keep_bytes > 0) {
    if (::ftruncate(fd_, static_cast<off_t>(keep_bytes)) != 0) {
      const int err = errno;
      ::close(fd_);
      throw InputError(fmt::format("cannot truncate '{}': {}", path_, std::strerror(err)));
    }
  } else {
    const nlohmann::json header = {
        {"tlbsim_sweep", 1}, {"grid", grid_to_json(grid)}, {"shard", fmt::format("{}/{}", shard.index, shard.count)}};
    try {
      write_line(header.dump());
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
}

JournalWriter::~JournalWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void JournalWriter::append(const PointResult& p) { write_line(point_to_json(p).dump()); }

void JournalWriter::write_line(const std::string& line) {
  const std::string text = line + "\n";
  std::size_t off = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + off, text.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(fmt::format("cannot write '{}': {}", path_, std::strerror(errno)));
    off += static_cast<std::size_t>(n);
  }
  if (::fsync(fd_) != 0) throw InputError(fmt::format("cannot flush '{}': {}", path_, std::strerror(errno)));
}

}  // namespace tlbsim::sweep
