// NetBase: what a Workspace's net registry holds. The exec layer implements it (moka::Net).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace moka {

/// @brief An instantiated net, as far as the workspace that registers it needs to know.
class NetBase {
 public:
  virtual ~NetBase() = default;
  virtual const std::string& name() const = 0;
  /// Runs every operator once, in order; throws on failure.
  virtual void run() = 0;
  /// Asks every operator to stop blocking (thread-safe; best effort).
  virtual void cancel() = 0;

  /// A number no other net object of this process had before (later nets get larger ones). A
  /// prepared plan compares it, not the address, to know that the net registered under a name is
  /// still the one it instantiated: a replacement may be allocated where the old one was.
  uint64_t serial() const noexcept { return serial_; }

 protected:
  NetBase() noexcept : serial_(next_serial_.fetch_add(1, std::memory_order_relaxed) + 1) {}
  NetBase(const NetBase&) = delete;
  NetBase& operator=(const NetBase&) = delete;

 private:
  inline static std::atomic<uint64_t> next_serial_{0};
  const uint64_t serial_;
};

}  // namespace moka
