// usable_cpus(): how many CPUs the calling thread can run on at once — its affinity mask, capped by the
// CPU quota of the process's cgroup (a container limited to one CPU on a large machine has one). In exec,
// not core: it reads the cgroup files (core does no I/O); Concurrency::automatic decides with it.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace moka::detail {

/// @brief CPUs the calling thread may use at once: the CPUs of its affinity mask, at most the
/// cgroup's CPU quota rounded up (cgroup v2 `cpu.max` of the process's cgroup and its parents, or
/// cgroup v1 `cpu.cfs_quota_us` / `cpu.cfs_period_us`); at least 1. The affinity is read on every
/// call (one system call); the quota at most once a second.
/// Thread-safety: thread-safe.
std::size_t usable_cpus() noexcept;

/// @brief The CPU limit a cgroup v2 `cpu.max` file states ("QUOTA PERIOD" → QUOTA / PERIOD CPUs);
/// nullopt for "max ..." (no limit) or text that is not in that form.
std::optional<double> cpu_limit_from_cpu_max(std::string_view text) noexcept;

/// @brief The CPU limit of cgroup v1 quota and period files' contents; nullopt for a quota of -1
/// (no limit) or text that is not a number.
std::optional<double> cpu_limit_from_cfs(std::string_view quota_us, std::string_view period_us) noexcept;

}  // namespace moka::detail
