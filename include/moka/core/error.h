// moka's exception hierarchy. Every error names what it is about (step, net, operator, blob);
// layers add context on the way out with add_context(), keeping the exception's dynamic type.
#pragma once

#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace moka {

/// @brief Base of every exception moka throws.
///
/// The message is the innermost description; add_context() prepends outer locations
/// ("step \"train\" > net \"n\" > operator #2 (Add)") without changing the dynamic type,
/// so `catch (moka::Error& e) { e.add_context(...); throw; }` keeps the original class.
///
/// what() stays short however deep the error was: a path of more than kMaxShownContext locations
/// shows the kOuterContext outermost and the kInnerContext innermost ones with
/// "(N more levels)" between them, and a location longer than kMaxLocationChars is cut in its
/// middle ("..."). context() keeps every location whole.
class Error : public std::exception {
 public:
  static constexpr std::size_t kMaxShownContext = 10;
  static constexpr std::size_t kOuterContext = 3;
  static constexpr std::size_t kInnerContext = 5;
  static constexpr std::size_t kMaxLocationChars = 160;

  explicit Error(std::string message);
  const char* what() const noexcept override { return full_.c_str(); }
  /// The innermost message, without context.
  const std::string& message() const noexcept { return message_; }
  /// Locations from outermost to innermost.
  const std::vector<std::string>& context() const noexcept { return context_; }
  /// Adds an outer location. Not thread-safe: only the thread that owns the exception calls it.
  void add_context(std::string where);
  /// A copy of this exception with the same dynamic type (context included), for another thread
  /// to rethrow and add its own context to (see copy_for_rethrow). The classes below override it;
  /// a class derived from them that does not is copied as its base (copy_for_rethrow checks).
  virtual std::exception_ptr clone() const { return std::make_exception_ptr(*this); }

 private:
  void rebuild();
  std::string message_;
  std::vector<std::string> context_;
  std::string full_;
};

/// Bad input: plan JSON, definitions, operator arguments, CLI flags. The CLI exits with 2.
class InvalidInput : public Error {
 public:
  using Error::Error;
  std::exception_ptr clone() const override { return std::make_exception_ptr(*this); }
};

/// Stored bytes (a checkpoint record, a DB file) fail a check: wrong magic, unsupported version,
/// checksum mismatch, truncation, inconsistent sizes. A kind of InvalidInput, so existing handlers
/// of bad input catch it too; the message names the blob and record (chunk) involved.
class CorruptData : public InvalidInput {
 public:
  using InvalidInput::InvalidInput;
  std::exception_ptr clone() const override { return std::make_exception_ptr(*this); }
};

/// A blob or tensor holds a different type, dtype or shape than an operation needs.
class TypeError : public Error {
 public:
  using Error::Error;
  std::exception_ptr clone() const override { return std::make_exception_ptr(*this); }
};

/// A named blob, net or registry entry does not exist.
class NotFound : public Error {
 public:
  using Error::Error;
  std::exception_ptr clone() const override { return std::make_exception_ptr(*this); }
};

/// A failure while running (an operator reported failure, a worker could not be stopped, ...).
class RuntimeError : public Error {
 public:
  using Error::Error;
  std::exception_ptr clone() const override { return std::make_exception_ptr(*this); }
};

/// Memory could not be allocated (a tensor too large for this machine). A kind of RuntimeError, so
/// the CLI exits with 1; the message names the bytes and what they were for (dtype and shape).
class OutOfMemory : public RuntimeError {
 public:
  using RuntimeError::RuntimeError;
  std::exception_ptr clone() const override { return std::make_exception_ptr(*this); }
};

/// An operation was cancelled because a sibling failed or the run was stopped.
class Cancelled : public Error {
 public:
  using Error::Error;
  std::exception_ptr clone() const override { return std::make_exception_ptr(*this); }
};

/// @brief The exception to rethrow when several threads may rethrow the same stored exception
/// (the first error of a step that concurrent instances share) and each adds its context.
///
/// A moka::Error becomes a private copy of the same dynamic type (Error::clone), so that no two
/// threads add context to one object (a data race, and every rethrower's locations would pile up
/// in one message). Anything else — an Error subclass without its own clone(), an Error that
/// carries a nested exception (std::throw_with_nested) — is returned as it is. Thread-safety: thread-safe, provided
/// nobody adds context to `e` meanwhile.
std::exception_ptr copy_for_rethrow(const std::exception_ptr& e);

}  // namespace moka
