// Session: what every session shares — the channel of a session in one process (include/moka/session/session.h).
#include "moka/session/session.h"

namespace moka {
namespace {

// One process: every allgather is its own value.
class LocalChannel final : public ProcessChannel {
 public:
  int process() const noexcept override { return 0; }
  int processes() const noexcept override { return 1; }
  std::vector<std::string> allgather(const std::string& value) override { return {value}; }
};

}  // namespace

std::unique_ptr<ProcessChannel> Session::open_channel() { return std::make_unique<LocalChannel>(); }

}  // namespace moka
