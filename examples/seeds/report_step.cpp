// TaskGroup::report_step (task.py reference page): a step that runs every interval_ms on a node
// while the group runs there, and — guaranteed — at least once after every task of that node
// has finished. Here three tasks each sleep a little; the report step counts its runs and
// notes whether it ever ran after all three had finished.
#include <atomic>
#include <chrono>
#include <iostream>
#include <span>
#include <string>
#include <thread>

#include "moka/moka.h"

namespace ops = moka::ops;

namespace {
using Blobs = std::span<moka::Blob* const>;
const char* bool_str(bool b) { return b ? "true" : "false"; }
}  // namespace

int main() {
  constexpr int kTasks = 3;
  std::atomic<int> tasks_done{0};
  std::atomic<int> report_runs{0};
  std::atomic<bool> ran_after_all{false};

  moka::TaskGroup tg([&] {
    for (int i = 0; i < kTasks; ++i) {
      moka::Task({.name = "worker" + std::to_string(i)}, [&] {
        // ~20 ms of work: 10 iterations of a 2 ms sleep.
        ops::loop(10,
                  [&] { ops::call([](Blobs, Blobs) { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }); });
        ops::call([&](Blobs, Blobs) { tasks_done++; });  // the task's last op
      });
    }
  });

  // The report step: a builder holding one callable op, run on "local" every 5 ms.
  moka::NetBuilder report({.name = "report"}, [&] {
    ops::call([&](Blobs, Blobs) {
      report_runs++;
      if (tasks_done.load() == kTasks) ran_after_all = true;
    });
  });
  tg.report_step(moka::to_execution_step(report), "local", 5);

  moka::LocalSession session;
  session.run(tg);

  // The run count depends on timing; only its lower bound is printed.
  std::cout << "tasks_done=" << tasks_done.load() << "\n"
            << "report_ran_at_least_once=" << bool_str(report_runs.load() >= 1) << "\n"
            << "report_ran_after_all_tasks=" << bool_str(ran_after_all.load()) << "\n";
}
