// Seed `test_multi_instance` (net_builder_test.py): a Task with 10 instances running
// concurrently. task_init/task_exit run once per task in the node's workspace (global
// counters); task_instance_init/exit and the body run once per instance, each instance in its
// own child workspace (so task_counter and local_counter are per-instance).
#include <iostream>

#include "moka/moka.h"

namespace ops = moka::ops;

int main() {
  constexpr int kNumInstances = 10;
  constexpr int kNumIters = 15;
  moka::TaskOutput total1, total2, total3;

  moka::TaskGroup tg([&] {
    moka::Task({.num_instances = kNumInstances}, [&] {
      moka::BlobRef counter1, counter2, counter3;
      ops::task_init([&] {
        counter1 = ops::CreateCounter({}, {"global_counter"});
        counter2 = ops::CreateCounter({}, {"global_counter2"});
        counter3 = ops::CreateCounter({}, {"global_counter3"});
      });
      // both task_counter and local_counter should be thread local
      moka::BlobRef task_counter;
      ops::task_instance_init([&] { task_counter = ops::CreateCounter({}, {"task_counter"}); });
      moka::BlobRef local_counter = ops::CreateCounter({}, {"local_counter"});
      ops::loop(kNumIters, [&] {
        ops::CountUp({counter1});
        ops::CountUp({task_counter});
        ops::CountUp({local_counter});
      });
      // gather sum of squares of local counters to make sure that each local counter counted
      // exactly up to kNumIters, and that there was no false sharing of counter instances.
      ops::task_instance_exit([&] {
        moka::BlobRef count2 = ops::RetrieveCount({task_counter});
        ops::loop(ops::Mul({count2, count2}), [&] { ops::CountUp({counter2}); });
      });
      // This should have the same effect as the above
      moka::BlobRef count3 = ops::RetrieveCount({local_counter});
      ops::loop(ops::Mul({count3, count3}), [&] { ops::CountUp({counter3}); });
      // The code below will only run once
      ops::task_exit([&] {
        total1 = moka::final_output(ops::RetrieveCount({counter1}));
        total2 = moka::final_output(ops::RetrieveCount({counter2}));
        total3 = moka::final_output(ops::RetrieveCount({counter3}));
      });
    });
  });

  moka::LocalSession session;
  session.run(tg);

  // kNumInstances * kNumIters, then kNumInstances * kNumIters^2 twice.
  std::cout << "total1=" << total1.fetch<int64_t>() << "\n"
            << "total2=" << total2.fetch<int64_t>() << "\n"
            << "total3=" << total3.fetch<int64_t>() << "\n";
}
