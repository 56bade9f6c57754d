// moka's exception hierarchy. Every error names what it is about (step, net, operator, blob);
// layers add context on the way out with add_context(), keeping the exception's dynamic type.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace moka {

/// @brief Base of every exception moka throws.
///
/// The message is the innermost description; add_context() prepends outer locations
/// ("step \"train\" > net \"n\" > operator #2 (Add)") without changing the dynamic type,
/// so `catch (moka::Error& e) { e.add_context(...); throw; }` keeps the original class.
class Error : public std::exception {
 public:
  explicit Error(std::string message);
  const char* what() const noexcept override { return full_.c_str(); }
  /// The innermost message, without context.
  const std::string& message() const noexcept { return message_; }
  /// Locations from outermost to innermost.
  const std::vector<std::string>& context() const noexcept { return context_; }
  /// Adds an outer location. Not thread-safe: only the thread that owns the exception calls it.
  void add_context(std::string where);

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
};

/// Stored bytes (a checkpoint record, a DB file) fail a check: wrong magic, unsupported version,
/// checksum mismatch, truncation, inconsistent sizes. A kind of InvalidInput, so existing handlers
/// of bad input catch it too; the message names the blob and record (chunk) involved.
class CorruptData : public InvalidInput {
 public:
  using InvalidInput::InvalidInput;
};

/// A blob or tensor holds a different type, dtype or shape than an operation needs.
class TypeError : public Error {
 public:
  using Error::Error;
};

/// A named blob, net or registry entry does not exist.
class NotFound : public Error {
 public:
  using Error::Error;
};

/// A failure while running (an operator reported failure, a worker could not be stopped, ...).
class RuntimeError : public Error {
 public:
  using Error::Error;
};

/// An operation was cancelled because a sibling failed or the run was stopped.
class Cancelled : public Error {
 public:
  using Error::Error;
};

}  // namespace moka
