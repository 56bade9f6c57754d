// MpiQueueExchange: links between a queue on one rank and the nodes of other ranks that read or write it,
// moved by one progress thread per rank (src/mpi/mpi_queue_exchange.h, docs/queues.md §5).
#include "mpi/mpi_queue_exchange.h"

#include <fmt/format.h>
#include <sys/prctl.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "moka/core/blob.h"
#include "moka/core/error.h"
#include "moka/storage/blob_serializer.h"
#include "mpi/length_prefixed.h"

namespace moka::detail {
namespace {

enum Type : uint32_t {
  kConnect = 1,      // client -> owner: arg = role | window << 1 | num_blobs << 32; payload owner \0 name
  kAccepted = 2,     // owner -> client
  kRefused = 3,      // owner -> client: payload the reason
  kToOwner = 4,      // client -> owner: a record for the queue
  kToClient = 5,     // owner -> client: a record from the queue
  kAck = 6,          // owner -> writer client: arg records now in the queue
  kCredit = 7,       // reader client -> owner: arg more records it has room for
  kClosed = 8,       // owner -> client: the queue closed (for a reader: after the last record sent)
  kClose = 9,        // client -> owner: close the queue
  kWritersDone = 10  // writer client -> owner: after its last record, the node's writers are done
};

constexpr int kTag = 0;
constexpr int64_t kMaxWindow = 8;

// A record as it crosses: each blob serialized as Save writes it, length-prefixed.
std::string encode(const std::vector<Blob>& blobs) {
  std::string out;
  for (const Blob& b : blobs) append_record(out, serialize_blob_to_string("f", b));
  return out;
}

std::vector<std::string> split(std::string_view in) { return split_records(in, "queue link"); }

// Swaps the decoded blobs of `parts` into a queue; false (parts kept) when it would block.
QueueResult put(BlobsQueue& q, const std::vector<std::string>& parts) {
  std::vector<Blob> blobs(parts.size());
  for (std::size_t i = 0; i < parts.size(); ++i) deserialize_blob(parts[i], blobs[i]);
  std::vector<Blob*> ptrs;
  for (Blob& b : blobs) ptrs.push_back(&b);
  return q.try_write(ptrs);
}

}  // namespace

MpiQueueExchange::MpiQueueExchange() : thread_([this] { progress(); }) {}

MpiQueueExchange::~MpiQueueExchange() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  // Sends still in flight (the other rank stopped receiving): give them a moment, then let them go.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  for (Send& s : sends_) {
    int done = 0;
    while (!done && std::chrono::steady_clock::now() < deadline) MPI_Test(&s.request, &done, MPI_STATUS_IGNORE);
    if (!done) MPI_Request_free(&s.request);
  }
}

void MpiQueueExchange::new_run(std::map<std::string, int> rank_of) {
  {
    std::lock_guard lk(mu_);
    ++run_;
    rank_of_ = std::move(rank_of);
    clients_.clear();
    served_.clear();
    waiting_.clear();
    exports_.clear();
    std::vector<std::tuple<int, Header, std::string>> later;
    later.swap(later_);
    for (auto& [source, h, payload] : later) {
      if (h.run == run_)
        receive(source, h, payload);
      else if (h.run > run_)
        later_.emplace_back(source, h, std::move(payload));
    }
  }
  wake_.notify_all();
}

bool MpiQueueExchange::owner_is_here(const std::string& owner) const {
  std::lock_guard lk(mu_);
  auto it = rank_of_.find(owner);
  return it == rank_of_.end() || it->second == comm_.rank();
}

BlobsQueuePtr MpiQueueExchange::connect_elsewhere(const QueueConnection& c, const std::atomic<bool>& cancelled) {
  std::unique_lock lk(mu_);
  const uint64_t id = next_link_++;
  ClientLink& l = clients_[id];
  l.owner_rank = rank_of_.at(c.owner);
  l.role = c.role;
  l.window = std::clamp<int64_t>(c.capacity, 1, kMaxWindow);
  l.local = std::make_shared<BlobsQueue>(c.name, l.window, c.num_blobs, c.field_names);
  const uint32_t run = run_;
  const uint64_t arg = (c.role == QueueRole::writer ? 1u : 0u) | (static_cast<uint64_t>(l.window) << 1) |
                       (static_cast<uint64_t>(c.num_blobs) << 32);
  std::string payload = c.owner;
  payload += '\0';
  payload += c.name;
  send(l.owner_rank, kConnect, id, arg, payload);
  wake_.notify_all();
  for (;;) {
    auto it = clients_.find(id);
    if (run_ != run || it == clients_.end())
      throw Cancelled(fmt::format("ConnectBlobsQueue \"{}\": the run ended", c.name));
    if (!it->second.error.empty()) throw InvalidInput(it->second.error);
    if (it->second.accepted) return it->second.local;
    if (cancelled.load()) {
      it->second.local->close();
      throw Cancelled(fmt::format("ConnectBlobsQueue \"{}\": cancelled", c.name));
    }
    changed_.wait_for(lk, std::chrono::milliseconds(5));
  }
}

bool MpiQueueExchange::writers_done_elsewhere(const BlobsQueue* queue) {
  std::string error;
  {
    std::lock_guard lk(mu_);
    auto it = std::find_if(clients_.begin(), clients_.end(), [&](const auto& kv) {
      return kv.second.local.get() == queue && kv.second.role == QueueRole::writer;
    });
    if (it == clients_.end()) return false;
    it->second.writers_done = true;
    error = it->second.error;
    it->second.local->close();  // the progress thread sends what is left, then the count
  }
  wake_.notify_all();
  if (!error.empty()) throw RuntimeError(error);
  return true;
}

void MpiQueueExchange::on_export(const std::string& node, const std::string& name, const BlobsQueuePtr& queue,
                                 Counter* writers_left) {
  {
    std::lock_guard lk(mu_);
    exports_[{node, name}] = Export{queue, writers_left};
  }
  wake_.notify_all();
}

void MpiQueueExchange::send(int rank, uint32_t type, uint64_t link, uint64_t arg, std::string_view payload) {
  Header h{type, run_, link, arg};
  Send& s = sends_.emplace_back();
  s.bytes.resize(sizeof h + payload.size());
  std::memcpy(s.bytes.data(), &h, sizeof h);
  if (!payload.empty()) std::memcpy(s.bytes.data() + sizeof h, payload.data(), payload.size());
  if (s.bytes.size() > static_cast<std::size_t>(INT32_MAX))
    throw RuntimeError(
        fmt::format("queue link: a record of {} bytes is over MPI's 2 GiB message limit", s.bytes.size()));
  check_mpi(MPI_Isend(s.bytes.data(), static_cast<int>(s.bytes.size()), MPI_BYTE, rank, kTag, comm_.comm_, &s.request),
            "MPI_Isend");
}

void MpiQueueExchange::accept(const Connect& c, const Export& e) {
  if (e.queue->num_blobs() != c.num_blobs) {
    send(c.rank, kRefused, c.link, 0,
         fmt::format("ConnectBlobsQueue \"{}\": a node on rank {} moves records of {} blobs, the queue of node \"{}\" "
                     "holds {}",
                     c.name, c.rank, c.num_blobs, c.owner, e.queue->num_blobs()));
    return;
  }
  ServedLink& s = served_[{c.rank, c.link}];
  s.role = c.role;
  s.queue = e;
  s.credits = c.role == QueueRole::reader ? c.window : 0;
  send(c.rank, kAccepted, c.link, 0);
}

void MpiQueueExchange::receive(int source, const Header& h, std::string_view payload) {
  switch (h.type) {
    case kConnect: {
      const std::size_t zero = payload.find('\0');
      Connect c{source,
                h.link,
                std::string(payload.substr(0, zero)),
                zero == std::string_view::npos ? std::string() : std::string(payload.substr(zero + 1)),
                (h.arg & 1u) ? QueueRole::writer : QueueRole::reader,
                static_cast<int64_t>(h.arg >> 32),
                static_cast<int64_t>((h.arg >> 1) & 0x7fffffffu)};
      auto it = exports_.find({c.owner, c.name});
      if (it != exports_.end())
        accept(c, it->second);
      else
        waiting_.push_back(std::move(c));
      return;
    }
    case kAccepted:
    case kRefused: {
      auto it = clients_.find(h.link);
      if (it == clients_.end()) return;
      if (h.type == kAccepted)
        it->second.accepted = true;
      else
        it->second.error = std::string(payload);
      changed_.notify_all();
      return;
    }
    case kToClient:
    case kAck:
    case kClosed: {
      auto it = clients_.find(h.link);
      if (it == clients_.end()) return;
      ClientLink& l = it->second;
      if (h.type == kAck) {
        l.in_flight -= static_cast<int64_t>(h.arg);
      } else if (h.type == kClosed) {
        l.owner_closed = true;
        if (l.early.empty()) l.local->close();
      } else if (!l.local->is_closed()) {
        std::vector<std::string> parts = split(payload);
        if (!l.early.empty() || put(*l.local, parts) != QueueResult::ok) l.early.push_back(std::move(parts));
        ++l.delivered;
      }
      return;
    }
    case kToOwner:
    case kCredit:
    case kClose:
    case kWritersDone: {
      auto it = served_.find({source, h.link});
      if (it == served_.end()) return;
      ServedLink& s = it->second;
      if (h.type == kToOwner) {
        if (!s.closed_sent) s.pending.push_back(split(payload));
      } else if (h.type == kCredit) {
        s.credits += static_cast<int64_t>(h.arg);
      } else if (h.type == kClose) {
        s.queue.queue->close();
      } else {
        s.done = true;
      }
      return;
    }
    default:
      return;  // not a message of this exchange: ignored
  }
}

bool MpiQueueExchange::pump_client(uint64_t id, ClientLink& l) {
  if (!l.accepted || l.finished) return false;
  bool moved = false;
  if (l.role == QueueRole::writer) {
    if (l.owner_closed) return false;
    std::vector<Blob> blobs(static_cast<std::size_t>(l.local->num_blobs()));
    std::vector<Blob*> ptrs;
    for (Blob& b : blobs) ptrs.push_back(&b);
    while (l.in_flight < l.window) {
      const QueueResult r = l.local->try_read(ptrs);
      if (r == QueueResult::would_block) break;
      if (r == QueueResult::closed) {
        send(l.owner_rank, l.writers_done ? kWritersDone : kClose, id, 0);
        l.finished = true;
        return true;
      }
      std::string bytes;
      try {
        bytes = encode(blobs);
      } catch (const std::exception& e) {
        l.error =
            fmt::format("queue \"{}\": a record cannot cross to rank {}: {}", l.local->name(), l.owner_rank, e.what());
        l.local->close();
        send(l.owner_rank, kClose, id, 0);
        l.finished = true;
        return true;
      }
      send(l.owner_rank, kToOwner, id, 0, bytes);
      ++l.in_flight;
      moved = true;
    }
    return moved;
  }
  while (!l.early.empty() && put(*l.local, l.early.front()) == QueueResult::ok) {
    l.early.pop_front();
    moved = true;
  }
  if (l.owner_closed && l.early.empty() && !l.local->is_closed()) l.local->close();
  const int64_t taken = l.delivered - static_cast<int64_t>(l.early.size()) - static_cast<int64_t>(l.local->size());
  if (taken > l.credited) {
    send(l.owner_rank, kCredit, id, static_cast<uint64_t>(taken - l.credited));
    l.credited = taken;
    moved = true;
  }
  if (l.local->is_closed() && !l.owner_closed) {  // a reader stopped (or was cancelled): close the queue
    send(l.owner_rank, kClose, id, 0);
    l.finished = true;
    moved = true;
  }
  return moved;
}

bool MpiQueueExchange::pump_served(int rank, uint64_t id, ServedLink& s) {
  BlobsQueue& q = *s.queue.queue;
  bool moved = false;
  if (s.role == QueueRole::writer) {
    while (!s.pending.empty() && !s.closed_sent) {
      const QueueResult r = put(q, s.pending.front());
      if (r == QueueResult::would_block) break;
      if (r == QueueResult::closed) break;
      s.pending.pop_front();
      ++s.acks;
      moved = true;
    }
    if (s.acks > 0) {
      send(rank, kAck, id, static_cast<uint64_t>(s.acks));
      s.acks = 0;
    }
    if (q.is_closed() && !s.closed_sent) {
      s.pending.clear();
      send(rank, kClosed, id, 0);
      s.closed_sent = true;
      moved = true;
    }
    if (s.done && !s.counted && (s.pending.empty() || s.closed_sent)) {
      count_writer_node_down(s.queue);
      s.counted = true;
      moved = true;
    }
    return moved;
  }
  if (s.closed_sent) return false;
  std::vector<Blob> blobs(static_cast<std::size_t>(q.num_blobs()));
  std::vector<Blob*> ptrs;
  for (Blob& b : blobs) ptrs.push_back(&b);
  while (s.credits > 0) {
    const QueueResult r = q.try_read(ptrs);
    if (r == QueueResult::would_block) break;
    if (r == QueueResult::closed) {
      send(rank, kClosed, id, 0);
      s.closed_sent = true;
      return true;
    }
    send(rank, kToClient, id, 0, encode(blobs));
    --s.credits;
    moved = true;
  }
  return moved;
}

bool MpiQueueExchange::poll() {
  bool moved = false;
  for (int k = 0; k < 64; ++k) {
    int flag = 0;
    MPI_Status status;
    check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, kTag, comm_.comm_, &flag, &status), "MPI_Iprobe");
    if (!flag) break;
    int bytes = 0;
    check_mpi(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
    std::string buf(static_cast<std::size_t>(bytes), '\0');
    check_mpi(MPI_Recv(buf.data(), bytes, MPI_BYTE, status.MPI_SOURCE, kTag, comm_.comm_, MPI_STATUS_IGNORE),
              "MPI_Recv");
    moved = true;
    Header h;
    if (buf.size() < sizeof h) continue;
    std::memcpy(&h, buf.data(), sizeof h);
    const std::string_view payload = std::string_view(buf).substr(sizeof h);
    if (h.run > run_)
      later_.emplace_back(status.MPI_SOURCE, h, std::string(payload));
    else if (h.run == run_)
      receive(status.MPI_SOURCE, h, payload);
  }
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    auto e = exports_.find({it->owner, it->name});
    if (e == exports_.end()) {
      ++it;
      continue;
    }
    accept(*it, e->second);
    it = waiting_.erase(it);
    moved = true;
  }
  for (auto& [id, l] : clients_) moved = pump_client(id, l) || moved;
  for (auto& [key, s] : served_) moved = pump_served(key.first, key.second, s) || moved;
  for (auto it = sends_.begin(); it != sends_.end();) {
    int done = 0;
    check_mpi(MPI_Test(&it->request, &done, MPI_STATUS_IGNORE), "MPI_Test");
    it = done ? sends_.erase(it) : std::next(it);
  }
  return moved;
}

void MpiQueueExchange::progress() {
  prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);  // short naps really are short
  std::unique_lock lk(mu_);
  int idle = 0;
  while (!stop_) {
    bool moved = false;
    try {
      moved = poll();
    } catch (const std::exception& e) {
      // An MPI error or an unreadable record: every link of this rank stops (its operators see closed
      // queues; a writer's last task reports the error).
      for (auto& [id, l] : clients_) {
        if (l.error.empty()) l.error = fmt::format("queue link to rank {}: {}", l.owner_rank, e.what());
        l.local->close();
      }
      changed_.notify_all();
    }
    const bool busy = !clients_.empty() || !served_.empty() || !waiting_.empty() || !sends_.empty();
    if (moved) {
      idle = 0;
      continue;
    }
    ++idle;
    if (!busy) {
      wake_.wait_for(lk, std::chrono::milliseconds(2));
      continue;
    }
    if (idle < 32) continue;
    lk.unlock();
    std::this_thread::sleep_for(std::chrono::microseconds(idle < 2000 ? 5 : 200));
    lk.lock();
  }
}

}  // namespace moka::detail
