// BlobMutex: the mutex that CreateMutex puts in a blob and AtomicIter locks (Caffe2's unique_ptr<std::mutex>).
#pragma once

#include <mutex>

namespace moka {

/// @brief A std::mutex held by a blob, so operators of different nets can share it.
///
/// Meets the Lockable requirements: `std::lock_guard lk(blob.get_checked_mutable<BlobMutex>());`.
/// Thread-safety: lock/unlock/try_lock may be called concurrently, as for std::mutex.
// alignas(64): the mutex gets a cache line to itself. An uncontended lock/unlock is cheap only while
// the line stays in this core's cache; a small heap object next to, say, a tensor that another thread
// is writing (a pipe's records cross threads) would bounce with it.
class alignas(64) BlobMutex {
 public:
  BlobMutex() = default;
  BlobMutex(const BlobMutex&) = delete;
  BlobMutex& operator=(const BlobMutex&) = delete;

  void lock() { mu_.lock(); }
  void unlock() { mu_.unlock(); }
  bool try_lock() { return mu_.try_lock(); }
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

}  // namespace moka
