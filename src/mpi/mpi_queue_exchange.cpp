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
#include "mpi/mpi_helper_thread.h"

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

constexpr int kDataTag = 1;  // a large tensor's bytes, after the record message that describes it
// Tensors up to this size travel inside the record message; larger ones in a data message of their own,
// sent from and received into the tensor's storage (no copy on either side).
constexpr std::size_t kInlineBytes = std::size_t{16} << 10;

template <class T>
void put_pod(std::string& out, const T& v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}
template <class T>
T get_pod(std::string_view& in) {
  T v{};
  if (in.size() < sizeof v) throw RuntimeError("queue link: a truncated record from another rank");
  std::memcpy(&v, in.data(), sizeof v);
  in.remove_prefix(sizeof v);
  return v;
}

// A numeric tensor crosses as dtype, shape and bytes; anything else as Save writes it.
bool is_plain_tensor(const Blob& b) {
  const Tensor* t = b.tensor_or_null();
  return t && t->defined() && t->dtype() != DType::String;
}

std::vector<Blob*> pointers(std::vector<Blob>& blobs) {
  std::vector<Blob*> out;
  for (Blob& b : blobs) out.push_back(&b);
  return out;
}

QueueResult try_put(BlobsQueue& q, std::vector<Blob>& record) { return q.try_write(pointers(record)); }
QueueResult try_take(BlobsQueue& q, std::vector<Blob>& record) { return q.try_read(pointers(record)); }

}  // namespace

MpiQueueExchange::MpiQueueExchange()
    : thread_([this] { progress(); }), finalize_hook_(before_finalize([this] { stop_progress(); })) {}

void MpiQueueExchange::stop_progress() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

MpiQueueExchange::~MpiQueueExchange() {
  forget_before_finalize(finalize_hook_);
  stop_progress();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;  // finalized at exit with this exchange alive: its requests went with MPI
  // Sends still in flight (the other rank stopped receiving): give them a moment, then let them go.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(200);
  for (Send& s : sends_)
    for (MPI_Request& r : s.requests) {
      int done = 0;
      while (!done && std::chrono::steady_clock::now() < deadline) MPI_Test(&r, &done, MPI_STATUS_IGNORE);
      if (!done) MPI_Request_free(&r);
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
    decltype(later_) later;
    later.swap(later_);
    for (auto& [source, h, payload, record] : later) {
      if (h.run == run_)
        receive(source, h, payload, &record);
      else if (h.run > run_)
        later_.emplace_back(source, h, std::move(payload), std::move(record));
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
  l.spare.resize(static_cast<std::size_t>(c.num_blobs));
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
  check_mpi(mpi_call([&] {
              return MPI_Isend(s.bytes.data(), static_cast<int>(s.bytes.size()), MPI_BYTE, rank, kTag, comm_.comm_,
                               &s.requests.emplace_back());
            }),
            "MPI_Isend");
}

void MpiQueueExchange::send_record(int rank, uint32_t type, uint64_t link, std::vector<Blob>& blobs) {
  std::string payload;
  std::vector<const Tensor*> large;
  for (const Blob& b : blobs) {
    if (!is_plain_tensor(b)) {
      payload += 'S';
      std::string one = serialize_blob_to_string("f", b);
      put_pod(payload, static_cast<uint64_t>(one.size()));
      payload += one;
      continue;
    }
    const Tensor& t = *b.tensor_or_null();
    payload += 'T';
    put_pod(payload, static_cast<int32_t>(t.dtype()));
    put_pod(payload, static_cast<uint32_t>(t.shape().size()));
    for (int64_t d : t.shape()) put_pod(payload, d);
    put_pod(payload, static_cast<uint64_t>(t.nbytes()));
    if (t.nbytes() <= kInlineBytes) {
      payload.append(reinterpret_cast<const char*>(t.raw_data()), t.nbytes());
    } else {
      if (t.nbytes() > static_cast<std::size_t>(INT32_MAX))
        throw RuntimeError(
            fmt::format("queue link: a tensor of {} bytes is over MPI's 2 GiB message limit", t.nbytes()));
      large.push_back(&t);
    }
  }
  send(rank, type, link, 0, payload);
  if (large.empty()) return;
  Send& s = sends_.back();
  for (const Tensor* t : large)
    check_mpi(mpi_call([&] {
                return MPI_Isend(t->raw_data(), static_cast<int>(t->nbytes()), MPI_BYTE, rank, kDataTag, comm_.comm_,
                                 &s.requests.emplace_back());
              }),
              "MPI_Isend");
  // The tensors stay where they are (a Blob owns its object through a pointer): keep them until sent.
  // (then handed back to the link, whose next take swaps them into the queue for a writer to refill).
  s.keep.resize(blobs.size());
  for (std::size_t i = 0; i < blobs.size(); ++i) s.keep[i].swap(blobs[i]);
  s.run = run_;
  s.rank = rank;
  s.link = link;
  s.client = type == kToOwner;
}

// A record to take the next one with: one whose send completed (its storage goes back to the writers), or the
// link's spare.
template <class Link>
std::vector<Blob>& take_with(Link& l) {
  // Only into a spare that holds nothing: one that kept a recycled record (the queue was empty) keeps it.
  const bool holds = std::any_of(l.spare.begin(), l.spare.end(), [](const Blob& b) { return b.is_initialized(); });
  if (!holds && !l.sent.empty()) {
    l.spare.swap(l.sent.back());
    l.sent.pop_back();
  }
  return l.spare;
}

void MpiQueueExchange::decode(int source, std::string_view in, std::vector<Blob>& into) {
  std::size_t k = 0;
  while (!in.empty()) {
    if (k == into.size()) into.emplace_back();
    Blob& b = into[k++];
    const char kind = in.front();
    in.remove_prefix(1);
    if (kind == 'S') {
      const auto n = get_pod<uint64_t>(in);
      if (in.size() < n) throw RuntimeError("queue link: a truncated record from another rank");
      deserialize_blob(in.substr(0, n), b);
      in.remove_prefix(n);
      continue;
    }
    if (kind != 'T') throw RuntimeError("queue link: an unreadable record from another rank");
    const auto dtype = static_cast<DType>(get_pod<int32_t>(in));
    std::vector<int64_t> shape(get_pod<uint32_t>(in));
    for (int64_t& d : shape) d = get_pod<int64_t>(in);
    const auto nbytes = get_pod<uint64_t>(in);
    Tensor& t = b.is_type<Tensor>() ? b.get_checked_mutable<Tensor>() : b.emplace<Tensor>();
    t.resize_for_overwrite(dtype, shape);  // reuses the storage a queue swapped back when it fits
    if (t.nbytes() != nbytes) throw RuntimeError("queue link: an inconsistent tensor from another rank");
    if (nbytes <= kInlineBytes) {
      if (in.size() < nbytes) throw RuntimeError("queue link: a truncated record from another rank");
      std::memcpy(t.raw_mutable_data(), in.data(), nbytes);
      in.remove_prefix(nbytes);
    } else {
      check_mpi(mpi_call([&] {
                  return MPI_Recv(t.raw_mutable_data(), static_cast<int>(nbytes), MPI_BYTE, source, kDataTag,
                                  comm_.comm_, MPI_STATUS_IGNORE);
                }),
                "MPI_Recv");
    }
  }
  into.resize(k);
}

std::vector<Blob>* MpiQueueExchange::spare_for(int source, const Header& h) {
  if (h.run != run_) return nullptr;
  if (h.type == kToClient) {
    auto it = clients_.find(h.link);
    return it == clients_.end() ? nullptr : &it->second.spare;
  }
  auto it = served_.find({source, h.link});
  return it == served_.end() ? nullptr : &it->second.spare;
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
  s.spare.resize(static_cast<std::size_t>(c.num_blobs));
  send(c.rank, kAccepted, c.link, 0);
}

void MpiQueueExchange::receive(int source, const Header& h, std::string_view payload, std::vector<Blob>* record) {
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
      } else if (record && !l.local->is_closed()) {
        if (!l.early.empty() || try_put(*l.local, *record) != QueueResult::ok) l.early.push_back(std::move(*record));
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
        if (s.closed_sent || !record) return;
        if (!s.pending.empty() || try_put(*s.queue.queue, *record) != QueueResult::ok)
          s.pending.push_back(std::move(*record));
        else
          ++s.acks;
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
    while (l.in_flight < l.window) {
      const QueueResult r = try_take(*l.local, take_with(l));
      if (r == QueueResult::would_block) break;
      if (r == QueueResult::closed) {
        send(l.owner_rank, l.writers_done ? kWritersDone : kClose, id, 0);
        l.finished = true;
        return true;
      }
      try {
        send_record(l.owner_rank, kToOwner, id, l.spare);
      } catch (const std::exception& e) {
        l.error =
            fmt::format("queue \"{}\": a record cannot cross to rank {}: {}", l.local->name(), l.owner_rank, e.what());
        l.local->close();
        send(l.owner_rank, kClose, id, 0);
        l.finished = true;
        return true;
      }
      ++l.in_flight;
      moved = true;
    }
    return moved;
  }
  while (!l.early.empty() && try_put(*l.local, l.early.front()) == QueueResult::ok) {
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
      const QueueResult r = try_put(q, s.pending.front());
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
  while (s.credits > 0) {
    const QueueResult r = try_take(q, take_with(s));
    if (r == QueueResult::would_block) break;
    if (r == QueueResult::closed) {
      send(rank, kClosed, id, 0);
      s.closed_sent = true;
      return true;
    }
    send_record(rank, kToClient, id, s.spare);
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
    check_mpi(mpi_call([&] { return MPI_Iprobe(MPI_ANY_SOURCE, kTag, comm_.comm_, &flag, &status); }), "MPI_Iprobe");
    if (!flag) break;
    int bytes = 0;
    check_mpi(mpi_call([&] { return MPI_Get_count(&status, MPI_BYTE, &bytes); }), "MPI_Get_count");
    if (inbox_.size() < static_cast<std::size_t>(bytes)) inbox_.resize(static_cast<std::size_t>(bytes));
    check_mpi(mpi_call([&] {
                return MPI_Recv(inbox_.data(), bytes, MPI_BYTE, status.MPI_SOURCE, kTag, comm_.comm_,
                                MPI_STATUS_IGNORE);
              }),
              "MPI_Recv");
    moved = true;
    Header h;
    if (static_cast<std::size_t>(bytes) < sizeof h) continue;
    std::memcpy(&h, inbox_.data(), sizeof h);
    const std::string_view payload(inbox_.data() + sizeof h, static_cast<std::size_t>(bytes) - sizeof h);
    // A record's large tensors follow it in data messages: receive them now, whatever run it is of.
    std::vector<Blob> scratch;
    std::vector<Blob>* record = nullptr;
    if (h.type == kToOwner || h.type == kToClient) {
      std::vector<Blob>* spare = spare_for(status.MPI_SOURCE, h);
      record = spare ? spare : &scratch;
      decode(status.MPI_SOURCE, payload, *record);
    }
    if (h.run > run_)
      later_.emplace_back(status.MPI_SOURCE, h, std::string(payload),
                          record ? std::move(*record) : std::vector<Blob>{});
    else if (h.run == run_)
      receive(status.MPI_SOURCE, h, payload, record);
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
    check_mpi(mpi_call([&] {
                return MPI_Testall(static_cast<int>(it->requests.size()), it->requests.data(), &done,
                                   MPI_STATUSES_IGNORE);
              }),
              "MPI_Testall");
    if (!done) {
      ++it;
      continue;
    }
    if (!it->keep.empty() && it->run == run_) {
      std::vector<std::vector<Blob>>* sent = nullptr;
      if (it->client) {
        auto l = clients_.find(it->link);
        if (l != clients_.end()) sent = &l->second.sent;
      } else {
        auto l = served_.find({it->rank, it->link});
        if (l != served_.end()) sent = &l->second.sent;
      }
      if (sent && sent->size() < static_cast<std::size_t>(kMaxWindow)) sent->push_back(std::move(it->keep));
    }
    it = sends_.erase(it);
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
    // While links are open: give the core away (a yield lets this rank's pipes run, and costs far less than
    // a timed sleep, whose timer interrupt dominated the message rate), and nap only after ~10k idle polls.
    lk.unlock();
    if (idle < 10000)
      std::this_thread::yield();
    else
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    lk.lock();
  }
}

}  // namespace moka::detail
