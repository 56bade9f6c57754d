// Helpers shared by the operator unit tests: feeding/fetching blobs, running one operator, checking errors.
#pragma once

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "moka/core/error.h"
#include "moka/core/workspace.h"
#include "moka/defs/operator_def.h"
#include "moka/exec/register_operators.h"
#include "moka/operators/registry.h"

namespace moka::test {

inline void feed(Workspace& ws, const std::string& name, Tensor t) {
  ws.create_blob(name)->get_mutable<Tensor>() = std::move(t);
}

inline const Tensor& fetch(Workspace& ws, const std::string& name) { return ws.blob(name).get<Tensor>(); }

inline void run_op(Workspace& ws, std::string type, std::vector<std::string> in, std::vector<std::string> out,
                   std::vector<Argument> args = {}) {
  run_operator_once(ws, make_op(std::move(type), std::move(in), std::move(out), std::move(args)));
}

inline std::unique_ptr<OperatorBase> create_op(Workspace& ws, std::string type, std::vector<std::string> in,
                                               std::vector<std::string> out, std::vector<Argument> args = {}) {
  register_all_operators();  // Save, Load and the control operators register above the operators layer
  return OperatorRegistry::global().create(make_op(std::move(type), std::move(in), std::move(out), std::move(args)),
                                           &ws);
}

/// Runs f, expecting exactly an E (or subclass) whose message contains every one of `parts`.
template <class E, class F>
void expect_error(F&& f, std::initializer_list<const char*> parts) {
  try {
    f();
  } catch (const E& e) {
    const std::string msg = e.what();
    for (const char* p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "missing \"" << p << "\" in: " << msg;
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type; message: " << e.what();
    return;
  }
  ADD_FAILURE() << "no exception thrown";
}

template <class T>
std::vector<T> vals(const Tensor& t) {
  auto s = t.values<T>();
  return {s.begin(), s.end()};
}

}  // namespace moka::test
