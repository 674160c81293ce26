// The consistency checks of a parsed workload file (workload_file.cpp's parse_workload_file and resolve_values):
// regions mapped where used, pipes joined, ranges inside their regions, protections that no write crosses.
#include "workloads/file/workload_file_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>
#include <map>

#include "util/error.h"

namespace tlbsim::workloads {

namespace {

// Walks `ops` from the mapped state `mapped`: each region is mapped when used and unmapped when mapped again.
void walk(const WorkloadFile& f, const std::vector<FileOp>& ops, std::vector<bool>& mapped, bool& counts,
          bool in_body = false) {
  for (const FileOp& o : ops) {
    if (o.kind == FileOpKind::kSpawn) {
      // The child execs into a fresh mm: its regions start unmapped, and exit unmaps what it leaves. It maps
      // anonymous memory only (the native child is a new program, which has none of the task's files).
      for (const FileOp& b : o.body) {
        if (b.kind == FileOpKind::kMmap && (f.regions[b.region].file || f.regions[b.region].shmem)) {
          throw InputError(fmt::format("{}: a spawned child maps private anonymous regions only; '{}' is a {}", b.where,
                                       f.regions[b.region].name, f.regions[b.region].file ? "file" : "shmem region"));
        }
      }
      std::vector<bool> child(f.regions.size(), false);
      bool child_counts = false;
      walk(f, o.body, child, child_counts);
      continue;
    }
    if (o.kind == FileOpKind::kCount || o.kind == FileOpKind::kPipeWrite || o.kind == FileOpKind::kPipeRead ||
        o.kind == FileOpKind::kSleep || o.kind == FileOpKind::kBarrier || o.kind == FileOpKind::kNumaScan ||
        o.kind == FileOpKind::kMigratePages || o.kind == FileOpKind::kCompactMemory || in_body) {
      counts = counts || o.kind == FileOpKind::kCount;
      continue;
    }
    const FileRegion& g = f.regions[o.region];
    if (o.kind == FileOpKind::kMmap) {
      if (mapped[o.region]) throw InputError(fmt::format("{}: region '{}' is mapped already", o.where, g.name));
      mapped[o.region] = true;
      continue;
    }
    if (!mapped[o.region]) {
      throw InputError(
          fmt::format("{}: region '{}' is used before it is mapped (an mmap of it must come first)", o.where, g.name));
    }
    if (o.kind == FileOpKind::kMunmap) mapped[o.region] = false;
    if (o.kind == FileOpKind::kMremap) {
      // MREMAP_FIXED onto the destination the task mapped: it ends mapped (holding the pages), the source unmapped.
      if (!mapped[o.to]) {
        throw InputError(
            fmt::format("{}: mremap's destination '{}' is not mapped (an mmap of it must come first: the "
                        "file moves a region onto another it mapped)",
                        o.where, f.regions[o.to].name));
      }
      mapped[o.region] = false;
    }
    if (o.kind == FileOpKind::kForEachPage) walk(f, o.body, mapped, counts, true);
  }
}

void check(WorkloadFile& f, const std::string& loop_where) {
  std::vector<bool> mapped(f.regions.size(), false);
  bool counts = false;
  walk(f, f.setup, mapped, counts);
  if (counts)
    throw InputError(fmt::format("{}: [[setup]] may not count operations: only the loop is measured", f.origin));
  const std::vector<bool> at_start = mapped;
  walk(f, f.loop, mapped, counts);
  if (f.loop.empty()) throw InputError(fmt::format("{}: missing [[loop]]: the operations each task repeats", f.origin));
  if (!counts) {
    throw InputError(
        fmt::format("{}: the loop never counts: add {{ op = \"count\" }} where one operation of the "
                    "benchmark is done",
                    loop_where));
  }
  for (std::size_t i = 0; i < f.regions.size(); ++i) {
    if (mapped[i] != at_start[i]) {
      throw InputError(fmt::format("{}: the loop leaves region '{}' {} at its end, so its next pass would find it {}",
                                   loop_where, f.regions[i].name, mapped[i] ? "mapped" : "unmapped",
                                   mapped[i] ? "mapped" : "unmapped"));
    }
  }
}

// Each pipe joins the two sides of a pair: one side writes it and the other reads it. A side that reads a pipe
// only it writes would wait on itself; a pipe nobody reads fills and blocks its writer.
void check_pipes(const WorkloadFile& f) {
  struct Use {
    int writers = 0, readers = 0;  // bit 0: the task (set-up or loop), bit 1: the partner
    std::string where;
  };
  std::vector<Use> use(f.pipes.size());
  const auto mark = [&use](const std::vector<FileOp>& ops, int side) {
    for (const FileOp& o : ops) {
      if (o.kind == FileOpKind::kPipeWrite) use[o.pipe].writers |= side;
      if (o.kind == FileOpKind::kPipeRead) use[o.pipe].readers |= side;
      if ((o.kind == FileOpKind::kPipeWrite || o.kind == FileOpKind::kPipeRead) && use[o.pipe].where.empty()) {
        use[o.pipe].where = o.where;
      }
    }
  };
  mark(f.setup, 1);
  mark(f.loop, 1);
  mark(f.partner_loop, 2);
  // Both sides beginning with a read wait for each other before either writes.
  const auto first_pipe_op = [](const std::vector<FileOp>& ops) -> const FileOp* {
    for (const FileOp& o : ops) {
      if (o.kind == FileOpKind::kPipeWrite || o.kind == FileOpKind::kPipeRead) return &o;
    }
    return nullptr;
  };
  const FileOp* task_first = first_pipe_op(f.setup);
  if (task_first == nullptr) task_first = first_pipe_op(f.loop);
  const FileOp* partner_first = first_pipe_op(f.partner_loop);
  if (task_first != nullptr && partner_first != nullptr && task_first->kind == FileOpKind::kPipeRead &&
      partner_first->kind == FileOpKind::kPipeRead) {
    throw InputError(
        fmt::format("{}: the task and its partner both begin by reading a pipe ({} and {}), so each "
                    "waits for the other forever",
                    task_first->where, f.pipes[task_first->pipe], f.pipes[partner_first->pipe]));
  }
  for (std::size_t i = 0; i < f.pipes.size(); ++i) {
    const Use& u = use[i];
    if (u.where.empty()) continue;  // declared, unused
    const bool one_way = (u.writers == 1 && u.readers == 2) || (u.writers == 2 && u.readers == 1);
    if (one_way) continue;
    const char* side = (u.readers | u.writers) == 2 ? "the partner" : "the task";
    if (u.writers == 0 || u.readers == 0) {
      throw InputError(
          fmt::format("{}: pipe '{}' is {} by {} and {} by neither side{}", u.where, f.pipes[i],
                      u.writers == 0 ? "read" : "written", side, u.writers == 0 ? "written" : "read",
                      u.writers == 0 ? ": the read would wait forever" : ": its writer would block once it is full"));
    }
    throw InputError(
        fmt::format("{}: pipe '{}' must be written by one side of the pair and read by the other; here "
                    "{} reads what it writes itself, so it would wait on itself",
                    u.where, f.pipes[i], side));
  }
}

// The read-only pages of each region, as mprotect leaves them: page ranges [first, last) by first page. mmap and
// munmap make a region all read-write (PROT_READ|PROT_WRITE is how the file maps every region).
using ReadOnly = std::vector<std::map<std::uint64_t, std::uint64_t>>;

void set_read_only(std::map<std::uint64_t, std::uint64_t>& ro, std::uint64_t first, std::uint64_t last, bool on) {
  // Cut [first, last) out of every range, then add it back when it becomes read-only.
  std::map<std::uint64_t, std::uint64_t> out;
  for (const auto& [a, b] : ro) {
    if (b <= first || a >= last) {
      out.emplace(a, b);
      continue;
    }
    if (a < first) out.emplace(a, first);
    if (b > last) out.emplace(last, b);
  }
  if (on) out.emplace(first, last);
  ro.clear();
  for (const auto& [a, b] : out) {  // merge neighbours, so that equal page sets compare equal
    if (!ro.empty() && std::prev(ro.end())->second == a) {
      std::prev(ro.end())->second = b;
    } else {
      ro.emplace(a, b);
    }
  }
}

bool any_read_only(const std::map<std::uint64_t, std::uint64_t>& ro, std::uint64_t first, std::uint64_t last) {
  for (const auto& [a, b] : ro) {
    if (a < last && b > first) return true;
  }
  return false;
}

void walk_protections(const WorkloadFile& f, const ResolvedValues& v, const std::vector<std::uint64_t>& size,
                      const std::vector<FileOp>& ops, ReadOnly& ro) {
  for (const FileOp& o : ops) {
    if (o.kind == FileOpKind::kSpawn) {  // the child's fresh mm
      ReadOnly child(f.regions.size());
      walk_protections(f, v, size, o.body, child);
      continue;
    }
    if (o.kind == FileOpKind::kMmap || o.kind == FileOpKind::kMunmap) ro[o.region].clear();
    if (o.kind == FileOpKind::kMremap) {
      // One VMA moves (vma_to_resize's EFAULT otherwise): the source is all read-write or all read-only.
      const std::uint64_t pages = size[o.region] / kFilePageSize;
      if (!ro[o.region].empty() && ro[o.region] != std::map<std::uint64_t, std::uint64_t>{{0, pages}}) {
        throw InputError(
            fmt::format("{}: region '{}' has pages of both protections here, so it is more than one "
                        "mapping, and mremap moves one (the kernel's EFAULT)",
                        o.where, f.regions[o.region].name));
      }
      ro[o.to] = std::move(ro[o.region]);
      ro[o.region].clear();
      continue;
    }
    if (o.kind != FileOpKind::kTouch && o.kind != FileOpKind::kMprotect && o.kind != FileOpKind::kForEachPage) continue;
    const std::uint64_t off = o.offset ? v(*o.offset) : 0;
    const std::uint64_t len = o.length ? v(*o.length) : size[o.region] - std::min(off, size[o.region]);
    const std::uint64_t first = off / kFilePageSize, last = (off + len + kFilePageSize - 1) / kFilePageSize;
    if (o.kind == FileOpKind::kMprotect) set_read_only(ro[o.region], first, last, !o.write);
    const bool writes = (o.kind == FileOpKind::kTouch && o.write) ||
                        (o.kind == FileOpKind::kForEachPage && std::ranges::any_of(o.body, [](const FileOp& b) {
                           return b.kind == FileOpKind::kTouch && b.write;
                         }));
    const bool whole = o.kind == FileOpKind::kForEachPage;
    if (writes && any_read_only(ro[o.region], whole ? 0 : first, whole ? size[o.region] / kFilePageSize : last)) {
      throw InputError(
          fmt::format("{}: this write reaches a page of region '{}' that an mprotect made read-only (the "
                      "task would die of SIGSEGV)",
                      o.where, f.regions[o.region].name));
    }
  }
}

// mprotect's consistency: no write touch reaches a read-only page, and the loop leaves every page's protection as
// it found it (its next pass starts from the same state).
void check_protections(const WorkloadFile& f, const ResolvedValues& v, const std::vector<std::uint64_t>& size) {
  ReadOnly ro(f.regions.size());
  walk_protections(f, v, size, f.setup, ro);
  const ReadOnly at_start = ro;
  walk_protections(f, v, size, f.loop, ro);
  for (std::size_t i = 0; i < f.regions.size(); ++i) {
    if (ro[i] != at_start[i]) {
      throw InputError(
          fmt::format("{}: the loop leaves region '{}' with other protections than it found, so its "
                      "next pass would start differently",
                      f.loop.front().where, f.regions[i].name));
    }
  }
}

}  // namespace

void check_operations(WorkloadFile& f, const std::string& loop_where) {
  check(f, loop_where);
  check_pipes(f);
}

void check_ranges(const WorkloadFile& f, const ResolvedValues& v, const std::vector<std::uint64_t>& size) {
  const auto check_ops = [&](const std::vector<FileOp>& ops) {
    for (const FileOp& o : ops) {
      if (o.kind != FileOpKind::kTouch && o.kind != FileOpKind::kMadvise && o.kind != FileOpKind::kMprotect) continue;
      const std::uint64_t off = o.offset ? v(*o.offset) : 0;
      const std::uint64_t len = o.length ? v(*o.length) : size[o.region] - std::min(off, size[o.region]);
      if (off >= size[o.region] || len == 0 || len > size[o.region] - off) {
        throw InputError(fmt::format("{}: offset {} and length {} are not a range inside region '{}' ({} bytes)",
                                     o.where, off, len, f.regions[o.region].name, size[o.region]));
      }
      if (o.kind != FileOpKind::kTouch && (off % kFilePageSize != 0 || len % kFilePageSize != 0)) {
        throw InputError(fmt::format("{}: {} takes whole pages: offset {} and length {} must be multiples of {}",
                                     o.where, o.kind == FileOpKind::kMadvise ? "madvise" : "mprotect", off, len,
                                     kFilePageSize));
      }
      if (o.kind == FileOpKind::kTouch && v(o.stride) == 0) {
        throw InputError(fmt::format("{}: stride must be at least 1 byte", o.where));
      }
    }
  };
  check_ops(f.setup);
  check_ops(f.loop);
  const auto check_moves = [&](const std::vector<FileOp>& ops, const auto& self) -> void {
    for (const FileOp& o : ops) {
      if (o.kind == FileOpKind::kSpawn) self(o.body, self);
      if (o.kind == FileOpKind::kMremap && size[o.region] != size[o.to]) {
        throw InputError(
            fmt::format("{}: mremap moves region '{}' ({} bytes) onto '{}' ({} bytes): they must be of "
                        "one size (the file's mremap neither grows nor shrinks)",
                        o.where, f.regions[o.region].name, size[o.region], f.regions[o.to].name, size[o.to]));
      }
    }
  };
  check_moves(f.setup, check_moves);
  check_moves(f.loop, check_moves);
  check_protections(f, v, size);
}

}  // namespace tlbsim::workloads
