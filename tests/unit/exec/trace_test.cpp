// Unit tests of timeline traces (moka/core/trace.h records, moka/exec/trace_file.h writes): spans on several threads
// and lanes, counters, instants, node tracks, names that need escaping, levels, and the errors of starting and
// writing a trace.
#include "moka/exec/trace_file.h"

#include <gtest/gtest.h>

#include <thread>

#include "moka/core/error.h"
#include "support/temp_dir.h"
#include "support/trace_check.h"

namespace moka {
namespace {

TEST(Trace, SpansOfThreadsLanesAndNodesNestAndAreNamed) {
  testing::TempDir dir;
  const std::string path = dir / "t.json";
  start_trace({.path = path, .level = TraceLevel::steps});
  EXPECT_TRUE(trace_enabled(TraceLevel::steps));
  EXPECT_FALSE(trace_enabled(TraceLevel::nets));
  {
    TraceSpan outer(TraceCategory::job, "outer \"quoted\"\n\\name");
    TraceSpan inner(TraceCategory::step, "inner");
    TraceSpan skipped(TraceCategory::net, "not recorded at this level", TraceLevel::nets);
    trace_instant(TraceCategory::checkpoint, "committed");
    trace_counter("queue depth", "records", 3);
  }
  std::thread other([] {
    trace_set_thread_name("helper thread");
    TraceNodeScope node("trainer");
    TraceSpan s(TraceCategory::step, "on the helper");
    const uint32_t previous = trace_set_lane(2);
    { TraceSpan f(TraceCategory::step, "on fiber 2"); }
    trace_set_lane(previous);
  });
  other.join();
  const TraceSummary summary = stop_trace();
  EXPECT_FALSE(trace_enabled());
  EXPECT_EQ(summary.events, 6);
  const testing::TraceContents t = testing::check_trace(path);
  EXPECT_TRUE(t.span_names.contains("outer \"quoted\"\n\\name"));
  EXPECT_TRUE(t.span_names.contains("on fiber 2"));
  EXPECT_FALSE(t.span_names.contains("not recorded at this level"));
  EXPECT_EQ(t.instants, 1);
  EXPECT_TRUE(t.counter_names.contains("queue depth"));
  EXPECT_TRUE(t.thread_names.contains("helper thread"));
  EXPECT_TRUE(t.thread_names.contains("helper thread fiber 2"));
  const bool trainer = std::any_of(t.process_names.begin(), t.process_names.end(),
                                   [](const std::string& n) { return n.rfind("node trainer (", 0) == 0; });
  EXPECT_TRUE(trainer);
}

TEST(Trace, LevelsNamesAndErrors) {
  EXPECT_EQ(trace_level_from_name("ops"), TraceLevel::ops);
  EXPECT_EQ(trace_level_from_name("default"), TraceLevel::steps);
  EXPECT_EQ(trace_level_name(TraceLevel::nets), "nets");
  EXPECT_THROW(trace_level_from_name("verbose"), InvalidInput);
  EXPECT_THROW(start_trace({.path = ""}), InvalidInput);
  testing::TempDir dir;
  start_trace({.path = dir / "a.json"});
  try {
    start_trace({.path = dir / "b.json"});
    ADD_FAILURE() << "a second trace started";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("already being recorded"), std::string::npos) << e.what();
  }
  (void)stop_trace();
  EXPECT_EQ(stop_trace().events, 0);  // stopping twice is harmless
  // A directory that does not exist: the error names the file before anything is recorded.
  try {
    start_trace({.path = dir / "missing/t.json"});
    ADD_FAILURE() << "no error";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("missing/t.json"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(trace_running());
  {
    ScopedTrace off({.path = ""});
    EXPECT_FALSE(trace_running());
  }
  {
    ScopedTrace on({.path = dir / "c.json"});
    EXPECT_TRUE(trace_running());
  }
  EXPECT_FALSE(trace_running());
  EXPECT_TRUE(std::filesystem::exists(dir / "c.json"));
}

TEST(Trace, CounterSourcesAreSampledWhileATraceRuns) {
  struct Depth final : TraceCounterSource {
    std::atomic<int> calls{0};
    void sample(std::vector<Sample>& out) override {
      ++calls;
      out.push_back({"queue depth", "q", 1.0});
    }
  } depth;
  TraceCounterRegistration reg(&depth);
  testing::TempDir dir;
  start_trace({.path = dir / "c.json", .sample_period = std::chrono::milliseconds(1)});
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  (void)stop_trace();
  EXPECT_GE(depth.calls.load(), 2);
  const testing::TraceContents t = testing::check_trace(dir / "c.json");
  EXPECT_TRUE(t.counter_names.contains("queue depth"));
  EXPECT_TRUE(t.thread_names.empty() || !t.thread_names.contains(""));
}

}  // namespace
}  // namespace moka
