// moka._C's Workspace (Caffe2's C.Workspace): a workspace of named blobs and nets, either owned (C.Workspace())
// or a view of a session's node workspace (LocalSession.workspace(node)), with numpy in and out (docs/python.md).
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "moka/core/workspace.h"

namespace moka::python {

class PyWorkspace {
 public:
  /// A workspace of its own.
  PyWorkspace();
  /// A view of `ws`, kept alive by `owner` (the session holding it).
  PyWorkspace(Workspace* ws, std::shared_ptr<void> owner);

  bool feed_blob(const std::string& name, const pybind11::handle& value);
  pybind11::object fetch_blob(const std::string& name) const;
  bool has_blob(const std::string& name) const { return ws_->has_blob(name); }
  std::vector<std::string> blobs() const { return ws_->blobs(); }
  std::vector<std::string> nets() const { return ws_->nets(); }
  void reset() { ws_->reset_local_blobs(); }
  void run_net_once(const pybind11::handle& net);
  void create_net(const pybind11::handle& net, bool overwrite);
  void run_net(const std::string& name, int64_t num_iter);
  void run_plan(const pybind11::handle& plan);
  /// The workspace itself (for the record helpers FeedRecord and FetchRecord).
  Workspace& native() const { return *ws_; }

 private:
  std::shared_ptr<void> owner_;
  Workspace* ws_;
};

/// Registers C.Workspace.
void bind_workspace(pybind11::module_& m);

}  // namespace moka::python
