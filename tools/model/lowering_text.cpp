#include "tools/model/lowering_text.h"

#include <cstdio>

namespace stickler {

std::string renderLoweringText(const nlohmann::json& lowering) {
  std::string out;
  for (const auto& blocker : lowering.at("blockers")) {
    out += "\n  [" + blocker["rule"].get<std::string>() + "] " + blocker["op"].get<std::string>() +
           " in " + blocker["module"].get<std::string>() + " (" +
           blocker["module_class"].get<std::string>() + ")";
    const auto& python = blocker["source"]["python"];
    const auto& where = python.is_null() ? blocker["source"]["code"] : python;
    if (!where.is_null())
      out += " at " + where["file"].get<std::string>() + ":" + where["line"].dump();
    out += "\n    " + blocker["message"].get<std::string>() + "\n";
  }
  if (lowering.contains("compiler_error")) {
    out += "\n  the device compiler failed:\n    " + lowering["compiler_error"].get<std::string>() +
           "\n";
  }
  const auto& fallbacks = lowering.at("fallbacks");
  if (fallbacks["count"].get<int64_t>() > 0) {
    char cost[96];
    std::snprintf(cost, sizeof cost, "%lld transfers, %.1f KB, about %.1f us",
                  static_cast<long long>(fallbacks["transfers"].get<int64_t>()),
                  fallbacks["transfer_bytes"].get<double>() / 1024,
                  fallbacks["transfer_seconds"].get<double>() * 1e6);
    out += "\nCPU fallbacks: " + fallbacks["count"].dump() + " (" + std::string(cost) + ")\n ";
    for (const auto& [op, count] : fallbacks["by_op"].items())
      out += " " + op + " x" + count.dump();
    out += "\n";
  }
  const auto& kernels = lowering.at("kernels");
  out += "\nDevice kernels: " + kernels["count"].dump() + " (" + kernels["device_nodes"].dump() +
         " nodes, " + kernels["fused"].dump() + " fused)\n";
  return out;
}

}  // namespace stickler
