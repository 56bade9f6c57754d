// mpi_call: one MPI call made from a helper thread (the failure watcher, the queue links' progress thread),
// so that ThreadSanitizer does not report Open MPI's copies into other threads' buffers as races.
#pragma once

namespace moka::detail {

#if defined(__SANITIZE_THREAD__)
extern "C" void __tsan_ignore_thread_begin();
extern "C" void __tsan_ignore_thread_end();
#endif

/// Runs `call` (an MPI call) and returns its code. Open MPI completes other threads' requests from inside
/// whichever thread polls — a helper thread's MPI_Test may receive the bytes of the main thread's MPI_Recv into
/// its buffer — and those copies are ordered by Open MPI's own atomics, which ThreadSanitizer cannot see into.
/// Under TSan the calling thread's accesses inside the call are not recorded; moka's code around it stays checked.
template <class Call>
int mpi_call(Call call) {
#if defined(__SANITIZE_THREAD__)
  __tsan_ignore_thread_begin();
  const int code = call();
  __tsan_ignore_thread_end();
  return code;
#else
  return call();
#endif
}

}  // namespace moka::detail
