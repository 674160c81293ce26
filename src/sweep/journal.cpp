// Reading and appending the points journal.
#include "sweep/journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "util/atomic_file.h"
#include "util/error.h"

namespace tlbsim::sweep {

nlohmann::json point_to_json(const PointResult& p) {
  return {{"index", p.point.index}, {"kernel", p.point.kernel}, {"threads", p.point.threads},
          {"seed", p.point.seed},   {"value", p.value},         {"unit", p.unit},
          {"ops", p.ops},           {"events", p.events},       {"violations", p.violations}};
}

PointResult point_from_json(const nlohmann::json& j, const std::string& where) {
  try {
    PointResult p;
    p.point.index = j.at("index").get<std::size_t>();
    p.point.kernel = j.at("kernel").get<std::string>();
    p.point.threads = j.at("threads").get<std::uint32_t>();
    p.point.seed = j.at("seed").get<std::uint64_t>();
    p.value = j.at("value").get<double>();
    p.unit = j.at("unit").get<std::string>();
    p.ops = j.at("ops").get<std::uint64_t>();
    p.events = j.at("events").get<std::uint64_t>();
    p.violations = j.at("violations").get<std::uint64_t>();
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not a sweep point: {}", where, e.what()));
  }
}

std::optional<Journal> read_journal(const std::string& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  const std::string text = read_file(path);
  Journal j;
  std::size_t at = 0, line_no = 0;
  while (at < text.size()) {
    const std::size_t end = text.find('\n', at);
    if (end == std::string::npos) break;  // half a line from a killed writer: dropped, and cut on the next append
    ++line_no;
    const std::string where = fmt::format("{}:{}", path, line_no);
    nlohmann::json line;
    try {
      line = nlohmann::json::parse(text.substr(at, end - at));
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: not JSON: {}", where, e.what()));
    }
    if (line_no == 1) {
      if (!line.contains("tlbsim_sweep") || !line.contains("grid")) {
        throw InputError(fmt::format("{}: not a tlbsim sweep journal (no header line)", where));
      }
      j.grid = grid_from_json(line["grid"], where);
      j.shard = parse_shard(line.value("shard", "1/1"));
    } else {
      j.points.push_back(point_from_json(line, where));
    }
    at = end + 1;
    j.valid_bytes = at;
  }
  if (line_no == 0) return std::nullopt;  // created but no header yet: as if absent
  return j;
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
