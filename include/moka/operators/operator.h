// OperatorBase: an operator instantiated in a workspace, with its input and output blobs bound once.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "moka/core/blob.h"
#include "moka/core/tensor.h"
#include "moka/core/workspace.h"
#include "moka/defs/operator_def.h"
#include "moka/operators/arguments.h"

namespace moka {

/// @brief Base class of every operator.
///
/// Construction binds blobs as Caffe2 does (docs/plan-execution.md §1.2): each input must already exist in the
/// workspace chain (InvalidInput otherwise), each output is create_blob()'ed — so an output
/// that exists in a parent workspace is written in place there. Running is a virtual call;
/// no name lookups happen after construction.
///
/// Thread-safety: run() is called by one thread at a time; cancel() may be called from any
/// thread while run() is blocked, and must make it return (or throw) promptly.
class OperatorBase {
 public:
  OperatorBase(const OperatorDef& def, Workspace* ws);
  virtual ~OperatorBase() = default;
  OperatorBase(const OperatorBase&) = delete;
  OperatorBase& operator=(const OperatorBase&) = delete;

  /// Runs once. Returns false to report failure (the net turns it into an error); may throw.
  virtual bool run() = 0;
  /// Wakes a blocked run(). Default: nothing to wake.
  virtual void cancel() {}

  const OperatorDef& def() const { return def_; }
  const std::string& type() const { return def_.type; }
  std::size_t input_size() const { return inputs_.size(); }
  std::size_t output_size() const { return outputs_.size(); }
  Blob& input_blob(std::size_t i) const { return *inputs_[i]; }
  Blob& output_blob(std::size_t i) const { return *outputs_[i]; }
  const std::vector<Blob*>& input_blobs() const { return inputs_; }
  const std::vector<Blob*>& output_blobs() const { return outputs_; }
  const std::string& input_name(std::size_t i) const { return def_.input[i]; }
  const std::string& output_name(std::size_t i) const { return def_.output[i]; }
  Workspace* workspace() const { return ws_; }
  const Arguments& args() const { return args_; }

  /// Input i as a tensor that has been filled; TypeError naming the input otherwise.
  const Tensor& input(std::size_t i) const {
    const Tensor* t = inputs_[i]->tensor_or_null();
    if (t == nullptr || !t->defined()) throw_input_not_tensor(i);
    return *t;
  }
  /// Output i as a tensor (replacing any non-tensor content).
  Tensor& output(std::size_t i) { return outputs_[i]->get_mutable<Tensor>(); }
  /// Input i holding a T; TypeError naming the input otherwise.
  template <class T>
  T& input_object(std::size_t i) const {
    if (!inputs_[i]->is_type<T>()) throw_input_type(i, type_info_of<T>());
    return inputs_[i]->get_checked_mutable<T>();
  }

  /// "operator #3 (Add \"label\")" given the operator's position in its net.
  static std::string describe(const OperatorDef& def, int index);

 protected:
  [[noreturn]] void throw_input_not_tensor(std::size_t i) const;
  [[noreturn]] void throw_input_type(std::size_t i, const TypeInfo& want) const;

 private:
  OperatorDef def_;  // a copy: operators outlive the definitions they were made from
  Workspace* ws_;
  Arguments args_;
  std::vector<Blob*> inputs_;
  std::vector<Blob*> outputs_;
};

}  // namespace moka
