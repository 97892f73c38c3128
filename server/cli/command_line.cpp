#include "server/cli/command_line.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <iostream>
#include <map>
#include <memory>
#include <set>

#include "server/cli/serve_command.h"
#include "simulator/support/errors.h"
#include "tools/framework/exit_status.h"
#include "tools/framework/operation_table.h"

namespace stickler {
namespace {

using nlohmann::json;

std::string kebab(std::string name) {
  for (char& c : name) {
    if (c == '_') c = '-';
  }
  return name;
}

// The values CLI11 fills in for one subcommand, turned into the operation's JSON input.
class SubcommandInput {
 public:
  // `has_nested`: the command has subcommands of its own (`sweep` and `sweep merge`), and CLI11
  // would demand the parent's required flags for them too; those are checked in missingFlag().
  SubcommandInput(CLI::App& command, const Operation& operation, bool has_nested)
      : operation_(operation), has_nested_(has_nested) {
    const json& properties = operation.input_schema.at("properties");
    for (const auto& name : operation.cli.positional) {
      addOption(command, name, properties.at(name), name);
    }
    for (const auto& [name, schema] : properties.items()) {
      if (std::find(operation.cli.positional.begin(), operation.cli.positional.end(), name) !=
          operation.cli.positional.end()) {
        continue;
      }
      auto renamed = operation.cli.renamed.find(name);
      const std::string flag =
          "--" + kebab(renamed == operation.cli.renamed.end() ? name : renamed->second);
      addOption(command, name, schema, flag);
    }
    command.add_flag("--json", json_output_, "Print the result as JSON");
  }

  json toJson() const {
    json input = json::object();
    for (const auto& [name, value] : strings_) {
      if (!value.empty()) input[name] = value;
    }
    for (const auto& [name, values] : lists_) {
      if (!values.empty()) input[name] = values;
    }
    for (const auto& [name, value] : integers_) {
      if (provided_.count(name)) input[name] = value;
    }
    for (const auto& [name, value] : numbers_) {
      if (provided_.count(name)) input[name] = value;
    }
    for (const auto& [name, flag] : flags_) {
      if (flag.set) input[name] = flag.value;
    }
    return input;
  }

  // The first required flag not given ("--models"), or "": CLI11 checks them unless nested.
  std::string missingFlag() const {
    if (!has_nested_) return "";
    const json given = toJson();
    for (const auto& name : operation_.input_schema.value("required", json::array())) {
      if (given.contains(name.get<std::string>())) continue;
      const auto renamed = operation_.cli.renamed.find(name);
      return "--" + kebab(renamed == operation_.cli.renamed.end() ? name.get<std::string>()
                                                                  : renamed->second);
    }
    return "";
  }

  bool jsonOutput() const { return json_output_; }
  const Operation& operation() const { return operation_; }

 private:
  struct Flag {
    bool set = false;
    bool value = false;
  };

  void addOption(CLI::App& command, const std::string& name, const json& schema,
                 const std::string& flag) {
    const std::string description = schema.value("description", "");
    const std::string type = schema.value("type", "string");
    const bool required = isRequired(name) && !has_nested_;
    if (type == "boolean") {
      const bool default_true = schema.value("default", false);
      Flag& state = flags_[name];
      const std::string flag_name = default_true ? "--no-" + flag.substr(2) : flag;
      command.add_flag_callback(
          flag_name,
          [&state, default_true] {
            state.set = true;
            state.value = !default_true;
          },
          description);
    } else if (type == "array") {
      command.add_option(flag, lists_[name], description)->required(required);
    } else if (type == "integer") {
      command
          .add_option_function<int64_t>(
              flag,
              [this, name](const int64_t& v) {
                integers_[name] = v;
                provided_.insert(name);
              },
              description)
          ->required(required);
    } else if (type == "number") {
      command
          .add_option_function<double>(
              flag,
              [this, name](const double& v) {
                numbers_[name] = v;
                provided_.insert(name);
              },
              description)
          ->required(required);
    } else {
      command.add_option(flag, strings_[name], description)->required(required);
    }
  }

  bool isRequired(const std::string& name) const {
    const auto& required = operation_.input_schema.value("required", json::array());
    return std::find(required.begin(), required.end(), name) != required.end();
  }

  const Operation& operation_;
  bool has_nested_ = false;
  std::map<std::string, std::string> strings_;
  std::map<std::string, std::vector<std::string>> lists_;
  std::map<std::string, int64_t> integers_;
  std::map<std::string, double> numbers_;
  std::map<std::string, Flag> flags_;
  std::set<std::string> provided_;
  bool json_output_ = false;
};

// The command `name` that nested commands ("kb search") hang under: an operation's own command
// ("adapters"), or a group made for them that needs one of its subcommands.
CLI::App* groupCommand(CLI::App& app, const std::string& name) {
  for (CLI::App* command : app.get_subcommands([](CLI::App*) { return true; })) {
    if (command->get_name() == name) return command;
  }
  static const std::map<std::string, std::string> descriptions = {
      {"kb", "The Spyre knowledge base, the skills and recorded gotchas: search and read"},
      {"gotchas", "Lessons recorded in this workspace: list and show"}};
  const auto found = descriptions.find(name);
  CLI::App* group = app.add_subcommand(name, found == descriptions.end() ? name : found->second);
  group->require_subcommand(1);
  return group;
}

}  // namespace

int runCommandLine(const std::vector<std::string>& arguments) {
  CLI::App app{"Stickler: bring neural-network models onto the Spyre accelerator", "stickler"};
  app.require_subcommand(1);
  std::vector<std::unique_ptr<SubcommandInput>> inputs;
  std::vector<CLI::App*> commands;  // inputs[i]'s command
  for (const auto& operation : operationTable()) {
    // "adapters stale" is the subcommand "stale" of the operation whose command is "adapters".
    CLI::App* parent = &app;
    std::string name = operation.cli.command;
    if (const size_t space = name.find(' '); space != std::string::npos) {
      parent = groupCommand(app, name.substr(0, space));
      name = name.substr(space + 1);
    }
    CLI::App* command = parent->add_subcommand(name, operation.description);
    commands.push_back(command);
    const bool has_nested =
        std::any_of(operationTable().begin(), operationTable().end(), [&](const Operation& other) {
          return other.cli.command.rfind(operation.cli.command + " ", 0) == 0;
        });
    inputs.push_back(std::make_unique<SubcommandInput>(*command, operation, has_nested));
  }

  // `serve` is a front-end of its own, not an operation.
  ServeOptions serve;
  CLI::App* serve_command = app.add_subcommand(
      "serve", "Serve Stickler's operations as MCP tools, over stdio or Streamable HTTP");
  serve_command->add_option("--http", serve.http,
                            "Serve Streamable HTTP at [ADDR:]PORT/mcp (default: stdio)");
  serve_command->add_option("--root", serve.roots,
                            "A workspace root (repeatable; default: the current directory)");
  serve_command->add_option("--token-file", serve.token_file,
                            "Require this bearer token over HTTP");
  serve_command->add_flag("--conformance-fixtures", serve.conformance_fixtures,
                          "Also serve the fixtures the MCP conformance suite calls");
  serve_command->add_option("--max-request-bytes", serve.max_request_bytes,
                            "Refuse larger messages (default 16 MiB)");
  serve_command->add_option("--http-threads", serve.http_threads,
                            "HTTP workers, the requests served at once (default 32); one client "
                            "address may hold all but a quarter of them");
  serve_command->add_option("--header-timeout", serve.header_timeout_seconds,
                            "Seconds an HTTP request's headers may take to arrive (default 10)");
  serve_command->add_option("--body-timeout", serve.body_timeout_seconds,
                            "Seconds an HTTP request's body may take after its headers "
                            "(default 60)");
  serve_command->add_option("--resume-grace", serve.resume_grace_seconds,
                            "Seconds a tool call whose HTTP connection dropped waits for its "
                            "client to resume its stream before it is cancelled (default 30)");
  serve_command->add_option("--allow-host", serve.allowed_hosts,
                            "Also accept this Host name over HTTP");
  serve_command->add_option("--allow-origin", serve.allowed_origins,
                            "Also accept this Origin over HTTP");
  serve_command->add_option("--session-idle-minutes", serve.session_idle_minutes,
                            "End HTTP sessions idle this long (default 60)");
  serve_command->add_option("--max-sessions", serve.max_sessions,
                            "At most this many HTTP sessions; a new one ends the least recently "
                            "active idle session (default 64)");

  // `review serve` too: the review page alone, over HTTP.
  ServeOptions review_serve;
  review_serve.review_only = true;
  CLI::App* review_serve_command =
      groupCommand(app, "review")
          ->add_subcommand(
              "serve",
              "Serve the reviewer's page alone (the queue, each proposal's diff, evidence and "
              "gate, and "
              "approve / request changes / reject) over HTTP, on loopback unless told otherwise");
  review_serve_command->add_option("--http", review_serve.http,
                                   "[ADDR:]PORT to listen on (default 127.0.0.1, any free port)");
  review_serve_command->add_option("--root", review_serve.roots,
                                   "The workspace (default: the current directory)");
  review_serve_command->add_option("--token-file", review_serve.token_file,
                                   "Require this token (the printed address carries it once)");
  review_serve_command->add_option("--allow-host", review_serve.allowed_hosts,
                                   "Also accept this Host name (repeatable)");
  review_serve_command->add_option("--allow-origin", review_serve.allowed_origins,
                                   "Also accept this Origin (repeatable)");

  std::vector<std::string> reversed(arguments.rbegin(), arguments.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "stickler: " << e.what() << "\n";
    if (app.get_subcommands().empty()) std::cerr << "Run 'stickler --help' for the commands.\n";
    return exitCode(ExitStatus::kBadInput);
  }

  if (review_serve_command->parsed()) {
    try {
      return runServe(review_serve);
    } catch (const UserError& e) {
      std::cerr << "stickler review serve: " << e.what() << "\n";
      return exitCode(ExitStatus::kBadInput);
    }
  }
  if (app.got_subcommand(serve_command)) {
    try {
      return runServe(serve);
    } catch (const UserError& e) {
      std::cerr << "stickler serve: " << e.what() << "\n";
      return exitCode(ExitStatus::kBadInput);
    }
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const SubcommandInput* input = inputs[i].get();
    const Operation& operation = input->operation();
    // The innermost command given runs: `adapters stale` is not `adapters`.
    if (!commands[i]->parsed() || !commands[i]->get_subcommands().empty()) continue;
    if (const std::string missing = input->missingFlag(); !missing.empty()) {
      std::cerr << "stickler: " << missing << " is required\n";
      return exitCode(ExitStatus::kBadInput);
    }
    try {
      OperationContext context;  // paths as given, nothing kept between runs
      const json output = runOperation(operation, input->toJson(), context);
      if (input->jsonOutput()) {
        std::cout << output.dump(2) << "\n";
      } else {
        std::cout << operation.render_text(output);
      }
      return exitCode(operation.exit_status ? operation.exit_status(output) : ExitStatus::kOk);
    } catch (const UserError& e) {
      std::cerr << "stickler " << operation.cli.command << ": " << e.what() << "\n";
      return exitCode(ExitStatus::kBadInput);
    } catch (const std::exception& e) {
      std::cerr << "stickler " << operation.cli.command << ": internal error: " << e.what() << "\n";
      return exitCode(ExitStatus::kInternal);
    }
  }
  return exitCode(ExitStatus::kBadInput);
}

}  // namespace stickler
