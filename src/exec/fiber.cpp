// Fiber: context switches (x86-64 assembly, ucontext elsewhere) between a scheduler and functions on
// their own mmap'ed stacks, annotated for the sanitizers; run_on_fibers: round-robin turns, backing
// off when no fiber can move.
#include "exec/fiber.h"

#include "moka/core/trace.h"

#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <system_error>
#include <thread>
#include <vector>

#include "core/spin_wait.h"

// GCC defines __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang answers __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define MOKA_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MOKA_FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define MOKA_FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MOKA_FIBER_TSAN 1
#endif
#endif
#if MOKA_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#if MOKA_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace moka::detail {

namespace {

constexpr std::size_t kStackBytes = std::size_t{8} << 20;  // a thread's default; reserved, committed on use
constexpr std::size_t kMaxPooledStacks = 64;

// CLOCK_MONOTONIC_COARSE: a few ns through the vDSO; its 1-4 ms ticks are fine for turns of 2 ms.
int64_t coarse_now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

// Stacks of finished fibers, reused by later ones (a pipe's run makes its fibers afresh each time).
struct StackPool {
  std::mutex mu;
  std::vector<void*> free;
};
StackPool& stack_pool() {
  static auto* pool = new StackPool();  // never destroyed: fibers may end during static teardown
  return *pool;
}

void* take_stack() {
  {
    StackPool& pool = stack_pool();
    std::lock_guard lk(pool.mu);
    if (!pool.free.empty()) {
      void* s = pool.free.back();
      pool.free.pop_back();
      return s;
    }
  }
  const std::size_t guard = page_size();
  void* m = ::mmap(nullptr, kStackBytes + guard, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED) throw std::system_error(errno, std::generic_category(), "fiber stack: mmap");
  if (::mprotect(m, guard, PROT_NONE) != 0) {
    const int err = errno;
    ::munmap(m, kStackBytes + guard);
    throw std::system_error(err, std::generic_category(), "fiber stack: mprotect of the guard page");
  }
  return m;
}

#if defined(__x86_64__)
// moka_fiber_switch(from, to): pushes the callee-saved registers and the MXCSR / x87 control words on
// the current stack, stores the stack pointer in *from, loads `to` and pops the same from there. A new
// fiber's stack is laid out as if it had switched away just before moka_fiber_start, which calls
// r12(rbx) — entry(self) — on a 16-byte aligned stack.
asm(R"(
  .text
  .globl moka_fiber_switch
  .hidden moka_fiber_switch
  .type moka_fiber_switch,@function
moka_fiber_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size moka_fiber_switch,.-moka_fiber_switch

  .globl moka_fiber_start
  .hidden moka_fiber_start
  .type moka_fiber_start,@function
moka_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  movq %rbx, %rdi
  callq *%r12
  ud2
  .cfi_endproc
  .size moka_fiber_start,.-moka_fiber_start
  .section .note.GNU-stack,"",@progbits
  .text
)");
extern "C" void moka_fiber_switch(void** from, void* to);
extern "C" void moka_fiber_start();

void make_context(FiberContext& c, void* lo, std::size_t size, void (*fn)(void*), void* arg) {
  auto top = (reinterpret_cast<std::uintptr_t>(lo) + size) & ~std::uintptr_t{15};
  auto* slot = reinterpret_cast<uint64_t*>(top);
  slot[-1] = reinterpret_cast<uint64_t>(&moka_fiber_start);  // popped by ret
  slot[-2] = 0;                                              // rbp
  slot[-3] = reinterpret_cast<uint64_t>(arg);                // rbx
  slot[-4] = reinterpret_cast<uint64_t>(fn);                 // r12
  slot[-5] = slot[-6] = slot[-7] = 0;                        // r13, r14, r15
  slot[-8] = uint64_t{0x1F80} | (uint64_t{0x037F} << 32);    // MXCSR and x87 control word defaults
  c.sp = &slot[-8];
}

void switch_context(FiberContext& from, FiberContext& to) { moka_fiber_switch(&from.sp, to.sp); }
#else
void start_ucontext(unsigned fn_lo, unsigned fn_hi, unsigned arg_lo, unsigned arg_hi) {
  auto fn = reinterpret_cast<void (*)(void*)>((static_cast<std::uintptr_t>(fn_hi) << 32) | fn_lo);
  fn(reinterpret_cast<void*>((static_cast<std::uintptr_t>(arg_hi) << 32) | arg_lo));
}

void make_context(FiberContext& c, void* lo, std::size_t size, void (*fn)(void*), void* arg) {
  if (::getcontext(&c.uc) != 0) throw std::system_error(errno, std::generic_category(), "fiber: getcontext");
  c.uc.uc_stack.ss_sp = lo;
  c.uc.uc_stack.ss_size = size;
  c.uc.uc_link = nullptr;  // the fiber never returns from entry(): it switches back for good
  const auto f = reinterpret_cast<std::uintptr_t>(fn);
  const auto a = reinterpret_cast<std::uintptr_t>(arg);
  ::makecontext(&c.uc, reinterpret_cast<void (*)()>(&start_ucontext), 4, static_cast<unsigned>(f),
                static_cast<unsigned>(f >> 32), static_cast<unsigned>(a), static_cast<unsigned>(a >> 32));
}

void switch_context(FiberContext& from, FiberContext& to) { ::swapcontext(&from.uc, &to.uc); }
#endif

void give_back_stack(void* s) {
#if MOKA_FIBER_ASAN
  // Frames of the finished fiber never returned: clear their poisoning before another fiber uses it.
  __asan_unpoison_memory_region(static_cast<char*>(s) + page_size(), kStackBytes);
#endif
  StackPool& pool = stack_pool();
  {
    std::lock_guard lk(pool.mu);
    if (pool.free.size() < kMaxPooledStacks) {
      pool.free.push_back(s);
      return;
    }
  }
  ::munmap(s, kStackBytes + page_size());
}

}  // namespace

Fiber::Fiber(std::function<void()> body) : body_(std::move(body)) {
  stack_ = take_stack();
  try {
    make_context(ctx_, stack_bottom(), kStackBytes, &Fiber::entry, this);
  } catch (...) {
    give_back_stack(stack_);
    throw;
  }
#if MOKA_FIBER_TSAN
  tsan_fiber_ = __tsan_create_fiber(0);
#endif
}

Fiber::~Fiber() {
#if MOKA_FIBER_TSAN
  if (tsan_fiber_) __tsan_destroy_fiber(tsan_fiber_);
#endif
  // A fiber destroyed before it finished (its scheduler failed) leaves its frames unrun; its stack is
  // reused all the same — nothing on it is referenced from outside once nobody resumes it.
  give_back_stack(stack_);
}

void* Fiber::stack_bottom() const noexcept { return static_cast<char*>(stack_) + page_size(); }

void Fiber::entry(void* arg) {
  auto* self = static_cast<Fiber*>(arg);
#if MOKA_FIBER_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &self->caller_stack_, &self->caller_stack_size_);
#endif
  self->run_body();
  self->finished_ = true;
  self->switch_to_caller(/*finishing=*/true);
  std::terminate();  // never resumed after finishing
}

void Fiber::run_body() noexcept {
  try {
    body_();
  } catch (...) {
    error_ = std::current_exception();
  }
}

void Fiber::resume() {
  outer_ = t_fiber;
  t_fiber = this;
  idle_ = false;
  const int64_t outer_turn_started = t_turn_started_ns;  // the outer fiber's turn goes on after this one
  t_turn_started_ns = coarse_now_ns();
  const uint32_t outer_lane = trace_set_lane(trace_lane);
#if MOKA_FIBER_TSAN
  tsan_caller_ = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(tsan_fiber_, 0);
#endif
#if MOKA_FIBER_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, stack_bottom(), kStackBytes);
#endif
  switch_context(caller_, ctx_);
#if MOKA_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  t_fiber = outer_;
  t_turn_started_ns = outer_turn_started;
  trace_set_lane(outer_lane);
}

void preempt_if_turn_over() noexcept {
  if (coarse_now_ns() - t_turn_started_ns >= kFiberTurnNs) t_fiber->yield(/*idle=*/false);
}

void Fiber::switch_to_caller(bool finishing) noexcept {
#if MOKA_FIBER_TSAN
  __tsan_switch_to_fiber(tsan_caller_, 0);
#endif
#if MOKA_FIBER_ASAN
  __sanitizer_start_switch_fiber(finishing ? nullptr : &asan_fake_, caller_stack_, caller_stack_size_);
#else
  (void)finishing;
#endif
  switch_context(ctx_, caller_);
#if MOKA_FIBER_ASAN
  __sanitizer_finish_switch_fiber(asan_fake_, &caller_stack_, &caller_stack_size_);
#endif
}

void Fiber::yield(bool idle) noexcept {
  idle_ = idle;
  switch_to_caller(/*finishing=*/false);
}

void run_on_fibers(std::size_t n, const std::function<void(std::size_t)>& job) {
  std::vector<std::unique_ptr<Fiber>> fibers;
  fibers.reserve(n);
  for (std::size_t j = 0; j < n; ++j) {
    fibers.push_back(std::make_unique<Fiber>([&job, j] { job(j); }));
    fibers.back()->trace_lane = static_cast<uint32_t>(j + 1);
  }
  std::size_t live = n;
  int idle_rounds = 0;
  bool moved = false;  // some fiber made progress since this thread last yielded to an outer fiber
  auto sleep = std::chrono::microseconds(10);
  while (live > 0) {
    bool progress = false;
    for (auto& f : fibers) {
      if (f->finished()) continue;
      f->resume();
      if (f->finished()) {
        --live;
        progress = true;
      } else if (!f->idle()) {
        progress = true;
      }
    }
    if (progress || live == 0) {
      moved = true;
      idle_rounds = 0;
      sleep = std::chrono::microseconds(10);
      // Nested in a fiber: busy fibers here must not starve that fiber's siblings. Checked every round
      // (not every 16th call as preempt_point does: the fibers' own calls share its counter).
      if (t_fiber != nullptr) preempt_if_turn_over();
      continue;
    }
    // Every fiber waits for something outside this round.
    if (FiberYield* outer = t_fiber) {
      outer->yield(/*idle=*/!moved);  // not idle to the outer scheduler if these fibers got anywhere
      moved = false;
    } else if (++idle_rounds <= 64) {
      spin_yield();
    } else {
      BlockingScope blocking;
      std::this_thread::sleep_for(sleep);
      sleep = std::min<std::chrono::microseconds>(sleep * 2, std::chrono::milliseconds(1));
    }
  }
  for (auto& f : fibers)
    if (f->error()) std::rethrow_exception(f->error());
}

}  // namespace moka::detail
