// run_task_group: per-node plans on worker threads, first failure cancels the rest, error rethrown with its node.
#include "moka/session/run_task_group.h"

#include <fmt/format.h>

#include <condition_variable>
#include <exception>
#include <map>
#include <mutex>

#include "moka/core/blocking.h"
#include "moka/core/error.h"
#include "moka/core/trace.h"
#include "moka/exec/worker_pool.h"
#include "moka/operators/peer_finished.h"

namespace moka {

namespace {

std::string describe_node(const std::string& node) { return fmt::format("node \"{}\"", node); }

// Runs f, adding the node to the context of any error.
template <class F>
void with_node_context(const std::string& node, F&& f) {
  TraceNodeScope trace_node(node);  // the node's plan records into the node's track
  try {
    f();
  } catch (Error& e) {
    e.add_context(describe_node(node));
    throw;
  } catch (const std::exception& e) {
    RuntimeError wrapped(e.what());
    wrapped.add_context(describe_node(node));
    std::throw_with_nested(wrapped);
  }
}

void check_shared_net_names(const TaskGroupDef& group) {
  // One workspace for all nodes: a net name used by two nodes would be re-created by one while
  // the other runs it.
  std::map<std::string, std::string> owner;
  for (const auto& node : group.nodes)
    for (const auto& net : node.plan.network) {
      auto [it, fresh] = owner.emplace(net.name, node.node);
      if (!fresh && it->second != node.node)
        throw InvalidInput(
            fmt::format("nodes \"{}\" and \"{}\" both define net \"{}\"; in a shared workspace "
                        "net names must be unique across nodes",
                        it->second, node.node, net.name));
    }
}

bool is_cancelled(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const Cancelled&) {
    return true;
  } catch (...) {
    return false;
  }
}

}  // namespace

void run_task_group(const TaskGroupDef& group, NodeWorkspaces& workspaces, const RunOptions& options) {
  PreparedTaskGroup(group, workspaces).run(options);
}

PreparedTaskGroup::PreparedTaskGroup(TaskGroupDef group, NodeWorkspaces& workspaces,
                                     std::vector<std::string> group_nodes)
    : group_(std::move(group)), workspaces_(workspaces), group_nodes_(std::move(group_nodes)) {
  if (group_nodes_.empty())
    for (const auto& node : group_.nodes) group_nodes_.push_back(node.node);
  for (const auto& node : group_.nodes)  // PreparedPlan checks the plan
    with_node_context(
        node.node, [&] { plans_.push_back(std::make_unique<PreparedPlan>(workspaces_.node(node.node), node.plan)); });
  if (workspaces_.shared()) check_shared_net_names(group_);
}

PreparedTaskGroup::~PreparedTaskGroup() = default;

void PreparedTaskGroup::unregister_nets() {
  for (auto& plan : plans_) plan->unregister_nets();
}

void PreparedTaskGroup::run(const RunOptions& options) {
  workspaces_.collectives().begin_run(group_nodes_);
  for (const auto& node : group_.nodes) {
    Workspace& ws = workspaces_.node(node.node);
    for (const auto& out : node.outputs) ws.create_blob(out);
  }
  if (group_.nodes.empty()) return;
  if (group_.nodes.size() == 1) {
    with_node_context(group_.nodes[0].node, [&] { plans_[0]->run(options); });
    workspaces_.collectives().node_finished(group_.nodes[0].node);
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
    bool first_is_peer_finished = false;  // a consequence that a later error of another kind replaces
  };
  auto state = std::make_shared<State>();
  state->remaining = group_.nodes.size();
  for (std::size_t i = 0; i < group_.nodes.size(); ++i) {
    PreparedPlan* plan = plans_[i].get();
    const std::string* node = &group_.nodes[i].node;
    CollectiveService* collectives = &workspaces_.collectives();
    detail::WorkerPool::global().submit([state, token, plan, node, node_options, collectives] {
      std::exception_ptr error;
      try {
        with_node_context(*node, [&] { plan->run(node_options); });
        collectives->node_finished(*node);  // the node's worlds stop waiting for it
      } catch (...) {
        error = std::current_exception();
      }
      const bool failed = error != nullptr;
      {
        std::lock_guard lk(state->mu);
        // The first error, except that a PeerFinished gives way to another node's error of another kind:
        // that one is usually why the peer finished early (docs/collectives.md §2).
        const bool peer_finished = is_peer_finished(error);
        if (error &&
            (!state->first_error || (state->first_is_peer_finished && !peer_finished && !is_cancelled(error)))) {
          state->first_error = std::move(error);
          state->first_is_peer_finished = peer_finished;
        }
        error = nullptr;  // released under the lock: the waiter rethrows the same exception object
        if (--state->remaining == 0) state->cv.notify_all();
      }
      // Cancel the others only once this error is recorded: theirs (a Cancelled, or a collective
      // woken by the cancellation) then never passes for the first one.
      if (failed) token->cancel();
    });
  }
  BlockingScope blocking;
  std::unique_lock lk(state->mu);
  state->cv.wait(lk, [&] { return state->remaining == 0; });
  std::exception_ptr error = std::move(state->first_error);
  lk.unlock();
  if (error) std::rethrow_exception(error);
}

}  // namespace moka
