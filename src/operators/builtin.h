// Internal: registration functions of the built-in operator families, called once by OperatorRegistry::global().
#pragma once

namespace moka {
class OperatorRegistry;
namespace detail {
void register_builtin_operators(OperatorRegistry& reg);
void register_callable_ops(OperatorRegistry& reg);
void register_fill_ops(OperatorRegistry& reg);
void register_math_ops(OperatorRegistry& reg);
void register_dense_math_ops(OperatorRegistry& reg);  // MatMul, FC, ReduceSum, ReduceMean, Scale, WeightedSum, Sigmoid
void register_text_file_ops(OperatorRegistry& reg);   // CreateTextFileReader, TextFileReaderRead
void register_logic_ops(OperatorRegistry& reg);
void register_cast_ops(OperatorRegistry& reg);
void register_utility_ops(OperatorRegistry& reg);  // Copy, Print, CreateMutex, Iter, AtomicIter
void register_counter_ops(OperatorRegistry& reg);
void register_timer_ops(OperatorRegistry& reg);
void register_count_records_op(OperatorRegistry& reg);  // CountRecords (count_records_op.cpp)
void register_dataset_ops(OperatorRegistry& reg);       // TreeCursor readers, Append, AtomicAppend, IsEmpty, ...
void register_queue_link_ops(OperatorRegistry& reg);    // ExportBlobsQueue, ConnectBlobsQueue (queue_link_ops.cpp)
void register_queue_ops(OperatorRegistry& reg);         // BlobsQueue operators (queue_ops.cpp)
void register_collective_ops(OperatorRegistry& reg);    // CreateCommonWorld, Allreduce, Broadcast, Allgather, Barrier
}  // namespace detail
}  // namespace moka
