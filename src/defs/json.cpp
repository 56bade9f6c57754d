// JSON codec for OperatorDef/NetDef/ExecutionStepDef/PlanDef: strict validating loader and lossless writer.
//
// nlohmann-json stays inside this file. Parsing goes through a SAX handler that builds an ordered DOM
// (so errors follow document order), rejects duplicate keys and bounds nesting depth; the DOM is then
// walked by readers that carry the JSON path of every value, so each error names where it is.
#include "moka/defs/json.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "moka/core/error.h"
#include "moka/defs/definition_file.h"

namespace moka {
namespace {

using Json = nlohmann::ordered_json;

/// Same value as kCallableOpType in moka/operators/callable.h; not included because defs sits below ops.
constexpr std::string_view kCallableType = "Callable";
/// Set while comparison_json writes: a Callable operator is written without its token instead of refused.
thread_local bool g_callables_for_comparison = false;
/// Substep nesting and net-in-argument nesting limit, so a hostile file cannot exhaust the stack.
constexpr int kMaxNesting = 64;
/// Raw JSON nesting limit, checked while parsing (a valid plan needs about 5 levels per nested net).
constexpr size_t kMaxJsonDepth = 512;
/// No object in the format has more than 13 fields; bounds ordered_map's linear lookups.
constexpr size_t kMaxObjectFields = 256;

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw InvalidInput((path.empty() ? std::string("top level") : path) + ": " + msg);
}

std::string join(const std::string& path, std::string_view key) {
  std::string r = path;
  if (!r.empty()) r += '.';
  r += key;
  return r;
}

std::string at(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

std::string quote(std::string_view s) { return Json(std::string(s)).dump(); }

/// A short rendering of a JSON value for messages: scalars as written, containers by kind.
std::string describe(const Json& v) {
  if (v.is_object()) return "an object";
  if (v.is_array()) return "an array";
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isnan(d)) return "NaN";
    if (std::isinf(d)) return d > 0 ? "a number too large for a double" : "a number too small for a double";
  }
  std::string s = v.dump();
  if (s.size() > 60) {
    size_t cut = 57;
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
    s = s.substr(0, cut) + "...";
  }
  return s;
}

[[noreturn]] void type_fail(const std::string& path, const char* expected, const Json& v) {
  fail(path, std::string("expected ") + expected + ", got " + describe(v));
}

// ---------------------------------------------------------------------------------------------
// Parsing text into a DOM.

/// Line and column (1-based, in bytes) of the byte nlohmann reports (1-based index of the last read byte).
std::string position_of(std::string_view text, size_t byte) {
  size_t offset = byte == 0 ? 0 : byte - 1;
  if (offset > text.size()) offset = text.size();
  size_t line = 1, line_start = 0;
  for (size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  return "line " + std::to_string(line) + ", column " + std::to_string(offset - line_start + 1);
}

/// Builds an ordered DOM like nlohmann's own DOM parser, and additionally rejects duplicate keys,
/// over-deep nesting and oversized objects with the JSON path of the offending value.
class DomBuilder final : public nlohmann::json_sax<Json> {
 public:
  explicit DomBuilder(std::string_view text) : text_(text) {}

  Json root;

  bool null() override { return put(nullptr) != nullptr; }
  bool boolean(bool v) override { return put(v) != nullptr; }
  bool number_integer(number_integer_t v) override { return put(v) != nullptr; }
  bool number_unsigned(number_unsigned_t v) override { return put(v) != nullptr; }
  bool number_float(number_float_t v, const string_t&) override { return put(v) != nullptr; }
  bool string(string_t& v) override { return put(std::move(v)) != nullptr; }
  bool binary(binary_t&) override { return false; }  // never produced by the JSON lexer

  bool start_object(std::size_t) override {
    Json* j = put(Json::object());
    frames_.push_back({j, {}});
    check_depth();
    return true;
  }
  bool key(string_t& k) override {
    Frame& f = frames_.back();
    if (f.json->contains(k)) fail(path(frames_.size() - 1), "duplicate field " + quote(k));
    if (f.json->size() >= kMaxObjectFields)
      fail(path(frames_.size() - 1), "object has more than " + std::to_string(kMaxObjectFields) + " fields");
    f.key = k;
    return true;
  }
  bool end_object() override {
    frames_.pop_back();
    return true;
  }
  bool start_array(std::size_t) override {
    Json* j = put(Json::array());
    frames_.push_back({j, {}});
    check_depth();
    return true;
  }
  bool end_array() override {
    frames_.pop_back();
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& ex) override {
    // "[json.exception.parse_error.101] parse error at line 1, column 2: <description>", or
    // "[json.exception.out_of_range.406] number overflow parsing '1e400'": keep the description.
    std::string description = ex.what();
    if (description.starts_with("[json.exception.")) {
      size_t p = description.find("] ");
      if (p != std::string::npos) description.erase(0, p + 2);
    }
    if (description.starts_with("parse error")) {
      size_t p = description.find(": ");
      if (p != std::string::npos) description.erase(0, p + 2);
    }
    // "last read: '...'" may quote bytes of invalid UTF-8; keep the message itself valid text.
    std::string clean;
    for (unsigned char c : description) {
      if (c < 0x80) {
        clean += char(c);
      } else {
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02X", c);
        clean += hex;
      }
    }
    throw InvalidInput(position_of(text_, position) + ": invalid JSON: " + clean);
  }

 private:
  struct Frame {
    Json* json;       // the container being filled; its parent does not change while it is open
    std::string key;  // for objects: the key whose value comes next
  };

  Json* put(Json v) {
    if (frames_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& f = frames_.back();
    if (f.json->is_array()) {
      f.json->push_back(std::move(v));
      return &f.json->back();
    }
    Json& slot = (*f.json)[f.key];
    slot = std::move(v);
    return &slot;
  }

  /// Path of the container opened as frames_[n-1] (n = 0: the root).
  std::string path(size_t n) const {
    std::string r;
    for (size_t k = 0; k < n; ++k) {
      const Frame& f = frames_[k];
      if (f.json->is_array())
        r = at(r, f.json->size() - 1);
      else
        r = join(r, f.key);
    }
    return r;
  }

  void check_depth() const {
    if (frames_.size() > kMaxJsonDepth)
      fail(path(frames_.size() - 1), "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }

  std::string_view text_;
  std::vector<Frame> frames_;
};

Json parse_text(std::string_view text) {
  DomBuilder builder(text);
  Json::sax_parse(text.begin(), text.end(), &builder, nlohmann::detail::input_format_t::json,
                  /*strict=*/true, /*ignore_comments=*/false);
  return std::move(builder.root);
}

// ---------------------------------------------------------------------------------------------
// Typed readers. Each takes the value and its path.

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

const Json& expect_object(const Json& v, const std::string& path) {
  if (!v.is_object()) type_fail(path, "an object", v);
  return v;
}

/// Rejects fields not in `known`, suggesting a close known name.
void check_fields(const Json& obj, const std::string& path, std::initializer_list<std::string_view> known) {
  for (const auto& item : obj.items()) {
    const std::string& k = item.key();
    bool ok = false;
    for (auto name : known) ok = ok || k == name;
    if (ok) continue;
    std::string msg = "unknown field " + quote(k);
    if (k.size() < 64) {
      for (auto name : known)
        if (edit_distance(k, name) <= 2) {
          msg += "; did you mean " + quote(name) + "?";
          break;
        }
    }
    fail(path, msg);
  }
}

const Json* field(const Json& obj, std::string_view key) {
  auto it = obj.find(std::string(key));
  return it == obj.end() ? nullptr : &*it;
}

std::string read_string(const Json& v, const std::string& path) {
  if (!v.is_string()) type_fail(path, "a string", v);
  return v.get<std::string>();
}

std::string read_nonempty_string(const Json& v, const std::string& path) {
  std::string s = read_string(v, path);
  if (s.empty()) fail(path, "must not be empty");
  return s;
}

bool read_bool(const Json& v, const std::string& path) {
  if (!v.is_boolean()) type_fail(path, "true or false", v);
  return v.get<bool>();
}

int64_t read_int64(const Json& v, const std::string& path) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max()))
      fail(path, v.dump() + " is out of range for a 64-bit integer");
    return int64_t(u);
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::trunc(d)) type_fail(path, "an integer", v);
    // [-2^63, 2^63): both bounds are exact doubles.
    if (d < -9223372036854775808.0 || d >= 9223372036854775808.0)
      fail(path, v.dump() + " is out of range for a 64-bit integer");
    return int64_t(d);
  }
  type_fail(path, "an integer", v);
}

int32_t read_int32(const Json& v, const std::string& path) {
  int64_t i = read_int64(v, path);
  if (i < std::numeric_limits<int32_t>::min() || i > std::numeric_limits<int32_t>::max())
    fail(path, std::to_string(i) + " is out of range for a 32-bit integer");
  return int32_t(i);
}

/// A double: a JSON number (integers only where exactly representable) or "NaN"/"Infinity"/"-Infinity".
double read_double(const Json& v, const std::string& path) {
  if (v.is_number_float()) return v.get<double>();
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    double d = double(u);
    if (d >= 18446744073709551616.0 || uint64_t(d) != u)
      fail(path, v.dump() + " cannot be represented exactly as a double");
    return d;
  }
  if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    double d = double(i);
    if (d >= 9223372036854775808.0 || int64_t(d) != i)
      fail(path, v.dump() + " cannot be represented exactly as a double");
    return d;
  }
  if (v.is_string()) {
    const auto& s = v.get_ref<const std::string&>();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
  }
  type_fail(path, "a number (or \"NaN\", \"Infinity\", \"-Infinity\")", v);
}

const Json& expect_array(const Json& v, const std::string& path) {
  if (!v.is_array()) type_fail(path, "an array", v);
  return v;
}

std::vector<std::string> read_strings(const Json& v, const std::string& path, bool nonempty = false) {
  std::vector<std::string> out;
  const Json& a = expect_array(v, path);
  out.reserve(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    out.push_back(nonempty ? read_nonempty_string(a[i], at(path, i)) : read_string(a[i], at(path, i)));
  return out;
}

NetDef read_net(const Json& v, const std::string& path, int depth);

constexpr std::string_view kArgValueFields[] = {"f", "i", "s", "n", "floats", "ints", "strings", "nets"};

Argument read_arg(const Json& v, const std::string& path, int depth) {
  const Json& o = expect_object(v, path);
  check_fields(o, path, {"name", "f", "i", "s", "n", "floats", "ints", "strings", "nets"});
  Argument a;
  const Json* name = field(o, "name");
  if (!name) fail(path, "missing field \"name\"");
  a.name = read_nonempty_string(*name, join(path, "name"));

  std::vector<std::string> set;
  for (const auto& item : o.items())
    for (auto f : kArgValueFields)
      if (item.key() == f) set.push_back(item.key());
  if (set.empty())
    fail(path, "argument " + quote(a.name) +
                   " has no value (one of \"f\", \"i\", \"s\", \"n\", \"floats\", \"ints\", \"strings\", \"nets\")");
  if (set.size() > 1) {
    std::string list;
    for (size_t k = 0; k < set.size(); ++k)
      list += (k == 0 ? "" : k + 1 == set.size() ? " and " : ", ") + quote(set[k]);
    fail(path, "argument has " + (set.size() == 2 ? std::string("two") : std::to_string(set.size())) + " values (" +
                   list + ")");
  }
  const std::string& key = set[0];
  const Json& val = o.at(key);
  const std::string vpath = join(path, key);
  if (key == "f") {
    a.f = read_double(val, vpath);
  } else if (key == "i") {
    a.i = read_int64(val, vpath);
  } else if (key == "s") {
    a.s = read_string(val, vpath);
  } else if (key == "n") {
    a.n = std::make_shared<const NetDef>(read_net(val, vpath, depth + 1));
  } else if (key == "floats") {
    const Json& arr = expect_array(val, vpath);
    a.floats.emplace();
    a.floats->reserve(arr.size());
    for (size_t k = 0; k < arr.size(); ++k) a.floats->push_back(read_double(arr[k], at(vpath, k)));
  } else if (key == "ints") {
    const Json& arr = expect_array(val, vpath);
    a.ints.emplace();
    a.ints->reserve(arr.size());
    for (size_t k = 0; k < arr.size(); ++k) a.ints->push_back(read_int64(arr[k], at(vpath, k)));
  } else if (key == "strings") {
    a.strings = read_strings(val, vpath);
  } else {  // nets
    const Json& arr = expect_array(val, vpath);
    a.nets.emplace();
    a.nets->reserve(arr.size());
    for (size_t k = 0; k < arr.size(); ++k) a.nets->push_back(read_net(arr[k], at(vpath, k), depth + 1));
  }
  return a;
}

std::vector<Argument> read_args(const Json& v, const std::string& path, int depth) {
  const Json& arr = expect_array(v, path);
  std::vector<Argument> out;
  out.reserve(arr.size());
  std::set<std::string> names;
  for (size_t k = 0; k < arr.size(); ++k) {
    out.push_back(read_arg(arr[k], at(path, k), depth));
    // Caffe2's ArgumentHelper enforces this too ("Duplicated argument name").
    if (!names.insert(out.back().name).second)
      fail(join(at(path, k), "name"), "duplicate argument name " + quote(out.back().name));
  }
  return out;
}

OperatorDef read_op(const Json& v, const std::string& path, int depth) {
  const Json& o = expect_object(v, path);
  check_fields(o, path, {"name", "type", "input", "output", "arg", "engine", "control_input", "debug_info"});
  OperatorDef op;
  if (const Json* f = field(o, "name")) op.name = read_string(*f, join(path, "name"));
  const Json* type = field(o, "type");
  if (!type) fail(path, "missing field \"type\"");
  op.type = read_nonempty_string(*type, join(path, "type"));
  if (op.type == kCallableType)
    fail(join(path, "type"),
         "\"Callable\" operators hold a C++ callable that exists only in the process that "
         "made it; they cannot be loaded from JSON");
  if (const Json* f = field(o, "input")) op.input = read_strings(*f, join(path, "input"));
  if (const Json* f = field(o, "output")) op.output = read_strings(*f, join(path, "output"));
  if (const Json* f = field(o, "arg")) op.arg = read_args(*f, join(path, "arg"), depth);
  if (const Json* f = field(o, "engine")) op.engine = read_string(*f, join(path, "engine"));
  if (const Json* f = field(o, "control_input")) op.control_input = read_strings(*f, join(path, "control_input"));
  if (const Json* f = field(o, "debug_info")) op.debug_info = read_string(*f, join(path, "debug_info"));
  return op;
}

NetDef read_net(const Json& v, const std::string& path, int depth) {
  if (depth > kMaxNesting)
    fail(path, "nets nested (in arguments) deeper than " + std::to_string(kMaxNesting) + " levels");
  const Json& o = expect_object(v, path);
  check_fields(o, path, {"name", "op", "type", "num_workers", "arg", "external_input", "external_output"});
  NetDef net;
  const Json* name = field(o, "name");
  if (!name) fail(path, "missing field \"name\" (every net needs a name)");
  net.name = read_nonempty_string(*name, join(path, "name"));
  if (const Json* f = field(o, "op")) {
    const std::string p = join(path, "op");
    const Json& arr = expect_array(*f, p);
    net.op.reserve(arr.size());
    for (size_t k = 0; k < arr.size(); ++k) net.op.push_back(read_op(arr[k], at(p, k), depth));
  }
  if (const Json* f = field(o, "type")) net.type = read_string(*f, join(path, "type"));
  if (const Json* f = field(o, "num_workers")) {
    net.num_workers = read_int32(*f, join(path, "num_workers"));
    if (*net.num_workers < 0) fail(join(path, "num_workers"), "must be >= 0");
  }
  if (const Json* f = field(o, "arg")) net.arg = read_args(*f, join(path, "arg"), depth);
  if (const Json* f = field(o, "external_input")) net.external_input = read_strings(*f, join(path, "external_input"));
  if (const Json* f = field(o, "external_output"))
    net.external_output = read_strings(*f, join(path, "external_output"));
  return net;
}

ExecutionStepDef read_step(const Json& v, const std::string& path, int depth) {
  if (depth > kMaxNesting) fail(path, "steps nested deeper than " + std::to_string(kMaxNesting) + " levels");
  const Json& o = expect_object(v, path);
  check_fields(o, path,
               {"name", "substep", "network", "num_iter", "criteria_network", "report_net", "report_interval",
                "run_every_ms", "concurrent_substeps", "should_stop_blob", "only_once", "create_workspace",
                "num_concurrent_instances", "stats_key"});
  ExecutionStepDef s;
  if (const Json* f = field(o, "name")) s.name = read_string(*f, join(path, "name"));
  if (const Json* f = field(o, "substep")) {
    const std::string p = join(path, "substep");
    const Json& arr = expect_array(*f, p);
    s.substep.reserve(arr.size());
    for (size_t k = 0; k < arr.size(); ++k) s.substep.push_back(read_step(arr[k], at(p, k), depth + 1));
  }
  if (const Json* f = field(o, "network")) s.network = read_strings(*f, join(path, "network"), true);
  if (const Json* f = field(o, "num_iter")) {
    s.num_iter = read_int64(*f, join(path, "num_iter"));
    if (*s.num_iter < 0) fail(join(path, "num_iter"), "must be >= 0");
  }
  if (const Json* f = field(o, "criteria_network"))
    s.criteria_network = read_string(*f, join(path, "criteria_network"));
  if (const Json* f = field(o, "report_net")) s.report_net = read_nonempty_string(*f, join(path, "report_net"));
  if (const Json* f = field(o, "report_interval")) {
    s.report_interval = read_int32(*f, join(path, "report_interval"));
    if (*s.report_interval <= 0) fail(join(path, "report_interval"), "must be > 0 (seconds)");
  }
  if (const Json* f = field(o, "run_every_ms")) {
    s.run_every_ms = read_int64(*f, join(path, "run_every_ms"));
    if (*s.run_every_ms <= 0) fail(join(path, "run_every_ms"), "must be > 0");
  }
  if (const Json* f = field(o, "concurrent_substeps"))
    s.concurrent_substeps = read_bool(*f, join(path, "concurrent_substeps"));
  if (const Json* f = field(o, "should_stop_blob"))
    s.should_stop_blob = read_nonempty_string(*f, join(path, "should_stop_blob"));
  if (const Json* f = field(o, "only_once")) s.only_once = read_bool(*f, join(path, "only_once"));
  if (const Json* f = field(o, "create_workspace")) s.create_workspace = read_bool(*f, join(path, "create_workspace"));
  if (const Json* f = field(o, "num_concurrent_instances")) {
    s.num_concurrent_instances = read_int32(*f, join(path, "num_concurrent_instances"));
    if (*s.num_concurrent_instances < 1) fail(join(path, "num_concurrent_instances"), "must be >= 1");
  }
  if (const Json* f = field(o, "stats_key")) s.stats_key = read_nonempty_string(*f, join(path, "stats_key"));

  // The plan executor's own checks (docs/plan-execution.md §2.2, §2.3), reported at load time.
  if (!s.substep.empty() && !s.network.empty())
    fail(path, "has both \"substep\" and \"network\" (a step runs either substeps or nets)");
  if (s.report_net && !s.report_interval) fail(path, "\"report_net\" needs \"report_interval\"");
  if (s.should_stop_blob && s.num_iter) fail(path, "\"should_stop_blob\" and \"num_iter\" cannot both be set");
  if (s.only_once && !s.should_stop_blob) fail(path, "\"only_once\" needs \"should_stop_blob\"");
  return s;
}

void check_net_refs(const ExecutionStepDef& s, const std::string& path, const std::set<std::string>& nets) {
  auto missing = [&](const std::string& p, const std::string& name) {
    fail(p, "net " + quote(name) + " is not defined in this plan's \"network\"");
  };
  for (size_t k = 0; k < s.substep.size(); ++k) check_net_refs(s.substep[k], at(join(path, "substep"), k), nets);
  for (size_t k = 0; k < s.network.size(); ++k)
    if (!nets.count(s.network[k])) missing(at(join(path, "network"), k), s.network[k]);
  if (s.report_net && !nets.count(*s.report_net)) missing(join(path, "report_net"), *s.report_net);
}

PlanDef read_plan(const Json& v, const std::string& path = {}) {
  const Json& o = expect_object(v, path);
  check_fields(o, path, {"name", "network", "execution_step"});
  PlanDef plan;
  if (const Json* f = field(o, "name")) plan.name = read_string(*f, join(path, "name"));
  std::set<std::string> names;
  const std::string network = join(path, "network");
  if (const Json* f = field(o, "network")) {
    const Json& arr = expect_array(*f, network);
    plan.network.reserve(arr.size());
    for (size_t k = 0; k < arr.size(); ++k) {
      plan.network.push_back(read_net(arr[k], at(network, k), 0));
      if (!names.insert(plan.network.back().name).second)
        fail(join(at(network, k), "name"), "duplicate net name " + quote(plan.network.back().name));
    }
  }
  const std::string steps = join(path, "execution_step");
  if (const Json* f = field(o, "execution_step")) {
    const Json& arr = expect_array(*f, steps);
    plan.execution_step.reserve(arr.size());
    for (size_t k = 0; k < arr.size(); ++k) plan.execution_step.push_back(read_step(arr[k], at(steps, k), 0));
  }
  for (size_t k = 0; k < plan.execution_step.size(); ++k) check_net_refs(plan.execution_step[k], at(steps, k), names);
  return plan;
}

TaskGroupDef read_task_group(const Json& v, const std::string& path = {}) {
  const Json& o = expect_object(v, path);
  check_fields(o, path, {"name", "nodes"});
  TaskGroupDef group;
  if (const Json* f = field(o, "name")) group.name = read_string(*f, join(path, "name"));
  const Json* nodes = field(o, "nodes");
  const std::string nodes_path = join(path, "nodes");
  if (!nodes) fail(nodes_path, "missing field \"nodes\"");
  const Json& arr = expect_array(*nodes, nodes_path);
  std::set<std::string> seen;
  for (size_t k = 0; k < arr.size(); ++k) {
    const std::string p = at(nodes_path, k);
    const Json& n = expect_object(arr[k], p);
    check_fields(n, p, {"node", "plan", "outputs"});
    NodePlanDef node;
    const Json* name = field(n, "node");
    if (!name) fail(p, "missing field \"node\"");
    node.node = read_nonempty_string(*name, join(p, "node"));
    if (!seen.insert(node.node).second) fail(join(p, "node"), "duplicate node " + quote(node.node));
    if (const Json* plan = field(n, "plan")) node.plan = read_plan(*plan, join(p, "plan"));
    if (const Json* outs = field(n, "outputs")) {
      node.outputs = read_strings(*outs, join(p, "outputs"), /*nonempty=*/true);
      std::set<std::string> unique(node.outputs.begin(), node.outputs.end());
      if (unique.size() != node.outputs.size()) fail(join(p, "outputs"), "an output is listed twice");
    }
    group.nodes.push_back(std::move(node));
  }
  return group;
}

JobDef read_job(const Json& v) {
  const std::string path;
  const Json& o = expect_object(v, path);
  check_fields(
      o, path,
      {"name", "init_group", "epoch_group", "download_group", "exit_group", "stop_conditions", "nodes_to_checkpoint"});
  JobDef job;
  if (const Json* f = field(o, "name")) job.name = read_string(*f, "name");
  const Json* epoch = field(o, "epoch_group");
  if (!epoch) fail("epoch_group", "missing field \"epoch_group\" (a job needs an epoch group)");
  job.epoch_group = read_task_group(*epoch, "epoch_group");
  if (const Json* f = field(o, "init_group")) job.init_group = read_task_group(*f, "init_group");
  if (const Json* f = field(o, "download_group")) job.download_group = read_task_group(*f, "download_group");
  if (const Json* f = field(o, "exit_group")) job.exit_group = read_task_group(*f, "exit_group");
  if (const Json* f = field(o, "stop_conditions")) {
    const Json& arr = expect_array(*f, "stop_conditions");
    for (size_t k = 0; k < arr.size(); ++k) {
      const std::string p = at("stop_conditions", k);
      const Json& c = expect_object(arr[k], p);
      check_fields(c, p, {"node", "blob"});
      StopConditionDef cond;
      const Json* node = field(c, "node");
      const Json* blob = field(c, "blob");
      if (!node) fail(p, "missing field \"node\"");
      if (!blob) fail(p, "missing field \"blob\"");
      cond.node = read_nonempty_string(*node, join(p, "node"));
      cond.blob = read_nonempty_string(*blob, join(p, "blob"));
      job.stop_conditions.push_back(std::move(cond));
    }
  }
  if (const Json* f = field(o, "nodes_to_checkpoint")) {
    job.nodes_to_checkpoint = read_strings(*f, "nodes_to_checkpoint", /*nonempty=*/true);
    std::set<std::string> unique(job.nodes_to_checkpoint.begin(), job.nodes_to_checkpoint.end());
    if (unique.size() != job.nodes_to_checkpoint.size()) fail("nodes_to_checkpoint", "a node is listed twice");
  }
  return job;
}

// ---------------------------------------------------------------------------------------------
// Writers. Only set optionals and non-empty strings/vectors are emitted.

Json double_json(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return d;
}

void put_strings(Json& o, const char* key, const std::vector<std::string>& v) {
  if (!v.empty()) o[key] = v;
}

[[noreturn]] void callable_fail(size_t index, const std::string* net_name) {
  std::string where = net_name ? "operator #" + std::to_string(index) + " (Callable) in net " + quote(*net_name)
                               : std::string("operator (Callable)");
  throw InvalidInput(where +
                     " holds a C++ callable that exists only in this process; plans with callables cannot be "
                     "serialised");
}

Json net_json(const NetDef& net, int depth);

Json arg_json(const Argument& a, int depth) {
  Json o = Json::object();
  o["name"] = a.name;
  if (a.f) o["f"] = double_json(*a.f);
  if (a.i) o["i"] = *a.i;
  if (a.s) o["s"] = *a.s;
  if (a.n) o["n"] = net_json(*a.n, depth + 1);
  if (a.floats) {
    Json arr = Json::array();
    for (double d : *a.floats) arr.push_back(double_json(d));
    o["floats"] = std::move(arr);
  }
  if (a.ints) o["ints"] = Json(*a.ints);
  if (a.strings) o["strings"] = Json(*a.strings);
  if (a.nets) {
    Json arr = Json::array();
    for (const auto& n : *a.nets) arr.push_back(net_json(n, depth + 1));
    o["nets"] = std::move(arr);
  }
  return o;
}

Json args_json(const std::vector<Argument>& args, int depth) {
  Json arr = Json::array();
  for (const auto& a : args) arr.push_back(arg_json(a, depth));
  return arr;
}

Json op_json(const OperatorDef& op, int depth, size_t index, const std::string* net_name) {
  if (op.type == kCallableType && !g_callables_for_comparison) callable_fail(index, net_name);
  Json o = Json::object();
  if (!op.name.empty()) o["name"] = op.name;
  if (!op.type.empty()) o["type"] = op.type;
  put_strings(o, "input", op.input);
  put_strings(o, "output", op.output);
  if (op.type == kCallableType) {
    std::vector<Argument> args;  // the token is a process-local number: every argument but it
    for (const Argument& a : op.arg)
      if (a.name != "token") args.push_back(a);
    if (!args.empty()) o["arg"] = args_json(args, depth);
  } else if (!op.arg.empty()) {
    o["arg"] = args_json(op.arg, depth);
  }
  if (!op.engine.empty()) o["engine"] = op.engine;
  put_strings(o, "control_input", op.control_input);
  if (!op.debug_info.empty()) o["debug_info"] = op.debug_info;
  return o;
}

Json net_json(const NetDef& net, int depth) {
  if (depth > kMaxNesting)
    throw InvalidInput("net " + quote(net.name) + ": nets nested (in arguments) deeper than " +
                       std::to_string(kMaxNesting) + " levels cannot be serialised");
  Json o = Json::object();
  if (!net.name.empty()) o["name"] = net.name;
  if (net.type) o["type"] = *net.type;
  if (net.num_workers) o["num_workers"] = *net.num_workers;
  put_strings(o, "external_input", net.external_input);
  put_strings(o, "external_output", net.external_output);
  if (!net.arg.empty()) o["arg"] = args_json(net.arg, depth);
  if (!net.op.empty()) {
    Json arr = Json::array();
    for (size_t k = 0; k < net.op.size(); ++k) arr.push_back(op_json(net.op[k], depth, k, &net.name));
    o["op"] = std::move(arr);
  }
  return o;
}

Json step_json(const ExecutionStepDef& s, int depth) {
  if (depth > kMaxNesting)
    throw InvalidInput("step " + quote(s.name) + ": steps nested deeper than " + std::to_string(kMaxNesting) +
                       " levels cannot be serialised");
  Json o = Json::object();
  if (!s.name.empty()) o["name"] = s.name;
  if (s.num_iter) o["num_iter"] = *s.num_iter;
  if (s.should_stop_blob) o["should_stop_blob"] = *s.should_stop_blob;
  if (s.only_once) o["only_once"] = *s.only_once;
  if (s.concurrent_substeps) o["concurrent_substeps"] = *s.concurrent_substeps;
  if (s.num_concurrent_instances) o["num_concurrent_instances"] = *s.num_concurrent_instances;
  if (s.create_workspace) o["create_workspace"] = *s.create_workspace;
  if (s.run_every_ms) o["run_every_ms"] = *s.run_every_ms;
  if (s.report_net) o["report_net"] = *s.report_net;
  if (s.report_interval) o["report_interval"] = *s.report_interval;
  if (s.criteria_network) o["criteria_network"] = *s.criteria_network;
  if (s.stats_key) o["stats_key"] = *s.stats_key;
  put_strings(o, "network", s.network);
  if (!s.substep.empty()) {
    Json arr = Json::array();
    for (const auto& sub : s.substep) arr.push_back(step_json(sub, depth + 1));
    o["substep"] = std::move(arr);
  }
  return o;
}

Json plan_json(const PlanDef& plan) {
  Json o = Json::object();
  if (!plan.name.empty()) o["name"] = plan.name;
  if (!plan.network.empty()) {
    Json arr = Json::array();
    for (const auto& n : plan.network) arr.push_back(net_json(n, 0));
    o["network"] = std::move(arr);
  }
  if (!plan.execution_step.empty()) {
    Json arr = Json::array();
    for (const auto& s : plan.execution_step) arr.push_back(step_json(s, 0));
    o["execution_step"] = std::move(arr);
  }
  return o;
}

Json task_group_json(const TaskGroupDef& g) {
  Json o = Json::object();
  if (!g.name.empty()) o["name"] = g.name;
  Json arr = Json::array();
  for (const auto& n : g.nodes) {
    Json node = Json::object();
    node["node"] = n.node;
    node["plan"] = plan_json(n.plan);
    put_strings(node, "outputs", n.outputs);
    arr.push_back(std::move(node));
  }
  o["nodes"] = std::move(arr);
  return o;
}

Json job_json(const JobDef& job) {
  Json o = Json::object();
  if (!job.name.empty()) o["name"] = job.name;
  o["init_group"] = task_group_json(job.init_group);
  o["epoch_group"] = task_group_json(job.epoch_group);
  o["download_group"] = task_group_json(job.download_group);
  o["exit_group"] = task_group_json(job.exit_group);
  Json conds = Json::array();
  for (const auto& c : job.stop_conditions) conds.push_back(Json{{"node", c.node}, {"blob", c.blob}});
  o["stop_conditions"] = std::move(conds);
  put_strings(o, "nodes_to_checkpoint", job.nodes_to_checkpoint);
  return o;
}

bool is_flat(const Json& j) {
  if (j.is_array() || j.is_object())
    for (const auto& e : j)
      if ((e.is_array() || e.is_object()) && !e.empty()) return false;
  return true;
}

/// Pretty printing that keeps short leaves on one line: lists of names and small arguments
/// ({"name": "value", "f": 1.5}) stay readable instead of taking a line per element.
void pretty(const Json& j, int indent, int level, std::string& out) {
  auto inline_form = [](const Json& v) {
    std::string r;
    bool first = true;
    if (v.is_array()) {
      r = "[";
      for (const auto& e : v) {
        r += first ? "" : ", ";
        r += e.dump();
        first = false;
      }
      return r + "]";
    }
    r = "{";
    for (const auto& item : v.items()) {
      r += first ? "" : ", ";
      r += Json(item.key()).dump() + ": ";
      const Json& e = item.value();
      if (e.is_array()) {
        r += "[";
        for (size_t k = 0; k < e.size(); ++k) r += (k ? ", " : "") + e[k].dump();
        r += "]";
      } else {
        r += e.dump();
      }
      first = false;
    }
    return r + "}";
  };
  if (!j.is_array() && !j.is_object()) {
    out += j.dump();
    return;
  }
  if (j.empty() || (j.is_array() && is_flat(j))) {
    out += inline_form(j);
    return;
  }
  if (j.is_object()) {
    bool small = true;
    for (const auto& e : j) small = small && (!e.is_object() || e.empty()) && is_flat(e);
    if (small) {
      std::string r = inline_form(j);
      if (r.size() + size_t(level * indent) <= 100) {
        out += r;
        return;
      }
    }
  }
  out += j.is_array() ? "[\n" : "{\n";
  size_t k = 0;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out.append(size_t((level + 1) * indent), ' ');
    if (j.is_object()) out += Json(it.key()).dump() + ": ";
    pretty(*it, indent, level + 1, out);
    out += ++k < j.size() ? ",\n" : "\n";
  }
  out.append(size_t(level * indent), ' ');
  out += j.is_array() ? ']' : '}';
}

std::string dump(const Json& j, int indent) {
  try {
    if (indent >= 0) {
      std::string out;
      pretty(j, indent, 0, out);
      return out;
    }
    return j.dump();
  } catch (const nlohmann::json::type_error& e) {
    // The only dump failure: a string that is not valid UTF-8 (JSON text must be UTF-8).
    std::string what = e.what();
    size_t p = what.find("] ");
    throw InvalidInput("cannot serialise: a string is not valid UTF-8 (" +
                       (p == std::string::npos ? what : what.substr(p + 2)) + ")");
  }
}

}  // namespace

PlanDef plan_from_json(std::string_view text) { return read_plan(parse_text(text)); }

NetDef net_from_json(std::string_view text) { return read_net(parse_text(text), "", 0); }

OperatorDef operator_from_json(std::string_view text) { return read_op(parse_text(text), "", 0); }

ExecutionStepDef step_from_json(std::string_view text) { return read_step(parse_text(text), "", 0); }

TaskGroupDef task_group_from_json(std::string_view text) { return read_task_group(parse_text(text)); }

namespace {
/// The first top-level field that only a job document has ("epoch_group", ...), or null.
const char* job_only_field(const Json& j) {
  if (!j.is_object()) return nullptr;
  for (const char* f :
       {"epoch_group", "init_group", "download_group", "exit_group", "stop_conditions", "nodes_to_checkpoint"})
    if (j.contains(f)) return f;
  return nullptr;
}
}  // namespace

RunnableDef runnable_from_json(std::string_view text) {
  Json j = parse_text(text);
  if (const char* f = job_only_field(j))
    fail("", std::string("field ") + quote(f) +
                 " makes this a job document (docs/job-format.md): it runs as a job (moka job run), not as a plan");
  if (j.is_object() && j.contains("nodes")) return read_task_group(j);
  return read_plan(j);
}

DocumentDef document_from_json(std::string_view text) {
  Json j = parse_text(text);
  if (job_only_field(j)) return read_job(j);
  if (j.is_object() && j.contains("nodes")) return read_task_group(j);
  return read_plan(j);
}

namespace {
template <class F>
auto parse_file(const std::string& path, std::string_view kind, F&& parse) {
  const std::string text = read_definition_file(path, kind);
  try {
    return parse(text);
  } catch (Error& e) {
    e.add_context(path);
    throw;
  }
}
}  // namespace

PlanDef load_plan_file(const std::string& path) { return parse_file(path, "plan", plan_from_json); }

RunnableDef load_runnable_file(const std::string& path) { return parse_file(path, "plan", runnable_from_json); }

JobDef job_from_json(std::string_view text) {
  Json j = parse_text(text);
  // A plan or TaskGroup given as a job: say so rather than 'unknown field "network"'.
  if (j.is_object() && !job_only_field(j)) {
    if (j.contains("nodes"))
      fail("",
           "this is a TaskGroup document (it has \"nodes\"), not a job: a job has an \"epoch_group\" "
           "(docs/job-format.md)");
    if (j.contains("network") || j.contains("execution_step"))
      fail("", "this is a plan, not a job: a job has an \"epoch_group\" (docs/job-format.md)");
  }
  return read_job(j);
}

JobDef load_job_file(const std::string& path) { return parse_file(path, "job", job_from_json); }

DocumentDef load_document_file(const std::string& path) { return parse_file(path, "plan or job", document_from_json); }

std::string to_json(const JobDef& job, int indent) {
  for (const TaskGroupDef* g : {&job.init_group, &job.epoch_group, &job.download_group, &job.exit_group}) {
    (void)to_json(*g, -1);  // refuses callables with the plan's own message
  }
  return dump(job_json(job), indent);
}

std::string to_json(const TaskGroupDef& group, int indent) {
  for (const auto& n : group.nodes) {
    try {
      (void)to_json(n.plan, -1);  // refuses callables and over-deep plans with the plan's own message
    } catch (Error& e) {
      e.add_context("node " + quote(n.node));
      throw;
    }
  }
  return dump(task_group_json(group), indent);
}

std::string to_json(const PlanDef& plan, int indent) { return dump(plan_json(plan), indent); }

std::string comparison_json(const TaskGroupDef& group) {
  struct Allow {
    Allow() { g_callables_for_comparison = true; }
    ~Allow() { g_callables_for_comparison = false; }
  } allow;
  return dump(task_group_json(group), -1);
}

std::string to_json(const NetDef& net, int indent) { return dump(net_json(net, 0), indent); }

std::string to_json(const OperatorDef& op, int indent) { return dump(op_json(op, 0, 0, nullptr), indent); }

std::string to_json(const ExecutionStepDef& step, int indent) { return dump(step_json(step, 0), indent); }

}  // namespace moka
