// moka._C's shared binding objects: `with` blocks over builder calls (Block, add_with) and the Python-side holders
// of the C++ builders and sessions (NetBuilder, Cluster, Node, TaskGroup, Task, Session), used by dsl.cpp,
// data.cpp and job.cpp.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "moka/moka.h"
#include "with_block.h"

namespace moka::python {

namespace py = pybind11;

// A `with` block: the builder call it makes, and what `as` binds (the block itself when None).
struct Block {
  WithBlock::Call call;
  py::object as = py::none();
  std::unique_ptr<WithBlock> block;
};

// Adds __enter__/__exit__ to a class whose objects make their builder call with `call_of(obj)`.
template <class T, class CallOf>
void add_with(py::class_<T>& cls, CallOf call_of) {
  cls.def("__enter__",
          [call_of](py::object self) {
            T& obj = self.cast<T&>();
            obj.block = std::make_unique<WithBlock>(call_of(obj));
            obj.block->enter();
            return self;
          })
      .def("__exit__", [](T& obj, const py::handle& type, const py::handle&, const py::handle&) {
        std::unique_ptr<WithBlock> b = std::move(obj.block);
        if (b) b->exit(type.is_none());
        return false;  // the block's exception, if any, goes on
      });
}

inline py::object make_block(WithBlock::Call call, py::object as = py::none()) {
  return py::cast(Block{std::move(call), std::move(as), nullptr});
}

inline std::optional<WorkspaceType> workspace_type_of(const py::handle& t) {
  if (t.is_none()) return std::nullopt;
  const std::string s = py::str(t);
  if (s == "global") return WorkspaceType::Global;
  if (s == "private") return WorkspaceType::Private;
  throw InvalidInput("workspace_type: \"" + s + "\" is neither WorkspaceType.GLOBAL nor WorkspaceType.PRIVATE");
}

// What a runnable or step argument holds natively: a core.Net/ExecutionStep/Plan's native object, a NetBuilder.
struct PyNetBuilder {
  NetBuilder builder;
  std::unique_ptr<WithBlock> block;
};

inline StepsOrNets step_of(const py::handle& x) {
  py::handle native = py::hasattr(x, "_step") ? x.attr("_step") : py::hasattr(x, "_net") ? x.attr("_net") : x;
  if (py::isinstance<ExecutionStep>(native)) return native.cast<ExecutionStep>();
  if (py::isinstance<Net>(native)) return native.cast<Net>();
  if (py::isinstance<PyNetBuilder>(native)) return to_execution_step(native.cast<PyNetBuilder&>().builder);
  if (py::isinstance<py::list>(x) || py::isinstance<py::tuple>(x)) {
    std::vector<StepOrNet> items;
    for (py::handle item : x) {
      StepsOrNets one = step_of(item);
      items.push_back(*one.single());
    }
    return StepsOrNets(std::move(items));
  }
  throw TypeError("expected a Net, an ExecutionStep or a NetBuilder, not " +
                  py::str(py::type::handle_of(x).attr("__name__")).cast<std::string>());
}

struct PyLoop {
  std::optional<ops::Loop> loop;
};
struct PyStopGuard {
  std::optional<ops::StopGuard> guard;
};
struct PyIf {
  std::optional<ops::RunIf> run_if;
};
struct PyCluster {
  Cluster cluster;
  std::unique_ptr<WithBlock> block;
};
struct PyNode {
  Node node;
  std::unique_ptr<WithBlock> block;
};
struct PyTaskGroup {
  TaskGroup group;
  std::unique_ptr<WithBlock> block;
  /// What `with group:` calls when it is more than entering the group (a Job's groups refuse tasks once the job
  /// is compiled); empty: with_context(group, body).
  WithBlock::Call with_call{};
};
struct PyTask {
  Task task;
  std::unique_ptr<WithBlock> block;
};
/// A session as Python holds it (session.LocalSession, session.MpiSession), used through the Session interface.
struct PySession {
  explicit PySession(std::unique_ptr<Session> s) : session(std::move(s)) {}
  std::unique_ptr<Session> session;
};
struct PyLocalSession : PySession {
  explicit PyLocalSession(LocalSessionOptions o) : PySession(std::make_unique<LocalSession>(std::move(o))) {}
};

}  // namespace moka::python
