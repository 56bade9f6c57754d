// PeerFinished: telling it apart from the other errors of a run (docs/collectives.md §2).
#include "moka/operators/peer_finished.h"

namespace moka {

bool is_peer_finished(const std::exception_ptr& error) noexcept {
  if (!error) return false;
  try {
    std::rethrow_exception(error);
  } catch (const PeerFinished&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace moka
