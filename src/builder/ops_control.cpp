// The DSL's control blocks: ops::loop, ops::stop_guard and ops::If/Elif/Else (Caffe2's _Loop,
// _StopGuard, _RunIf and their _RunOnce base).
#include "moka/builder/ops_control.h"

#include <fmt/format.h>

#include "moka/core/error.h"

namespace moka::ops {

namespace {

// Caffe2's _RunOnce.__exit__: a block that created a stop blob stops itself at its end, so
// its step runs once; a stop inside it ends only the block.
void run_once_exit(NetBuilder& block) {
  if (block.existing_stop_blob()) stop();
}

}  // namespace

BlobRef Loop::iter() const {
  if (!num_iters_) throw InvalidInput("This loop does not have a number of iterations.");
  return *iter_;
}

BlobRef StopGuard::has_stopped() const {
  if (!ran_) throw InvalidInput("Context not used yet.");
  return stopped_;
}

void RunIf::check_not_else(const char* what) const {
  if (is_else_) throw InvalidInput(fmt::format("{} not allowed for an Else.", what));
}

namespace detail {

Loop make_loop(const std::optional<LoopCount>& iters, const std::function<void(Loop&)>& body, const std::string& name) {
  NetBuilder& parent = active_builder("loop");
  Loop l(NetBuilder({.name = name, .stop_blob_required = true}));
  if (iters) {
    // In the parent's current net: the counter restarts whenever the parent reaches the loop.
    l.inc_ = Const(1);
    l.iter_ = Const(0);
    if (const int64_t* n = std::get_if<int64_t>(&*iters)) {
      l.num_iters_ = Const(*n);
    } else {
      l.num_iters_ = std::get<BlobRef>(*iters);
    }
  }
  parent.add(l.builder_);
  l.builder_.build([&] { body(l); },
                   BuildHooks{.on_enter =
                                  [&] {
                                    if (l.num_iters_) stop_if(GE({*l.iter_, *l.num_iters_}));
                                  },
                              .on_exit =
                                  [&] {
                                    if (l.num_iters_)
                                      l.builder_.current_net().op("Add", {*l.iter_, *l.inc_}, {*l.iter_});
                                  }});
  return l;
}

StopGuard make_stop_guard(const std::function<void(StopGuard&)>& body, const BlobRef& has_stopped_blob,
                          const std::string& name) {
  NetBuilder& parent = active_builder("stop_guard");
  StopGuard g(NetBuilder({.name = name}), has_stopped_blob);
  parent.add(g.builder_);
  g.builder_.build([&] { body(g); }, BuildHooks{.on_enter = [&] { g.stopped_ = Const(true, {.blob_out = g.stopped_}); },
                                                .on_exit =
                                                    [&] {
                                                      g.ran_ = true;
                                                      Const(false, {.blob_out = g.stopped_});
                                                      run_once_exit(g.builder_);
                                                    }});
  return g;
}

RunIf make_if(const std::optional<BlobRef>& cond, const std::optional<BlobRef>& already_ran,
              const std::function<void()>& body, const std::string& name) {
  NetBuilder& parent = active_builder(already_ran ? (cond ? "Elif" : "Else") : "If");
  if (cond && cond->empty()) throw InvalidInput("ops::If: the condition is an empty BlobRef");
  RunIf r(NetBuilder({.name = name}));
  r.name_ = name;
  r.is_else_ = !cond;
  if (!already_ran) {
    r.else_blob_ = Not(*cond);
    r.already_ran_ = Const(false);
  } else {
    r.already_ran_ = *already_ran;
    r.else_blob_ = cond ? Or({*already_ran, Not(*cond)}) : *already_ran;
  }
  parent.add(r.builder_);
  r.builder_.build(body, BuildHooks{.on_enter =
                                        [&] {
                                          stop_if(r.else_blob_);
                                          Const(true, {.blob_out = r.already_ran_});
                                        },
                                    .on_exit = [&] { run_once_exit(r.builder_); }});
  return r;
}

}  // namespace detail

}  // namespace moka::ops
