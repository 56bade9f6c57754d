// Conformance: ports of task_test.py (reprs) and net_builder_test.py's Task/LocalSession tests (docs/testing.md §1).
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "moka/moka.h"

namespace moka {
namespace {

namespace ops = moka::ops;

// Ports task_test.py TestTask.testRepr (fresh thread: no context of other tests is active).
TEST(Caffe2Task, testRepr) {
  std::thread([] {
    EXPECT_EQ(Cluster().repr(), "Cluster(nodes=[], node_kwargs={})");
    EXPECT_EQ(Node().repr(), "Node(name=local, kwargs={})");
    EXPECT_EQ(TaskGroup().repr(), "TaskGroup(tasks=[], workspace_type=None, remote_nets=[])");
    EXPECT_EQ(TaskOutput(std::vector<BlobRef>{}).repr(), "TaskOutput(names=[], values=None)");
    EXPECT_EQ(Task().repr(), "Task(name=local/task, node=local, outputs=[])");
    EXPECT_EQ(SetupNets().repr(), "SetupNets(init_nets=None, exit_nets=None)");
  }).join();
}

// Ports net_builder_test.py test_net_multi_use: the same Net added twice runs twice.
TEST(Caffe2NetBuilderSession, test_net_multi_use) {
  TaskOutput result;
  Task task([&] {
    BlobRef total = ops::Const(0);
    Net net("my_net");
    net.op("Add", {total, net.Const(1)}, {total});
    ops::net(net);
    ops::net(net);
    result = final_output(total);
  });
  LocalSession session;
  session.run(task);
  EXPECT_EQ(result.fetch<int64_t>(), 2);
}

// Ports net_builder_test.py test_loops with the Task and LocalSession.
TEST(Caffe2NetBuilderSession, test_loops) {
  std::vector<TaskOutput> outs;
  Task task([&] {
    BlobRef total = ops::Const(0), total_large = ops::Const(0), total_small = ops::Const(0), total_tiny = ops::Const(0);
    ops::loop(10, [&](ops::Loop& loop) {
      BlobRef outer = ops::Mul({loop.iter(), ops::Const(10)});
      ops::loop(loop.iter(), [&](ops::Loop& inner) {
        BlobRef val = ops::Add({outer, inner.iter()});
        ops::If(ops::GE({val, ops::Const(80)}), [&] {
          ops::Add({total_large, val}, {total_large});
        }).Elif(ops::GE({val, ops::Const(50)}), [&] {
            ops::Add({total_small, val}, {total_small});
          }).Else([&] {
          ops::Add({total_tiny, val}, {total_tiny});
        });
        ops::Add({total, val}, {total});
      });
    });
    for (const auto& b : {total, total_large, total_small, total_tiny}) outs.push_back(final_output(b));
  });
  LocalSession().run(task);
  EXPECT_EQ(outs[0].fetch<int64_t>(), 2970);
  EXPECT_EQ(outs[1].fetch<int64_t>(), 1514);
  EXPECT_EQ(outs[2].fetch<int64_t>(), 1146);
  EXPECT_EQ(outs[3].fetch<int64_t>(), 310);
}

// Ports net_builder_test.py test_setup.
TEST(Caffe2NetBuilderSession, test_setup) {
  BlobRef one, two, three, accum;
  TaskOutput o6, o7_1, o7_2;
  Task task([&] {
    ops::task_init([&] { one = ops::Const(1); });
    two = ops::Add({one, one});
    ops::task_init([&] { three = ops::Const(3); });
    accum = ops::Add({two, three});
    ops::task_exit([&] { o7_1 = final_output(ops::Add({accum, one})); });
    o6 = final_output(ops::Add({accum, one}));
    ops::Add({accum, one}, {accum});
    o7_2 = final_output(ops::Add({accum, one}));
  });
  LocalSession session;
  session.run(task);
  EXPECT_EQ(o6.fetch<int64_t>(), 6);
  EXPECT_EQ(o7_1.fetch<int64_t>(), 7);
  EXPECT_EQ(o7_2.fetch<int64_t>(), 7);
}

// Ports net_builder_test.py test_multi_instance (TaskGroup() => PRIVATE task, 10 instances).
TEST(Caffe2NetBuilderSession, test_multi_instance) {
  constexpr int kInstances = 10, kIters = 15;
  TaskOutput total1, total2, total3;
  TaskGroup tg([&] {
    Task({.num_instances = kInstances}, [&] {
      BlobRef counter1, counter2, counter3;
      ops::task_init([&] {
        counter1 = ops::CreateCounter({}, {"global_counter"});
        counter2 = ops::CreateCounter({}, {"global_counter2"});
        counter3 = ops::CreateCounter({}, {"global_counter3"});
      });
      BlobRef task_counter;
      ops::task_instance_init([&] { task_counter = ops::CreateCounter({}, {"task_counter"}); });
      BlobRef local_counter = ops::CreateCounter({}, {"local_counter"});
      ops::loop(kIters, [&] {
        ops::CountUp({counter1});
        ops::CountUp({task_counter});
        ops::CountUp({local_counter});
      });
      ops::task_instance_exit([&] {
        BlobRef count2 = ops::RetrieveCount({task_counter});
        ops::loop(ops::Mul({count2, count2}), [&] { ops::CountUp({counter2}); });
      });
      BlobRef count3 = ops::RetrieveCount({local_counter});
      ops::loop(ops::Mul({count3, count3}), [&] { ops::CountUp({counter3}); });
      ops::task_exit([&] {
        total1 = final_output(ops::RetrieveCount({counter1}));
        total2 = final_output(ops::RetrieveCount({counter2}));
        total3 = final_output(ops::RetrieveCount({counter3}));
      });
    });
  });
  LocalSession().run(tg);
  EXPECT_EQ(total1.fetch<int64_t>(), kInstances * kIters);
  EXPECT_EQ(total2.fetch<int64_t>(), kInstances * kIters * kIters);
  EXPECT_EQ(total3.fetch<int64_t>(), kInstances * kIters * kIters);
}

// Ports net_builder_test.py test_multi_instance_python_op: the callable's builder runs once per
// instance (each instance instantiates its nets in its own workspace), the callable once per call.
TEST(Caffe2NetBuilderSession, test_multi_instance_python_op) {
  static std::atomic<int> num_instances{0}, num_calls{0};
  num_instances = 0;
  num_calls = 0;
  Task task({.num_instances = 64}, [&] {
    ops::loop(4, [&] {
      ops::call(CallableBuilder([] {
        num_instances++;
        return CallableFn([](std::span<Blob* const>, std::span<Blob* const>) { num_calls++; });
      }));
    });
  });
  LocalSession().run(task);
  EXPECT_EQ(num_instances.load(), 64);
  EXPECT_EQ(num_calls.load(), 256);
}

}  // namespace
}  // namespace moka
