// usable_cpus(): the calling thread's affinity mask, capped by the cgroup CPU quota (read at most once a second).
#include "exec/usable_cpus.h"

#include "core/spin_wait.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <fstream>
#include <string>

namespace moka::detail {

namespace {

std::optional<int64_t> parse_int(std::string_view s) noexcept {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.remove_suffix(1);
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string read_small_file(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s, '\0');
  return s.size() > 4096 ? std::string() : s;
}

// The limit of a cgroup and of each of its parents: `limit_of(dir)` for dir = path, its parent, ..., "".
template <class LimitOf>
void for_cgroup_and_parents(std::string path, LimitOf limit_of) {
  while (!path.empty() && path.back() == '/') path.pop_back();
  for (;;) {
    limit_of(path);
    if (path.empty()) return;
    path.erase(path.rfind('/'));
  }
}

// The lowest CPU limit of the cgroups this process is in (nullopt: none found). /proc/self/cgroup has
// "0::/path" for cgroup v2 (limit in cpu.max) and "N:controllers:/path" for v1 (the cpu controller's
// cpu.cfs_quota_us / cpu.cfs_period_us); parents count too, since their limits apply as well.
std::optional<double> read_cgroup_cpu_limit() {
  std::optional<double> limit;
  auto take = [&](std::optional<double> l) {
    if (l && (!limit || *l < *limit)) limit = l;
  };
  const std::string cgroups = read_small_file("/proc/self/cgroup");
  for (std::size_t pos = 0; pos < cgroups.size();) {
    std::size_t eol = cgroups.find('\n', pos);
    if (eol == std::string::npos) eol = cgroups.size();
    const std::string_view line(cgroups.data() + pos, eol - pos);
    pos = eol + 1;
    const std::size_t c1 = line.find(':');
    const std::size_t c2 = c1 == std::string_view::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string_view::npos) continue;
    const std::string controllers(line.substr(c1 + 1, c2 - c1 - 1));
    const std::string path(line.substr(c2 + 1));
    if (line.substr(0, c1) == "0" && controllers.empty()) {
      for_cgroup_and_parents(path, [&](const std::string& dir) {
        take(cpu_limit_from_cpu_max(read_small_file("/sys/fs/cgroup" + dir + "/cpu.max")));
      });
    } else if (("," + controllers + ",").find(",cpu,") != std::string::npos) {
      for_cgroup_and_parents(path, [&](const std::string& dir) {
        const std::string base = "/sys/fs/cgroup/" + controllers + dir;
        take(cpu_limit_from_cfs(read_small_file(base + "/cpu.cfs_quota_us"),
                                read_small_file(base + "/cpu.cfs_period_us")));
      });
    }
  }
  return limit;
}

// The quota rounded up to whole CPUs (0: no limit), refreshed at most once a second; relaxed: a stale
// value for up to a second is fine.
std::size_t cgroup_cpu_cap() noexcept {
  static std::atomic<int64_t> read_at_ns{INT64_MIN};
  static std::atomic<std::size_t> cap{0};
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const int64_t last = read_at_ns.load(std::memory_order_relaxed);
  if (last != INT64_MIN && now - last < 1'000'000'000) return cap.load(std::memory_order_relaxed);
  std::size_t c = 0;
  try {
    if (const auto limit = read_cgroup_cpu_limit())
      c = static_cast<std::size_t>(std::max(1.0, std::ceil(*limit - 1e-9)));
  } catch (...) {
    c = 0;  // unreadable: no cap
  }
  cap.store(c, std::memory_order_relaxed);
  read_at_ns.store(now, std::memory_order_relaxed);
  return c;
}

}  // namespace

std::optional<double> cpu_limit_from_cpu_max(std::string_view text) noexcept {
  const std::size_t sp = text.find(' ');
  if (sp == std::string_view::npos) return std::nullopt;
  const auto quota = parse_int(text.substr(0, sp));
  const auto period = parse_int(text.substr(sp + 1));
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

std::optional<double> cpu_limit_from_cfs(std::string_view quota_us, std::string_view period_us) noexcept {
  const auto quota = parse_int(quota_us);
  const auto period = parse_int(period_us);
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

std::size_t usable_cpus() noexcept {
  std::size_t n = affinity_cpus();
  if (const std::size_t cap = cgroup_cpu_cap(); cap != 0) n = std::min(n, cap);
  return n;
}

}  // namespace moka::detail
