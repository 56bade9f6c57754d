// TaskOutput / TaskOutputList: names, values set by sessions, typed fetch, reprs.
#include "moka/builder/task_output.h"

#include <fmt/format.h>

#include "moka/core/error.h"

namespace moka {

std::string repr_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (const auto& s : items) out += fmt::format("{}'{}'", out.size() > 1 ? ", " : "", s);
  return out + "]";
}

TaskOutput::TaskOutput() : state_(std::make_shared<State>()) {}

TaskOutput::TaskOutput(BlobRef blob) : TaskOutput() {
  state_->names = {blob.name()};
  state_->scalar = true;
}

TaskOutput::TaskOutput(std::vector<BlobRef> blobs) : TaskOutput() {
  for (const auto& b : blobs) state_->names.push_back(b.name());
}

const std::vector<std::string>& TaskOutput::names() const { return state_->names; }
bool TaskOutput::is_scalar() const { return state_->scalar; }
bool TaskOutput::is_set() const { return state_->set; }

void TaskOutput::set(std::vector<std::string> values, OutputFetchFn fetch, uint64_t source) {
  if (values.size() != state_->names.size())
    throw InvalidInput(fmt::format("TaskOutput {} expects {} values, got {}", repr_list(state_->names),
                                   state_->names.size(), values.size()));
  state_->values = std::move(values);
  state_->fetch = std::move(fetch);
  state_->set = true;
  state_->source = source;
}

uint64_t TaskOutput::source() const { return state_->set ? state_->source : 0; }

std::vector<std::string> TaskOutput::get() const {
  if (!state_->set) throw InvalidInput("Output value not set yet.");
  return state_->values;
}

std::vector<Tensor> TaskOutput::fetch_all() const {
  if (!state_->set || !state_->fetch) throw InvalidInput("Cannot fetch value for this output.");
  std::vector<Tensor> out;
  out.reserve(state_->values.size());
  for (const auto& v : state_->values) out.push_back(state_->fetch(v));
  return out;
}

Tensor TaskOutput::fetch() const {
  if (!state_->scalar)
    throw InvalidInput(fmt::format("TaskOutput {} is a list; use fetch_all()", repr_list(state_->names)));
  return std::move(fetch_all().front());
}

std::string TaskOutput::repr() const {
  return fmt::format("TaskOutput(names={}, values={})", repr_list(state_->names),
                     state_->set ? repr_list(state_->values) : "None");
}

std::vector<std::string> TaskOutputList::names() const {
  std::vector<std::string> out;
  for (const auto& o : outputs_) out.insert(out.end(), o.names().begin(), o.names().end());
  return out;
}

void TaskOutputList::set_values(const std::vector<std::string>& values, const OutputFetchFn& fetch, uint64_t source) {
  if (values.size() != names().size()) throw InvalidInput("Wrong number of output values.");
  std::size_t k = 0;
  for (auto& o : outputs_) {
    const std::size_t n = o.names().size();
    o.set(std::vector<std::string>(values.begin() + static_cast<std::ptrdiff_t>(k),
                                   values.begin() + static_cast<std::ptrdiff_t>(k + n)),
          fetch, source);
    k += n;
  }
}

bool TaskOutputList::set_by(uint64_t source) const {
  for (const auto& o : outputs_)
    if (o.source() != source) return false;
  return true;
}

}  // namespace moka
