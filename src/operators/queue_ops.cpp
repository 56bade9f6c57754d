// Queue operators (Caffe2 queue_ops; docs/queues.md §2): CreateBlobsQueue, EnqueueBlobs, DequeueBlobs, CloseBlobsQueue,
// SafeEnqueueBlobs, SafeDequeueBlobs, WeightedSampleDequeueBlobs, over a moka::BlobsQueue shared through a blob;
// and moka's CountDownCloseBlobsQueue (a queue's writer tasks close it when the last one exits).
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <random>
#include <span>

#include "moka/core/error.h"
#include "moka/operators/blobs_queue.h"
#include "moka/operators/counter.h"
#include "moka/operators/queue_exchange.h"
#include "moka/operators/registry.h"
#include "operators/builtin.h"

namespace moka {

namespace {

// Base of the operators that use queues. It remembers the queues it ran on, so that cancel() — called
// from another thread while run() may be blocked — can close them without reading workspace blobs,
// and so that a cancel() that arrives before (or while) run() binds a queue still closes it.
// Closing is what wakes the blocked read or write (Caffe2's SafeEnqueue/SafeDequeue Cancel() does the
// same); after cancel() a read or write that fails because of it is not an error (see cancelled()).
class QueueOpBase : public OperatorBase {
 public:
  QueueOpBase(const OperatorDef& def, Workspace* ws, std::size_t num_queues)
      : OperatorBase(def, ws), bound_(num_queues) {}

  void cancel() override {
    cancelled_.store(true);
    std::lock_guard lk(mu_);
    for (auto& q : bound_)
      if (q) q->close();
  }

 protected:
  /// The queue held by input k (k < num_queues).
  BlobsQueue& queue(std::size_t k) {
    const BlobsQueuePtr& p = input_object<BlobsQueuePtr>(k);
    if (!p) throw RuntimeError(fmt::format("{}: input {} (\"{}\") holds no queue", type(), k, input_name(k)));
    if (p.get() != bound_[k].get()) {  // only this thread writes bound_, so reading it unlocked is safe
      std::lock_guard lk(mu_);
      bound_[k] = p;
    }
    // After publishing bound_: either cancel() saw the queue, or we see its flag (both use mu_/seq_cst).
    if (cancelled_.load()) p->close();
    return *p;
  }
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

  void check_num_blobs(const BlobsQueue& q, std::size_t k, std::size_t n) const {
    if (static_cast<std::size_t>(q.num_blobs()) != n)
      throw InvalidInput(fmt::format("{}: queue \"{}\" (input {}) holds records of {} blobs, but the operator moves {}",
                                     type(), input_name(k), k, q.num_blobs(), n));
  }

 private:
  std::mutex mu_;
  std::vector<BlobsQueuePtr> bound_;
  std::atomic<bool> cancelled_{false};
};

// The operator's "timeout_secs" argument: 0 (the default) waits forever, > 0 gives up after that many
// seconds. Negative, infinite and NaN values are refused when the operator is built.
double timeout_arg(const OperatorBase& op) {
  const double t = op.args().get_float("timeout_secs", 0);
  if (!(t >= 0) || !std::isfinite(t))
    throw InvalidInput(
        fmt::format("{}: argument \"timeout_secs\" = {}: the timeout must be a finite number of "
                    "seconds >= 0 (0 waits forever)",
                    op.type(), t));
  return t;
}

// A blocking queue operator whose timeout passed: an error, never a status (a status of true means
// "the queue is closed", which steps take as the normal end of the data).
[[noreturn]] void throw_timed_out(const OperatorBase& op, double timeout_secs, const char* waiting_for) {
  throw RuntimeError(fmt::format("{}: queue \"{}\": {} timed out in {} secs ({})", op.type(), op.input_name(0),
                                 op.type(), timeout_secs, waiting_for));
}

// Enqueue ops write input blobs 1..n in place: output i must be input i + 1.
void check_enqueue_shape(const OperatorBase& op, std::size_t num_status_outputs) {
  const std::size_t n = op.input_size() - 1;
  if (op.output_size() != n + num_status_outputs)
    throw InvalidInput(fmt::format("{}: takes [queue, b1..bn] and outputs [b1..bn{}]; got {} inputs and {} outputs",
                                   op.type(), num_status_outputs ? ", status" : "", op.input_size(), op.output_size()));
  for (std::size_t i = 0; i < n; ++i)
    if (op.output_name(i) != op.input_name(i + 1))
      throw InvalidInput(fmt::format("{} must work in place: output {} (\"{}\") must be input {} (\"{}\")", op.type(),
                                     i, op.output_name(i), i + 1, op.input_name(i + 1)));
}

class CreateBlobsQueueOp final : public OperatorBase {
 public:
  CreateBlobsQueueOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws),
        capacity_(args().get_int("capacity", 1)),
        num_blobs_(args().get_int("num_blobs", 1)),
        field_names_(args().get_strings("field_names")) {
    if (capacity_ < 1)
      throw InvalidInput(fmt::format("{}: argument \"capacity\" = {}: capacity must be at least 1", type(), capacity_));
    if (num_blobs_ < 1)
      throw InvalidInput(
          fmt::format("{}: argument \"num_blobs\" = {}: num_blobs must be at least 1", type(), num_blobs_));
    if (!field_names_.empty() && static_cast<int64_t>(field_names_.size()) != num_blobs_)
      throw InvalidInput(fmt::format(
          "{}: argument \"field_names\" has {} names for num_blobs = {}: Wrong number of fieldNames provided.", type(),
          field_names_.size(), num_blobs_));
  }
  bool run() override {
    // A new queue each run, as in Caffe2; operators holding the previous one keep it alive.
    output_blob(0).emplace<BlobsQueuePtr>(
        std::make_shared<BlobsQueue>(output_name(0), capacity_, num_blobs_, field_names_));
    return true;
  }

 private:
  int64_t capacity_;
  int64_t num_blobs_;
  std::vector<std::string> field_names_;
};

class EnqueueBlobsOp final : public QueueOpBase {
 public:
  EnqueueBlobsOp(const OperatorDef& def, Workspace* ws) : QueueOpBase(def, ws, 1), timeout_secs_(timeout_arg(*this)) {
    check_enqueue_shape(*this, 0);
  }
  bool run() override {
    BlobsQueue& q = queue(0);
    const std::size_t n = input_size() - 1;
    check_num_blobs(q, 0, n);
    switch (q.write(std::span<Blob* const>(input_blobs()).subspan(1), timeout_secs_)) {
      case QueueResult::ok:
        return true;
      case QueueResult::timed_out:
        throw_timed_out(*this, timeout_secs_, "the queue stayed full");
      default:
        return cancelled();  // closed: a failure (Caffe2 returns the status), unless we closed it to stop
    }
  }

 private:
  double timeout_secs_;
};

class DequeueBlobsOp final : public QueueOpBase {
 public:
  DequeueBlobsOp(const OperatorDef& def, Workspace* ws) : QueueOpBase(def, ws, 1), timeout_secs_(timeout_arg(*this)) {}
  bool run() override {
    BlobsQueue& q = queue(0);
    check_num_blobs(q, 0, output_size());
    switch (q.read(output_blobs(), timeout_secs_)) {
      case QueueResult::ok:
        return true;
      case QueueResult::timed_out:
        throw_timed_out(*this, timeout_secs_, "the queue stayed empty");
      default:
        return cancelled();  // closed and empty
    }
  }

 private:
  double timeout_secs_;
};

class CloseBlobsQueueOp final : public OperatorBase {
 public:
  using OperatorBase::OperatorBase;
  bool run() override {
    const BlobsQueuePtr& p = input_object<BlobsQueuePtr>(0);
    if (p) p->close();
    return true;
  }
};

// The exit of one of a queue's writer tasks: only the last one to exit closes the queue, so the
// others' records are not cut off (a closed queue refuses writes). One atomic decrement decides.
// The counter is input 1, or — as Queue emits it — named by argument "counter": a node that writes another
// node's queue counts its own writer tasks in `<counter>:<node>` (docs/queues.md §5), found at run time.
class CountDownCloseBlobsQueueOp final : public OperatorBase {
 public:
  CountDownCloseBlobsQueueOp(const OperatorDef& def, Workspace* ws)
      : OperatorBase(def, ws), counter_(args().get_string("counter", "")), node_(args().get_string("node", "")) {
    if (input_size() < 2 && counter_.empty())
      throw InvalidInput(fmt::format("{}: takes [queue, counter], or [queue] with argument \"counter\"", type()));
  }
  bool run() override {
    const bool last = counter().count_down();
    if (last) detail::close_writers_done(*workspace(), input_object<BlobsQueuePtr>(0), node_);
    if (output_size() > 0) output(0).set_scalar<bool>(last);
    return true;
  }

 private:
  Counter& counter() {
    if (input_size() > 1) return input_object<Counter>(1);
    for (const std::string& name : {counter_ + ":" + node_, counter_}) {
      Blob* b = workspace()->get_blob(name);
      if (b && b->is_type<Counter>()) return b->get_checked_mutable<Counter>();
    }
    throw InvalidInput(
        fmt::format("{}: no counter \"{}\" (nor \"{}:{}\") in the workspace", type(), counter_, counter_, node_));
  }

  std::string counter_;
  std::string node_;
};

class SafeEnqueueBlobsOp final : public QueueOpBase {
 public:
  SafeEnqueueBlobsOp(const OperatorDef& def, Workspace* ws)
      : QueueOpBase(def, ws, 1), timeout_secs_(timeout_arg(*this)) {
    check_enqueue_shape(*this, 1);
  }
  bool run() override {
    BlobsQueue& q = queue(0);
    const std::size_t n = input_size() - 1;
    check_num_blobs(q, 0, n);
    const QueueResult r = q.write(std::span<Blob* const>(input_blobs()).subspan(1), timeout_secs_);
    // The status says "closed" (the normal end of a pipeline); a timeout is an error (docs/queues.md).
    if (r == QueueResult::timed_out) throw_timed_out(*this, timeout_secs_, "the queue stayed full");
    output(n).set_scalar<bool>(r != QueueResult::ok);
    return true;
  }

 private:
  double timeout_secs_;
};

class SafeDequeueBlobsOp final : public QueueOpBase {
 public:
  SafeDequeueBlobsOp(const OperatorDef& def, Workspace* ws)
      : QueueOpBase(def, ws, 1), num_records_(args().get_int("num_records", 1)), timeout_secs_(timeout_arg(*this)) {
    if (num_records_ <= 0)
      throw InvalidInput(
          fmt::format("{}: argument \"num_records\" = {}: num_records must be positive", type(), num_records_));
    // No scratch records yet: they are allocated as records arrive (num_records = 10^6 costs nothing
    // until a million records are actually read).
  }

  bool run() override {
    BlobsQueue& q = queue(0);
    const std::size_t n = output_size() - 1;
    check_num_blobs(q, 0, n);
    std::span<Blob* const> outs(output_blobs());
    if (num_records_ == 1) {
      const QueueResult r = q.read(outs.first(n), timeout_secs_);
      if (r == QueueResult::timed_out) throw_timed_out(*this, timeout_secs_, "the queue stayed empty");
      output(n).set_scalar<bool>(r != QueueResult::ok);
      return true;
    }
    // Up to num_records reads into the scratch records (blocking for each: a partial batch only when
    // the queue closes or the timeout passes after the first record), then one concatenation per
    // field. Scratch blobs are swapped back into the queue by the next read, so their storage is
    // recycled rather than reallocated.
    rec_ptrs_.resize(n);
    // The clock is read only when a timeout needs it (one read per batch otherwise wasted).
    const auto start = timeout_secs_ > 0 ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    const auto max_records = static_cast<uint64_t>(num_records_);
    std::size_t got = 0;
    bool timed_out = false;
    while (got < max_records) {
      grow_scratch(got + 1, n);
      for (std::size_t j = 0; j < n; ++j) rec_ptrs_[j] = &scratch_[got * n + j];
      QueueResult r;
      if (timeout_secs_ > 0) {
        // One deadline for the whole batch.
        const double left =
            timeout_secs_ - std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        r = left > 0 ? q.read(rec_ptrs_, left) : q.try_read(rec_ptrs_);
        if (r == QueueResult::would_block) r = QueueResult::timed_out;
      } else {
        r = q.read(rec_ptrs_);
      }
      if (r != QueueResult::ok) {
        timed_out = r == QueueResult::timed_out;
        break;
      }
      ++got;
    }
    if (got == 0) {
      if (timed_out) throw_timed_out(*this, timeout_secs_, "the queue stayed empty");
      output(n).set_scalar<bool>(true);
      return true;
    }
    for (std::size_t j = 0; j < n; ++j) concat_field(j, got, n);
    output(n).set_scalar<bool>(false);
    return true;
  }

 private:
  const Tensor& record_tensor(std::size_t k, std::size_t j, std::size_t n) const {
    const Blob& b = scratch_[k * n + j];
    const Tensor* t = b.tensor_or_null();
    if (t == nullptr || !t->defined())
      throw TypeError(
          fmt::format("{}: field {} (\"{}\") of a dequeued record holds {}, not a tensor; num_records > 1 "
                      "concatenates tensors along dim 0",
                      type(), j, output_name(j), t ? "an undefined tensor" : std::string(b.type_name())));
    return *t;
  }

  void concat_field(std::size_t j, std::size_t got, std::size_t n) {
    const Tensor& first = record_tensor(0, j, n);
    if (first.ndim() == 0)
      throw TypeError(
          fmt::format("{}: field {} (\"{}\") is a 0-d tensor ({}); num_records > 1 concatenates along dim "
                      "0, which needs tensors of rank >= 1",
                      type(), j, output_name(j), first.describe()));
    int64_t total = 0;
    for (std::size_t k = 0; k < got; ++k) {
      const Tensor& t = record_tensor(k, j, n);
      const bool same = t.dtype() == first.dtype() && t.ndim() == first.ndim() &&
                        std::equal(t.shape().begin() + 1, t.shape().end(), first.shape().begin() + 1);
      if (!same)
        throw TypeError(
            fmt::format("{}: field {} (\"{}\"): record 0 is {} but record {} is {}; concatenating along "
                        "dim 0 needs the same dtype and the same trailing dimensions",
                        type(), j, output_name(j), first.describe(), k, t.describe()));
      total += t.dim(0);
    }
    std::vector<int64_t> shape = first.shape();
    shape[0] = total;
    const DType dtype = first.dtype();
    Tensor& out = output(j);
    out.resize(dtype, shape);
    visit_dtype(dtype, [&](auto tag) {
      using T = decltype(tag);
      T* dst = out.mutable_data<T>();
      for (std::size_t k = 0; k < got; ++k) {
        // The record's storage goes back to the queue on the next read; moving strings out is safe.
        Tensor& src = scratch_[k * n + j].get_checked_mutable<Tensor>();
        const auto m = static_cast<std::size_t>(src.numel());
        if constexpr (std::is_same_v<T, std::string>) {
          std::move(src.mutable_data<T>(), src.mutable_data<T>() + m, dst);
        } else if (m > 0) {
          std::memcpy(dst, src.data<T>(), m * sizeof(T));
        }
        dst += m;
      }
    });
  }

  // Makes room for `records` scratch records, growing geometrically (Blobs move, their storage stays).
  void grow_scratch(std::size_t records, std::size_t n) {
    if (scratch_.size() >= records * n) return;
    const auto limit = static_cast<uint64_t>(num_records_);  // records <= limit
    const uint64_t doubled = std::max<uint64_t>(records, 2 * (scratch_.size() / n));
    scratch_.resize(static_cast<std::size_t>(std::min(doubled, limit)) * n);
  }

  int64_t num_records_;
  double timeout_secs_;
  std::vector<Blob> scratch_;    // the records of the largest batch read so far (num_blobs blobs each)
  std::vector<Blob*> rec_ptrs_;  // the record being read: n pointers into scratch_
};

class WeightedSampleDequeueBlobsOp final : public QueueOpBase {
 public:
  WeightedSampleDequeueBlobsOp(const OperatorDef& def, Workspace* ws)
      : QueueOpBase(def, ws, def.input.size()),
        table_idx_blob_(args().get_int("table_idx_blob", -1)),
        rng_(static_cast<std::mt19937_64::result_type>(args().get_int("seed", kDefaultSeed))) {
    std::vector<double> weights = args().get_floats("weights");
    if (weights.empty()) weights.assign(input_size(), 1.0);
    if (weights.size() != input_size())
      throw InvalidInput(
          fmt::format("{}: argument \"weights\" has {} values for {} queues", type(), weights.size(), input_size()));
    double sum = 0;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      if (!(weights[i] >= 0))
        throw InvalidInput(
            fmt::format("{}: argument \"weights\": weight {} of queue \"{}\" is {}; weights must be "
                        "non-negative",
                        type(), i, input_name(i), weights[i]));
      sum += weights[i];
    }
    if (!(sum > 0) || !std::isfinite(sum))
      throw InvalidInput(
          fmt::format("{}: argument \"weights\": Sum of weights must be positive (and finite); got {}", type(), sum));
    double acc = 0;
    for (double w : weights) {
      acc += w / sum;
      cumulative_.push_back(acc);
    }
    // Rounding may leave the last sum just below 1: the last queue with weight > 0 takes the rest.
    last_positive_ = weights.size() - 1;
    while (weights[last_positive_] == 0) --last_positive_;
    const auto num_fields = static_cast<int64_t>(output_size()) - 1;
    if (table_idx_blob_ < -1 || table_idx_blob_ >= num_fields)
      throw InvalidInput(
          fmt::format("{}: argument \"table_idx_blob\" = {}: must be -1 or the index of one of the {} "
                      "field outputs (the last output is the status)",
                      type(), table_idx_blob_, num_fields));
  }

  static constexpr int64_t kDefaultSeed = 0x5eed;

  bool run() override {
    const std::size_t n = output_size() - 1;
    for (std::size_t k = 0; k < input_size(); ++k) (void)queue(k);  // bind all, so cancel() closes all
    const double r = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    std::size_t idx =
        static_cast<std::size_t>(std::upper_bound(cumulative_.begin(), cumulative_.end(), r) - cumulative_.begin());
    if (idx > last_positive_) idx = last_positive_;
    BlobsQueue& q = queue(idx);
    check_num_blobs(q, idx, n);
    const bool ok = q.blocking_read(std::span<Blob* const>(output_blobs()).first(n));
    if (ok && table_idx_blob_ >= 0) {
      Tensor& t = output(static_cast<std::size_t>(table_idx_blob_));
      t.resize(DType::Int32, {1});
      t.mutable_data<int32_t>()[0] = static_cast<int32_t>(idx);
    }
    output(n).set_scalar<bool>(!ok);
    return true;
  }

 private:
  int64_t table_idx_blob_;
  std::mt19937_64 rng_;
  std::vector<double> cumulative_;
  std::size_t last_positive_ = 0;
};

}  // namespace

namespace detail {

void register_queue_ops(OperatorRegistry& reg) {
  constexpr int kAny = OpSchema::kUnbounded;
  reg.add(OpSchema("CreateBlobsQueue")
              .inputs(0)
              .outputs(1)
              .arg("capacity", ArgType::Int, "maximum number of records held; must be >= 1", "1")
              .arg("num_blobs", ArgType::Int, "blobs per record; must be >= 1", "1")
              .arg("enforce_unique_name", ArgType::Bool,
                   "accepted for compatibility; moka keeps records inside the queue, not as workspace blobs", "0")
              .arg("field_names", ArgType::Strings, "names of the record's fields; empty or num_blobs of them")
              .doc("Creates a BlobsQueue named after the output blob and stores a shared handle to it in the output. "
                   "Running it again creates a new, empty queue (operators bound to the old one keep it alive)."),
          factory_of<CreateBlobsQueueOp>());
  reg.add(OpSchema("EnqueueBlobs")
              .inputs(2, kAny)
              .outputs(1, kAny)
              .allow_any_inplace()
              .arg("timeout_secs", ArgType::Float,
                   "> 0: throw \"EnqueueBlobs timed out in N secs\" when no slot frees up within that many seconds "
                   "(the blobs stay with the caller); 0 waits forever; negative or non-finite: InvalidInput",
                   "0")
              .doc("EnqueueBlobs([queue, b1..bn], [b1..bn]) (in place): waits for a free slot and moves the blobs "
                   "into it by swapping (each bi gets back what the slot held). Fails (returns false) when the queue "
                   "is closed — at once, even with free capacity. cancel() closes the queue."),
          factory_of<EnqueueBlobsOp>());
  reg.add(OpSchema("DequeueBlobs")
              .inputs(1)
              .outputs(1, kAny)
              .arg("timeout_secs", ArgType::Float,
                   "> 0: throw \"DequeueBlobs timed out in N secs\" when no record arrives within that many "
                   "seconds (the outputs are untouched); 0 waits forever; negative or non-finite: InvalidInput",
                   "0")
              .doc("DequeueBlobs([queue], [b1..bn]): waits for a record and swaps it into the outputs. Fails (returns "
                   "false) when the queue is closed and empty; records left at close are still read. cancel() closes "
                   "the queue."),
          factory_of<DequeueBlobsOp>());
  reg.add(OpSchema("CloseBlobsQueue")
              .inputs(1)
              .outputs(0)
              .doc("Closes the queue: writes fail from now on, reads drain the records left, every waiter wakes."),
          factory_of<CloseBlobsQueueOp>());
  reg.add(OpSchema("CountDownCloseBlobsQueue")
              .inputs(1, 2)
              .outputs(0, 1)
              .arg("counter", ArgType::String, "with one input: the counter blob's name, looked up when it runs", "")
              .arg("node", ArgType::String,
                   "the writer's node: where `<counter>:<node>` exists (a node writing another node's queue), that "
                   "counter is used, and the last writer counts the node down on the owner (docs/queues.md §5)",
                   "")
              .doc("CountDownCloseBlobsQueue([queue, counter] or [queue], [] or [closed]) (moka): one writer of the "
                   "queue is done. Counts the counter down (CountDown) and closes the queue when the count was already "
                   "<= 0, i.e. in the last of the writers the counter was created for (init_count = writers - 1); on "
                   "a queue the node connected to as a writer, the last counts the node down on the owner instead. "
                   "The optional output (bool scalar) says whether this run was the last."),
          factory_of<CountDownCloseBlobsQueueOp>());
  reg.add(OpSchema("SafeEnqueueBlobs")
              .inputs(2, kAny)
              .outputs(2, kAny)
              .allow_any_inplace()
              .arg("timeout_secs", ArgType::Float,
                   "> 0: throw \"SafeEnqueueBlobs timed out in N secs\" when no slot frees up within that many "
                   "seconds (an error, not a status: the status only reports a closed queue); 0 waits forever; "
                   "negative or non-finite: InvalidInput",
                   "0")
              .doc("SafeEnqueueBlobs([queue, b1..bn], [b1..bn, status]) (bi in place): like EnqueueBlobs, but never "
                   "fails: status (bool scalar) is true when the write failed because the queue is closed. cancel() "
                   "closes the queue."),
          factory_of<SafeEnqueueBlobsOp>());
  reg.add(OpSchema("SafeDequeueBlobs")
              .inputs(1)
              .outputs(2, kAny)
              .arg("num_records", ArgType::Int,
                   "records per run (> 0, no upper bound; buffers grow with the records actually read); more than 1 "
                   "concatenates them along dim 0",
                   "1")
              .arg("timeout_secs", ArgType::Float,
                   "> 0: one deadline for the run's reads: throw \"SafeDequeueBlobs timed out in N secs\" when no "
                   "record arrived by then (an error, not a status), or return the partial batch read so far; 0 waits "
                   "forever; negative or non-finite: InvalidInput",
                   "0")
              .doc("SafeDequeueBlobs([queue], [b1..bn, status]): reads one record, or up to num_records concatenated "
                   "field by field along dim 0 (same dtype and trailing dims required; any dtype, strings included). "
                   "Never fails on a closed queue: status (bool scalar) is true only when the first read failed — a "
                   "partial batch read before the queue closed counts as success. cancel() closes the queue."),
          factory_of<SafeDequeueBlobsOp>());
  reg.add(OpSchema("WeightedSampleDequeueBlobs")
              .inputs(1, kAny)
              .outputs(2, kAny)
              .arg("weights", ArgType::Floats, "sampling weight per input queue (>= 0, positive sum)", "all 1")
              .arg("table_idx_blob", ArgType::Int,
                   "-1, or the index of a field output that receives the chosen queue's index (int32, shape [1])", "-1")
              .arg("seed", ArgType::Int,
                   "seed of the operator's random generator (moka addition: runs are reproducible)", "24301")
              .doc("WeightedSampleDequeueBlobs([q1..qk], [b1..bn, status]): each run picks one queue with "
                   "probability proportional to its weight and blocking-reads a record from it. status (bool "
                   "scalar) is true when that read failed (the chosen queue is closed and empty). cancel() closes "
                   "every input queue."),
          factory_of<WeightedSampleDequeueBlobsOp>());
}

}  // namespace detail
}  // namespace moka
