// BackgroundSave: snapshots of checkpointed blobs, written and committed on a thread of their own
// (src/job/background_save.h).
#include "job/background_save.h"

#include <chrono>
#include <cstring>
#include <span>
#include <string_view>

#include <fmt/format.h>

#include "moka/core/error.h"
#include "moka/core/tensor.h"
#include "moka/core/trace.h"
#include "moka/core/workspace.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"

namespace moka::detail {
namespace {

// A record value of a snapshot, in tensor-style storage (huge pages for large ones).
using SnapshotValue = std::vector<std::byte, StorageAllocator<std::byte>>;

}  // namespace

// Buffers of the previous snapshot, handed to the next one (measured: 40% of a background-saving
// job's time went to page faults of fresh snapshot memory before buffers were kept).
struct BackgroundSave::Buffers {
  SnapshotValue take(uint64_t size) {
    SnapshotValue v;
    if (!spare.empty()) {
      v = std::move(spare.back());
      spare.pop_back();
      v.clear();
    }
    v.reserve(size);
    return v;
  }
  std::vector<SnapshotValue> spare;
};

// One node's serialized records, in the order Save writes them.
struct BackgroundSave::Node : ByteSink {
  Node(std::string db, Buffers& b) : db_path(std::move(db)), buffers(&b) {}
  void begin_record(std::string_view key, uint64_t size) override {
    records.emplace_back(std::string(key), buffers->take(size));
  }
  void write(std::span<const std::byte> bytes) override {
    SnapshotValue& v = records.back().second;
    const std::size_t at = v.size();
    v.resize(at + bytes.size());  // no value-initialisation (StorageAllocator)
    if (!bytes.empty()) std::memcpy(v.data() + at, bytes.data(), bytes.size());
    captured += bytes.size();
  }
  std::string db_path;
  Buffers* buffers;
  std::vector<std::pair<std::string, SnapshotValue>> records;
  uint64_t captured = 0;
  int64_t write_ns = 0;  // set by the writer thread; read after wait()
};

namespace {

void write_node(const std::string& db_type, const std::string& db_path,
                const std::vector<std::pair<std::string, SnapshotValue>>& records) {
  auto db = open_db(db_type, db_path, DbMode::New);
  auto txn = db->new_transaction();
  for (const auto& [key, value] : records)
    txn->put(key, std::string_view(reinterpret_cast<const char*>(value.data()), value.size()));
  txn->commit();
  db->close();
}

}  // namespace

BackgroundSave::BackgroundSave() : buffers_(std::make_unique<Buffers>()) {}

BackgroundSave::~BackgroundSave() { settle(); }  // never leave a writer running past its owner

void BackgroundSave::settle() noexcept {
  try {
    wait();
  } catch (...) {
    // Dropped: the caller is already failing, or being destroyed.
  }
}

uint64_t BackgroundSave::snapshot(const std::string& node, const std::string& db_path, const Workspace& ws,
                                  const std::vector<std::string>& blobs) {
  if (!taking_) taking_ = std::make_shared<std::vector<Node>>();
  Node& n = taking_->emplace_back(db_path, *buffers_);
  for (const auto& name : blobs) {
    const Blob* b = ws.get_blob(name);
    if (!b) throw NotFound(fmt::format("checkpoint of node '{}': blob '{}' no longer exists", node, name));
    serialize_blob(name, *b, n);
  }
  return n.captured;
}

void BackgroundSave::discard() { taking_.reset(); }

void BackgroundSave::start(int64_t epoch, const std::string& db_type, std::function<void(std::exception_ptr)> then) {
  if (pending_.valid()) throw RuntimeError("BackgroundSave::start: a save is in flight (wait() first)");
  writing_ = taking_ ? std::move(taking_) : std::make_shared<std::vector<Node>>();
  taking_.reset();
  epoch_ = epoch;
  pending_ = std::async(std::launch::async, [nodes = writing_, db_type, epoch, then = std::move(then)] {
    trace_set_thread_name("checkpoint writer");
    std::exception_ptr failed;
    try {
      for (Node& n : *nodes) {
        const auto t0 = std::chrono::steady_clock::now();
        TraceSpan span(TraceCategory::checkpoint,
                       trace_enabled() ? trace_name_id(fmt::format("write epoch {} ({})", epoch, n.db_path)) : 0);
        write_node(db_type, n.db_path, n.records);
        n.write_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
      }
    } catch (...) {
      failed = std::current_exception();
    }
    if (then) then(failed);
    if (failed && !then) std::rethrow_exception(failed);
  });
}

bool BackgroundSave::in_flight() const noexcept { return pending_.valid(); }

void BackgroundSave::wait() {
  if (!pending_.valid()) return;
  // The finished save's buffers go to the next snapshot, last first: take() hands them out from
  // the back, so the next snapshot's n-th record (the same blob, the same size, as a rule) gets
  // this one's n-th buffer, and no buffer has to grow.
  struct Recycle {
    BackgroundSave& self;
    ~Recycle() {
      if (!self.writing_) return;
      for (auto node = self.writing_->rbegin(); node != self.writing_->rend(); ++node)
        for (auto record = node->records.rbegin(); record != node->records.rend(); ++record)
          self.buffers_->spare.push_back(std::move(record->second));
      self.writing_.reset();
    }
  } recycle{*this};
  write_ns_.clear();
  pending_.get();
  for (const Node& n : *writing_) write_ns_.emplace_back(n.db_path, n.write_ns);
}

}  // namespace moka::detail
