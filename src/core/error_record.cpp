// Error records: moka exceptions encoded as JSON to cross ranks (src/core/error_record.h).
#include "core/error_record.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "moka/core/error.h"

namespace moka::detail {
namespace {

template <class E>
[[noreturn]] void throw_as(const nlohmann::json& j, std::optional<int> rank) {
  E e(j.at("message").get<std::string>());
  const auto& context = j.at("context");
  // context is outermost first; add_context adds an outer location, so the innermost goes first.
  for (auto it = context.rbegin(); it != context.rend(); ++it) e.add_context(it->get<std::string>());
  // An error that crossed ranks once already (an agreement inside a step) keeps its first rank.
  const bool ranked = !context.empty() && context.front().get<std::string>().rfind("rank ", 0) == 0;
  if (rank && !ranked) e.add_context(fmt::format("rank {}", *rank));
  throw e;
}

std::string record_of(std::string_view kind, const Error& e) {
  return nlohmann::json{{"kind", kind}, {"message", e.message()}, {"context", e.context()}}.dump();
}

}  // namespace

std::string error_record(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const CorruptData& e) {
    return record_of("CorruptData", e);
  } catch (const InvalidInput& e) {
    return record_of("InvalidInput", e);
  } catch (const TypeError& e) {
    return record_of("TypeError", e);
  } catch (const NotFound& e) {
    return record_of("NotFound", e);
  } catch (const OutOfMemory& e) {
    return record_of("OutOfMemory", e);
  } catch (const RuntimeError& e) {
    return record_of("RuntimeError", e);
  } catch (const Cancelled& e) {
    return record_of("Cancelled", e);
  } catch (const Error& e) {
    return record_of("Error", e);
  } catch (const std::exception& e) {
    return nlohmann::json{{"kind", "Error"}, {"message", e.what()}, {"context", nlohmann::json::array()}}.dump();
  } catch (...) {
    return nlohmann::json{{"kind", "Error"}, {"message", "unknown exception"}, {"context", nlohmann::json::array()}}
        .dump();
  }
}

bool is_cancelled_record(std::string_view record) {
  return !record.empty() && nlohmann::json::parse(record).at("kind") == "Cancelled";
}

void rethrow_record(std::string_view record, std::optional<int> rank) {
  const nlohmann::json j = nlohmann::json::parse(record);
  const std::string kind = j.at("kind").get<std::string>();
  if (kind == "CorruptData") throw_as<CorruptData>(j, rank);
  if (kind == "InvalidInput") throw_as<InvalidInput>(j, rank);
  if (kind == "TypeError") throw_as<TypeError>(j, rank);
  if (kind == "NotFound") throw_as<NotFound>(j, rank);
  if (kind == "OutOfMemory") throw_as<OutOfMemory>(j, rank);
  if (kind == "RuntimeError") throw_as<RuntimeError>(j, rank);
  if (kind == "Cancelled") throw_as<Cancelled>(j, rank);
  throw_as<Error>(j, rank);
}

}  // namespace moka::detail
