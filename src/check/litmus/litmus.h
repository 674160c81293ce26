// Litmus tests in the C format of the kernel's tools/memory-model/litmus-tests, run by the checker's own engine:
// each process is a coroutine on its CPU of an exploring scheduler, its accesses go through hw::Memory under the
// chosen memory model, and every schedule (store-buffer commits included) is explored, pruning states seen before.
//
// The subset (anything else is refused with FILE:LINE and what was found): an initial state of int variables
// (`{}`, `{ x=1; int y; int z = 2; }`); processes P0..Pn taking `int *x` (or `spinlock_t *s`, `atomic_t *a`)
// parameters (`int **y`: a location holding an address), declaring `int rN;` or `int *rN;` registers; statements
// WRITE_ONCE, READ_ONCE, smp_store_release, smp_load_acquire, rcu_assign_pointer (a release), rcu_dereference (a
// READ_ONCE), rcu_read_lock and rcu_read_unlock (barrier()), smp_mb, smp_rmb, smp_wmb, smp_mb__before_atomic,
// smp_mb__after_atomic, barrier, the xchg
// family (xchg, xchg_relaxed, xchg_acquire, xchg_release, cmpxchg and its variants), atomic_read, atomic_set,
// atomic_inc/dec/add/sub and their _return and fetch_ forms, spin_lock, spin_unlock, spin_is_locked (a load of
// the lock word), register assignments and
// `if (EXPR) ... [else ...]`; expressions of registers, integers, + - & | ^ == != < > <= >= && || !; a final
// `exists`, `~exists` or `forall` over `N:rK=V` and `x=V` terms with /\, \/, ~ and parentheses.
// Pointers: a variable's name is its address, as a value (`y=z;` in the initial state, `rcu_assign_pointer(*y, x)`,
// `1:r0=x`); an access through a register that holds one (`READ_ONCE(*r0)`) has an address dependency on the loads
// its value came from, which the POWER model honours.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "hw/store_buffer.h"
#include "util/error.h"

namespace tlbsim::check::litmus {

// A litmus file that uses a construct outside the subset (a located InputError: the caller may skip the file).
class Unsupported : public InputError {
 public:
  using InputError::InputError;
};

struct Expr {
  enum class Kind : std::uint8_t { kConst, kReg, kUnary, kBinary } kind = Kind::kConst;
  long long value = 0;  // kConst
  int reg = -1;         // kReg: index into the thread's registers
  std::string op;       // kUnary ("!", "-"), kBinary
  std::unique_ptr<Expr> a, b;
};

struct Stmt {
  enum class Kind : std::uint8_t {
    kWrite,    // WRITE_ONCE(*x, e), atomic_set(x, e)
    kRead,     // r = READ_ONCE(*x), r = atomic_read(x), r = spin_is_locked(s)
    kRelease,  // smp_store_release(x, e)
    kAcquire,  // r = smp_load_acquire(x)
    kFence,    // smp_mb() ...
    kRmw,      // the xchg family and the atomic RMWs; r (optional) gets the old or new value
    kLock,     // spin_lock(s)
    kUnlock,   // spin_unlock(s)
    kAssign,   // r = e
    kIf,       // if (e) body [else orelse]
  } kind = Kind::kAssign;
  int line = 0;
  int var = -1;       // the location (index into LitmusTest::vars), or
  int addr_reg = -1;  // the register that holds its address
  int reg = -1;    // the destination register, or -1
  std::string fn;  // the kernel function, for fences and RMWs (e.g. "smp_mb", "xchg_acquire", "atomic_add_return")
  std::unique_ptr<Expr> e, e2;  // value (kWrite, kRelease, kAssign, kRmw operand / cmpxchg old), cmpxchg new
  std::vector<Stmt> body, orelse;
};

struct Thread {
  std::vector<std::string> regs;
  std::vector<Stmt> body;
};

// The final condition.
struct Cond {
  enum class Kind : std::uint8_t { kTrue, kRegEq, kVarEq, kNot, kAnd, kOr } kind = Kind::kTrue;
  int thread = -1, reg = -1, var = -1;
  long long value = 0;
  std::unique_ptr<Cond> a, b;
};

// A pointer to shared variable `var`, as a value: far above any number a test writes.
inline constexpr long long kAddressBase = 1LL << 40;
inline constexpr long long address_of(int var) { return kAddressBase + var; }

struct LitmusTest {
  std::string name;
  std::string origin;             // the file
  std::string expected;           // the file's "Result:" line (Never, Sometimes, Always), or ""
  std::vector<std::string> vars;  // shared locations, in order of first mention
  std::vector<long long> init;    // their initial values
  std::vector<Thread> threads;
  enum class Quantifier : std::uint8_t { kExists, kNotExists, kForall } quantifier = Quantifier::kExists;
  Cond cond;
  bool dependencies = false;  // some access goes through a register (an address dependency)
};

// Throws InputError "ORIGIN:LINE: what" for a malformed file and Unsupported for one outside the subset.
LitmusTest parse_litmus(const std::string& text, const std::string& origin);

struct LitmusResult {
  std::uint64_t final_states = 0;  // distinct final states
  std::uint64_t satisfying = 0;    // of them, those satisfying the condition
  std::uint64_t runs = 0;          // schedules run (each until it completes or meets a state seen before)
  std::uint64_t states = 0;        // distinct states at choice points
  bool complete = false;           // every schedule was explored within the budget
  // The condition's verdict as herd prints it: "Never", "Sometimes" or "Always" (over the final states).
  std::string verdict;
  // exists: the condition is reachable; ~exists: it is not; forall: it always holds.
  bool positive = false;
};

// Explores every schedule of the test under `model`, at most `max_runs`.
LitmusResult run_litmus(const LitmusTest& t, hw::MemoryModel model, std::uint64_t max_runs = 10'000'000);

}  // namespace tlbsim::check::litmus
