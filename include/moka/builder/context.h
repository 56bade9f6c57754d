// Context stacks: per-type, thread-local stacks of the active builder objects (Caffe2's
// context.py), and the hook that gives new nets the name of the active NetBuilder as a prefix.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace moka {

/// @brief Tag base: a type deriving from it gets a default instance when none is active.
///
/// Caffe2's DefaultManaged (Cluster, Node): `Context<T>::current()` on an empty stack constructs
/// `T()` and pushes it **permanently** on the calling thread's stack, so every later lookup on
/// that thread sees the same default object. T must be default-constructible.
struct DefaultManaged {};

namespace detail {

/// "NetBuilder" for moka::NetBuilder: the demangled name without the "moka::" prefix.
std::string context_type_name(const std::type_info& type);
[[noreturn]] void throw_no_active_context(const std::type_info& type);
[[noreturn]] void throw_context_mismatch(const std::type_info& type);

template <class T>
struct ContextStack {
  std::vector<T*> items;                     // innermost last
  std::vector<std::unique_ptr<T>> defaults;  // owned default instances (DefaultManaged only)
};

// One stack per type and thread. A function-local thread_local in a template is shared by all
// translation units (vague linkage), so every TU sees the same stack.
template <class T>
ContextStack<T>& context_stack() {
  thread_local ContextStack<T> stack;
  return stack;
}

}  // namespace detail

/// @brief The thread-local stack of active objects of type T (Caffe2's Managed classes).
///
/// A Python `with obj:` block becomes `ContextGuard<T> g(obj);` (or `with_context(obj, fn)`):
/// obj is pushed for the guard's lifetime and popped on scope exit, exceptions included. The
/// stack stores pointers, so obj must outlive its guard (it always does when the guard lives
/// in the same scope).
///
/// @code
///   struct Job {};
///   Job job;
///   moka::with_context(job, [] { Job* j = moka::Context<Job>::current(); /* == &job */ });
///   moka::Context<Job>::current(false);   // nullptr: none active
///   moka::Context<Job>::current();        // InvalidInput "Context Job is required but none is active."
/// @endcode
/// Thread-safety: every thread has its own stacks; an object pushed on one thread is not active
/// on another.
template <class T>
class Context {
 public:
  /// Makes obj the innermost active T on this thread.
  static void push(T& obj) { detail::context_stack<T>().items.push_back(&obj); }

  /// Removes obj, which must be the innermost active T (InvalidInput otherwise, nothing popped).
  static void pop(T& obj) {
    auto& items = detail::context_stack<T>().items;
    if (items.empty() || items.back() != &obj) detail::throw_context_mismatch(typeid(T));
    items.pop_back();
  }

  /// @brief The innermost active T.
  ///
  /// None active: a DefaultManaged T gets its default instance (created and pushed for good);
  /// otherwise nullptr when !required, else InvalidInput
  /// "Context T is required but none is active.".
  static T* current(bool required = true) {
    auto& stack = detail::context_stack<T>();
    if (!stack.items.empty()) return stack.items.back();
    if constexpr (std::is_base_of_v<DefaultManaged, T>) {
      auto owned = std::make_unique<T>();
      T* p = owned.get();
      // The constructor may itself have pushed something (e.g. registered with an outer
      // context); the default goes on top either way.
      stack.defaults.push_back(std::move(owned));
      stack.items.push_back(p);
      return p;
    } else {
      if (required) detail::throw_no_active_context(typeid(T));
      return nullptr;
    }
  }

  /// Caffe2's `current(value)`: the given object when there is one, else current(required).
  static T* current(T* given, bool required) { return given ? given : current(required); }

  /// Number of active objects on this thread (default instances included).
  static std::size_t depth() { return detail::context_stack<T>().items.size(); }
};

/// @brief RAII push/pop of one object on Context<T> (a Python `with` block).
///
/// The destructor never throws: if the stack was disturbed (a push without a matching pop
/// inside the scope), it removes obj and everything pushed above it, so the stack is sane again
/// after an exception.
/// Thread-safety: create and destroy on the same thread.
template <class T>
class ContextGuard {
 public:
  explicit ContextGuard(T& obj) : obj_(&obj) { Context<T>::push(obj); }
  ~ContextGuard() {
    auto& items = detail::context_stack<T>().items;
    for (std::size_t i = items.size(); i > 0; --i) {
      if (items[i - 1] == obj_) {
        items.resize(i - 1);
        return;
      }
    }
  }
  ContextGuard(const ContextGuard&) = delete;
  ContextGuard& operator=(const ContextGuard&) = delete;

 private:
  T* obj_;
};

/// Runs fn() with obj active in Context<T>; returns what fn returns.
template <class T, class F>
decltype(auto) with_context(T& obj, F&& fn) {
  ContextGuard<T> guard(obj);
  return std::forward<F>(fn)();
}

/// @brief The name of the innermost active NetBuilder on this thread, "" when there is none.
///
/// Caffe2's `Net.current_prefix()`: a new Net's name is prefixed with it ("builder/net"). Until
/// a NetBuilder exists this is always "". Thread-safety: reads only this thread's state.
std::string current_net_builder_name();

namespace detail {
/// Where current_net_builder_name() gets its answer. The NetBuilder implementation installs
/// its reader once (it looks at its own Context stack, which is already thread-local); nullptr
/// restores the "" default. Thread-safe.
using NetBuilderNameSource = std::string (*)();
void set_net_builder_name_source(NetBuilderNameSource source);
}  // namespace detail

}  // namespace moka
