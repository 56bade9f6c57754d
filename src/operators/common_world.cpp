// CommonWorld: the rendezvous of a world's nodes in one process, the checks that every node made the same
// call on alike tensors, the reductions, and the cross-process step through a CollectiveTransport
// (docs/collectives.md).
#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "moka/core/blocking.h"
#include "moka/core/error.h"
#include "moka/operators/collectives.h"
#include "moka/operators/peer_finished.h"

namespace moka {

namespace {

template <class T, bool = std::is_integral_v<T>>
struct Wrapping {
  using type = T;
};
template <class T>
struct Wrapping<T, true> {
  using type = std::common_type_t<std::make_unsigned_t<T>, unsigned>;  // no promotion to int
};

template <class T>
void combine_typed(T* acc, const T* x, std::size_t n, Reduction r) {
  // Integers wrap (computed unsigned), as MPI's integer reductions do; no signed overflow.
  using W = typename Wrapping<T>::type;
  switch (r) {
    case Reduction::sum:
      for (std::size_t i = 0; i < n; ++i) acc[i] = static_cast<T>(static_cast<W>(acc[i]) + static_cast<W>(x[i]));
      break;
    case Reduction::product:
      for (std::size_t i = 0; i < n; ++i) acc[i] = static_cast<T>(static_cast<W>(acc[i]) * static_cast<W>(x[i]));
      break;
    case Reduction::max:
      for (std::size_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], x[i]);
      break;
    case Reduction::min:
      for (std::size_t i = 0; i < n; ++i) acc[i] = std::min(acc[i], x[i]);
      break;
  }
}

// acc = acc (r) x, element by element; both of dtype and numel n.
void combine(Tensor& acc, const Tensor& x, Reduction r) {
  const auto n = static_cast<std::size_t>(acc.numel());
  switch (acc.dtype()) {
    case DType::Float:
      return combine_typed(acc.mutable_data<float>(), x.data<float>(), n, r);
    case DType::Double:
      return combine_typed(acc.mutable_data<double>(), x.data<double>(), n, r);
    case DType::Int8:
      return combine_typed(acc.mutable_data<int8_t>(), x.data<int8_t>(), n, r);
    case DType::UInt8:
      return combine_typed(acc.mutable_data<uint8_t>(), x.data<uint8_t>(), n, r);
    case DType::Int16:
      return combine_typed(acc.mutable_data<int16_t>(), x.data<int16_t>(), n, r);
    case DType::Int32:
      return combine_typed(acc.mutable_data<int32_t>(), x.data<int32_t>(), n, r);
    case DType::Int64:
      return combine_typed(acc.mutable_data<int64_t>(), x.data<int64_t>(), n, r);
    default:
      throw TypeError(fmt::format("Allreduce: no reduction for {}", dtype_name(acc.dtype())));
  }
}

const char* kind_name(int32_t kind) {
  switch (kind) {
    case 1:
      return "Allreduce";
    case 2:
      return "Broadcast";
    case 3:
      return "Allgather";
    default:
      return "Barrier";
  }
}

std::string describe_call(int32_t kind, int64_t param) {
  if (kind == 1) return fmt::format("Allreduce ({})", reduction_name(static_cast<Reduction>(param)));
  if (kind == 2) return fmt::format("Broadcast (root {})", param);
  return kind_name(kind);
}

// What a round's error becomes in each node: a fresh exception of the same kind (each node adds its own
// context to what it throws, so the nodes must not share one exception object).
enum class ErrorKind : int32_t { none, invalid_input, type, runtime, cancelled };

[[noreturn]] void throw_error(ErrorKind kind, const std::string& what) {
  switch (kind) {
    case ErrorKind::invalid_input:
      throw InvalidInput(what);
    case ErrorKind::type:
      throw TypeError(what);
    case ErrorKind::cancelled:
      throw Cancelled(what);
    default:
      throw RuntimeError(what);
  }
}

// One process's account of a call, the same size in every process: what its nodes called and on what.
// Kept small (with the inline data, 112 bytes): over shared memory a 520-byte exchange took twice as
// long as an 8-byte one. What it describes in words travels in a second exchange, only when some
// account shows an error or a mismatch.
struct Header {
  int32_t error_kind;  // ErrorKind: the process's own nodes disagree (its text says how)
  int32_t kind;
  int64_t param;
  int32_t dtype;
  int32_t first_member;
  uint64_t shape_digest;
  uint64_t nbytes;
  uint64_t payload_bytes;  // string tensors: the bytes of their packed strings (pack_strings)
};
static_assert(sizeof(Header) == 48);

// Data of at most this many bytes travels with a call's agreement between processes.
constexpr std::size_t kInlineBytes = 64;

// A process's account in words: the tensor ("float32[2,3]") or the error, cut to fit.
struct Text {
  char text[216];
};
void put_text(Text& t, const std::string& s) {
  std::memset(t.text, 0, sizeof t.text);
  std::memcpy(t.text, s.data(), std::min(s.size(), sizeof t.text - 1));
}
std::string text_of(const Text& t) { return std::string(t.text, strnlen(t.text, sizeof t.text)); }

// A string tensor's elements as they cross processes: each one's 8-byte length, then its bytes.
void pack_strings(const Tensor& t, std::string& out) {
  const std::string* v = t.data<std::string>();
  for (int64_t i = 0; i < t.numel(); ++i) {
    const uint64_t n = v[i].size();
    out.append(reinterpret_cast<const char*>(&n), sizeof n);
    out += v[i];
  }
}
// n elements from the front of `in` into out[0..n).
void unpack_strings(std::string_view& in, std::string* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    uint64_t len = 0;
    if (in.size() < sizeof len) throw RuntimeError("collective: truncated strings from another process");
    std::memcpy(&len, in.data(), sizeof len);
    in.remove_prefix(sizeof len);
    if (in.size() < len) throw RuntimeError("collective: truncated strings from another process");
    out[i].assign(in.data(), len);
    in.remove_prefix(len);
  }
}

// The shape of an Allgather's output: the input's first dimension times the node count (a scalar is [1]).
std::vector<int64_t> gathered_shape(const Tensor& in, std::size_t nodes) {
  std::vector<int64_t> shape = in.shape();
  if (shape.empty()) shape.push_back(1);
  shape[0] *= static_cast<int64_t>(nodes);
  return shape;
}

uint64_t shape_digest(const Tensor& t) {  // FNV-1a over the dimensions
  uint64_t h = 1469598103934665603ull ^ t.ndim();
  for (int64_t d : t.shape()) h = (h ^ static_cast<uint64_t>(d)) * 1099511628211ull;
  return h;
}

}  // namespace

// What a process sends in a call's agreement: its account and, when the call's data is this small, the
// data too, so that a small collective is one exchange between processes, not two.
struct CommonWorld::Message {
  Header header;
  std::byte data[kInlineBytes];
};

std::optional<Reduction> reduction_from_name(std::string_view name) {
  if (name == "sum") return Reduction::sum;
  if (name == "max") return Reduction::max;
  if (name == "min") return Reduction::min;
  if (name == "product") return Reduction::product;
  return std::nullopt;
}

std::string_view reduction_name(Reduction r) {
  switch (r) {
    case Reduction::sum:
      return "sum";
    case Reduction::max:
      return "max";
    case Reduction::min:
      return "min";
    case Reduction::product:
      return "product";
  }
  return "?";
}

CommonWorld::CommonWorld(std::string name, std::vector<std::string> nodes, std::vector<int> process_of,
                         std::shared_ptr<CollectiveTransport> transport)
    : name_(std::move(name)),
      nodes_(std::move(nodes)),
      process_of_(std::move(process_of)),
      transport_(std::move(transport)),
      slot_of_(nodes_.size(), -1) {
  const int me = transport_ ? transport_->process() : 0;
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (process_of_.at(i) == me) {
      slot_of_[i] = static_cast<int>(local_.size());
      local_.push_back(static_cast<int>(i));
    }
  slots_.resize(local_.size());
}

CommonWorld::~CommonWorld() = default;

int CommonWorld::index_of(std::string_view node) const {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (nodes_[i] == node) return static_cast<int>(i);
  return -1;
}

void CommonWorld::allreduce(int member, const Tensor& in, Tensor& out, Reduction r) {
  collective(member, {Kind::allreduce, static_cast<int64_t>(r), &in, &out});
}
void CommonWorld::broadcast(int member, const Tensor& in, Tensor& out, int root) {
  if (root < 0 || root >= static_cast<int>(nodes_.size()))
    throw InvalidInput(fmt::format("Broadcast: root {} is not a node of common world \"{}\" (it has nodes 0..{})", root,
                                   name_, nodes_.size() - 1));
  collective(member, {Kind::broadcast, root, &in, &out});
}
void CommonWorld::allgather(int member, const Tensor& in, Tensor& out) {
  collective(member, {Kind::allgather, 0, &in, &out});
}
void CommonWorld::barrier(int member) { collective(member, {Kind::barrier, 0, nullptr, nullptr}); }

void CommonWorld::cancel() {
  cancelled_.store(true);
  std::lock_guard lk(mu_);
  cv_.notify_all();
}

void CommonWorld::member_finished(int member) {
  if (member < 0 || member >= static_cast<int>(nodes_.size()) || slot_of_[member] < 0) return;
  std::lock_guard lk(mu_);
  if (finished_ < 0) finished_ = member;
  cv_.notify_all();
}

void CommonWorld::throw_finished(int member, const Call& call) const {
  throw PeerFinished(fmt::format(
      "common world \"{}\": node \"{}\" calls {}, but node \"{}\" finished its share of the run without making "
      "it; every node must make the same collectives in the same order",
      name_, nodes_[member], describe_call(static_cast<int32_t>(call.kind), call.param), nodes_[finished_]));
}

void CommonWorld::throw_cancelled() const {
  throw Cancelled(
      fmt::format("common world \"{}\" was cancelled (an error elsewhere, or a stop); a new "
                  "CreateCommonWorld makes a usable one",
                  name_));
}

// Waits for ready(); a cancellation ends the wait too unless `cancellable` is false. Inside a fiber the
// wait yields to the fiber's siblings; elsewhere it tells the worker pool it blocks.
template <class Pred>
void CommonWorld::wait(std::unique_lock<std::mutex>& lk, Pred ready) {
  auto done = [&] { return ready() || cancelled_.load(); };
  while (!done()) {
    if (detail::t_fiber != nullptr) {
      lk.unlock();
      yield_until_ready([&] {
        std::lock_guard g(mu_);
        return done();
      });
      lk.lock();
      continue;
    }
    BlockingScope blocking;
    cv_.wait(lk, done);
  }
}

void CommonWorld::collective(int member, const Call& call) {
  if (member < 0 || member >= static_cast<int>(nodes_.size()) || slot_of_[member] < 0)
    throw InvalidInput(fmt::format("common world \"{}\": member {} is not a node of this process", name_, member));
  const int slot = slot_of_[member];
  std::unique_lock lk(mu_);
  wait(lk, [&] { return phase_ == Phase::gathering; });
  if (cancelled_.load()) throw_cancelled();
  if (finished_ >= 0) throw_finished(member, call);
  if (slots_[slot])
    throw RuntimeError(
        fmt::format("common world \"{}\": node \"{}\" made a second collective call before its first "
                    "returned (a node's collectives must run one at a time)",
                    name_, nodes_[member]));
  slots_[slot] = call;
  if (++arrived_ == static_cast<int>(local_.size())) {
    phase_ = Phase::working;
    lk.unlock();
    ErrorKind kind = ErrorKind::none;
    std::string what;
    try {
      perform();
    } catch (const Cancelled& e) {
      kind = ErrorKind::cancelled, what = e.what();
    } catch (const InvalidInput& e) {
      kind = ErrorKind::invalid_input, what = e.what();
    } catch (const TypeError& e) {
      kind = ErrorKind::type, what = e.what();
    } catch (const std::exception& e) {
      kind = ErrorKind::runtime, what = e.what();
    }
    lk.lock();
    // A cancelled cross-process step leaves the world unusable (its transport has a wait in flight).
    if (kind == ErrorKind::cancelled) cancelled_.store(true);
    error_ = what;
    error_kind_ = static_cast<int32_t>(kind);
    phase_ = Phase::leaving;
    cv_.notify_all();
  } else {
    wait(lk, [&] { return phase_ == Phase::leaving || finished_ >= 0; });
    if (phase_ == Phase::gathering) {  // cancelled, or a node finished, before every node of this process arrived
      slots_[slot].reset();
      --arrived_;
      if (cancelled_.load()) throw_cancelled();
      throw_finished(member, call);
    }
    // Working: the node doing the round finishes it (its cross-process wait ends once every process
    // answered; a process whose share stops answers with that).
    while (phase_ != Phase::leaving) {
      BlockingScope blocking;
      cv_.wait(lk);
    }
  }
  const auto kind = static_cast<ErrorKind>(error_kind_);
  const std::string what = error_;
  slots_[slot].reset();
  if (++left_ == static_cast<int>(local_.size())) {
    phase_ = Phase::gathering;
    arrived_ = left_ = 0;
    cv_.notify_all();
  }
  lk.unlock();
  if (kind != ErrorKind::none) throw_error(kind, what);
}

// Whether the calls of this process's nodes agree, and if not, why not.
CommonWorld::LocalCheck CommonWorld::check_local() const {
  const Call& first = *slots_[0];
  for (std::size_t s = 1; s < slots_.size(); ++s) {
    const Call& c = *slots_[s];
    if (c.kind != first.kind || c.param != first.param)
      return {
          static_cast<int32_t>(ErrorKind::invalid_input),
          fmt::format("common world \"{}\": node \"{}\" calls {}, node \"{}\" calls {}; every node must make the same "
                      "collectives in the same order",
                      name_, nodes_[local_[0]], describe_call(static_cast<int32_t>(first.kind), first.param),
                      nodes_[local_[s]], describe_call(static_cast<int32_t>(c.kind), c.param))};
  }
  if (first.kind == Kind::barrier) return {};
  const char* what = kind_name(static_cast<int32_t>(first.kind));
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    const Tensor& t = *slots_[s]->in;
    if (first.kind == Kind::allreduce && (t.dtype() == DType::String || t.dtype() == DType::Bool))
      return {static_cast<int32_t>(ErrorKind::type),
              fmt::format("{} on common world \"{}\": node \"{}\" gives {}, which {} does not take (numeric tensors)",
                          what, name_, nodes_[local_[s]], t.describe(), what)};
    if (!t.defined())
      return {static_cast<int32_t>(ErrorKind::type),
              fmt::format("{} on common world \"{}\": node \"{}\" gives a tensor with no dtype", what, name_,
                          nodes_[local_[s]])};
    if (s > 0 && (t.dtype() != slots_[0]->in->dtype() || t.shape() != slots_[0]->in->shape()))
      return {
          static_cast<int32_t>(ErrorKind::invalid_input),
          fmt::format(
              "{} on common world \"{}\": node \"{}\" gives {}, node \"{}\" gives {}; every node must give the same "
              "dtype and shape",
              what, name_, nodes_[local_[0]], slots_[0]->in->describe(), nodes_[local_[s]], t.describe())};
  }
  return {};
}

// acc = the inputs of this process's nodes combined in node order.
void CommonWorld::combine_local(Tensor& acc) const {
  const Reduction r = static_cast<Reduction>(slots_[0]->param);
  acc.copy_from(*slots_[0]->in);
  for (std::size_t s = 1; s < slots_.size(); ++s) combine(acc, *slots_[s]->in, r);
}

void CommonWorld::perform() {
  const LocalCheck check = check_local();
  if (transport_) return perform_across_processes(check);
  if (check.error_kind != 0) throw_error(static_cast<ErrorKind>(check.error_kind), check.what);
  const Call& c = *slots_[0];
  Tensor value;
  switch (c.kind) {
    case Kind::allreduce:
      combine_local(value);
      break;
    case Kind::broadcast:
      value.copy_from(*slots_[slot_of_[c.param]]->in);
      break;
    case Kind::allgather: {
      const Tensor& in0 = *c.in;
      const std::vector<int64_t> shape = gathered_shape(in0, nodes_.size());
      if (in0.dtype() == DType::String) {
        value.resize(DType::String, shape);
        for (std::size_t s = 0; s < slots_.size(); ++s)
          std::copy(slots_[s]->in->data<std::string>(), slots_[s]->in->data<std::string>() + in0.numel(),
                    value.mutable_data<std::string>() + static_cast<int64_t>(s) * in0.numel());
        break;
      }
      value.resize_for_overwrite(in0.dtype(), shape);
      const std::size_t block = in0.nbytes();
      for (std::size_t s = 0; s < slots_.size(); ++s)
        if (block) std::memcpy(value.raw_mutable_data() + s * block, slots_[s]->in->raw_data(), block);
      break;
    }
    case Kind::barrier:
      return;
  }
  for (const auto& s : slots_) s->out->copy_from(value);
}

void CommonWorld::perform_across_processes(const LocalCheck& check) {
  CollectiveTransport& t = *transport_;
  const Call& c = *slots_[0];
  Message message{};
  Header& mine = message.header;
  mine.kind = static_cast<int32_t>(c.kind);
  mine.param = c.param;
  mine.first_member = local_[0];
  std::string my_text;  // sent only if some account shows an error or a mismatch
  if (check.error_kind != 0) {
    mine.error_kind = check.error_kind;
    my_text = check.what;
  } else if (c.in != nullptr) {
    mine.dtype = static_cast<int32_t>(c.in->dtype());
    mine.shape_digest = shape_digest(*c.in);
    mine.nbytes = c.in->nbytes();
    my_text = c.in->describe();
  }
  // String tensors cross packed (Broadcast: the root's, on its process; Allgather: this process's nodes'
  // in node order), inline when the packed bytes fit.
  std::string packed;
  if (check.error_kind == 0 && c.in != nullptr && c.in->dtype() == DType::String) {
    if (c.kind == Kind::broadcast && process_of_[c.param] == t.process())
      pack_strings(*slots_[slot_of_[c.param]]->in, packed);
    if (c.kind == Kind::allgather)
      for (const auto& slot : slots_) pack_strings(*slot->in, packed);
    mine.payload_bytes = packed.size();
    if (packed.size() <= kInlineBytes && !packed.empty()) std::memcpy(message.data, packed.data(), packed.size());
  }
  // This process's data, inline when it fits (the decision after the agreement is the same everywhere:
  // every process's size follows from the agreed shape and the node -> process map).
  const std::size_t block = (check.error_kind == 0 && c.in != nullptr) ? c.in->nbytes() : 0;
  const std::size_t my_block = c.kind == Kind::allgather ? block * slots_.size() : block;
  if (check.error_kind == 0 && c.in != nullptr && c.in->dtype() != DType::String && my_block <= kInlineBytes) {
    if (c.kind == Kind::allreduce) {
      if (slots_.size() == 1) {
        if (block) std::memcpy(message.data, c.in->raw_data(), block);
      } else {
        Tensor v;
        combine_local(v);
        if (block) std::memcpy(message.data, v.raw_data(), block);
      }
    } else if (c.kind == Kind::broadcast && process_of_[c.param] == t.process()) {
      if (block) std::memcpy(message.data, slots_[slot_of_[c.param]]->in->raw_data(), block);
    } else if (c.kind == Kind::allgather) {
      for (std::size_t s = 0; s < slots_.size(); ++s)
        if (block) std::memcpy(message.data + s * block, slots_[s]->in->raw_data(), block);
    }
  }
  std::vector<Message> messages(static_cast<std::size_t>(t.processes()));
  t.agree(&message, sizeof message, messages.data());
  struct EndCall {  // on every way out, after the data movement
    CollectiveTransport& t;
    ~EndCall() { t.end_call(); }
  } end_call{t};
  // Every process now holds every account: the same decision everywhere.
  const Header& h0 = messages[0].header;
  auto differs = [&](const Header& h) {
    return h.kind != h0.kind || h.param != h0.param || h.dtype != h0.dtype || h.shape_digest != h0.shape_digest ||
           h.nbytes != h0.nbytes;
  };
  if (std::any_of(messages.begin(), messages.end(),
                  [&](const Message& m) { return m.header.error_kind != 0 || differs(m.header); })) {
    // Trouble: every process sends its account in words too, and all throw the same error.
    Text my_words{};
    put_text(my_words, my_text);
    std::vector<Text> words(messages.size());
    t.agree(&my_words, sizeof my_words, words.data());
    for (std::size_t p = 0; p < messages.size(); ++p)
      if (messages[p].header.error_kind != 0)
        throw_error(static_cast<ErrorKind>(messages[p].header.error_kind), text_of(words[p]));
    for (std::size_t p = 0; p < messages.size(); ++p) {
      const Header& h = messages[p].header;
      if (h.kind != h0.kind || h.param != h0.param)
        throw InvalidInput(fmt::format(
            "common world \"{}\": node \"{}\" calls {}, node \"{}\" calls {}; every node must make the same "
            "collectives in the same order",
            name_, nodes_[h0.first_member], describe_call(h0.kind, h0.param), nodes_[h.first_member],
            describe_call(h.kind, h.param)));
      if (differs(h))
        throw InvalidInput(fmt::format(
            "{} on common world \"{}\": node \"{}\" gives {}, node \"{}\" gives {}; every node must give the same "
            "dtype and shape",
            kind_name(h0.kind), name_, nodes_[h0.first_member], text_of(words[0]), nodes_[h.first_member],
            text_of(words[p])));
    }
  }
  if (c.kind != Kind::barrier && c.in->dtype() == DType::String) return gather_strings(messages, packed);
  std::vector<const std::byte*> inline_data;
  for (const Message& m : messages) inline_data.push_back(m.data);
  if (perform_inline(inline_data)) return;
  if (slots_.size() == 1 && c.kind == Kind::allreduce) {
    // The one node of this process: reduce in its output (in place when out is in), no staging copy.
    Tensor& out = *c.out;
    if (&out != c.in) out.copy_from(*c.in);
    return t.allreduce(out.raw_mutable_data(), static_cast<std::size_t>(out.numel()), out.dtype(),
                       static_cast<Reduction>(c.param));
  }
  Tensor value;
  switch (c.kind) {
    case Kind::allreduce:
      combine_local(value);
      t.allreduce(value.raw_mutable_data(), static_cast<std::size_t>(value.numel()), value.dtype(),
                  static_cast<Reduction>(c.param));
      break;
    case Kind::broadcast: {
      const int root_process = process_of_[c.param];
      if (root_process == t.process())
        value.copy_from(*slots_[slot_of_[c.param]]->in);
      else
        value.resize_for_overwrite(c.in->dtype(), c.in->shape());
      t.broadcast(value.raw_mutable_data(), value.nbytes(), root_process);
      break;
    }
    case Kind::allgather: {
      std::string local(block * slots_.size(), '\0');  // this process's nodes' inputs, in node order
      for (std::size_t s = 0; s < slots_.size(); ++s)
        if (block) std::memcpy(local.data() + s * block, slots_[s]->in->raw_data(), block);
      std::vector<std::size_t> bytes_of(messages.size(), 0);
      for (int p : process_of_) bytes_of[static_cast<std::size_t>(p)] += block;
      std::vector<std::size_t> start(messages.size(), 0);
      for (std::size_t p = 1; p < messages.size(); ++p) start[p] = start[p - 1] + bytes_of[p - 1];
      std::string gathered(start.back() + bytes_of.back(), '\0');
      t.allgatherv(local.data(), gathered.data(), bytes_of);
      value.resize_for_overwrite(c.in->dtype(), gathered_shape(*c.in, nodes_.size()));
      std::vector<std::size_t> next = start;  // each process's block holds its nodes in node order
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const auto p = static_cast<std::size_t>(process_of_[i]);
        if (block) std::memcpy(value.raw_mutable_data() + i * block, gathered.data() + next[p], block);
        next[p] += block;
      }
      break;
    }
    case Kind::barrier:
      return;
  }
  for (const auto& s : slots_) s->out->copy_from(value);
}

// Broadcast or Allgather of string tensors across processes, after the agreement: the packed strings of
// the root's process, or of every process, inline in the messages or moved by the transport.
void CommonWorld::gather_strings(const std::vector<Message>& messages, std::string& packed) {
  CollectiveTransport& t = *transport_;
  const Call& c = *slots_[0];
  std::vector<std::size_t> bytes_of;
  for (const Message& m : messages) bytes_of.push_back(m.header.payload_bytes);
  Tensor value;
  if (c.kind == Kind::broadcast) {
    const auto root = static_cast<std::size_t>(process_of_[c.param]);
    std::string from(bytes_of[root], '\0');
    if (bytes_of[root] <= kInlineBytes)
      std::memcpy(from.data(), messages[root].data, bytes_of[root]);
    else if (static_cast<int>(root) == t.process())
      from = packed;
    if (bytes_of[root] > kInlineBytes) t.broadcast(from.data(), from.size(), static_cast<int>(root));
    value.resize(DType::String, c.in->shape());
    std::string_view in(from);
    unpack_strings(in, value.mutable_data<std::string>(), value.numel());
  } else {
    const bool all_inline =
        std::all_of(bytes_of.begin(), bytes_of.end(), [](std::size_t n) { return n <= kInlineBytes; });
    std::vector<std::size_t> start(bytes_of.size(), 0);
    for (std::size_t p = 1; p < bytes_of.size(); ++p) start[p] = start[p - 1] + bytes_of[p - 1];
    std::string gathered(start.back() + bytes_of.back(), '\0');
    if (all_inline) {
      for (std::size_t p = 0; p < messages.size(); ++p)
        if (bytes_of[p]) std::memcpy(gathered.data() + start[p], messages[p].data, bytes_of[p]);
    } else {
      t.allgatherv(packed.data(), gathered.data(), bytes_of);
    }
    value.resize(DType::String, gathered_shape(*c.in, nodes_.size()));
    std::vector<std::string_view> rest;  // each process's block holds its nodes in node order
    for (std::size_t p = 0; p < bytes_of.size(); ++p) rest.emplace_back(gathered.data() + start[p], bytes_of[p]);
    const int64_t per = c.in->numel();
    for (std::size_t i = 0; i < nodes_.size(); ++i)
      unpack_strings(rest[static_cast<std::size_t>(process_of_[i])], value.mutable_data<std::string>() + i * per, per);
  }
  for (const auto& s : slots_) s->out->copy_from(value);
}

// The agreed call, when every process's data came with its account: the result from the messages,
// combined in process order (the same order, so the same result, on every process). False when the data
// is too large to have come inline.
bool CommonWorld::perform_inline(std::span<const std::byte* const> data) {
  const Call& c = *slots_[0];
  if (c.kind == Kind::barrier) return true;
  const std::size_t block = c.in->nbytes();
  std::vector<std::size_t> nodes_of(data.size(), 0);
  for (int p : process_of_) ++nodes_of[static_cast<std::size_t>(p)];
  const std::size_t most = *std::max_element(nodes_of.begin(), nodes_of.end());
  if ((c.kind == Kind::allgather ? block * most : block) > kInlineBytes) return false;
  Tensor value;
  switch (c.kind) {
    case Kind::allreduce: {
      value.resize_for_overwrite(c.in->dtype(), c.in->shape());
      Tensor next;
      next.resize_for_overwrite(c.in->dtype(), c.in->shape());
      if (block) std::memcpy(value.raw_mutable_data(), data[0], block);
      for (std::size_t p = 1; p < data.size(); ++p) {
        if (block) std::memcpy(next.raw_mutable_data(), data[p], block);
        combine(value, next, static_cast<Reduction>(c.param));
      }
      break;
    }
    case Kind::broadcast:
      value.resize_for_overwrite(c.in->dtype(), c.in->shape());
      if (block) std::memcpy(value.raw_mutable_data(), data[static_cast<std::size_t>(process_of_[c.param])], block);
      break;
    case Kind::allgather: {
      value.resize_for_overwrite(c.in->dtype(), gathered_shape(*c.in, nodes_.size()));
      std::vector<std::size_t> next(data.size(), 0);  // each process's block holds its nodes in node order
      for (std::size_t i = 0; i < nodes_.size(); ++i) {
        const auto p = static_cast<std::size_t>(process_of_[i]);
        if (block) std::memcpy(value.raw_mutable_data() + i * block, data[p] + next[p], block);
        next[p] += block;
      }
      break;
    }
    case Kind::barrier:
      break;
  }
  for (const auto& s : slots_) s->out->copy_from(value);
  return true;
}

}  // namespace moka
