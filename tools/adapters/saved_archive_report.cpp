#include "tools/adapters/saved_archive_report.h"

namespace stickler {

void noteSavedArchive(nlohmann::json& report, const std::string& out, bool decoder,
                      const std::string& without_decode) {
  report["saved"] = out;
  if (!decoder) return;
  report["saved_decode"] = without_decode.empty();
  if (!without_decode.empty()) report["saved_without_decode"] = without_decode;
}

std::string savedArchiveText(const nlohmann::json& report) {
  if (!report.contains("saved")) return "";
  std::string text = "saved " + report["saved"].get<std::string>();
  if (report.value("saved_decode", false)) text += ", with its decode graphs adapted";
  if (report.contains("saved_without_decode")) {
    text += ", without its decode interface (" + report["saved_without_decode"].get<std::string>() +
            ")";
  }
  return text + "\n";
}

}  // namespace stickler
