// Reading a real kernel's off-CPU waits from ftrace text: which switch a stack trace belongs to, the reduction of a
// real stack to the model's frames, the --comm filter, and the refusals of malformed text.
#include "trace/ftrace_offcpu.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/atomic_file.h"
#include "util/error.h"

namespace tlbsim::trace {
namespace {

// Two threads of "storm" and a shell; CPU 1's events come between CPU 0's switch and its stack trace.
constexpr const char* kTrace =
    "# tracer: nop\n"
    "#\n"
    "   storm-11    [000] d..2.   100.000010: sched_switch: prev_comm=storm prev_pid=11 prev_prio=120 "
    "prev_state=D ==> next_comm=swapper/0 next_pid=0 next_prio=120\n"
    "   storm-12    [001] .....   100.000011: mmap_lock_start_locking: mm=00000000 memcg_id=1 write=true\n"
    "   storm-11    [000] d..2.   100.000015: <stack trace>\n"
    " => trace_event_raw_event_sched_switch\n"
    " => __schedule\n"
    " => schedule\n"
    " => schedule_preempt_disabled\n"
    " => rwsem_down_read_slowpath+0x2a1/0x4c0\n"
    " => down_read_killable\n"
    " => lock_mm_and_find_vma\n"
    " => exc_page_fault\n"
    " => asm_exc_page_fault\n"
    "   storm-12    [001] d..2.   100.000020: sched_switch: prev_comm=storm prev_pid=12 prev_prio=120 "
    "prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120\n"
    "   storm-12    [001] d..2.   100.000021: <stack trace>\n"
    " => __schedule\n"
    " => schedule\n"
    " => __vma_start_write\n"
    " => __split_vma\n"
    " => __vm_munmap\n"
    " => __x64_sys_munmap\n"
    " => do_syscall_64\n"
    "  <idle>-0       [000] d..2.   100.000040: sched_switch: prev_comm=swapper/0 prev_pid=0 prev_prio=120 "
    "prev_state=R ==> next_comm=storm next_pid=11 next_prio=120\n"
    "    bash-7       [000] d..2.   100.000050: sched_switch: prev_comm=bash prev_pid=7 prev_prio=120 "
    "prev_state=S ==> next_comm=storm next_pid=11 next_prio=120\n"
    "    bash-7       [000] d..2.   100.000051: <stack trace>\n"
    " => __schedule\n"
    " => schedule\n"
    " => pipe_read\n"
    " => vfs_read\n"
    "  <idle>-0       [001] d..2.   100.000070: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 "
    "prev_state=R ==> next_comm=storm next_pid=12 next_prio=120\n"
    "   storm-11    [000] d..2.   100.000080: sched_switch: prev_comm=storm prev_pid=11 prev_prio=120 "
    "prev_state=S ==> next_comm=bash next_pid=7 next_prio=120\n";

TEST(FtraceOffCpu, AttachesEachStackToItsSwitchAndReducesItToTheModelsFrames) {
  const FtraceOffCpu r = read_ftrace_offcpu(kTrace, "t.txt", "storm");
  EXPECT_EQ(r.switches, 6u);
  EXPECT_EQ(r.stacks, 2u);  // bash's is not counted
  const auto rows = r.profile.rows();
  ASSERT_EQ(rows.size(), 2u) << r.profile.table(0);
  EXPECT_EQ(rows[0]->stack, (std::vector<std::string>{"sys_munmap", "__vma_enter_locked"}));
  EXPECT_EQ(rows[0]->waits, (std::vector<sim::Duration>{sim::microseconds(50)}));  // 100.000020 -> 100.000070
  EXPECT_EQ(rows[1]->stack, (std::vector<std::string>{"handle_mm_fault", "rwsem_down_read_slowpath"}));
  EXPECT_EQ(rows[1]->waits, (std::vector<sim::Duration>{sim::microseconds(30)}));  // the first switch-in: 40 - 10
  EXPECT_EQ(r.profile.still_out(), 1u);                                            // storm-11's last switch-out

  // Every task but the idle ones: bash's wait, in pipe_read (no model frame: the innermost below the scheduler).
  const FtraceOffCpu all = read_ftrace_offcpu(kTrace, "t.txt", "");
  bool bash = false;
  for (const OffCpuProfile::Row* row : all.profile.rows()) {
    if (row->comm == "bash") {
      bash = true;
      EXPECT_EQ(row->stack, (std::vector<std::string>{"pipe_read"}));
      EXPECT_EQ(row->state, "S");
    }
  }
  EXPECT_TRUE(bash) << all.profile.table(0);
}

TEST(FtraceOffCpu, ModelFrames) {
  EXPECT_EQ(model_frames({"schedule", "rwsem_down_write_slowpath", "down_write_killable", "vm_mmap_pgoff",
                          "ksys_mmap_pgoff", "__x64_sys_mmap", "do_syscall_64"}),
            (std::vector<std::string>{"sys_mmap", "rwsem_down_write_slowpath"}));
  EXPECT_EQ(model_frames({}), (std::vector<std::string>{"(no stack trace)"}));
  EXPECT_EQ(model_frames({"__schedule", "schedule"}), (std::vector<std::string>{"schedule"}));
}

// The excerpt of a real trace (mmap_storm's two threads on a 2-vCPU KVM guest, Linux 6.18.44, docs/fidelity-notes.md
// part 11) reads into the rows the model has.
TEST(FtraceOffCpu, ARealTraceExcerpt) {
  const std::string path = std::string(TLBSIM_SOURCE_DIR) + "/tests/data/offcpu/mmap_storm_kvm_6.18.txt";
  const FtraceOffCpu r = read_ftrace_offcpu(read_file(path), path, "storm");
  EXPECT_EQ(r.profile.waits(), 17u) << r.profile.table(0);
  EXPECT_EQ(r.profile.rows()[0]->stack, (std::vector<std::string>{"handle_mm_fault", "rwsem_down_read_slowpath"}));
}

void expect_refused(const std::string& text, const std::string& what) {
  try {
    (void)read_ftrace_offcpu(text, "bad.txt", "");
    ADD_FAILURE() << "accepted: " << text;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(FtraceOffCpu, RefusesMalformedText) {
  expect_refused("", "bad.txt: no sched_switch events");
  expect_refused("# only comments\n", "no sched_switch events");
  expect_refused(
      "  a-1 [000] d..2. 1.x: sched_switch: prev_comm=a prev_pid=1 prev_state=D ==> next_comm=b next_pid=2\n",
      "bad.txt:1: no timestamp");
  expect_refused("  a-1 [000] d..2. 1.5: sched_switch: prev_comm=a prev_state=D ==> next_comm=b next_pid=2\n",
                 "bad.txt:1: sched_switch without 'prev_pid='");
  expect_refused(
      "  a-1 [000] d..2. 1.5: sched_switch: prev_comm=a prev_pid=z prev_state=D ==> next_comm=b next_pid=2\n",
      "not a number");
  expect_refused(
      "  a-1 [000] d..2. 2.0: sched_switch: prev_comm=a prev_pid=1 prev_state=D ==> next_comm=b next_pid=2\n"
      "  b-2 [000] d..2. 1.0: sched_switch: prev_comm=b prev_pid=2 prev_state=D ==> next_comm=a next_pid=1\n",
      "bad.txt:2: sched_switch earlier");
  expect_refused(
      "  a-1 [000] d..2. 2.0: sched_switch: prev_comm=a prev_pid=1 prev_state=D ==> next_comm=b next_pid=2\n"
      "  nodash [000] d..2. 2.0: <stack trace>\n",
      "bad.txt:2: a stack trace without");
  expect_refused(
      "  a-1 [000] d..2. 2.0: sched_switch: prev_comm=a prev_pid=1 prev_state=D ==> next_comm=b next_pid=2\n"
      "  a-1 [000] d..2. 2.0: <stack trace>\n"
      " => +0x10/0x20\n",
      "bad.txt:3: a stack frame without a name");
}

}  // namespace
}  // namespace tlbsim::trace
