// The consistency checks of a parsed workload file, apart from its parser (workload_file.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/file/workload_file.h"

namespace tlbsim::workloads {

// After parsing: each region is mapped before it is used and never mapped twice, the loop leaves every region as it
// found it and counts something, and each pipe joins the two sides of a pair. Throws InputError at the operation.
void check_operations(WorkloadFile& f, const std::string& loop_where);
// With the values resolved (`size`: each region's bytes): every range lies inside its region, madvise and mprotect
// take whole pages, no write touch reaches a page an mprotect made read-only, and the loop leaves the protections
// as it found them.
void check_ranges(const WorkloadFile& f, const ResolvedValues& v, const std::vector<std::uint64_t>& size);

}  // namespace tlbsim::workloads
