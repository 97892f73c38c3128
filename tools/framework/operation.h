#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/support/task_control.h"
#include "tools/framework/exit_status.h"

namespace stickler {

class ModelCache;
class AdapterStacks;

// What an operation gets from the front-end that runs it. The CLI's is this default: paths as
// given, no progress, nothing cached. The MCP server's confines paths to the workspace roots,
// reports progress and logs to the client, cancels, and keeps models loaded per session.
class OperationContext {
 public:
  virtual ~OperationContext() = default;
  // Progress reporting and the cancellation flag, for the simulator's long operations.
  virtual TaskControl task() { return {}; }
  // A log message for the caller (MCP: notifications/message at or above the session's level).
  virtual void log(const std::string& level, const std::string& message) {}
  // A file path the caller named, resolved; throws UserError when it may not be used.
  virtual std::string resolvePath(const std::string& path) { return path; }
  // A path a file is about to be written to, resolved as resolvePath, with the folders missing
  // on the way created (inside the workspace over MCP).
  virtual std::string resolveOutputPath(const std::string& path);
  // Models kept loaded across calls, or nullptr.
  virtual ModelCache* models() { return nullptr; }
  // The adapters applied to models in this session, or nullptr (each command starts afresh).
  virtual AdapterStacks* adapterStacks() { return nullptr; }
  // The directory whose `stickler-adapters/` holds the workspace's adapter catalog: the
  // current directory on the command line, the first workspace root over MCP.
  virtual std::string workspaceRoot() { return "."; }
  // How many entries a long list (nodes, blockers) gets when the caller did not say: 0 for all
  // (the command line), a page over MCP, where results must stay well under 25,000 tokens.
  virtual size_t listLimit() { return 0; }
};

// An operation run for the workspace at `root` with nothing kept between runs, as the CLI runs
// it: the review page's decisions, a server's start-up work.
class RootedContext : public OperationContext {
 public:
  explicit RootedContext(std::string root) : root_(std::move(root)) {}
  std::string workspaceRoot() override { return root_; }

 private:
  std::string root_;
};

// MCP tool annotations: hints a client shows or acts on. Stickler never reaches outside the
// machine, so openWorldHint is always false.
struct ToolAnnotations {
  bool read_only = true;
  bool destructive = false;
  bool idempotent = true;
};

// How an operation appears on the command line. Every input property becomes a flag named
// after it in kebab-case (`include_nodes` -> `--include-nodes`, or `--no-include-nodes` for a
// boolean that defaults to true) unless listed as positional or renamed.
struct CliSpec {
  std::string command;                         // e.g. "inspect"
  std::vector<std::string> positional;         // properties taken as positional arguments
  std::map<std::string, std::string> renamed;  // property -> flag name ("inputs" -> "input")
};

// One entry of the operation table: a function from a JSON input to a JSON output, with the
// schemas and descriptions that the CLI and the MCP server both present. A tool is written
// once, here, and appears in both front-ends.
struct Operation {
  std::string name;  // snake_case, the MCP tool name
  std::string title;
  std::string description;  // written for an agent deciding whether to call it
  nlohmann::json input_schema;
  nlohmann::json output_schema;
  ToolAnnotations annotations;
  CliSpec cli;
  // Throws UserError for bad input (a precise, one-line message), Cancelled when cancelled.
  std::function<nlohmann::json(const nlohmann::json& input, OperationContext& context)> run;
  // The output for people, when the CLI is not asked for --json.
  std::function<std::string(const nlohmann::json& output)> render_text;
  // False for commands only people may run (a reviewer's decision): no MCP tool is made of it,
  // so an agent cannot decide on its own proposal.
  bool over_mcp = true;
  // The CLI's exit status for a result (kOk when absent): `run` exits 1 on a failing verdict.
  std::function<ExitStatus(const nlohmann::json& output)> exit_status;
};

}  // namespace stickler
