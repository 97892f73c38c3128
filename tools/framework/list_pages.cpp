#include "tools/framework/list_pages.h"

#include <string>

#include "simulator/support/errors.h"

namespace stickler {

using nlohmann::json;

void keepPage(json& object, const char* key, size_t offset, size_t limit) {
  if (!object.contains(key) || !object[key].is_array()) return;
  json& list = object[key];
  const size_t total = list.size();
  json page = json::array();
  const size_t end = limit == 0 ? total : std::min(total, offset + limit);
  for (size_t i = offset; i < end; ++i) page.push_back(std::move(list[i]));
  list = std::move(page);
  object[std::string(key) + "_total"] = total;
  if (end < total) object["next_" + std::string(key) + "_offset"] = end;
}

PageRequest pageRequest(const json& input, const char* prefix, OperationContext& context) {
  PageRequest request;
  request.limit = context.listLimit();
  auto read = [&](const std::string& field, size_t& into) {
    if (!input.contains(field)) return;
    if (!input[field].is_number_integer() || input[field].get<int64_t>() < 0) {
      throw UserError("field '" + field + "' must be a non-negative integer");
    }
    into = input[field].get<size_t>();
  };
  read(std::string(prefix) + "_offset", request.offset);
  read(std::string(prefix) + "_limit", request.limit);
  return request;
}

json pageFields(const char* prefix, const char* what) {
  return {{std::string(prefix) + "_offset",
           {{"type", "integer"},
            {"minimum", 0},
            {"default", 0},
            {"description", std::string("Skip this many ") + what + " (for the next page)."}}},
          {std::string(prefix) + "_limit",
           {{"type", "integer"},
            {"minimum", 0},
            {"description", std::string("At most this many ") + what +
                                " (0: all; default: all on the command line, 100 over MCP)."}}}};
}

}  // namespace stickler
