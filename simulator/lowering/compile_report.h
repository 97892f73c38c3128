// What lowering a model for a device profile found, as plain data: every blocker resolved to
// its operator, module, source and values, the CPU fallbacks with their transfer cost, the
// kernels. Free of LibTorch: the simulator fills it (describeLowering in lowering.h), the tools
// layer renders it (tools/reports/result_json.h, docs/check-json.md).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "simulator/graph/value_desc.h"

namespace stickler {

enum class CompileStatus {
  kOk,
  kBlocked,        // one or more blockers: no plan
  kCompilerError,  // a compile_error fault: the device compiler itself failed
};

// "ok", "blocked", "compiler_error": the reports' spelling.
const char* compileStatusName(CompileStatus status);

struct BlockerReport {
  std::string rule;         // unsupported-op, zero-length, weight-stick-alignment, ...
  std::string op;           // aten::topk
  std::string module;       // display path ("<root>" for the forward's own operators)
  std::string module_path;  // the path itself ("" for the root), for keys and file names
  std::string module_class;
  int64_t node_index = 0;            // among the graph's aten nodes, in execution order
  std::optional<SourceLine> code;    // the archive's TorchScript
  std::optional<SourceLine> python;  // the original Python, where recorded
  std::string message;
  std::vector<ValueDesc> inputs;  // as seen when the model ran on its example inputs
  std::vector<ValueDesc> outputs;
};

// Where the device compiler itself failed (a compile_error fault), which no blocker names.
struct CompilerFailureSite {
  std::string op;
  std::string module_path;  // "" for the root
  std::string module_class;
  int64_t node_index = 0;
};

struct FallbackReport {
  std::string op;
  std::string module;
  int64_t node_index = 0;
  int64_t bytes_to_host = 0;
  int64_t bytes_to_device = 0;
};

struct CompileReport {
  CompileStatus status = CompileStatus::kOk;
  std::string profile;
  std::vector<BlockerReport> blockers;
  std::map<std::string, int64_t> blockers_by_rule;
  std::map<std::string, int64_t> unsupported_ops;  // unsupported-op blockers by operator
  std::vector<FallbackReport> fallbacks;
  std::map<std::string, int64_t> fallbacks_by_op;
  int64_t transfers = 0;
  int64_t transfer_bytes = 0;
  double transfer_seconds = 0.0;
  int64_t kernels = 0;
  int64_t device_nodes = 0;
  int64_t fused_kernels = 0;  // kernels of more than one node
  std::optional<std::string> compiler_error;
  std::optional<CompilerFailureSite> compiler_error_site;
};

}  // namespace stickler
