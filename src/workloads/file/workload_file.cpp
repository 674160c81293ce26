// The workload-file reader: strict as the machine files are (every unknown key, wrong type or bad value is a
// located error), then a walk of the operations that proves each region mapped where it is used.
#include "workloads/file/workload_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "util/atomic_file.h"
#include "util/error.h"
#include "util/param_reader.h"
#include "util/registry.h"
#include "workloads/file/workload_file_check.h"
#include "workloads/workload_args.h"

namespace tlbsim::workloads {

std::span<const EmbeddedFile> builtin_workload_files_data();

namespace {

constexpr std::int64_t kMaxValue = std::int64_t{1} << 40;  // bounds every literal: no sum of two overflows

// In FileOpKind's order, then the socket spellings of pipe_write and pipe_read.
const std::vector<std::string> kOps = {
    "mmap",    "munmap", "touch",    "madvise",   "for_each_page", "count",  "pipe_write",     "pipe_read", "sleep",
    "barrier", "spawn",  "mprotect", "numa_scan", "migrate_pages", "mremap", "compact_memory", "send",      "recv"};

class Parser {
 public:
  Parser(WorkloadFile& f) : f_(f) {}

  void params(ParamReader& root) {
    auto sec = root.optional_section("params");
    if (!sec) return;
    for (const std::string& name : sec->keys()) {
      ParamReader p = sec->section(name);
      FileParam fp{name, 0, 0, 0, ""};
      fp.min = static_cast<std::uint64_t>(p.integer("min", 0, kMaxValue));
      fp.max = static_cast<std::uint64_t>(p.integer("max", 0, kMaxValue));
      fp.fallback = static_cast<std::uint64_t>(p.integer("default", 0, kMaxValue));
      fp.doc = p.string("doc");
      if (fp.min > fp.max) p.fail("max", fmt::format("below min ({} < {})", fp.max, fp.min));
      if (fp.fallback < fp.min || fp.fallback > fp.max) {
        p.fail("default", fmt::format("outside min..max ({}..{})", fp.min, fp.max));
      }
      p.finish();
      f_.params.push_back(std::move(fp));
    }
    sec->finish();
  }

  // An integer literal, a size with a unit ("1MiB"), or "$name" of a declared parameter.
  FileValue value(ParamReader& r, std::string_view key) {
    if (!r.is_string(key)) return FileValue{static_cast<std::uint64_t>(r.integer(key, 0, kMaxValue)), std::nullopt};
    const std::string s = r.string(key);
    if (s.starts_with('$')) {
      for (std::size_t i = 0; i < f_.params.size(); ++i) {
        if (f_.params[i].name == s.substr(1)) return FileValue{0, i};
      }
      std::string known;
      for (const auto& p : f_.params) known += (known.empty() ? "" : ", ") + ("$" + p.name);
      r.fail(key, fmt::format("no parameter '{}' is declared under [params] (declared: {})", s.substr(1),
                              known.empty() ? "none" : known));
    }
    static const std::pair<std::string_view, std::uint64_t> kUnits[] = {
        {"KiB", 1024}, {"MiB", 1024 * 1024}, {"GiB", 1024 * 1024 * 1024}};
    for (const auto& [unit, scale] : kUnits) {
      if (!s.ends_with(unit)) continue;
      const std::string digits = s.substr(0, s.size() - unit.size());
      if (!digits.empty() && digits.size() <= 6 && std::all_of(digits.begin(), digits.end(), ::isdigit)) {
        return FileValue{std::stoull(digits) * scale, std::nullopt};
      }
    }
    r.fail(key, fmt::format("expected an integer, a size such as \"1MiB\" (KiB, MiB, GiB) or \"$parameter\", got "
                            "\"{}\"",
                            s));
  }

  void regions(ParamReader& root) {
    for (ParamReader& r : root.table_array("regions")) {
      FileRegion g;
      g.where = r.where_key("name");
      g.name = r.string("name");
      for (const auto& other : f_.regions) {
        if (other.name == g.name) r.fail("name", fmt::format("region '{}' is declared twice", g.name));
      }
      const std::string backing = r.choice("backing", {"anonymous", "file", "shmem"});
      g.file = backing == "file";
      g.shmem = backing == "shmem";
      g.shared = r.optional_string("sharing").value_or(g.shmem ? "shared" : "private") == "shared";
      if (r.is_string("sharing")) r.choice("sharing", {"private", "shared"});
      if (g.shmem && !g.shared) r.fail("sharing", "a shmem region is MAP_SHARED | MAP_ANONYMOUS: it cannot be private");
      if (backing == "anonymous" && g.shared)
        r.fail("sharing", "MAP_SHARED | MAP_ANONYMOUS memory is a shmem file in the kernel: write backing = \"shmem\"");
      const bool by_size = has(r, "size");
      if (by_size == has(r, "pages"))
        r.fail("size", "give the region's size in bytes (size) or in pages (pages), once");
      g.size = value(r, by_size ? "size" : "pages");
      if (!by_size) {
        g.size.scale = kFilePageSize;
        if (g.size.literal > kMaxRegionBytes / kFilePageSize) r.fail("pages", "more pages than a region may have");
        g.size.literal *= kFilePageSize;
      }
      if (has(r, "align")) g.align = value(r, "align");
      if (g.file) {
        g.per_task = r.optional_string("per").value_or("task") == "task";
        if (r.is_string("per")) r.choice("per", {"task", "workload"});
        g.populated = r.optional_string("page_cache").value_or("empty") == "populated";
        if (r.is_string("page_cache")) r.choice("page_cache", {"empty", "populated"});
      }
      r.finish();
      f_.regions.push_back(std::move(g));
    }
  }

  // [[pipes]] and [[sockets]]: the channels between a task and its partner, one list of names.
  void pipes(ParamReader& root) {
    for (const bool socket : {false, true}) {
      for (ParamReader& r : root.table_array(socket ? "sockets" : "pipes")) {
        const std::string name = r.string("name");
        if (std::ranges::find(f_.pipes, name) != f_.pipes.end()) {
          r.fail("name", fmt::format("'{}' is declared twice (pipes and sockets share one set of names)", name));
        }
        if (!f_.partner) {
          r.fail("name", "pipes and sockets join a task and its partner: set partner = true under [tasks]");
        }
        r.finish();
        f_.pipes.push_back(name);
        f_.socket.push_back(socket);
      }
    }
  }

  // The channel an operation names: a pipe (`pipe = `) or a socket (`socket = `).
  std::size_t pipe(ParamReader& r, bool socket) {
    const char* key = socket ? "socket" : "pipe";
    const std::string name = r.string(key);
    std::string known;
    for (std::size_t i = 0; i < f_.pipes.size(); ++i) {
      if (f_.socket[i] != socket) continue;
      if (f_.pipes[i] == name) return i;
      known += (known.empty() ? "" : ", ") + f_.pipes[i];
    }
    r.fail(key, fmt::format("no {} '{}' is declared with [[{}s]] (declared: {})", key, name, key,
                            known.empty() ? "none" : known));
  }

  std::size_t region(ParamReader& r, const char* key = "region") {
    const std::string name = r.string(key);
    for (std::size_t i = 0; i < f_.regions.size(); ++i) {
      if (f_.regions[i].name == name) return i;
    }
    std::string known;
    for (const auto& g : f_.regions) known += (known.empty() ? "" : ", ") + g.name;
    r.fail(key, fmt::format("no region '{}' is declared with [[regions]] (declared: {})", name,
                            known.empty() ? "none" : known));
  }

  FileOp op(ParamReader& r, bool in_body, bool partner_side = false, bool in_child = false) {
    FileOp o;
    o.where = r.where_key("op");
    const std::string kind = r.choice("op", kOps);
    // send and recv are a socket's write and read: one 100-byte message each.
    const bool socket_op = kind == "send" || kind == "recv";
    o.kind = kind == "send"   ? FileOpKind::kPipeWrite
             : kind == "recv" ? FileOpKind::kPipeRead
                              : static_cast<FileOpKind>(std::find(kOps.begin(), kOps.end(), kind) - kOps.begin());
    const bool page_op = o.kind == FileOpKind::kTouch || o.kind == FileOpKind::kMadvise;
    const bool range_op = page_op || o.kind == FileOpKind::kMprotect;
    const bool pipe_op = o.kind == FileOpKind::kPipeWrite || o.kind == FileOpKind::kPipeRead;
    if (in_body && !page_op && o.kind != FileOpKind::kCount) {
      r.fail("op", fmt::format("'{}' cannot be inside for_each_page (its body may touch, madvise and count)", kind));
    }
    if (in_child &&
        (pipe_op || o.kind == FileOpKind::kCount || o.kind == FileOpKind::kBarrier || o.kind == FileOpKind::kSpawn)) {
      r.fail("op",
             fmt::format("'{}' cannot be in a spawned child: it maps, touches, advises, unmaps and sleeps", kind));
    }
    if (partner_side && !pipe_op) {
      r.fail("op",
             fmt::format("'{}' cannot be in partner_loop: a partner writes and reads pipes and sockets only", kind));
    }
    if (socket_op) {
      o.pipe = pipe(r, true);
      o.bytes = kSocketMessageBytes;
    } else if (pipe_op) {
      o.pipe = pipe(r, false);
      if (has(r, "bytes")) o.bytes = static_cast<std::uint64_t>(r.integer("bytes", 1, kMaxPipeBytes));
    } else if (o.kind == FileOpKind::kCount) {
      if (has(r, "n")) o.n = static_cast<std::uint64_t>(r.integer("n", 1, 1000000));
    } else if (o.kind == FileOpKind::kSleep) {
      const std::string text = r.string("duration");
      try {
        o.duration = sim::parse_duration(text);
      } catch (const std::invalid_argument& e) {
        r.fail("duration", e.what());
      }
      if (o.duration < sim::nanoseconds(1) || o.duration > sim::milliseconds(1000)) {
        r.fail("duration", fmt::format("expected 1ns to 1s, got \"{}\"", text));
      }
    } else if (o.kind == FileOpKind::kBarrier || o.kind == FileOpKind::kNumaScan ||
               o.kind == FileOpKind::kMigratePages || o.kind == FileOpKind::kCompactMemory) {
      // barrier: every task of the workload (not the partners) arrives before any goes on. numa_scan and
      // migrate_pages: the task's whole mm. compact_memory: every node.
    } else if (o.kind == FileOpKind::kSpawn) {
      o.spawn = spawns_++;
      for (ParamReader& b : r.table_array("body")) o.body.push_back(op(b, false, false, true));
      if (o.body.empty()) r.fail("body", "spawn needs a body: the operations the child runs before it exits");
    } else if (!in_body) {
      o.region = region(r);
    }
    if (range_op && !in_body) {
      // A range of the region: offset and length default to all of it.
      if (has(r, "offset")) o.offset = value(r, "offset");
      if (has(r, "length")) o.length = value(r, "length");
    }
    if (o.kind == FileOpKind::kTouch) {
      o.write = r.choice("access", {"read", "write"}) == "write";
      if (!in_body && has(r, "stride")) o.stride = value(r, "stride");
    }
    if (o.kind == FileOpKind::kMadvise) {
      const std::string advice = r.choice("advice", {"dontneed", "hugepage", "pageout"});
      o.advice = advice == "hugepage"  ? FileAdvice::kHugepage
                 : advice == "pageout" ? FileAdvice::kPageout
                                       : FileAdvice::kDontneed;
      if (o.advice != FileAdvice::kDontneed && in_body)
        r.fail("advice", fmt::format("\"{}\" names a range: it cannot be inside for_each_page", advice));
      if (o.advice == FileAdvice::kPageout && !f_.regions[o.region].shmem) {
        r.fail("advice", fmt::format("\"pageout\" is modeled for shmem regions only, and '{}' is not one (the swap-out "
                                     "of private anonymous and file pages is not modeled)",
                                     f_.regions[o.region].name));
      }
    }
    if (o.kind == FileOpKind::kMprotect) o.write = r.choice("prot", {"read", "read_write"}) == "read_write";
    if (o.kind == FileOpKind::kMremap) mremap_destination(r, o);
    if (o.kind == FileOpKind::kForEachPage) {
      for (ParamReader& b : r.table_array("body")) o.body.push_back(op(b, true));
      if (o.body.empty()) r.fail("body", "for_each_page needs a body: an array of operations");
    }
    r.finish();
    return o;
  }

  // mremap's `to`: another private anonymous region, as the source must be (a file's or shmem's VMA moves with its
  // pgoff, which the file executors do not follow).
  void mremap_destination(ParamReader& r, FileOp& o) {
    o.to = region(r, "to");
    if (o.to == o.region) r.fail("to", "names the region being moved: mremap's ranges may not overlap");
    for (const std::size_t g : {o.region, o.to}) {
      const FileRegion& reg = f_.regions[g];
      if (reg.file || reg.shmem) {
        r.fail(g == o.region ? "region" : "to",
               fmt::format("mremap is modeled for private anonymous regions only, and '{}' is a {}", reg.name,
                           reg.file ? "file region" : "shmem region"));
      }
    }
  }

  std::vector<FileOp> ops(ParamReader& root, std::string_view key, bool partner_side = false) {
    std::vector<FileOp> out;
    for (ParamReader& r : root.table_array(key)) out.push_back(op(r, false, partner_side));
    return out;
  }

 private:
  static bool has(const ParamReader& r, std::string_view key) {
    const std::vector<std::string> keys = r.keys();
    return std::ranges::find(keys, std::string(key)) != keys.end();
  }
  WorkloadFile& f_;
  std::size_t spawns_ = 0;
};

}  // namespace

WorkloadFile parse_workload_file(std::string_view text, std::string origin) {
  const TomlDocument doc = TomlDocument::parse(text, origin);
  ParamReader root(doc.root(), origin, "workload file");
  WorkloadFile f;
  f.origin = origin;
  {
    ParamReader w = root.section("workload");
    f.name = w.string("name");
    if (f.name.empty() || f.name.size() > 64 ||
        !std::all_of(f.name.begin(), f.name.end(), [](char c) { return std::isalnum(c) || c == '_' || c == '-'; })) {
      w.fail("name", "expected 1-64 letters, digits, '_' or '-'");
    }
    f.description = w.optional_string("description").value_or("");
    f.metric_name = w.optional_string("metric").value_or(f.metric_name);
    f.unit = w.optional_string("unit").value_or(f.unit);
    w.finish();
  }
  {
    ParamReader t = root.section("tasks");
    f.mode = t.choice("mode", {"threads", "processes"}) == "threads" ? WisMode::kThreads : WisMode::kProcesses;
    // will-it-scale's binding: task i on core i % cores. Other placements come with the scheduler's workloads.
    const bool listed = t.choice("placement", {"pinned", "cpus"}) == "cpus";
    f.partner = t.optional_boolean("partner").value_or(false);
    if (listed) {
      if (f.partner) t.fail("placement", "a task with a partner is placed as context_switch1 places it: \"pinned\"");
      for (std::int64_t c : t.integer_list("cpus", 0, 4095)) f.cpus.push_back(static_cast<std::uint32_t>(c));
      if (f.cpus.empty()) t.fail("cpus", "placement = \"cpus\" needs at least one CPU number");
    }
    t.finish();
  }
  Parser p(f);
  p.params(root);
  p.regions(root);
  p.pipes(root);
  f.setup = p.ops(root, "setup");
  f.loop = p.ops(root, "loop");
  f.partner_loop = p.ops(root, "partner_loop", true);
  const std::string loop_where = root.where_key("loop");
  if (f.partner && f.partner_loop.empty()) {
    throw InputError(
        fmt::format("{}: partner = true needs a [[partner_loop]]: what the partner repeats", root.where_key("tasks")));
  }
  if (!f.partner && !f.partner_loop.empty()) {
    throw InputError(
        fmt::format("{}: [[partner_loop]] without partner = true under [tasks]", root.where_key("partner_loop")));
  }
  root.finish();
  check_operations(f, loop_where);
  return f;
}

std::span<const EmbeddedFile> builtin_workload_files() { return builtin_workload_files_data(); }

bool is_workload_file_name(std::string_view name) {
  return name.find('/') != std::string_view::npos || name.ends_with(".toml");
}

std::shared_ptr<const WorkloadFile> load_workload_file(std::string_view name) {
  const std::string arg(name);
  std::error_code ec;
  if (arg.find('/') == std::string::npos && !std::filesystem::exists(arg, ec)) {
    const std::string_view stem = name.substr(0, name.size() - 5);
    for (const auto& f : builtin_workload_files()) {
      if (f.name == stem) {
        return std::make_shared<const WorkloadFile>(parse_workload_file(f.text, fmt::format("builtin:{}", arg)));
      }
    }
    std::string known;
    for (const auto& f : builtin_workload_files()) known += (known.empty() ? "" : ", ") + std::string(f.name) + ".toml";
    throw InputError(
        fmt::format("workload file '{}': no such file, and no built-in workload file of that name "
                    "(built in: {})",
                    arg, known));
  }
  return std::make_shared<const WorkloadFile>(parse_workload_file(read_file(arg), arg));
}

ResolvedValues resolve_values(const WorkloadFile& f, WorkloadArgs* args) {
  ResolvedValues v;
  for (const FileParam& p : f.params) {
    v.params.push_back(args != nullptr ? args->integer(p.name, p.fallback, p.min, p.max, p.doc) : p.fallback);
  }
  const auto what = [&f](const FileValue& x) {
    return x.param ? fmt::format(" (${})", f.params[*x.param].name) : std::string();
  };
  std::vector<std::uint64_t> size(f.regions.size());
  for (std::size_t i = 0; i < f.regions.size(); ++i) {
    const FileRegion& g = f.regions[i];
    size[i] = v(g.size);
    if (size[i] == 0 || size[i] % kFilePageSize != 0 || size[i] > kMaxRegionBytes) {
      throw InputError(fmt::format("{}: region '{}': size {}{} must be a whole number of {}-byte pages, at most {}",
                                   g.where, g.name, size[i], what(g.size), kFilePageSize, kMaxRegionBytes));
    }
    if (g.align) {
      const std::uint64_t a = v(*g.align);
      if (a < kFilePageSize || a > kMaxRegionAlign || (a & (a - 1)) != 0) {
        throw InputError(fmt::format("{}: region '{}': align {}{} must be a power of two from {} to {} bytes", g.where,
                                     g.name, a, what(*g.align), kFilePageSize, kMaxRegionAlign));
      }
    }
  }
  check_ranges(f, v, size);
  return v;
}

const FileOp* find_spawn(const WorkloadFile& f, std::size_t n) {
  for (const auto* list : {&f.setup, &f.loop}) {
    for (const FileOp& o : *list) {
      if (o.kind == FileOpKind::kSpawn && o.spawn == n) return &o;
    }
  }
  return nullptr;
}

std::unique_ptr<Workload> make_workload(std::string_view name) {
  if (is_workload_file_name(name)) return make_file_workload(load_workload_file(name));
  if (const auto* e = Registry<Workload>::find(name)) return e->make();
  std::string known;
  for (const auto& e : Registry<Workload>::list()) known += (known.empty() ? "" : ", ") + e.name;
  for (const auto& f : builtin_workload_files()) known += ", " + std::string(f.name) + ".toml";
  throw InputError(
      fmt::format("unknown workload '{}' (known: {}; or give a path to a workload .toml file)", name, known));
}

}  // namespace tlbsim::workloads
