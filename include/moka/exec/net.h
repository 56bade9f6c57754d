// SimpleNet: a NetDef instantiated in a workspace — operators constructed once with their blobs bound, run in order.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "moka/core/net_base.h"
#include "moka/core/workspace.h"
#include "moka/defs/operator_def.h"
#include "moka/ops/operator.h"

namespace moka {

/// @brief An instantiated net (Caffe2's SimpleNet).
///
/// Construction validates every operator against its schema, checks external_input /
/// external_output (§1.3) and binds blobs (§1.2). run() is a loop of virtual calls; an error
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
  void run() override;
  void cancel() override;

  const NetDef& def() const { return def_; }
  std::size_t size() const { return ops_.size(); }
  OperatorBase& op(std::size_t i) const { return *ops_[i]; }

 private:
  [[noreturn]] void op_failed(std::size_t i);
  NetDef def_;
  std::vector<std::unique_ptr<OperatorBase>> ops_;
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
