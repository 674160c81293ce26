// A workload described as data (configs/workloads/*.toml, or a user's file): its tasks, its memory regions and the
// operations of a set-up phase and a loop. One parsed form drives both executors: the simulated one
// (workloads/file/file_workload.cpp, `tlbsim run --workload FILE.toml`) and the native one
// (native/file_workload.cpp, `tlbsim validate --workload FILE.toml`). docs/usage.md gives the format.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/time.h"
#include "util/embedded_file.h"
#include "workloads/workload.h"

namespace tlbsim::workloads {

class WorkloadArgs;

// The page size the file's sizes and offsets are counted in (x86-64 and the model's 4 KiB base page).
inline constexpr std::uint64_t kFilePageSize = 4096;
// The largest region a file may describe: 64 GiB, far above any microbenchmark's working set, and small enough
// that offsets and lengths never overflow.
inline constexpr std::uint64_t kMaxRegionBytes = std::uint64_t{64} << 30;
inline constexpr std::uint64_t kMaxRegionAlign = std::uint64_t{1} << 30;  // a region's align: at most PUD_SIZE

// An integer in the file: a literal, or "$name" of a declared parameter that --param may override.
struct FileValue {
  std::uint64_t literal = 0;
  std::optional<std::size_t> param;  // index into WorkloadFile::params
  std::uint64_t scale = 1;           // the parameter's unit in bytes (a region's `pages` counts pages)
};

struct FileParam {
  std::string name;
  std::uint64_t fallback = 0, min = 0, max = 0;
  std::string doc;
};

// A named region of the address space. Anonymous regions are each task's own mapping; a file region is a file of
// the task's own (`per = "task"`, as will-it-scale's tlb_flush1 creates one per task) or one file all tasks map
// (`per = "workload"`).
struct FileRegion {
  std::string name;
  bool file = false;  // backing = "file" (else "anonymous" or "shmem")
  // backing = "shmem": MAP_SHARED | MAP_ANONYMOUS, which the kernel backs by a shmem file of its own
  // (shmem_zero_setup), one per task and mapping; its pages are swap-backed (madvise advice "pageout").
  bool shmem = false;
  bool shared = false;     // sharing = "shared": MAP_SHARED (else MAP_PRIVATE)
  bool per_task = true;    // per = "task" | "workload" (file regions only)
  bool populated = false;  // page_cache = "populated": the file's pages are cached before the run (file only)
  FileValue size;          // bytes, a whole number of pages (the file gives `size` in bytes or `pages`)
  // align: bytes, a power of two from a page to 1 GiB (PUD_SIZE): the mapping's address is a multiple of it, as a
  // program gets with MAP_FIXED_NOREPLACE at an aligned hint or by trimming a larger mapping (the kernel's mremap
  // selftest does both to make PMD- and PUD-aligned moves). Absent: the kernel's own placement.
  std::optional<FileValue> align;
  std::string where;       // origin:line:column of the region's table
};

enum class FileOpKind {
  kMmap,
  kMunmap,
  kTouch,
  kMadvise,
  kForEachPage,
  kCount,
  kPipeWrite,
  kPipeRead,
  kSleep,
  kBarrier,
  kSpawn,
  kMprotect,
  kNumaScan,
  kMigratePages,
  kMremap,
  kCompactMemory
};

// madvise's advice: MADV_DONTNEED, MADV_HUGEPAGE or MADV_PAGEOUT (v5.4+).
enum class FileAdvice { kDontneed, kHugepage, kPageout };

// The largest write or read one pipe operation makes: a pipe's default capacity (16 pages).
inline constexpr std::uint64_t kMaxPipeBytes = 65536;
// A socket's send and recv move one message of hackbench's size, the one whose sk_buff truesize the model derives
// (net/unix/af_unix.h).
inline constexpr std::uint64_t kSocketMessageBytes = 100;

// One operation. touch, madvise and mprotect name a region and a byte range of it (offset, length; default the whole
// region), or, inside for_each_page, touch and madvise apply to its current page and name nothing. mprotect sets
// the range's protection to PROT_READ or PROT_READ|PROT_WRITE (`write`); a write touch may not reach a read-only
// page, and the loop leaves every page's protection as it found it. for_each_page runs its body once
// per page of its region; bodies do not nest. pipe_write and pipe_read move `bytes` through one of the task pair's
// pipes, each a system call followed by the return to user mode. numa_scan runs NUMA balancing's scan of the task's
// mm (task_numa_work, as on a return to user once its scan period has passed); migrate_pages migrates the mm's
// anonymous pages to the next node (migrate_pages(2) of the task's own process); compact_memory writes
// /proc/sys/vm/compact_memory, which compacts every node, whatever process maps the pages. None names a region. mremap
// moves region `region` onto region `to`, which must be mapped and of the same size: mremap(src, len, len,
// MREMAP_MAYMOVE | MREMAP_FIXED, dst), which unmaps the destination first; afterwards `to` holds the pages and
// `region` is unmapped. Both are private anonymous regions.
struct FileOp {
  FileOpKind kind = FileOpKind::kCount;
  std::size_t region = 0;  // index into WorkloadFile::regions (mmap, munmap, touch, madvise, for_each_page, mremap)
  std::size_t to = 0;      // mremap: the destination region
  std::size_t pipe = 0;    // index into WorkloadFile::pipes (pipe_write, pipe_read)
  std::uint64_t bytes = 1;  // pipe_write, pipe_read
  std::uint64_t n = 1;      // count: operations done
  sim::Duration duration{0};  // sleep
  bool write = false;         // touch: access = "write" | "read"; mprotect: prot = "read_write" | "read"
  FileAdvice advice = FileAdvice::kDontneed;  // madvise: advice = "dontneed" | "hugepage" | "pageout"
  std::optional<FileValue> offset, length;
  FileValue stride{kFilePageSize, std::nullopt};  // touch: bytes between touched addresses
  std::vector<FileOp> body;                       // for_each_page; spawn: what the child runs
  std::size_t spawn = 0;                          // spawn: its number in the file (setup, then loop, in order)
  std::string where;                              // origin:line:column of the operation
};

// Contract: a parsed file is consistent: every name it uses is declared, every region is mapped when touched,
// advised or unmapped and unmapped when mapped, and the loop leaves the regions as it found them.
struct WorkloadFile {
  std::string name, description, origin;
  std::string metric_name = "ops_per_sec", unit = "ops/s";
  WisMode mode = WisMode::kThreads;
  // Each task starts a partner (a thread, or a process in processes mode) bound as the task is, as will-it-scale's
  // context_switch1 does; the two talk over the pair's own pipes. The partner runs partner_loop until the run ends.
  bool partner = false;
  // placement = "cpus": task i bound to cpus[i % cpus.size()] (empty: will-it-scale's pinning, task i on core
  // i % cores).
  std::vector<std::uint32_t> cpus;
  std::vector<FileParam> params;
  std::vector<FileRegion> regions;
  std::vector<std::string> pipes;  // channel names; each task pair has its own channel of each name
  std::vector<bool> socket;        // per channel: an AF_UNIX stream socket pair ([[sockets]]) rather than a pipe
  std::vector<FileOp> setup, loop, partner_loop;
};

// Parses and checks a workload file. Throws InputError naming origin:line:column, the key and what was expected.
WorkloadFile parse_workload_file(std::string_view text, std::string origin);

// The workload files compiled into the binary (configs/workloads/*.toml), by stem.
std::span<const EmbeddedFile> builtin_workload_files();

// Whether `name` names a workload file: a path (it contains '/' or ends in ".toml"). A bare "STEM.toml" that is
// no file on disk names the built-in file of that stem.
bool is_workload_file_name(std::string_view name);
// Reads and parses the file `name` names (is_workload_file_name). Throws InputError when there is none.
std::shared_ptr<const WorkloadFile> load_workload_file(std::string_view name);

// The file's values with --param applied: each parameter's value, in WorkloadFile::params order.
struct ResolvedValues {
  std::vector<std::uint64_t> params;
  std::uint64_t operator()(const FileValue& v) const { return v.param ? params[*v.param] * v.scale : v.literal; }
};
// Reads each declared parameter from `args` (its default when `args` is null or does not give it) and checks
// what depends on them: region sizes, and ranges inside their regions. Throws InputError naming the file.
ResolvedValues resolve_values(const WorkloadFile& f, WorkloadArgs* args);

// The spawn operation numbered `n` (FileOp::spawn), or null.
const FileOp* find_spawn(const WorkloadFile& f, std::size_t n);

// The Workload that runs a file on the model (file_workload.cpp).
std::unique_ptr<Workload> make_file_workload(std::shared_ptr<const WorkloadFile> f);

// The workload `name` names: a workload file (is_workload_file_name) or a registered C++ workload. Throws
// InputError listing both kinds when there is neither.
std::unique_ptr<Workload> make_workload(std::string_view name);

}  // namespace tlbsim::workloads
