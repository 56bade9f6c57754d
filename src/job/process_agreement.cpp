// ProcessAgreement: steps across the processes of a session, with one outcome everywhere (src/job/process_agreement.h).
#include "job/process_agreement.h"

#include <exception>

#include "core/error_record.h"
#include "moka/session/session.h"

namespace moka::detail {

ProcessAgreement::ProcessAgreement(Session& session)
    : allgather_([&session](const std::string& v) { return session.allgather(v); }),
      process_(session.process()),
      processes_(session.processes()) {}

ProcessAgreement::ProcessAgreement(ProcessChannel& channel)
    : allgather_([&channel](const std::string& v) { return channel.allgather(v); }),
      process_(channel.process()),
      processes_(channel.processes()) {}

std::vector<std::string> ProcessAgreement::all(const std::function<std::string()>& step) { return exchange(&step); }

std::string ProcessAgreement::leader(const std::function<std::string()>& step) {
  return exchange(leader() ? &step : nullptr).front();
}

// Each process's record: 'K' and its result, or 'E' and the error it met (core/error_record.h).
std::vector<std::string> ProcessAgreement::exchange(const std::function<std::string()>* step) {
  std::string mine = "K";
  if (step) {
    try {
      mine += (*step)();
    } catch (...) {
      mine = "E" + error_record(std::current_exception());
    }
  }
  std::vector<std::string> all = allgather_(mine);
  for (size_t p = 0; p < all.size(); ++p) {
    if (!all[p].empty() && all[p][0] == 'E') rethrow_record(std::string_view(all[p]).substr(1), static_cast<int>(p));
  }
  for (auto& r : all) r.erase(0, 1);
  return all;
}

}  // namespace moka::detail
