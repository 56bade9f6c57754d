// TaskOutput and TaskOutputList: blobs a task hands back after a session run (docs/tasks.md §4).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "moka/builder/blob_ref.h"
#include "moka/core/tensor.h"

namespace moka {

/// How a session reads an output blob after a run (a copy of the tensor on the producing node).
using OutputFetchFn = std::function<Tensor(const std::string& blob)>;

/// @brief Names of blobs a Task outputs; after a session run, their values (Caffe2's TaskOutput).
///
/// A handle: copies share state, so the object returned by final_output() sees the values the
/// session sets later.
/// @code
///   moka::TaskOutput o = moka::final_output(total);
///   session.run(task);
///   int64_t v = o.fetch<int64_t>();   // the blob's single element
/// @endcode
/// Thread-safety: set by the session after the run, read by the user afterwards.
class TaskOutput {
 public:
  /// An empty list output.
  TaskOutput();
  /// A scalar output: one blob.
  TaskOutput(BlobRef blob);  // NOLINT: implicit, like Python's TaskOutput(blob)
  /// A list output.
  explicit TaskOutput(std::vector<BlobRef> blobs);

  const std::vector<std::string>& names() const;
  bool is_scalar() const;
  /// Called by sessions: the blob names holding the values, how to read them, and which run set
  /// them (`source`: a number the setter chose, never reused; 0 for none).
  void set(std::vector<std::string> values, OutputFetchFn fetch, uint64_t source = 0);
  bool is_set() const;
  /// The `source` given with the values last set (0 when unset). A session compares it with its
  /// own so that, after another session ran the same task, its next run points the output back
  /// at its own workspaces.
  uint64_t source() const;
  /// The blob names holding the values ("Output value not set yet." before a run).
  std::vector<std::string> get() const;
  /// The value of a scalar output ("Cannot fetch value for this output." before a run).
  Tensor fetch() const;
  /// The single element of a scalar output, typed (TypeError on a dtype mismatch).
  template <class T>
  T fetch() const {
    return fetch().item<T>();
  }
  /// Every value, in order (list or scalar).
  std::vector<Tensor> fetch_all() const;
  /// "TaskOutput(names=['a'], values=None)"
  std::string repr() const;
  bool same_as(const TaskOutput& other) const { return state_ == other.state_; }

 private:
  struct State {
    std::vector<std::string> names;
    bool scalar = false;
    bool set = false;
    std::vector<std::string> values;
    OutputFetchFn fetch;
    uint64_t source = 0;
  };
  std::shared_ptr<State> state_;
};

/// @brief The outputs of a task in order, set together (Caffe2's TaskOutputList).
class TaskOutputList {
 public:
  TaskOutputList() = default;
  explicit TaskOutputList(std::vector<TaskOutput> outputs) : outputs_(std::move(outputs)) {}
  const std::vector<TaskOutput>& outputs() const { return outputs_; }
  /// All names, concatenated.
  std::vector<std::string> names() const;
  /// Slices values over the outputs ("Wrong number of output values." when the total differs).
  void set_values(const std::vector<std::string>& values, const OutputFetchFn& fetch, uint64_t source = 0);
  /// Every output was last set with this source (TaskOutput::source()).
  bool set_by(uint64_t source) const;

 private:
  std::vector<TaskOutput> outputs_;
};

/// Python-style list repr: "['a', 'b']".
std::string repr_list(const std::vector<std::string>& items);

}  // namespace moka
