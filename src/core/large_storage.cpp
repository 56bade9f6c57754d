// Large tensor storage: its own anonymous mapping, 2 MiB-aligned, with transparent huge pages requested,
// and a few freed mappings kept for reuse.
//
// A load into fresh tensors, or any operator that makes a new large output, spends most of its time
// in page faults when memory comes 4 KiB at a time (each fault zeroes one page and maps it; on a
// virtual machine each can also exit to the hypervisor). With MADV_HUGEPAGE one fault maps and
// zeroes 2 MiB. Where the system has huge pages switched off ("never") the hint is refused and the
// mapping works as before, and when no huge page is free the kernel falls back to ordinary pages.
// A mapping of its own, not malloc: the hint then never spreads to the malloc heap that small
// allocations reuse (measured: madvise on heap memory made a 4 MiB allocate/copy/free loop 6×
// slower). Without malloc's reuse, a loop that frees and allocates a tensor of the same size would
// fault its memory in again every time, so the last few freed mappings are kept and handed out
// again for the same length. Under AddressSanitizer the bytes past the storage's end and a kept
// mapping as a whole are poisoned, so overflows and use after free are still reported.
#include <sanitizer/asan_interface.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <mutex>
#include <new>

#include "moka/core/tensor.h"

namespace moka::detail {

namespace {
constexpr std::size_t kHugePage = std::size_t{2} << 20;
// Freed mappings kept for reuse: at most this many, of at most this many bytes together.
constexpr std::size_t kCachedMappings = 8;
constexpr std::size_t kCachedBytes = std::size_t{64} << 20;

std::size_t page_size() noexcept {
  static const std::size_t size = [] {
    const long s = ::sysconf(_SC_PAGESIZE);
    return s > 0 ? static_cast<std::size_t>(s) : std::size_t{4096};
  }();
  return size;
}

std::size_t mapped_length(std::size_t n) noexcept {
  const std::size_t page = page_size();
  return (n + page - 1) / page * page;
}

// Freed mappings, newest last. Thread-safety: mu guards everything.
struct MappingCache {
  std::mutex mu;
  void* at[kCachedMappings] = {};
  std::size_t len[kCachedMappings] = {};
  std::size_t count = 0;
  std::size_t bytes = 0;

  void* take(std::size_t l) {
    std::lock_guard lock(mu);
    for (std::size_t i = count; i-- > 0;) {
      if (len[i] != l) continue;
      void* p = at[i];
      bytes -= l;
      --count;
      at[i] = at[count];
      len[i] = len[count];
      return p;
    }
    return nullptr;
  }
  bool keep(void* p, std::size_t l) {
    std::lock_guard lock(mu);
    if (count == kCachedMappings || bytes + l > kCachedBytes) return false;
    at[count] = p;
    len[count] = l;
    ++count;
    bytes += l;
    return true;
  }
};

MappingCache& cache() {
  static MappingCache* c = new MappingCache;  // never destroyed: storage may be freed during exit
  return *c;
}

void* map_aligned(std::size_t len) {
  // Map kHugePage more than needed, then unmap what lies before the first 2 MiB boundary and after
  // the storage: a huge page can only back a 2 MiB-aligned range.
  const std::size_t span = len + kHugePage;
  void* m = ::mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(m);
  const std::uintptr_t start = (base + kHugePage - 1) & ~(std::uintptr_t{kHugePage} - 1);
  if (start > base) ::munmap(m, start - base);
  const std::uintptr_t end = start + len;
  if (base + span > end) ::munmap(reinterpret_cast<void*>(end), base + span - end);
  // A hint: refused where huge pages are off, which leaves ordinary pages.
  (void)::madvise(reinterpret_cast<void*>(start), len, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(start);
}
}  // namespace

void* allocate_large_storage(std::size_t n) {
  const std::size_t len = mapped_length(n);
  if (len < n || len > SIZE_MAX - kHugePage) throw std::bad_alloc();
  char* p = static_cast<char*>(cache().take(len));
  if (p == nullptr) p = static_cast<char*>(map_aligned(len));
  ASAN_UNPOISON_MEMORY_REGION(p, n);
  ASAN_POISON_MEMORY_REGION(p + n, len - n);
  return p;
}

void free_large_storage(void* p, std::size_t n) noexcept {
  if (p == nullptr) return;
  const std::size_t len = mapped_length(n);
  ASAN_POISON_MEMORY_REGION(p, len);
  if (cache().keep(p, len)) return;
  // A later mapping at this address must not inherit the poison.
  ASAN_UNPOISON_MEMORY_REGION(p, len);
  ::munmap(p, len);
}

}  // namespace moka::detail
