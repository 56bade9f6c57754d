// run_task_group: per-node plans on worker threads, first failure cancels the rest, error rethrown with its node.
#include "moka/session/run_task_group.h"

#include <fmt/format.h>

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>

#include "moka/core/error.h"
#include "moka/exec/worker_pool.h"

namespace moka {

namespace {

std::string describe_node(const std::string& node) { return fmt::format("node \"{}\"", node); }

void run_node(const NodePlanDef& node, Workspace& ws, const RunOptions& options) {
  try {
    run_plan(ws, node.plan, options);
  } catch (Error& e) {
    e.add_context(describe_node(node.node));
    throw;
  } catch (const std::exception& e) {
    RuntimeError wrapped(e.what());
    wrapped.add_context(describe_node(node.node));
    std::throw_with_nested(wrapped);
  }
}

}  // namespace

void run_task_group(const TaskGroupDef& group, NodeWorkspaces& workspaces, const RunOptions& options) {
  for (const auto& node : group.nodes) {
    try {
      check_plan(node.plan);
    } catch (Error& e) {
      e.add_context(describe_node(node.node));
      throw;
    }
  }
  if (workspaces.shared()) {
    // One workspace for all nodes: a net name used by two nodes would be re-created by one while
    // the other runs it.
    std::map<std::string, std::string> owner;
    for (const auto& node : group.nodes)
      for (const auto& net : node.plan.network) {
        auto [it, fresh] = owner.emplace(net.name, node.node);
        if (!fresh && it->second != node.node)
          throw InvalidInput(fmt::format("nodes \"{}\" and \"{}\" both define net \"{}\"; in a shared workspace "
                                         "net names must be unique across nodes",
                                         it->second, node.node, net.name));
      }
  }
  for (const auto& node : group.nodes) {
    Workspace& ws = workspaces.node(node.node);
    for (const auto& out : node.outputs) ws.create_blob(out);
  }
  if (group.nodes.empty()) return;
  if (group.nodes.size() == 1) {
    run_node(group.nodes[0], workspaces.node(group.nodes[0].node), options);
    return;
  }

  // Nodes share one token: the first failure (or the caller's token) stops all of them.
  auto token = std::make_shared<CancelToken>();
  auto forward = options.cancel ? options.cancel->subscribe([token] { token->cancel(); }) : CancelToken::Subscription{};
  RunOptions node_options = options;
  node_options.cancel = token;

  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::size_t remaining;
    std::exception_ptr first_error;
  };
  auto state = std::make_shared<State>();
  state->remaining = group.nodes.size();
  for (const auto& node : group.nodes) {
    Workspace* ws = &workspaces.node(node.node);
    detail::WorkerPool::global().submit([state, token, &node, ws, node_options] {
      std::exception_ptr error;
      try {
        run_node(node, *ws, node_options);
      } catch (...) {
        error = std::current_exception();
        token->cancel();
      }
      std::lock_guard lk(state->mu);
      if (error && !state->first_error) state->first_error = std::move(error);
      error = nullptr;  // released under the lock: the waiter rethrows the same exception object
      if (--state->remaining == 0) state->cv.notify_all();
    });
  }
  std::unique_lock lk(state->mu);
  state->cv.wait(lk, [&] { return state->remaining == 0; });
  std::exception_ptr error = std::move(state->first_error);
  lk.unlock();
  if (error) std::rethrow_exception(error);
}

}  // namespace moka
