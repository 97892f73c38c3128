#include "tools/knowledge/gotcha_json.h"

#include "tools/framework/operation.h"

namespace stickler {

nlohmann::json gotchaToJson(const Gotcha& gotcha) {
  return {{"id", gotcha.id},
          {"title", gotcha.title},
          {"body", gotcha.body},
          {"tags", gotcha.tags},
          {"model", gotcha.model},
          {"adapter", gotcha.adapter},
          {"profile", gotcha.profile},
          {"evidence", gotcha.evidence},
          {"occurrences", gotcha.occurrences},
          {"created", gotcha.created},
          {"updated", gotcha.updated},
          {"uri", "stickler://gotchas/" + gotcha.id}};
}

GotchaStore gotchaStore(OperationContext& context) {
  return GotchaStore(context.workspaceRoot());
}

}  // namespace stickler
