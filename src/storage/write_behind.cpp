// WriteBehind (see write_behind.h): a queue of positional writes served by one thread.
#include "storage/write_behind.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/spin_wait.h"
#include "moka/core/error.h"

namespace moka::detail {

namespace {
constexpr std::size_t kMaxSpares = 2;  // finished buffers kept for reuse
}  // namespace

void pwrite_all(int fd, const char* buf, std::size_t n, uint64_t offset, const std::string& what) {
  while (n > 0) {
    const ssize_t put = ::pwrite(fd, buf, n, static_cast<off_t>(offset));
    if (put < 0) {
      if (errno == EINTR) continue;
      throw RuntimeError(fmt::format("{}: write at offset {} failed: {}", what, offset, std::strerror(errno)));
    }
    buf += put;
    n -= static_cast<std::size_t>(put);
    offset += static_cast<uint64_t>(put);
  }
}

WriteBehind::WriteBehind(int fd, std::string what, std::size_t max_in_flight)
    : fd_(fd), what_(std::move(what)), max_in_flight_(max_in_flight), thread_([this] { run(); }) {}

WriteBehind::~WriteBehind() {
  {
    std::unique_lock lock(mu_);
    done_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
    stop_ = true;
  }
  work_cv_.notify_one();
  thread_.join();
}

void WriteBehind::throw_if_failed() const {
  if (!error_.empty()) throw RuntimeError(error_);
}

// Room means under the bound, or nothing in flight (a buffer larger than the bound still goes).
bool WriteBehind::has_room(std::size_t n) const {
  return in_flight_ == 0 || in_flight_ + n <= max_in_flight_ || !error_.empty();
}

void WriteBehind::write(uint64_t offset, std::string bytes) {
  const std::size_t n = bytes.size();
  bool wake = false;
  {
    std::unique_lock lock(mu_);
    if (!has_room(n)) {
      const uint64_t seen = finished_.load(std::memory_order_relaxed);
      lock.unlock();
      spin_yield_until(kSpin, [&] { return finished_.load(std::memory_order_acquire) != seen; });
      lock.lock();
      done_cv_.wait(lock, [&] { return has_room(n); });
    }
    throw_if_failed();
    in_flight_ += n;
    queue_.push_back(Job{offset, std::move(bytes)});
    pushed_.fetch_add(1, std::memory_order_release);
    wake = sleeping_;
  }
  if (wake) work_cv_.notify_one();
}

void WriteBehind::wait() {
  std::unique_lock lock(mu_);
  done_cv_.wait(lock, [this] { return queue_.empty() && !busy_; });
  throw_if_failed();
}

std::string WriteBehind::spare_buffer() {
  std::lock_guard lock(mu_);
  if (spares_.empty()) return {};
  std::string s = std::move(spares_.back());
  spares_.pop_back();
  return s;
}

void WriteBehind::run() {
  std::unique_lock lock(mu_);
  for (;;) {
    if (queue_.empty() && !stop_) {
      const uint64_t seen = pushed_.load(std::memory_order_relaxed);
      lock.unlock();
      spin_yield_until(kSpin, [&] { return pushed_.load(std::memory_order_acquire) != seen || stop_; });
      lock.lock();
      sleeping_ = true;
      work_cv_.wait(lock, [this] { return !queue_.empty() || stop_; });
      sleeping_ = false;
    }
    if (queue_.empty()) return;  // stop_, and nothing left
    Job job = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    const bool skip = !error_.empty();
    lock.unlock();
    std::string failure;
    if (!skip) {
      try {
        pwrite_all(fd_, job.bytes.data(), job.bytes.size(), job.offset, what_);
      } catch (const std::exception& e) {
        failure = e.what();
      }
    }
    lock.lock();
    busy_ = false;
    in_flight_ -= job.bytes.size();
    if (!failure.empty() && error_.empty()) error_ = std::move(failure);
    finished_.fetch_add(1, std::memory_order_release);
    if (spares_.size() < kMaxSpares && job.bytes.capacity() > 0) {
      job.bytes.clear();
      spares_.push_back(std::move(job.bytes));
    }
    done_cv_.notify_all();
  }
}

}  // namespace moka::detail
