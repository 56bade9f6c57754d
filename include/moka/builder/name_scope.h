// NameScope: the thread-local blob-name prefix of Caffe2's core.NameScope, applied by
// Net::next_scoped_blob (and by the data layer's records and readers).
#pragma once

#include <concepts>
#include <string>
#include <utility>

namespace moka {

/// @brief The active name scope on this thread: "" or "<a>/<b>/" (always ending in '/').
/// Thread-safety: per thread.
const std::string& current_name_scope();

/// @brief `current_name_scope() + name` (Caffe2's `scope.ScopedName`).
std::string scoped_name(const std::string& name);

/// @brief Scoped blob-name prefix (Caffe2's `with core.NameScope(prefix, reset=False):`), RAII.
///
/// While the guard lives, the scope is the enclosing one plus `prefix + "/"` (an empty prefix
/// adds nothing; with reset the enclosing scope is dropped). The old scope comes back when the
/// guard is destroyed, exceptions included.
/// @code
///   {
///     moka::NameScope scope("init");
///     moka::BlobRef b = net.next_scoped_blob("uid");   // "init/uid"
///   }
///   moka::name_scope("proc1", [&] { out = moka::schema::NewRecord(net, rec); });
/// @endcode
/// Thread-safety: the scope is per thread; create and destroy the guard on the same thread.
class NameScope {
 public:
  explicit NameScope(const std::string& prefix, bool reset = false);
  ~NameScope();
  NameScope(const NameScope&) = delete;
  NameScope& operator=(const NameScope&) = delete;

 private:
  std::string old_;
};

/// @brief Runs body inside NameScope(prefix) and returns what it returns.
template <std::invocable F>
decltype(auto) name_scope(const std::string& prefix, F&& body) {
  NameScope guard(prefix);
  return std::forward<F>(body)();
}

}  // namespace moka
