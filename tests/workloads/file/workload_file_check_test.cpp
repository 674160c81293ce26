// The workload file's consistency checks (workload_file_check.cpp) on the protections mprotect leaves: page ranges,
// for_each_page writes and the loop's restoring of what it changed.
#include "workloads/file/workload_file_check.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>

#include "util/error.h"
#include "workloads/file/workload_file.h"

namespace tlbsim::workloads {
namespace {

// A 4-page region, mapped in setup; `loop` follows and ends with a count.
std::string file(const std::string& loop) {
  return "[workload]\nname = \"w\"\n[tasks]\nmode = \"threads\"\nplacement = \"pinned\"\n[[regions]]\nname = \"r\"\n"
         "backing = \"anonymous\"\npages = 4\n[[setup]]\nop = \"mmap\"\nregion = \"r\"\n" +
         loop + "[[loop]]\nop = \"count\"\n";
}

std::string protect(const char* prot, int first_page, int pages) {
  return "[[loop]]\nop = \"mprotect\"\nregion = \"r\"\nprot = \"" + std::string(prot) +
         "\"\noffset = " + std::to_string(first_page * 4096) + "\nlength = " + std::to_string(pages * 4096) + "\n";
}

std::string error_of(const std::string& text) {
  try {
    const WorkloadFile f = parse_workload_file(text, "t.toml");
    check_ranges(f, resolve_values(f, nullptr), {4 * 4096});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

const std::string kWriteAll = "[[loop]]\nop = \"touch\"\nregion = \"r\"\naccess = \"write\"\n";
const std::string kWriteEachPage =
    "[[loop]]\nop = \"for_each_page\"\nregion = \"r\"\nbody = [{ op = \"touch\", access = \"write\" }]\n";

TEST(WorkloadFileCheck, AWriteMayNotReachAPageAnMprotectMadeReadOnly) {
  EXPECT_EQ(error_of(file(kWriteAll + protect("read", 0, 4) + protect("read_write", 0, 4))), "");
  EXPECT_NE(error_of(file(protect("read", 3, 1) + kWriteAll + protect("read_write", 3, 1))).find("read-only"),
            std::string::npos);
  EXPECT_NE(error_of(file(protect("read", 1, 1) + kWriteEachPage + protect("read_write", 1, 1))).find("read-only"),
            std::string::npos);
  // Reads of read-only pages are fine; so is a write to the pages that stayed writable.
  EXPECT_EQ(
      error_of(file(protect("read", 2, 2) +
                    "[[loop]]\nop = \"touch\"\nregion = \"r\"\naccess = \"write\"\nlength = 8192\n" +
                    "[[loop]]\nop = \"touch\"\nregion = \"r\"\naccess = \"read\"\n" + protect("read_write", 2, 2))),
      "");
}

TEST(WorkloadFileCheck, TheLoopRestoresTheProtectionsItChanged) {
  EXPECT_NE(error_of(file(protect("read", 0, 2) + protect("read_write", 0, 1))).find("other protections"),
            std::string::npos);
  // Two halves made writable again restore the whole range.
  EXPECT_EQ(error_of(file(protect("read", 0, 4) + protect("read_write", 0, 2) + protect("read_write", 2, 2))), "");
}

// Regions r (4 pages, mapped in setup) and s (`s_pages`, of `backing`); `loop` follows and ends with a count.
std::string two_regions(const std::string& loop, int s_pages = 4, const char* backing = "anonymous") {
  return "[workload]\nname = \"w\"\n[tasks]\nmode = \"threads\"\nplacement = \"pinned\"\n[[regions]]\nname = \"r\"\n"
         "backing = \"anonymous\"\npages = 4\n[[regions]]\nname = \"s\"\nbacking = \"" +
         std::string(backing) + "\"\npages = " + std::to_string(s_pages) +
         "\n[[setup]]\nop = \"mmap\"\nregion = \"r\"\n" + loop + "[[loop]]\nop = \"count\"\n";
}

std::string error_of_two(const std::string& text) {
  try {
    const WorkloadFile f = parse_workload_file(text, "t.toml");
    const ResolvedValues v = resolve_values(f, nullptr);
    check_ranges(f, v, {v(f.regions[0].size), v(f.regions[1].size)});
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string op(const char* kind, const char* region, const std::string& extra = "") {
  return fmt::format("[[loop]]\nop = \"{}\"\nregion = \"{}\"\n{}", kind, region, extra);
}

// mremap moves r onto the mapped s (MREMAP_FIXED): s is mapped afterwards and r is not; both private anonymous, of
// one size, each one mapping.
TEST(WorkloadFileCheck, MremapMovesARegionOntoAMappedOneOfItsSize) {
  const std::string there = op("mmap", "s") + op("mremap", "r", "to = \"s\"\n");
  const std::string back = op("mmap", "r") + op("mremap", "s", "to = \"r\"\n");
  EXPECT_EQ(error_of_two(two_regions(there + back)), "");
  EXPECT_NE(error_of_two(two_regions(op("mremap", "r", "to = \"s\"\n"))).find("'s' is not mapped"), std::string::npos);
  EXPECT_NE(error_of_two(two_regions(op("mremap", "r", "to = \"r\"\n"))).find("may not overlap"), std::string::npos);
  EXPECT_NE(error_of_two(two_regions(op("mremap", "r", "to = \"q\"\n"))).find("t.toml:"), std::string::npos);
  EXPECT_NE(error_of_two(two_regions(there + back, 8)).find("of one size"), std::string::npos);
  EXPECT_NE(error_of_two(two_regions(there + back, 4, "shmem")).find("private anonymous regions only"),
            std::string::npos);
  // The source is unmapped afterwards; a loop that leaves it so is refused.
  EXPECT_NE(
      error_of_two(two_regions(there + op("touch", "r", "access = \"write\"\n") + back)).find("before it is mapped"),
      std::string::npos);
  EXPECT_NE(error_of_two(two_regions(there)).find("leaves region"), std::string::npos);
  // Half read-only: two VMAs, and mremap moves one. All read-only moves, and the destination keeps it.
  const std::string ro_half = "offset = 0\nlength = 8192\nprot = \"read\"\n";
  EXPECT_NE(error_of_two(two_regions(op("mprotect", "r", ro_half) + there + back)).find("both protections"),
            std::string::npos);
  EXPECT_NE(error_of_two(two_regions(op("mprotect", "r", "prot = \"read\"\n") + there +
                                     op("touch", "s", "access = \"write\"\n") + back +
                                     op("mprotect", "r", "prot = \"read_write\"\n")))
                .find("read-only"),
            std::string::npos);
  EXPECT_EQ(error_of_two(two_regions(op("mprotect", "r", "prot = \"read\"\n") + there + back +
                                     op("mprotect", "r", "prot = \"read_write\"\n"))),
            "");
}

}  // namespace
}  // namespace tlbsim::workloads
