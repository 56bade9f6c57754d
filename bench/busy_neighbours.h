// Busy neighbours for benchmarks: MOKA_BENCH_BUSY=N forks N processes that each spin on a core for as
// long as the benchmark runs, standing in for the other programs of a loaded machine (a build, a second
// job), so a benchmark and its peer can be compared under CPU contention in the same run.
#pragma once

#include <signal.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace moka_bench {

/// Construct once, at namespace scope (before main, while the process has one thread): reads
/// MOKA_BENCH_BUSY and starts that many spinning children; they die with the benchmark (on exit, and
/// through PR_SET_PDEATHSIG if it is killed). A malformed value exits with status 2 and a message.
class BusyNeighbours {
 public:
  BusyNeighbours() {
    const char* text = std::getenv("MOKA_BENCH_BUSY");
    if (text == nullptr || *text == '\0') return;
    char* end = nullptr;
    const long n = std::strtol(text, &end, 10);
    if (*end != '\0' || n < 0 || n > 256) {
      std::fprintf(stderr, "MOKA_BENCH_BUSY=%s: expected a number of busy processes, 0 to 256\n", text);
      std::exit(2);
    }
    const pid_t parent = ::getpid();
    for (long i = 0; i < n; ++i) {
      const pid_t pid = ::fork();
      if (pid < 0) {
        std::perror("MOKA_BENCH_BUSY: fork");
        std::exit(2);
      }
      if (pid == 0) spin(parent);
      children_.push_back(pid);
    }
    std::fprintf(stderr, "MOKA_BENCH_BUSY: %ld busy processes run beside this benchmark\n", n);
  }
  ~BusyNeighbours() {
    for (const pid_t pid : children_) ::kill(pid, SIGKILL);
    for (const pid_t pid : children_) ::waitpid(pid, nullptr, 0);
  }
  BusyNeighbours(const BusyNeighbours&) = delete;
  BusyNeighbours& operator=(const BusyNeighbours&) = delete;

 private:
  [[noreturn]] static void spin(pid_t parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(0);  // the parent died before prctl took effect
    volatile unsigned long work = 0;
    for (;;) work = work + 1;
  }

  std::vector<pid_t> children_;
};

}  // namespace moka_bench
