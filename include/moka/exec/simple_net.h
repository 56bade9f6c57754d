// SimpleNet: a NetDef instantiated in a workspace — operators constructed once with their blobs bound, run in order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "moka/core/net_base.h"
#include "moka/core/trace.h"
#include "moka/core/workspace.h"
#include "moka/defs/operator_def.h"
#include "moka/operators/operator.h"

namespace moka {

/// @brief An instantiated net (Caffe2's SimpleNet).
///
/// Construction validates every operator against its schema, checks external_input /
/// external_output and binds blobs (docs/plan-execution.md §1.2, §1.3). run() is a loop of virtual calls; an error
/// from an operator carries `net "N" > operator #i (Type)` in its context.
///
/// @code
///   SimpleNet* net = create_net(ws, def);   // registered in ws under def.name
///   net->run();
/// @endcode
/// Thread-safety: run() by one thread at a time; cancel() from any thread.
class SimpleNet final : public NetBase {
 public:
  SimpleNet(NetDef def, Workspace* ws);
  ~SimpleNet() override;

  const std::string& name() const override { return def_.name; }
  void run() override {
    if (trace_enabled(TraceLevel::nets)) [[unlikely]]
      run_ops_traced();
    else
      run_ops();
  }
  /// run() without the virtual call, for the executor's loop over a step's nets: the operator loop
  /// is inlined there, and the error paths stay out of line (a few ns per net in a pipe's per-batch
  /// path, where a batch runs nine one- or two-operator nets).
  void run_ops() {
    const std::size_t n = ops_.size();
    for (std::size_t i = 0; i < n; ++i) {
      bool ok;
      try {
        ok = ops_[i]->run();
      } catch (...) {
        rethrow_in_context(i);
      }
      if (!ok) op_failed(i);
    }
  }
  /// run_ops() recording a trace span for the net (TraceLevel::nets) and, at TraceLevel::ops, one per operator.
  void run_ops_traced();
  void cancel() override;

  const NetDef& def() const { return def_; }
  std::size_t size() const { return ops_.size(); }
  OperatorBase& op(std::size_t i) const { return *ops_[i]; }

 private:
  [[noreturn]] void op_failed(std::size_t i);
  // Rethrows the exception in flight with this net and operator i as context.
  [[noreturn, gnu::cold, gnu::noinline]] void rethrow_in_context(std::size_t i);
  NetDef def_;
  std::vector<std::unique_ptr<OperatorBase>> ops_;
  std::vector<uint32_t> trace_names_;  // the net's, then each operator's (filled by the first traced run)
};

/// Instantiates def in ws and registers it under def.name (InvalidInput when a net of that name
/// exists and !overwrite — Caffe2's "I respectfully refuse to overwrite ..."). With overwrite the
/// old net is removed before the new one is constructed.
SimpleNet* create_net(Workspace& ws, const NetDef& def, bool overwrite = false);

/// Runs a registered net by name (NotFound if none).
void run_net(Workspace& ws, const std::string& name);

/// Instantiates def in ws, runs it once and discards it (Caffe2's RunNetOnce).
void run_net_once(Workspace& ws, const NetDef& def);

/// "net \"name\"" for messages.
std::string describe_net(const std::string& name);

}  // namespace moka
