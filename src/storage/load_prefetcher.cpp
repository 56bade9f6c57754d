// LoadPrefetcher (see load_prefetcher.h): helper threads decode the later single-chunk tensor
// records of an indexed DB into tensors the calling thread allocated for them.
#include "storage/load_prefetcher.h"

#include <limits>
#include <system_error>
#include <utility>

#include "moka/core/tensor.h"
#include "moka/storage/db_streams.h"

namespace moka::detail {

namespace {

struct WantedRecord {
  std::size_t ordinal;
  std::string key;
  uint64_t bytes;
};

// Reads the header of the record under `cursor` into h; true when a helper can decode the record
// on its own into a tensor allocated now: one chunk of a fixed-size dtype whose payload fits the
// value. Anything else (or anything unreadable) is left to the caller, whose own read decides.
bool qualifies(Cursor& cursor, RecordHeader& h) {
  try {
    CursorValueSource src(cursor);
    h = read_record_header(src, "record header");
  } catch (...) {
    return false;
  }
  if (h.kind != RecordKind::TensorChunk || h.dtype == DType::Undefined || h.dtype == DType::String ||
      h.chunk_count != 1 || h.elem_begin != 0)
    return false;
  uint64_t numel = 1;
  for (int64_t d : h.shape) {
    if (d < 0 || (d != 0 && numel > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d))) return false;
    numel *= static_cast<uint64_t>(d);
  }
  // The payload lies inside the value, so a corrupt shape cannot ask for more than the file holds.
  const uint64_t item = dtype_size(h.dtype);
  return numel == h.elem_count && numel <= h.payload_size / item && numel * item == h.payload_size &&
         h.payload_size <= cursor.value_size();
}

}  // namespace

std::unique_ptr<LoadPrefetcher> LoadPrefetcher::start(DB& db, const Wanted& wanted, std::size_t threads,
                                                      uint64_t min_bytes) {
  if (threads < 2 || !db.indexed()) return nullptr;
  std::unique_ptr<LoadPrefetcher> self(new LoadPrefetcher());
  try {
    // Pass 1: the wanted records and their sizes, from the index.
    std::vector<WantedRecord> records;
    uint64_t total = 0;
    std::size_t ordinal = 0;
    for (auto c = db.new_cursor(); c->valid(); c->next(), ++ordinal) {
      const std::string_view key = c->key();
      if (!wanted(key)) continue;
      const uint64_t bytes = c->value_size();
      records.push_back({ordinal, std::string(key), bytes});
      total += bytes;
    }
    if (total < min_bytes || records.size() < 2) return nullptr;

    // Shares of equal bytes; share 0 is the caller's. Pass 2: the headers and tensors of the others.
    self->items_.reserve(records.size());
    std::vector<std::size_t> first_item(threads, 0);  // per share: the index of its first item
    auto cursor = db.new_cursor();
    uint64_t seen = 0;
    std::size_t share = 0;
    for (const auto& r : records) {
      while (share + 1 < threads && seen >= total / threads * (share + 1)) first_item[++share] = self->items_.size();
      seen += r.bytes;
      if (share == 0) continue;
      cursor->seek(r.key);
      RecordHeader h;
      if (!cursor->valid() || cursor->key() != r.key || !qualifies(*cursor, h)) continue;
      Item item{r.ordinal, r.key, {}};
      item.record.blob.get_mutable<Tensor>().resize_for_overwrite(h.dtype, h.shape);
      self->items_.push_back(std::move(item));
    }
    while (share + 1 < threads) first_item[++share] = self->items_.size();
    if (self->items_.empty()) return nullptr;

    self->states_ = std::make_unique<std::atomic<uint8_t>[]>(self->items_.size());
    for (std::size_t i = 0; i < self->items_.size(); ++i) self->states_[i].store(kPending, std::memory_order_relaxed);
    for (std::size_t s = 1; s < threads; ++s) {
      const std::size_t begin = first_item[s];
      const std::size_t end = s + 1 < threads ? first_item[s + 1] : self->items_.size();
      if (begin == end) continue;
      try {
        self->helpers_.emplace_back(&LoadPrefetcher::run_helper, self.get(), db.new_cursor(), begin, end);
      } catch (...) {
        // No helper for this share (no thread or no cursor): the caller reads it.
        for (std::size_t i = begin; i < end; ++i) self->states_[i].store(kFailed, std::memory_order_release);
      }
    }
  } catch (...) {
    // Before any helper started (they start last and their start does not throw out of the
    // loop): the caller loads alone and meets whatever went wrong itself.
    return nullptr;
  }
  return self;
}

LoadPrefetcher::~LoadPrefetcher() {
  stop_.store(true, std::memory_order_relaxed);
  for (auto& t : helpers_) t.join();
}

void LoadPrefetcher::run_helper(std::unique_ptr<Cursor> cursor, std::size_t begin, std::size_t end) noexcept {
  for (std::size_t i = begin; i < end; ++i) {
    Item& item = items_[i];
    uint8_t state = kFailed;
    if (!stop_.load(std::memory_order_relaxed)) {
      try {
        cursor->seek(item.key);
        if (cursor->valid() && cursor->key() == item.key) {
          CursorValueSource src(*cursor);
          RecordHeader h = read_record_header(src, "record header");
          if (h.kind == RecordKind::TensorChunk && h.chunk_count == 1) {
            // Fills the tensor allocated for this header (resize_for_overwrite to the same size
            // keeps its storage).
            BlobAssembler assembler(item.record.blob);
            assembler.add(h, src);
            if (assembler.complete() && src.position() == src.size()) {
              item.record.value_size = src.size();
              item.record.header = std::move(h);
              state = kDone;
            }
          }
        }
      } catch (...) {
        // The caller reads this record itself and reports what is wrong with it.
      }
    }
    if (state != kDone) item.record.blob.reset();
    states_[i].store(state, std::memory_order_release);
    states_[i].notify_one();
  }
}

PrefetchedRecord* LoadPrefetcher::take(std::size_t ordinal, std::string_view key) {
  while (next_ < items_.size() && items_[next_].ordinal < ordinal) ++next_;
  if (next_ == items_.size() || items_[next_].ordinal != ordinal) return nullptr;
  std::atomic<uint8_t>& state = states_[next_];
  uint8_t s = state.load(std::memory_order_acquire);
  while (s == kPending) {
    state.wait(kPending, std::memory_order_acquire);
    s = state.load(std::memory_order_acquire);
  }
  Item& item = items_[next_++];
  return s == kDone && item.key == key ? &item.record : nullptr;
}

}  // namespace moka::detail
