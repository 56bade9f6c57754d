// Seed `test_setup` (net_builder_test.py): task_init runs before the task's body, task_exit
// after it, so o7_1 (computed in task_exit) sees accum after the body incremented it.
#include <iostream>

#include "moka/moka.h"

namespace ops = moka::ops;

int main() {
  moka::BlobRef one, two, three, accum;
  moka::TaskOutput o6, o7_1, o7_2;
  moka::Task task([&] {
    ops::task_init([&] { one = ops::Const(1); });
    two = ops::Add({one, one});
    ops::task_init([&] { three = ops::Const(3); });
    accum = ops::Add({two, three});
    // here, accum should be 5
    ops::task_exit([&] {
      // here, accum should be 6, since this executes after the lines below
      o7_1 = moka::final_output(ops::Add({accum, one}));
    });
    o6 = moka::final_output(ops::Add({accum, one}));
    ops::Add({accum, one}, {accum});
    o7_2 = moka::final_output(ops::Add({accum, one}));
  });

  moka::LocalSession session;
  session.run(task);

  std::cout << "o6=" << o6.fetch<int64_t>() << "\n"
            << "o7_1=" << o7_1.fetch<int64_t>() << "\n"
            << "o7_2=" << o7_2.fetch<int64_t>() << "\n";
}
