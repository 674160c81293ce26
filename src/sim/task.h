// Coroutine tasks: modeled kernel functions are written as Task<T> coroutines that co_await each step.
#pragma once

#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include "sim/frame_pool.h"
#include "sim/source_site.h"

namespace tlbsim::sim {

// Told when a root task (one not awaited by another task) finishes. Contract: on_root_done runs inside the
// finishing frame's final suspension; it may destroy that frame and returns the coroutine to run next
// (std::noop_coroutine() for none).
class RootObserver {
 public:
  virtual std::coroutine_handle<> on_root_done(std::coroutine_handle<> finished, std::exception_ptr error) noexcept = 0;

 protected:
  ~RootObserver() = default;
};

// State common to every task promise: who continues when it finishes, its pooled frame, and the name of the
// function it runs.
struct PromiseBase {
  std::coroutine_handle<> continuation;
  RootObserver* root = nullptr;
  std::exception_ptr error;
  // The coroutine's function, as its last co_await saw it (the default argument of await_transform is evaluated
  // at the co_await): a suspended chain names each of its frames (the profiler's call stacks).
  const char* function = "";

  // Every co_await passes through here, to an awaiter that forwards to the awaited object in place (returning
  // a reference instead makes GCC 12 copy the object).
  template <class A>
  struct Forward {
    A& a;
    bool await_ready() { return a.await_ready(); }
    template <class H>
    decltype(auto) await_suspend(H h) {
      return a.await_suspend(h);
    }
    decltype(auto) await_resume() { return a.await_resume(); }
  };
  template <class A>
  Forward<std::remove_reference_t<A>> await_transform(A&& a, SourceSite site = SourceSite::current()) noexcept {
    function = site.function;
    return {a};
  }
  // The promise of a suspended task frame given type-erased. Contract: h is a frame of a Task coroutine (the only
  // coroutine type of the model); every TaskPromise has PromiseBase's alignment, so the promise lies where
  // PromiseBase's would.
  static const PromiseBase& of(std::coroutine_handle<> h) {
    return std::coroutine_handle<PromiseBase>::from_address(h.address()).promise();
  }

  static void* operator new(std::size_t size) { return FramePool::allocate(size); }
  static void operator delete(void* p, std::size_t size) noexcept { FramePool::deallocate(p, size); }

  std::suspend_always initial_suspend() noexcept { return {}; }

  struct FinalAwaiter {
    bool await_ready() noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> h) noexcept {
      PromiseBase& p = h.promise();
      if (p.continuation) return p.continuation;
      if (p.root != nullptr) return p.root->on_root_done(h, p.error);
      return std::noop_coroutine();
    }
    void await_resume() noexcept {}
  };
  FinalAwaiter final_suspend() noexcept { return {}; }
  void unhandled_exception() noexcept { error = std::current_exception(); }
};

template <class T>
class Task;

// The promise of Task<T>: stores the value (or nothing, for void).
template <class T>
struct TaskPromise : PromiseBase {
  std::optional<T> value;
  Task<T> get_return_object();
  template <class U>
  void return_value(U&& v) {
    value.emplace(std::forward<U>(v));
  }
};
template <>
struct TaskPromise<void> : PromiseBase {
  Task<void> get_return_object();
  void return_void() {}
};

// The owning coroutine handle and the awaiter plumbing shared by every Task<T>.
template <class Promise>
class TaskHandle {
 public:
  using Handle = std::coroutine_handle<Promise>;

  TaskHandle(TaskHandle&& o) noexcept : h_(std::exchange(o.h_, {})) {}
  TaskHandle& operator=(TaskHandle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, {});
    }
    return *this;
  }
  ~TaskHandle() { reset(); }

  bool await_ready() const noexcept { return false; }
  std::coroutine_handle<> await_suspend(std::coroutine_handle<> parent) noexcept {
    h_.promise().continuation = parent;
    return h_;
  }
  Handle release() { return std::exchange(h_, {}); }
  explicit operator bool() const { return static_cast<bool>(h_); }

 protected:
  TaskHandle() = default;
  explicit TaskHandle(Handle h) : h_(h) {}
  void rethrow_if_failed() const {
    if (h_.promise().error) std::rethrow_exception(h_.promise().error);
  }
  Handle h_;

 private:
  void reset() {
    if (h_) h_.destroy();
    h_ = {};
  }
};

// A lazily started coroutine returning T. Awaiting it runs it to completion (by symmetric transfer, so deep
// call chains use no native stack) and yields its value or rethrows its exception.
// Contract: a Task is awaited at most once, or handed to a Cpu as a root with release().
template <class T = void>
class [[nodiscard]] Task : public TaskHandle<TaskPromise<T>> {
 public:
  using promise_type = TaskPromise<T>;
  Task() = default;
  explicit Task(typename TaskHandle<promise_type>::Handle h) : TaskHandle<promise_type>(h) {}
  T await_resume() {
    this->rethrow_if_failed();
    return std::move(*this->h_.promise().value);
  }
};

template <>
class [[nodiscard]] Task<void> : public TaskHandle<TaskPromise<void>> {
 public:
  using promise_type = TaskPromise<void>;
  Task() = default;
  explicit Task(Handle h) : TaskHandle<promise_type>(h) {}
  void await_resume() { rethrow_if_failed(); }
};

template <class T>
Task<T> TaskPromise<T>::get_return_object() {
  static_assert(alignof(TaskPromise<T>) == alignof(PromiseBase), "PromiseBase::of needs the promise where its base is");
  return Task<T>(std::coroutine_handle<TaskPromise<T>>::from_promise(*this));
}
inline Task<void> TaskPromise<void>::get_return_object() {
  return Task<void>(std::coroutine_handle<TaskPromise<void>>::from_promise(*this));
}

}  // namespace tlbsim::sim
