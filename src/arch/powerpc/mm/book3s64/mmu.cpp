// The powerpc64 radix ArchMmu eras: Linux v4.14 (seed 001's base) and v6.2 (seed 004's base), one implementation
// (arch/powerpc/mm/book3s64/radix_tlb.h) whose behaviour is chosen by the profile's version.
#include "arch/powerpc/mm/book3s64/radix_tlb.h"
#include "util/registry.h"

namespace tlbsim::powerpc {

namespace {

class RadixMmu414 final : public RadixMmu {
 public:
  kernel::KernelVersion since() const override { return {4, 14}; }
  kernel::KernelVersion until() const override { return {4, 14}; }
};

class RadixMmu62 final : public RadixMmu {
 public:
  kernel::KernelVersion since() const override { return {6, 2}; }
  kernel::KernelVersion until() const override { return {6, 2}; }
};

TLBSIM_REGISTER(kernel::ArchMmu, RadixMmu414, "powerpc-radix-4.14",
                "powerpc64 radix, v4.14: tlb-radix.c, mm_is_thread_local picks tlbiel or tlbie, masks never trimmed");
TLBSIM_REGISTER(kernel::ArchMmu, RadixMmu62, "powerpc-radix-6.2",
                "powerpc64 radix, v6.2: radix_tlb.c, flush_type_needed, mm_cpumask trimming by exit_flush_lazy_tlbs");

}  // namespace

}  // namespace tlbsim::powerpc
