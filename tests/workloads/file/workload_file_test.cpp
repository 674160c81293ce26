// The workload-file reader: the built-in files parse, and every kind of malformed file is a located error.
#include "workloads/file/workload_file.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "util/error.h"
#include "workloads/workload_args.h"

namespace tlbsim::workloads {
namespace {

const std::string kHead = R"([workload]
name = "w"
[tasks]
mode = "threads"
placement = "pinned"
[[regions]]
name = "r"
backing = "anonymous"
size = "64KiB"
)";

const std::string kLoop = R"([[loop]]
op = "mmap"
region = "r"
[[loop]]
op = "touch"
region = "r"
access = "write"
[[loop]]
op = "munmap"
region = "r"
[[loop]]
op = "count"
)";

const std::string kPartner = R"([workload]
name = "w"
[tasks]
mode = "threads"
placement = "pinned"
partner = true
[[pipes]]
name = "a"
[[pipes]]
name = "b"
)";

// The message of the InputError that parsing `text` throws ("" when it parses).
std::string error_of(const std::string& text) {
  try {
    const WorkloadFile f = parse_workload_file(text, "t.toml");
    resolve_values(f, nullptr);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(WorkloadFile, BuiltInFilesParse) {
  ASSERT_GE(builtin_workload_files().size(), 8u);
  for (const auto& f : builtin_workload_files()) {
    const WorkloadFile w = parse_workload_file(f.text, std::string(f.name));
    EXPECT_EQ(w.name, f.name);
    EXPECT_FALSE(w.description.empty()) << f.name;
    resolve_values(w, nullptr);
  }
}

TEST(WorkloadFile, SwapBenchMapsShmemAndPagesItOut) {
  const auto files = builtin_workload_files();
  const auto it = std::ranges::find_if(files, [](const auto& f) { return f.name == "swap_bench"; });
  ASSERT_NE(it, files.end());
  const WorkloadFile w = parse_workload_file(it->text, "swap_bench.toml");
  ASSERT_EQ(w.regions.size(), 1u);
  EXPECT_TRUE(w.regions[0].shmem && w.regions[0].shared && !w.regions[0].file);
  ASSERT_EQ(w.loop.size(), 3u);
  EXPECT_EQ(w.loop[1].kind, FileOpKind::kMadvise);
  EXPECT_EQ(w.loop[1].advice, FileAdvice::kPageout);
}

TEST(WorkloadFile, AMinimalFileParsesToItsOperations) {
  const WorkloadFile f = parse_workload_file(kHead + kLoop, "t.toml");
  ASSERT_EQ(f.regions.size(), 1u);
  EXPECT_EQ(resolve_values(f, nullptr)(f.regions[0].size), 65536u);
  ASSERT_EQ(f.loop.size(), 4u);
  EXPECT_EQ(f.loop[1].kind, FileOpKind::kTouch);
  EXPECT_TRUE(f.loop[1].write);
  EXPECT_EQ(f.loop[3].kind, FileOpKind::kCount);
  EXPECT_EQ(f.mode, WisMode::kThreads);
}

TEST(WorkloadFile, MalformedFilesAreLocatedErrors) {
  struct Case {
    std::string text, expected;
  };
  const std::string body = kHead + kLoop;
  const Case cases[] = {
      // Truncated mid-table: a TOML syntax error with its line and column.
      {body.substr(0, body.find("access") + 9), "t.toml:16:10: TOML syntax error"},
      // Wrong types and unknown keys.
      {kHead + kLoop + "[[loop]]\nop = 5\n", "t.toml:23:6: workload file: 'loop[4].op': expected a string"},
      {kHead + "colour = 1\n" + kLoop, "unknown key 'regions[0].colour'"},
      {kHead + kLoop + "[[loop]]\nop = \"fork\"\n", "'loop[4].op': expected one of mmap, munmap, touch"},
      // A region used before it is mapped, mapped twice, or never declared.
      {kHead + "[[loop]]\nop = \"touch\"\nregion = \"r\"\naccess = \"read\"\n[[loop]]\nop = \"count\"\n",
       "t.toml:11:6: workload file: loop[0].op: region 'r' is used before it is mapped"},
      {kHead + "[[setup]]\nop = \"mmap\"\nregion = \"r\"\n" + kLoop, "region 'r' is mapped already"},
      {kHead + "[[loop]]\nop = \"mmap\"\nregion = \"q\"\n", "no region 'q' is declared"},
      // Shared anonymous memory is shmem; shmem is shared; pageout is modeled for shmem only.
      {kHead.substr(0, kHead.find("size")) + "sharing = \"shared\"\nsize = \"64KiB\"\n" + kLoop,
       "write backing = \"shmem\""},
      {kHead.substr(0, kHead.find("backing")) + "backing = \"shmem\"\nsharing = \"private\"\nsize = \"64KiB\"\n" +
           kLoop,
       "a shmem region is MAP_SHARED | MAP_ANONYMOUS: it cannot be private"},
      {kHead + "[[setup]]\nop = \"mmap\"\nregion = \"r\"\n[[loop]]\nop = \"madvise\"\nregion = \"r\"\nadvice = "
               "\"pageout\"\n[[loop]]\nop = \"count\"\n",
       "\"pageout\" is modeled for shmem regions only, and 'r' is not one"},
      // A loop that leaves a region mapped, and one that counts nothing.
      {kHead + "[[loop]]\nop = \"mmap\"\nregion = \"r\"\n[[loop]]\nop = \"count\"\n",
       "the loop leaves region 'r' mapped"},
      {kHead + "[[loop]]\nop = \"mmap\"\nregion = \"r\"\n[[loop]]\nop = \"munmap\"\nregion = \"r\"\n",
       "the loop never counts"},
      // Absurd and inconsistent sizes.
      {kHead.substr(0, kHead.find("size")) + "size = \"9999999GiB\"\n" + kLoop, "expected an integer, a size"},
      {kHead.substr(0, kHead.find("size")) + "size = 1099511627776\n" + kLoop, "must be a whole number of 4096-byte"},
      {kHead.substr(0, kHead.find("size")) + "size = 100\n" + kLoop, "region 'r': size 100"},
      {kHead.substr(0, kHead.find("size")) + "size = \"$n\"\n" + kLoop, "no parameter 'n' is declared"},
      {kHead +
           "[[loop]]\nop = \"mmap\"\nregion = \"r\"\n[[loop]]\nop = \"touch\"\nregion = \"r\"\n"
           "access = \"read\"\noffset = 65536\n[[loop]]\nop = \"munmap\"\nregion = \"r\"\n[[loop]]\nop = \"count\"\n",
       "not a range inside region 'r'"},
      // Bodies: what may be inside for_each_page.
      {kHead + "[[loop]]\nop = \"mmap\"\nregion = \"r\"\n[[loop]]\nop = \"for_each_page\"\nregion = \"r\"\n"
               "body = [{ op = \"munmap\" }]\n",
       "'munmap' cannot be inside for_each_page"},
      // numa_scan and migrate_pages name no region; madvise's advice is dontneed or hugepage, and hugepage names a
      // range, so not inside for_each_page.
      {kHead + kLoop + "[[loop]]\nop = \"numa_scan\"\nregion = \"r\"\n", "unknown key 'loop[4].region'"},
      {kHead + kLoop + "[[loop]]\nop = \"compact_memory\"\nregion = \"r\"\n", "unknown key 'loop[4].region'"},
      {kHead + "[[setup]]\nop = \"mmap\"\nregion = \"r\"\n[[loop]]\nop = \"madvise\"\nregion = \"r\"\n"
               "advice = \"free\"\n[[loop]]\nop = \"count\"\n",
       "expected one of dontneed, hugepage"},
      {kHead + "[[loop]]\nop = \"mmap\"\nregion = \"r\"\n[[loop]]\nop = \"for_each_page\"\nregion = \"r\"\n"
               "body = [{ op = \"madvise\", advice = \"hugepage\" }]\n",
       "\"hugepage\" names a range: it cannot be inside for_each_page"},
      {"[workload]\nname = \"a b\"\n", "'workload.name': expected 1-64 letters"},
      // mprotect: whole pages; no write to a page it made read-only; the loop restores the protections it changed.
      {kHead + "[[setup]]\nop = \"mmap\"\nregion = \"r\"\n[[loop]]\nop = \"mprotect\"\nregion = \"r\"\n"
               "prot = \"read\"\nlength = 100\n[[loop]]\nop = \"count\"\n",
       "mprotect takes whole pages"},
      {kHead + "[[setup]]\nop = \"mmap\"\nregion = \"r\"\n[[loop]]\nop = \"mprotect\"\nregion = \"r\"\n"
               "prot = \"read\"\noffset = 8192\nlength = 4096\n[[loop]]\nop = \"touch\"\nregion = \"r\"\n"
               "access = \"write\"\n[[loop]]\nop = \"count\"\n",
       "t.toml:20:6: workload file: loop[1].op: this write reaches a page of region 'r' that an mprotect made "
       "read-only"},
      {kHead + "[[setup]]\nop = \"mmap\"\nregion = \"r\"\n[[loop]]\nop = \"mprotect\"\nregion = \"r\"\n"
               "prot = \"read\"\n[[loop]]\nop = \"count\"\n",
       "the loop leaves region 'r' with other protections than it found"},
      {kHead + "[[setup]]\nop = \"mmap\"\nregion = \"r\"\n[[loop]]\nop = \"mprotect\"\nregion = \"r\"\n"
               "prot = \"none\"\n[[loop]]\nop = \"count\"\n",
       "'loop[0].prot': expected one of read, read_write"},
      // What a spawned child may do.
      {kHead + kLoop + "[[loop]]\nop = \"spawn\"\nbody = [{ op = \"count\" }]\n", "cannot be in a spawned child"},
      {kHead + kLoop + "[[loop]]\nop = \"spawn\"\nbody = [{ op = \"touch\", region = \"r\", access = \"read\" }]\n",
       "region 'r' is used before it is mapped"},
      // Sleeps, placement.
      {kHead + kLoop + "[[loop]]\nop = \"sleep\"\nduration = \"5 parsecs\"\n", "'loop[4].duration'"},
      {kHead + kLoop + "[[loop]]\nop = \"sleep\"\nduration = \"2s\"\n", "expected 1ns to 1s"},
      {std::string("[workload]\nname = \"w\"\n[tasks]\nmode = \"threads\"\nplacement = \"cpus\"\ncpus = [1, -1]\n"),
       "'tasks.cpus': expected an array of integers from 0 to 4095, but an element is -1"},
      {std::string("[workload]\nname = \"w\"\n[tasks]\nmode = \"threads\"\nplacement = \"cpus\"\ncpus = []\n"),
       "needs at least one CPU"},
      // Pipes: only between a task and its partner; one side writes, the other reads; no side waits on itself.
      {kHead + "[[pipes]]\nname = \"p\"\n" + kLoop, "set partner = true under [tasks]"},
      {kPartner + "[[loop]]\nop = \"pipe_read\"\npipe = \"a\"\n[[loop]]\nop = \"count\"\n"
                  "[[partner_loop]]\nop = \"pipe_read\"\npipe = \"b\"\n",
       "both begin by reading a pipe"},
      {kPartner + "[[loop]]\nop = \"pipe_write\"\npipe = \"a\"\n[[loop]]\nop = \"pipe_read\"\npipe = \"a\"\n"
                  "[[loop]]\nop = \"count\"\n[[partner_loop]]\nop = \"pipe_write\"\npipe = \"b\"\n",
       "pipe 'a' must be written by one side of the pair and read by the other; here the task reads what it writes"},
      {kPartner + "[[loop]]\nop = \"pipe_write\"\npipe = \"a\"\n[[loop]]\nop = \"count\"\n"
                  "[[partner_loop]]\nop = \"pipe_read\"\npipe = \"c\"\n",
       "no pipe 'c' is declared"},
      {kPartner + "[[loop]]\nop = \"send\"\nsocket = \"a\"\n[[loop]]\nop = \"count\"\n"
                  "[[partner_loop]]\nop = \"pipe_read\"\npipe = \"a\"\n",
       "no socket 'a' is declared with [[sockets]] (declared: none)"},
      {kPartner + "[[loop]]\nop = \"pipe_write\"\npipe = \"a\"\n[[loop]]\nop = \"count\"\n",
       "partner = true needs a [[partner_loop]]"},
      {kPartner + "[[loop]]\nop = \"pipe_write\"\npipe = \"a\"\n[[loop]]\nop = \"count\"\n"
                  "[[partner_loop]]\nop = \"count\"\n",
       "'count' cannot be in partner_loop"},
      {kPartner + "[[loop]]\nop = \"pipe_write\"\npipe = \"a\"\nbytes = 70000\n[[loop]]\nop = \"count\"\n"
                  "[[partner_loop]]\nop = \"pipe_read\"\npipe = \"a\"\n",
       "'loop[0].bytes': expected an integer from 1 to 65536"},
      {"[workload]\nname = \"w\"\n", "missing required key 'tasks'"},
  };
  for (const Case& c : cases) {
    const std::string e = error_of(c.text);
    EXPECT_NE(e.find(c.expected), std::string::npos) << "expected \"" << c.expected << "\" in \"" << e << "\"\nfor:\n"
                                                     << c.text;
  }
}

TEST(WorkloadFile, ParametersAreDeclaredAndOverridden) {
  const std::string text = R"([workload]
name = "p"
[tasks]
mode = "processes"
placement = "pinned"
[params.pages]
default = 4
min = 1
max = 100
doc = "pages"
[[regions]]
name = "r"
backing = "file"
sharing = "shared"
per = "workload"
pages = "$pages"
)" + kLoop;
  const WorkloadFile f = parse_workload_file(text, "t.toml");
  EXPECT_EQ(f.mode, WisMode::kProcesses);
  EXPECT_TRUE(f.regions[0].file && f.regions[0].shared && !f.regions[0].per_task);
  EXPECT_EQ(resolve_values(f, nullptr)(f.regions[0].size), 4u * 4096);
  WorkloadArgs args("p", {"pages=10"});
  EXPECT_EQ(resolve_values(f, &args)(f.regions[0].size), 10u * 4096);
  WorkloadArgs bad("p", {"pages=101"});
  EXPECT_THROW(resolve_values(f, &bad), InputError);
}

TEST(WorkloadFile, NamesAreFilesByPathOrSuffix) {
  EXPECT_TRUE(is_workload_file_name("configs/workloads/tlb_flush2.toml"));
  EXPECT_TRUE(is_workload_file_name("tlb_flush2.toml"));
  EXPECT_FALSE(is_workload_file_name("tlb_flush2"));
  EXPECT_EQ(load_workload_file("tlb_flush2.toml")->name, "tlb_flush2");
  EXPECT_THROW(load_workload_file("no_such_workload.toml"), InputError);
  EXPECT_THROW(load_workload_file("/nonexistent/dir/w.toml"), InputError);
  EXPECT_THROW(make_workload("no_such_workload"), InputError);
}

}  // namespace
}  // namespace tlbsim::workloads
