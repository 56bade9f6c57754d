// PeerFinished: the error of a node that waited, in a collective or for a queue, on a node that had already ended
// its share of the run; a consequence of that node ending, so a session reports another node's error first.
#pragma once

#include <exception>

#include "moka/core/error.h"

namespace moka {

/// @brief A node waited on a node that finished its share of the run without making the same call (a collective
/// of a common world, the export of a queue it connects to). Bad input when nothing else failed (the nodes' plans
/// disagree); when another node failed, that failure usually ended the other one early, and a session reports it
/// instead (docs/collectives.md §2).
class PeerFinished : public InvalidInput {
 public:
  using InvalidInput::InvalidInput;
  std::exception_ptr clone() const override { return std::make_exception_ptr(*this); }
};

/// True when `error` holds a PeerFinished.
bool is_peer_finished(const std::exception_ptr& error) noexcept;

}  // namespace moka
