// SimpleNet: validation of external inputs/outputs, operator construction, the run loop and cancellation.
#include "moka/exec/simple_net.h"

#include <fmt/format.h>

#include <exception>
#include <new>
#include <set>

#include "moka/core/error.h"
#include "moka/exec/control_ops.h"
#include "moka/exec/register_operators.h"
#include "moka/operators/registry.h"

namespace moka {

namespace {

bool known_net_type(const std::optional<std::string>& t) {
  if (!t) return true;
  // Every type runs sequentially in moka; the names Caffe2 used for parallel executors are
  // accepted so existing plans load.
  static const std::set<std::string> kTypes = {
      "", "simple", "dag", "async_dag", "async_scheduling", "async_simple", "async_polling", "parallel"};
  return kTypes.count(*t) != 0;
}

// docs/plan-execution.md §1.3: with external_input declared, every input must have a known source and every
// external_output must be produced.
void check_external_io(const NetDef& def) {
  if (def.external_input.empty()) return;
  std::set<std::string> known(def.external_input.begin(), def.external_input.end());
  for (std::size_t i = 0; i < def.op.size(); ++i) {
    const auto& op = def.op[i];
    for (const auto& in : op.input)
      if (!known.count(in))
        throw InvalidInput(fmt::format("op {}: Source for input {} is unknown for net {}, {}", op.type, in, def.name,
                                       OperatorBase::describe(op, static_cast<int>(i))));
    known.insert(op.output.begin(), op.output.end());
  }
  for (const auto& out : def.external_output)
    if (!known.count(out))
      throw InvalidInput(
          fmt::format("Some of the blobs are declared as output but never produced by the net {}, the first one is {}",
                      def.name, out));
}

}  // namespace

std::string describe_net(const std::string& name) { return fmt::format("net \"{}\"", name); }

SimpleNet::SimpleNet(NetDef def, Workspace* ws) : def_(std::move(def)) {
  register_all_operators();  // so every net can use Save/Load and If/While/Do (the operators layer cannot reach them)
  try {
    if (def_.name.empty()) throw InvalidInput("a net needs a name");
    if (!known_net_type(def_.type)) throw InvalidInput(fmt::format("unknown net type \"{}\"", *def_.type));
    check_external_io(def_);
    const auto& reg = OperatorRegistry::global();
    ops_.reserve(def_.op.size());
    for (std::size_t i = 0; i < def_.op.size(); ++i) {
      try {
        ops_.push_back(reg.create(def_.op[i], ws));
      } catch (Error& e) {
        e.add_context(OperatorBase::describe(def_.op[i], static_cast<int>(i)));
        throw;
      }
    }
  } catch (Error& e) {
    e.add_context(describe_net(def_.name));
    throw;
  }
}

SimpleNet::~SimpleNet() = default;

namespace {
// An operator and the blobs it writes, for an allocation failure: the tensor it could not allocate
// is one of them (`operator #0 (ConstantFill) writing "y"`).
std::string describe_writer(const OperatorDef& op, int index) {
  std::string out = OperatorBase::describe(op, index);
  if (op.output.empty()) return out;
  out += " writing ";
  for (std::size_t k = 0; k < op.output.size() && k < 4; ++k)
    out += fmt::format("{}\"{}\"", k ? ", " : "", op.output[k]);
  if (op.output.size() > 4) out += fmt::format(" and {} more", op.output.size() - 4);
  return out;
}
}  // namespace

void SimpleNet::rethrow_in_context(std::size_t i) {
  try {
    throw;
  } catch (OutOfMemory& e) {
    e.add_context(describe_writer(def_.op[i], static_cast<int>(i)));
    e.add_context(describe_net(def_.name));
    throw;
  } catch (const std::bad_alloc&) {
    // An allocation other than a tensor's (those throw OutOfMemory naming their size).
    OutOfMemory wrapped("out of memory (std::bad_alloc)");
    wrapped.add_context(describe_writer(def_.op[i], static_cast<int>(i)));
    wrapped.add_context(describe_net(def_.name));
    std::throw_with_nested(wrapped);
  } catch (Error& e) {
    e.add_context(OperatorBase::describe(def_.op[i], static_cast<int>(i)));
    e.add_context(describe_net(def_.name));
    throw;
  } catch (const std::exception& e) {
    RuntimeError wrapped(e.what());
    wrapped.add_context(OperatorBase::describe(def_.op[i], static_cast<int>(i)));
    wrapped.add_context(describe_net(def_.name));
    std::throw_with_nested(wrapped);
  }
}

void SimpleNet::op_failed(std::size_t i) {
  RuntimeError e("the operator reported failure");
  e.add_context(OperatorBase::describe(def_.op[i], static_cast<int>(i)));
  e.add_context(describe_net(def_.name));
  throw e;
}

void SimpleNet::run_ops_traced() {
  if (trace_names_.size() != ops_.size() + 1) {
    trace_names_.clear();
    trace_names_.push_back(trace_name_id(def_.name.empty() ? std::string_view("(unnamed net)") : def_.name));
    for (const auto& op : ops_)
      trace_names_.push_back(trace_name_id(op->output_size() > 0 ? fmt::format("{} {}", op->type(), op->output_name(0))
                                                                 : std::string(op->type())));
  }
  TraceSpan net_span(TraceCategory::net, trace_names_[0], TraceLevel::nets);
  if (!trace_enabled(TraceLevel::ops)) {
    run_ops();
    return;
  }
  const std::size_t n = ops_.size();
  for (std::size_t i = 0; i < n; ++i) {
    TraceSpan op_span(TraceCategory::op, trace_names_[i + 1], TraceLevel::ops);
    bool ok;
    try {
      ok = ops_[i]->run();
    } catch (...) {
      rethrow_in_context(i);
    }
    if (!ok) op_failed(i);
  }
}

void SimpleNet::cancel() {
  for (auto& op : ops_) op->cancel();
}

SimpleNet* create_net(Workspace& ws, const NetDef& def, bool overwrite) {
  if (!overwrite && ws.get_net(def.name))
    throw InvalidInput(
        fmt::format("I respectfully refuse to overwrite an existing net of the same name \"{}\", unless you explicitly "
                    "specify overwrite=true.",
                    def.name));
  if (overwrite) ws.remove_net(def.name);
  auto net = std::make_unique<SimpleNet>(def, &ws);
  return static_cast<SimpleNet*>(ws.add_net(std::move(net), overwrite));
}

void run_net(Workspace& ws, const std::string& name) {
  NetBase* net = ws.get_net(name);
  if (!net) throw NotFound(fmt::format("net \"{}\" is not registered in the workspace", name));
  net->run();
}

void run_net_once(Workspace& ws, const NetDef& def) {
  SimpleNet net(def, &ws);
  net.run();
}

}  // namespace moka
