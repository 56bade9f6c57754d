// NetBase: what a Workspace's net registry holds. The exec layer implements it (moka::Net).
#pragma once

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
};

}  // namespace moka
