// CancelToken: stops runs from outside — sets a flag that every step checks and wakes blocked operators.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>

namespace moka {

/// @brief A one-way switch shared by the runs it should stop.
///
/// cancel() makes every plan run holding the token end early *without* an error (its steps stop
/// at the next net boundary and their operators get cancel(), so blocking ones wake up). The
/// caller decides what a cancelled run means: LocalSession stops the other nodes of a TaskGroup
/// when one node failed; the CLI reports an interrupt.
///
/// @code
///   auto token = std::make_shared<CancelToken>();
///   RunOptions opts;  opts.cancel = token;
///   std::thread t([&] { run_plan(ws, plan, opts); });
///   token->cancel();  t.join();
/// @endcode
/// Thread-safety: all methods may be called from any thread.
class CancelToken {
 public:
  /// Sets the flag and runs every subscribed callback once. Idempotent.
  void cancel();
  bool cancelled() const noexcept { return cancelled_.load(std::memory_order_relaxed); }

  /// Keeps a callback subscribed while alive.
  class Subscription {
   public:
    Subscription() = default;
    Subscription(CancelToken* token, uint64_t id) : token_(token), id_(id) {}
    Subscription(Subscription&& o) noexcept : token_(o.token_), id_(o.id_) { o.token_ = nullptr; }
    Subscription& operator=(Subscription&&) = delete;
    Subscription(const Subscription&) = delete;
    ~Subscription();

   private:
    CancelToken* token_ = nullptr;
    uint64_t id_ = 0;
  };
  /// Calls fn on cancel() (at once if already cancelled). fn runs under the token's lock: it must
  /// not subscribe or cancel.
  [[nodiscard]] Subscription subscribe(std::function<void()> fn);

 private:
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::map<uint64_t, std::function<void()>> callbacks_;
  uint64_t next_id_ = 1;
};

}  // namespace moka
