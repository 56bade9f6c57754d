// Test helper: runs a TaskGroup on another thread and checks that the run ends within a bound with a
// moka::Error whose message holds a given text (the run-fails-and-nothing-hangs check of the pipe tests).
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <string_view>

#include "moka/builder/task_group.h"
#include "moka/core/error.h"
#include "moka/session/session.h"

namespace moka::testing {

/// @brief Runs group in session on a std::async thread, waits up to bound, and succeeds when the run
/// threw a moka::Error whose message contains text. Fails (with the message it got) when the run did
/// not end in time, ended without an error, or with another message. Use as
/// `EXPECT_TRUE(run_expect_error(session, tg, "failed on purpose"));`.
/// A run that hangs still blocks this call in the future's destructor; the test's ctest timeout ends it,
/// after the failure has been printed.
inline ::testing::AssertionResult run_expect_error(Session& session, TaskGroup& group, std::string_view text,
                                                   std::chrono::seconds bound = std::chrono::seconds(30)) {
  auto run = std::async(std::launch::async, [&] { session.run(group); });
  if (run.wait_for(bound) != std::future_status::ready) {
    ADD_FAILURE() << "the run hangs (still running after " << bound.count() << " s)";
    return ::testing::AssertionFailure() << "the run hangs";
  }
  try {
    run.get();
  } catch (const Error& e) {
    const std::string message = e.what();
    if (message.find(text) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "the run failed without \"" << text << "\" in its message: " << message;
  }
  return ::testing::AssertionFailure() << "the run ended without an error (expected one with \"" << text << "\")";
}

}  // namespace moka::testing
