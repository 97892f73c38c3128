// What `adapt` and `apply` say of an adapted archive they saved: where, and for a decoder
// whether its decode graphs went with it (docs/adapter-format.md "Decode graphs").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace stickler {

// Sets `saved`; for a decoder (`decoder`), `saved_decode`, and when its decode graphs were not
// saved, `saved_without_decode`: `without_decode`, why not.
void noteSavedArchive(nlohmann::json& report, const std::string& out, bool decoder,
                      const std::string& without_decode);

// "saved OUT", with what became of the decode graphs, and a newline; "" when nothing was saved.
std::string savedArchiveText(const nlohmann::json& report);

}  // namespace stickler
