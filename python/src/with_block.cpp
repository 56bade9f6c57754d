// WithBlock: Python `with` blocks around builders that take a C++ body (python/src/with_block.h).
#include "with_block.h"

#include <exception>

#include "exec/fiber.h"
#include "moka/core/error.h"

namespace moka::python {
namespace {
// Thrown into the builder's body when the Python block raised: the builder unwinds as after a failed body.
struct BlockRaised {};
}  // namespace

WithBlock::WithBlock(Call call) : call_(std::move(call)) {}

WithBlock::~WithBlock() {
  // A block entered and never exited (its with statement cannot do that; a direct __enter__ call can):
  // unwind the builder so nothing stays on its stacks.
  if (in_body_) {
    try {
      finish(false);
    } catch (...) {
    }
  }
}

void WithBlock::enter() {
  if (entered_) throw InvalidInput("this with block has been entered already (make a new one)");
  entered_ = true;
  fiber_ = std::make_unique<detail::Fiber>([this] {
    call_([this] {
      if (in_body_) throw InvalidInput("a builder ran the body of a Python with block twice");
      in_body_ = true;
      fiber_->yield(false);  // to __enter__: the Python block runs now
      in_body_ = false;
      if (abandon_) throw BlockRaised{};
    });
  });
  fiber_->resume();
  if (fiber_->finished() && fiber_->error()) {
    std::exception_ptr e = fiber_->error();
    fiber_.reset();
    std::rethrow_exception(e);
  }
}

void WithBlock::exit(bool body_ok) {
  if (!in_body_) return;  // the builder ended before its body (enter() threw), or never called it
  finish(body_ok);
}

void WithBlock::finish(bool body_ok) {
  abandon_ = !body_ok;
  fiber_->resume();
  if (!fiber_->finished()) throw RuntimeError("a builder waited after its with block's body (not supported)");
  std::exception_ptr e = fiber_->error();
  fiber_.reset();
  if (e && body_ok) std::rethrow_exception(e);
}

}  // namespace moka::python
