// Save/load throughput (issue 5, part 5): 1 GiB of float tensors as 10 and as 10,000 blobs, saved and loaded
// through each DB backend, against plain write+fsync+rename / read() of the same bytes in the same run.
//
// A plain main (not Google Benchmark): each measurement moves a gigabyte, so we want a few repetitions,
// their median and range, and the moka/plain ratio of each repetition, not auto-scaled iterations.
//
//   save_load_bench [--bytes=N] [--blobs=10,10000] [--backends=minidb,leveldb,lmdb] [--reps=3]
//                   [--cold] [--dir=DIR] [--direct] [--load-threads=N] [--malloc-trim]
//   Environment: MOKA_BENCH_SAVE_BYTES, MOKA_BENCH_REPS, MOKA_BENCH_COLD=1, MOKA_BENCH_DIR.
//   --dir (default /tmp): where the run makes its own scratch directory, removed at the end.
//
// Plain save: one file, write() of every tensor's bytes, fsync, rename, fsync of the directory (what a
// durable checkpoint writer must do at least). Plain load: read() of that file into freshly allocated
// buffers, one per tensor (a load must put the bytes into new memory, as moka's load into a fresh
// workspace does): new[] (4 KiB pages) and, as a second baseline, buffers of 2 MiB or more in
// mappings of their own with huge pages requested, as moka's tensor storage is. moka save:
// save_blobs (or, with --direct, serialize_blob + TransactionSink's streamed put per record, the
// path save_blobs takes); moka load: load_blobs into a fresh workspace (--direct: Cursor::read_value
// + BlobAssembler). Rates count tensor payload bytes (MiB = 2^20 bytes). --cold drops the page
// cache (needs root) before every load, plain and moka alike; otherwise both read a warm cache.
// --load-threads: LoadSpec::load_threads of moka's load (default 0, automatic).
//
// Heap: every contender allocates its buffers from the same process heap, and whether a load finds
// pages already mapped there depends on glibc trimming the heap top after the previous load, which
// depends on which small allocation happens to sit above the big ones: a run could be warm for one
// contender and fault every page in (12 us per 4 KiB page on some VMs) for the next. So the bench
// turns trimming off for the whole run (mallopt M_TRIM_THRESHOLD, and M_MMAP_THRESHOLD at the 32
// MiB that glibc's own adjustment reaches in a running process), the same for every contender,
// and each repetition after the first measures loads into warm heap memory; the first repetition
// (the minimum of each range) is the cold one. --malloc-trim keeps glibc's default instead.
#include <fcntl.h>
#include <fmt/format.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "moka/moka.h"
#include "moka/storage/blob_serializer.h"
#include "moka/storage/db.h"
#include "moka/storage/db_streams.h"
#include "moka/storage/save_load.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Config {
  uint64_t bytes = uint64_t{1} << 30;
  std::vector<int64_t> blob_counts = {10, 10000};
  std::vector<std::string> backends = {"minidb", "leveldb", "lmdb"};
  int reps = 3;
  bool cold = false;
  bool direct = false;
  std::size_t load_threads = 0;  // LoadSpec::load_threads (0: automatic)
  bool malloc_trim = false;      // glibc's default heap trimming (see the top of the file)
  std::string dir = "/tmp";      // the parent of the scratch directory the run makes (and removes)
};

std::vector<std::string> split(std::string_view s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = s.find(',', pos);
    const size_t end = comma == std::string_view::npos ? s.size() : comma;
    if (end > pos) out.emplace_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

Config parse(int argc, char** argv) {
  Config c;
  if (const char* e = std::getenv("MOKA_BENCH_SAVE_BYTES")) c.bytes = std::stoull(e);
  if (const char* e = std::getenv("MOKA_BENCH_REPS")) c.reps = std::stoi(e);
  if (const char* e = std::getenv("MOKA_BENCH_COLD")) c.cold = std::string_view(e) == "1";
  if (const char* e = std::getenv("MOKA_BENCH_DIR")) c.dir = e;
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    auto value = [&](std::string_view flag) -> std::string_view { return a.substr(flag.size()); };
    if (a.starts_with("--bytes=")) {
      c.bytes = std::stoull(std::string(value("--bytes=")));
    } else if (a.starts_with("--blobs=")) {
      c.blob_counts.clear();
      for (const auto& n : split(value("--blobs="))) c.blob_counts.push_back(std::stoll(n));
    } else if (a.starts_with("--backends=")) {
      c.backends = split(value("--backends="));
    } else if (a.starts_with("--reps=")) {
      c.reps = std::stoi(std::string(value("--reps=")));
    } else if (a == "--cold") {
      c.cold = true;
    } else if (a == "--direct") {
      c.direct = true;
    } else if (a == "--malloc-trim") {
      c.malloc_trim = true;
    } else if (a.starts_with("--load-threads=")) {
      c.load_threads = std::stoull(std::string(value("--load-threads=")));
    } else if (a.starts_with("--dir=")) {
      c.dir = value("--dir=");
    } else {
      throw std::invalid_argument(
          fmt::format("unknown argument {} (see the comment at the top of save_load_bench.cpp)", a));
    }
  }
  if (c.reps < 1 || c.bytes < 1024 || c.blob_counts.empty()) throw std::invalid_argument("bad --reps/--bytes/--blobs");
  return c;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

void check(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what);
}

void drop_page_cache() {
  ::sync();
  std::ofstream f("/proc/sys/vm/drop_caches");
  f << "3\n";
  f.flush();
  check(static_cast<bool>(f), "--cold: cannot write /proc/sys/vm/drop_caches (needs root)");
}

void write_all(int fd, const char* p, size_t n) {
  while (n > 0) {
    const ssize_t put = ::write(fd, p, n);
    if (put < 0 && errno == EINTR) continue;
    check(put > 0, fmt::format("write failed: {}", std::strerror(errno)));
    p += put;
    n -= static_cast<size_t>(put);
  }
}

void read_all(int fd, char* p, size_t n) {
  while (n > 0) {
    const ssize_t got = ::read(fd, p, n);
    if (got < 0 && errno == EINTR) continue;
    check(got > 0, fmt::format("read failed or short: {}", std::strerror(errno)));
    p += got;
    n -= static_cast<size_t>(got);
  }
}

void fsync_dir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  check(fd >= 0 && ::fsync(fd) == 0, "fsync of the directory failed");
  ::close(fd);
}

// The tensors: `count` float tensors that together hold `bytes` (the last one takes the remainder).
struct Data {
  moka::Workspace ws;
  std::vector<std::string> names;
  std::vector<size_t> sizes;  // bytes per tensor
};

std::unique_ptr<Data> make_data(uint64_t bytes, int64_t count) {
  auto d = std::make_unique<Data>();
  const uint64_t elems = bytes / sizeof(float);
  const uint64_t per = elems / static_cast<uint64_t>(count);
  uint32_t seed = 12345;
  for (int64_t i = 0; i < count; ++i) {
    const uint64_t n = i + 1 == count ? elems - per * static_cast<uint64_t>(count - 1) : per;
    const std::string name = fmt::format("t{:05d}", i);
    auto& t = d->ws.create_blob(name)->get_mutable<moka::Tensor>();
    t.resize(moka::DType::Float, {static_cast<int64_t>(n)});
    float* p = t.mutable_data<float>();
    for (uint64_t k = 0; k < n; ++k) {
      seed = seed * 1664525u + 1013904223u;  // incompressible enough, cheap to make
      p[k] = static_cast<float>(seed >> 8) * (1.0f / 16777216.0f);
    }
    d->names.push_back(name);
    d->sizes.push_back(n * sizeof(float));
  }
  return d;
}

// ---- plain files

double plain_save(const Data& d, const std::string& dir) {
  const std::string path = dir + "/plain.bin";
  const std::string tmp = path + ".tmp";
  const auto t0 = Clock::now();
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  check(fd >= 0, "open " + tmp);
  for (const auto& name : d.names) {
    const auto& t = d.ws.blob(name).get<moka::Tensor>();
    write_all(fd, reinterpret_cast<const char*>(t.raw_data()), t.nbytes());
  }
  check(::fsync(fd) == 0, "fsync");
  ::close(fd);
  check(::rename(tmp.c_str(), path.c_str()) == 0, "rename");
  fsync_dir(dir);
  return seconds_since(t0);
}

// A buffer for the plain load: new[] (malloc), or with `huge` and n >= 2 MiB an anonymous mapping
// of its own with transparent huge pages requested (madvise), as moka's tensor storage is.
class PlainBuffer {
 public:
  PlainBuffer(size_t n, bool huge) {
    constexpr size_t kHuge = size_t{2} << 20;
    if (!huge || n < kHuge) {
      heap_.reset(new char[n]);  // uninitialised: the kernel faults the pages in as read() fills them
      p_ = heap_.get();
      return;
    }
    span_ = n + kHuge;
    map_ = ::mmap(nullptr, span_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(map_ != MAP_FAILED, "mmap");
    p_ = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(map_) + kHuge - 1) & ~uintptr_t{kHuge - 1});
    ::madvise(p_, n, MADV_HUGEPAGE);
  }
  ~PlainBuffer() {
    if (map_ != nullptr) ::munmap(map_, span_);
  }
  PlainBuffer(const PlainBuffer&) = delete;
  PlainBuffer& operator=(const PlainBuffer&) = delete;
  char* data() const { return p_; }

 private:
  std::unique_ptr<char[]> heap_;
  void* map_ = nullptr;
  size_t span_ = 0;
  char* p_ = nullptr;
};

double plain_load(const Data& d, const std::string& dir, bool huge) {
  const std::string path = dir + "/plain.bin";
  std::vector<std::unique_ptr<PlainBuffer>> bufs;
  bufs.reserve(d.sizes.size());
  const auto t0 = Clock::now();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  check(fd >= 0, "open " + path);
  for (size_t n : d.sizes) {
    bufs.push_back(std::make_unique<PlainBuffer>(n, huge));
    read_all(fd, bufs.back()->data(), n);
  }
  ::close(fd);
  const double s = seconds_since(t0);
  // Spot check outside the timing.
  const auto& first = d.ws.blob(d.names.front()).get<moka::Tensor>();
  check(std::memcmp(bufs.front()->data(), first.raw_data(), std::min<size_t>(first.nbytes(), 4096)) == 0,
        "plain load: data differs");
  return s;
}

// ---- moka

double moka_save(Data& d, const std::string& type, const std::string& path, bool direct) {
  const auto t0 = Clock::now();
  if (direct) {
    auto db = moka::open_db(type, path, moka::DbMode::New);
    auto txn = db->new_transaction();
    moka::TransactionSink sink(*txn);
    for (const auto& name : d.names) moka::serialize_blob(name, d.ws.blob(name), sink);
    txn->commit();
    db->close();
  } else {
    moka::SaveSpec spec;
    spec.blob_names = d.names;
    spec.db = path;
    spec.db_type = type;
    spec.absolute_path = true;
    moka::save_blobs(d.ws, spec);
  }
  return seconds_since(t0);
}

double moka_load(const Data& d, const std::string& type, const std::string& path, bool direct, bool verify,
                 std::size_t load_threads) {
  moka::Workspace ws;
  const auto t0 = Clock::now();
  if (direct) {
    auto db = moka::open_db(type, path, moka::DbMode::Read);
    std::map<std::string, moka::BlobAssembler, std::less<>> assemblers;
    for (auto c = db->new_cursor(); c->valid(); c->next()) {
      const std::string name(moka::blob_name_from_key(c->key()));
      auto it = assemblers.find(name);
      if (it == assemblers.end()) it = assemblers.try_emplace(name, *ws.create_blob(name)).first;
      moka::CursorValueSource src(*c);
      it->second.add(src);
    }
    for (auto& [name, a] : assemblers) a.finish();
    check(assemblers.size() == d.names.size(), "direct load: blob count differs");
  } else {
    moka::LoadSpec spec;
    spec.blob_names = d.names;
    spec.dbs = {path};
    spec.db_type = type;
    spec.absolute_path = true;
    spec.load_threads = load_threads;
    moka::load_blobs(ws, spec);
  }
  const double s = seconds_since(t0);
  if (verify) {
    for (const auto& name : d.names) {
      const auto& a = d.ws.blob(name).get<moka::Tensor>();
      const auto& b = ws.blob(name).get<moka::Tensor>();
      check(a.nbytes() == b.nbytes() && std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0,
            fmt::format("{} load: blob {} differs", type, name));
    }
  }
  return s;  // ws (1 GiB) is freed after the timing
}

// ---- statistics

struct Series {
  std::vector<double> v;
  double median() const {
    auto s = v;
    std::sort(s.begin(), s.end());
    const size_t n = s.size();
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  }
  double lo() const { return *std::min_element(v.begin(), v.end()); }
  double hi() const { return *std::max_element(v.begin(), v.end()); }
  std::string rate() const { return fmt::format("{:.0f} ({:.0f}–{:.0f})", median(), lo(), hi()); }
  std::string ratio() const { return fmt::format("{:.2f} ({:.2f}–{:.2f})", median(), lo(), hi()); }
};

void remove_path(const std::string& p) {
  std::error_code ec;
  std::filesystem::remove_all(p, ec);
}

}  // namespace

int main(int argc, char** argv) try {
  Config cfg = parse(argc, argv);
  // Setting the trim threshold also freezes glibc's mmap threshold, which a running process
  // raises up to 32 MiB as it frees large blocks: freeze it there, or every buffer of 128 KiB or
  // more (the DB writers' among them) would be a fresh mapping faulted in on each use.
  if (!cfg.malloc_trim &&
      (::mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max()) != 1 || ::mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1))
    throw std::runtime_error("mallopt(M_TRIM_THRESHOLD / M_MMAP_THRESHOLD) failed");
  // Work in a fresh directory of our own under --dir and remove only that: --dir=/tmp must not
  // empty /tmp.
  std::filesystem::create_directories(cfg.dir);
  std::string scratch = cfg.dir + "/moka-save-load-bench-XXXXXX";
  if (::mkdtemp(scratch.data()) == nullptr)
    throw std::runtime_error(fmt::format("cannot make a scratch directory in {}: {}", cfg.dir, std::strerror(errno)));
  cfg.dir = scratch;
  if (cfg.cold) drop_page_cache();  // fail early without root
  const double mib = static_cast<double>(cfg.bytes) / (1 << 20);
  fmt::print(
      "save_load_bench: {:.0f} MiB of float tensors, {} repetitions, {} page cache, {}, load_threads {}, "
      "heap trimming {}, dir {}\n",
      mib, cfg.reps, cfg.cold ? "cold (dropped before each load)" : "warm",
      cfg.direct ? "serialize_blob + Transaction / Cursor + BlobAssembler" : "save_blobs / load_blobs",
      cfg.load_threads, cfg.malloc_trim ? "glibc default" : "off", cfg.dir);
  fmt::print("rates in MiB/s of tensor payload, median (min–max); ratio = moka / plain of the same repetition\n\n");
  fmt::print(
      "| blobs | backend | save | plain write+fsync+rename | save ratio | load | plain read() | load ratio | "
      "plain read(), huge pages | load ratio vs it |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|---|\n");
  for (int64_t count : cfg.blob_counts) {
    auto data = make_data(cfg.bytes, count);
    std::map<std::string, Series> save, load, psave, pload, phload, save_ratio, load_ratio, hload_ratio;
    for (int rep = 0; rep < cfg.reps; ++rep) {
      for (const auto& type : cfg.backends) {
        // Plain and moka alternate within a repetition so that both see the same machine load.
        const double ps = plain_save(*data, cfg.dir);
        if (cfg.cold) drop_page_cache();
        const double pl = plain_load(*data, cfg.dir, false);
        if (cfg.cold) drop_page_cache();
        const double phl = plain_load(*data, cfg.dir, true);
        remove_path(cfg.dir + "/plain.bin");
        const std::string path = cfg.dir + "/bench." + type;
        remove_path(path);
        const double ms = moka_save(*data, type, path, cfg.direct);
        if (cfg.cold) drop_page_cache();
        const double ml = moka_load(*data, type, path, cfg.direct, rep == 0, cfg.load_threads);
        remove_path(path);
        psave[type].v.push_back(mib / ps);
        pload[type].v.push_back(mib / pl);
        save[type].v.push_back(mib / ms);
        load[type].v.push_back(mib / ml);
        save_ratio[type].v.push_back(ps / ms);
        load_ratio[type].v.push_back(pl / ml);
        phload[type].v.push_back(mib / phl);
        hload_ratio[type].v.push_back(phl / ml);
      }
    }
    for (const auto& type : cfg.backends) {
      fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", count, type, save[type].rate(),
                 psave[type].rate(), save_ratio[type].ratio(), load[type].rate(), pload[type].rate(),
                 load_ratio[type].ratio(), phload[type].rate(), hload_ratio[type].ratio());
      std::fflush(stdout);
    }
  }
  remove_path(cfg.dir);
  return 0;
} catch (const std::exception& e) {
  fmt::print(stderr, "save_load_bench: {}\n", e.what());
  return 1;
}
