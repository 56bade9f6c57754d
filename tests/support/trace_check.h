// check_trace: reads a Chrome trace-event file that moka wrote and checks its structure (valid JSON, every span
// closed with a duration, spans of one track nesting, every track of a span named); returns what it holds.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace moka::testing {

/// What a trace file holds, for the tests' own checks.
struct TraceContents {
  nlohmann::json json;
  std::map<std::string, int> spans_by_category;  // "step" -> count
  std::set<std::string> span_names;
  std::set<std::string> process_names;  // the "process_name" metadata ("node reader (moka 123)")
  std::set<std::string> thread_names;
  std::set<std::string> counter_names;
  int instants = 0;
};

/// Parses and checks the trace at `path`; every failure is a gtest failure naming the event.
inline TraceContents check_trace(const std::string& path) {
  TraceContents out;
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "no trace file " << path;
  std::stringstream text;
  text << in.rdbuf();
  try {
    out.json = nlohmann::json::parse(text.str());
  } catch (const std::exception& e) {
    ADD_FAILURE() << path << " is not JSON: " << e.what();
    return out;
  }
  EXPECT_TRUE(out.json.contains("traceEvents")) << path;
  EXPECT_EQ(out.json.value("otherData", nlohmann::json::object()).value("producer", ""), "moka");
  struct Span {
    double ts, end;
    std::string name;
  };
  std::map<std::pair<int64_t, int64_t>, std::vector<Span>> tracks;  // (pid, tid) -> spans
  std::set<int64_t> named_pids;
  std::set<std::pair<int64_t, int64_t>> named_tids;
  for (const auto& e : out.json["traceEvents"]) {
    const std::string ph = e.at("ph");
    if (ph == "M") {
      if (e.at("name") == "process_name") {
        named_pids.insert(e.at("pid").get<int64_t>());
        out.process_names.insert(e.at("args").at("name").get<std::string>());
      } else if (e.at("name") == "thread_name") {
        named_tids.insert({e.at("pid").get<int64_t>(), e.at("tid").get<int64_t>()});
        out.thread_names.insert(e.at("args").at("name").get<std::string>());
      }
      continue;
    }
    if (ph == "C") {
      out.counter_names.insert(e.at("name").get<std::string>());
      EXPECT_TRUE(e.at("args").is_object() && !e.at("args").empty()) << e.dump();
      continue;
    }
    if (ph == "i") {
      ++out.instants;
      continue;
    }
    EXPECT_EQ(ph, "X") << "an event of an unexpected phase: " << e.dump();
    if (ph != "X") continue;
    EXPECT_TRUE(e.contains("dur")) << "a span without a duration (never closed): " << e.dump();
    const double ts = e.at("ts").get<double>();
    const double dur = e.value("dur", -1.0);
    EXPECT_GE(ts, 0.0) << e.dump();
    EXPECT_GE(dur, 0.0) << e.dump();
    const std::string name = e.at("name");
    out.span_names.insert(name);
    ++out.spans_by_category[e.at("cat").get<std::string>()];
    tracks[{e.at("pid").get<int64_t>(), e.at("tid").get<int64_t>()}].push_back(Span{ts, ts + dur, name});
  }
  // Spans of one track nest: sorted by start (the longer first at equal starts), each lies inside the
  // innermost open span that has not ended before it starts. 1 ns of rounding is allowed.
  constexpr double kSlack = 0.0015;
  for (auto& [track, spans] : tracks) {
    EXPECT_TRUE(named_pids.contains(track.first)) << "pid " << track.first << " has no process_name";
    EXPECT_TRUE(named_tids.contains(track))
        << "pid " << track.first << " tid " << track.second << " has no thread_name";
    std::sort(spans.begin(), spans.end(),
              [](const Span& a, const Span& b) { return a.ts != b.ts ? a.ts < b.ts : a.end > b.end; });
    std::vector<const Span*> open;
    for (const Span& s : spans) {
      while (!open.empty() && open.back()->end <= s.ts + kSlack) open.pop_back();
      if (!open.empty()) {
        EXPECT_LE(s.end, open.back()->end + kSlack)
            << "span \"" << s.name << "\" [" << s.ts << ", " << s.end << "] overlaps \"" << open.back()->name << "\" ["
            << open.back()->ts << ", " << open.back()->end << "] on pid " << track.first << " tid " << track.second
            << " without nesting";
      }
      open.push_back(&s);
    }
  }
  return out;
}

}  // namespace moka::testing
