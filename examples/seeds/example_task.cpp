// Seed `example_task` (net_printer_test.py): a function that builds a Task — joining whatever
// TaskGroup is active when it is called — and returns the task's outputs for later. The
// caller gathers it into a TaskGroup, runs the group and fetches the outputs.
#include <iostream>
#include <tuple>

#include "moka/moka.h"

namespace ops = moka::ops;

// Builds the task; returns (o6, o7_1, o7_2), unset until a session runs the task.
std::tuple<moka::TaskOutput, moka::TaskOutput, moka::TaskOutput> example_task() {
  moka::BlobRef one, two, three, accum;
  moka::TaskOutput o6, o7_1, o7_2;
  moka::Task([&] {
    ops::task_init([&] { one = ops::Const(1); });
    two = ops::Add({one, one});
    ops::task_init([&] { three = ops::Const(3); });
    accum = ops::Add({two, three});
    // here, accum should be 5
    moka::BlobRef seven_1;
    ops::task_exit([&] {
      // here, accum should be 6, since this executes after lines below
      seven_1 = ops::Add({accum, one});
    });
    moka::BlobRef six = ops::Add({accum, one});
    ops::Add({accum, one}, {accum});
    moka::BlobRef seven_2 = ops::Add({accum, one});
    o6 = moka::final_output(six);
    o7_1 = moka::final_output(seven_1);
    o7_2 = moka::final_output(seven_2);
  });
  return {o6, o7_1, o7_2};
}

int main() {
  moka::TaskOutput o6, o7_1, o7_2;
  // The Task made inside example_task() joins this group.
  moka::TaskGroup tg([&] { std::tie(o6, o7_1, o7_2) = example_task(); });

  moka::LocalSession session;
  session.run(tg);

  std::cout << "num_tasks=" << tg.tasks().size() << "\n"
            << "task=" << tg.tasks().front().name() << "\n"
            << "o6=" << o6.fetch<int64_t>() << "\n"
            << "o7_1=" << o7_1.fetch<int64_t>() << "\n"
            << "o7_2=" << o7_2.fetch<int64_t>() << "\n";
}
