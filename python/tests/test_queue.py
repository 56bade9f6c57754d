"""The blobs-queue operators from Python: Caffe2's hypothesis_test.py test_safe_blobs_queue and
test_weighted_sample_blobs_queue, ported in our words with their checks; the hypothesis ranges are swept over
their corners (docs/python.md §7). Built with core.Net and core.execution_step as Caffe2's test built them."""
import itertools

import pytest

from moka import core, workspace


def run(plan):
    ws = workspace.C.Workspace()
    ws.run(plan)
    return ws


@pytest.mark.parametrize("num_producers, num_consumers, capacity, num_blobs",
                         list(itertools.product((1, 10), (1, 10), (1, 5), (1, 3))))
def test_safe_blobs_queue(num_producers, num_consumers, capacity, num_blobs):
    init_net = core.Net("init_net")
    queue = init_net.CreateBlobsQueue([], 1, capacity=capacity, num_blobs=num_blobs)
    producer_steps = []
    truth = 0
    for i in range(num_producers):
        name = "producer_%d" % i
        net = core.Net(name)
        blobs = [net.ConstantFill([], 1, value=1.0, shape=[1]) for _ in range(num_blobs)]
        status = net.NextName()
        net.SafeEnqueueBlobs([queue] + blobs, blobs + [status])
        count = (i + 1) * 10
        producer_steps.append(core.execution_step(name, net, num_iter=count))
        truth += count
    producer_exit_net = core.Net("producer_exit_net")
    producer_exit_net.CloseBlobsQueue([queue], 0)
    producer_step = core.execution_step("producer", [
        core.execution_step("producers", producer_steps, concurrent_substeps=True),
        core.execution_step("producer_exit", producer_exit_net)])

    consumer_steps = []
    counters = []
    const_1 = init_net.ConstantFill([], 1, value=1.0)
    for i in range(num_consumers):
        name = "consumer_%d" % i
        net1 = core.Net(name)
        blobs = net1.SafeDequeueBlobs([queue], num_blobs + 1)
        status = blobs[-1]
        net2 = core.Net(name + "_counter")
        counter = init_net.ConstantFill([], 1, value=0.0)
        counters.append(counter)
        net2.Add([counter, const_1], counter)
        consumer_steps.append(core.execution_step(name, [net1, net2], should_stop_blob=status))
    consumer_step = core.execution_step("consumer", consumer_steps, concurrent_substeps=True)

    plan = core.Plan("test")
    plan.AddStep(core.execution_step("init", init_net))
    plan.AddStep(core.execution_step("worker", [consumer_step, producer_step], concurrent_substeps=True))
    ws = run(plan)
    assert sum(float(ws.blobs[str(c)].fetch()) for c in counters) == truth


@pytest.mark.parametrize("num_queues, num_iter, capacity, num_blobs",
                         list(itertools.product((1, 5), (5, 10), (1, 5), (1, 3))))
def test_weighted_sample_blobs_queue(num_queues, num_iter, capacity, num_blobs):
    init_net = core.Net("init_net")
    queues = [init_net.CreateBlobsQueue([], 1, capacity=capacity, num_blobs=num_blobs) for _ in range(num_queues)]
    iterations = init_net.CreateCounter([], 1)
    producer_steps = []
    for i, queue in enumerate(queues):
        name = "producer_%d" % i
        net = core.Net(name)
        blobs = [net.ConstantFill([], 1, value=1.0, shape=[1]) for _ in range(num_blobs)]
        status = net.NextName()
        net.SafeEnqueueBlobs([queue] + blobs, blobs + [status])
        exit_net = core.Net("producer_exit_%d" % i)
        exit_net.CloseBlobsQueue([queue], 0)
        producer_steps.append(core.execution_step(name, [
            core.execution_step(name + "_enqueue", net, num_iter=num_iter),
            core.execution_step(name + "_exit", exit_net)]))
    producer_step = core.execution_step("producer", producer_steps, concurrent_substeps=True)

    consumer_net = core.Net("weight_sample_dequeue_net")
    blobs = consumer_net.WeightedSampleDequeueBlobs(queues, num_blobs + 1, weights=[1.0 / num_queues] * num_queues)
    status = blobs[-1]
    consumer_net.CountUp([iterations], 1)
    consumer_exit_net = core.Net("consumer_exit_net")
    for queue in queues:  # one CloseBlobsQueue per queue: it takes one input
        consumer_exit_net.CloseBlobsQueue([queue], 0)
    consumer_step = core.execution_step("consumer", [
        core.execution_step("consume", consumer_net, should_stop_blob=status),
        core.execution_step("consume_exit", consumer_exit_net)])

    plan = core.Plan("weighted_test")
    plan.AddStep(core.execution_step("init", init_net))
    plan.AddStep(core.execution_step("worker", [consumer_step, producer_step], concurrent_substeps=True))
    ws = run(plan)
    reads = core.Net("read")
    count = reads.RetrieveCount([iterations], 1)
    ws.run(reads)
    assert num_iter + 1 <= int(ws.blobs[str(count)].fetch()) <= num_iter * num_queues + 1
