// The fixtures of the official MCP conformance suite (@modelcontextprotocol/conformance): tools,
// resources and prompts its scenarios call by fixed names, with the behavior each scenario
// describes. Served only with `stickler serve --conformance-fixtures`.
#include <chrono>
#include <thread>

#include "server/mcp/json_rpc.h"
#include "server/mcp/mcp_catalog.h"

namespace stickler {

using nlohmann::json;

namespace {

// A 1x1 red PNG and a WAV with no samples.
constexpr const char* kPng =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg"
    "==";
constexpr const char* kWav = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=";

void pause(int milliseconds) {
  std::this_thread::sleep_for(std::chrono::milliseconds(milliseconds));
}

json noArguments() {
  return {{"type", "object"}, {"properties", json::object()}};
}

json stringArgument(const char* name, const char* description) {
  return {{"type", "object"},
          {"properties", {{name, {{"type", "string"}, {"description", description}}}}},
          {"required", {name}}};
}

json text(const std::string& value) {
  return {{"type", "text"}, {"text", value}};
}

json contentResult(json content) {
  return {{"content", std::move(content)}};
}

void addTool(McpCatalog& catalog, const char* name, const char* description, json schema,
             std::function<json(const json&, ToolCallContext&)> call) {
  catalog.tools.push_back(
      {{{"name", name}, {"description", description}, {"inputSchema", std::move(schema)}},
       std::move(call)});
}

json elicit(ToolCallContext& context, const std::string& message, json schema) {
  if (!context.clientSupports("elicitation")) {
    return toolError("the client does not support elicitation");
  }
  const json answer = context.requestClient(
      "elicitation/create", {{"message", message}, {"requestedSchema", std::move(schema)}});
  return contentResult(json::array(
      {text("Elicitation completed: action=" + answer.value("action", std::string("?")) +
            ", content=" + answer.value("content", json::object()).dump())}));
}

void addTools(McpCatalog& catalog) {
  addTool(
      catalog, "test_simple_text", "Returns simple text.", noArguments(),
      [](const json&, ToolCallContext&) {
        return contentResult(json::array({text("This is a simple text response for testing.")}));
      });
  addTool(catalog, "test_image_content", "Returns an image.", noArguments(),
          [](const json&, ToolCallContext&) {
            return contentResult(
                json::array({{{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}}}));
          });
  addTool(catalog, "test_audio_content", "Returns audio.", noArguments(),
          [](const json&, ToolCallContext&) {
            return contentResult(
                json::array({{{"type", "audio"}, {"data", kWav}, {"mimeType", "audio/wav"}}}));
          });
  addTool(catalog, "test_embedded_resource", "Returns an embedded resource.", noArguments(),
          [](const json&, ToolCallContext&) {
            return contentResult(
                json::array({{{"type", "resource"},
                              {"resource",
                               {{"uri", "test://embedded-resource"},
                                {"mimeType", "text/plain"},
                                {"text", "This is an embedded resource content."}}}}}));
          });
  addTool(catalog, "test_multiple_content_types", "Returns text, an image and a resource.",
          noArguments(), [](const json&, ToolCallContext&) {
            return contentResult(
                json::array({text("Multiple content types test:"),
                             {{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}},
                             {{"type", "resource"},
                              {"resource",
                               {{"uri", "test://mixed-content-resource"},
                                {"mimeType", "application/json"},
                                {"text", R"({"test":"data","value":123})"}}}}}));
          });
  addTool(catalog, "test_tool_with_logging", "Logs three messages while it runs.", noArguments(),
          [](const json&, ToolCallContext& context) {
            context.log("info", "Tool execution started");
            pause(50);
            context.log("info", "Tool processing data");
            pause(50);
            context.log("info", "Tool execution completed");
            return contentResult(json::array({text("Tool with logging executed successfully")}));
          });
  addTool(catalog, "test_error_handling", "Always fails.", noArguments(),
          [](const json&, ToolCallContext&) {
            return toolError("This tool intentionally returns an error for testing");
          });
  addTool(catalog, "test_tool_with_progress", "Reports progress while it runs.", noArguments(),
          [](const json&, ToolCallContext& context) {
            context.progress(0, 100, "");
            pause(50);
            context.progress(50, 100, "");
            pause(50);
            context.progress(100, 100, "");
            return contentResult(json::array({text("Tool with progress executed successfully")}));
          });
  addTool(
      catalog, "test_sampling", "Asks the client's LLM.",
      stringArgument("prompt", "The prompt to send"),
      [](const json& arguments, ToolCallContext& context) {
        if (!context.clientSupports("sampling"))
          return toolError("the client does not support sampling");
        const json answer = context.requestClient(
            "sampling/createMessage",
            {{"messages",
              json::array({{{"role", "user"}, {"content", text(arguments.value("prompt", ""))}}})},
             {"maxTokens", 100}});
        const json content = answer.value("content", json::object());
        return contentResult(
            json::array({text("LLM response: " + content.value("text", std::string()))}));
      });
  addTool(catalog, "test_elicitation", "Asks the user.",
          stringArgument("message", "The message to show"),
          [](const json& arguments, ToolCallContext& context) {
            if (!context.clientSupports("elicitation"))
              return toolError("the client does not support elicitation");
            const json answer = context.requestClient(
                "elicitation/create",
                {{"message", arguments.value("message", "")},
                 {"requestedSchema",
                  {{"type", "object"},
                   {"properties",
                    {{"username", {{"type", "string"}, {"description", "User's response"}}},
                     {"email", {{"type", "string"}, {"description", "User's email address"}}}}},
                   {"required", {"username", "email"}}}}});
            return contentResult(json::array(
                {text("User response: action=" + answer.value("action", std::string("?")) +
                      ", content=" + answer.value("content", json::object()).dump())}));
          });
  addTool(catalog, "test_elicitation_sep1034_defaults", "Asks the user, with defaults.",
          noArguments(), [](const json&, ToolCallContext& context) {
            return elicit(
                context, "Please review your information",
                {{"type", "object"},
                 {"properties",
                  {{"name", {{"type", "string"}, {"description", "Name"}, {"default", "John Doe"}}},
                   {"age", {{"type", "integer"}, {"description", "Age"}, {"default", 30}}},
                   {"score", {{"type", "number"}, {"description", "Score"}, {"default", 95.5}}},
                   {"status",
                    {{"type", "string"},
                     {"description", "Status"},
                     {"enum", {"active", "inactive", "pending"}},
                     {"default", "active"}}},
                   {"verified",
                    {{"type", "boolean"}, {"description", "Verified"}, {"default", true}}}}}});
          });
  addTool(catalog, "test_elicitation_sep1330_enums", "Asks the user to choose.", noArguments(),
          [](const json&, ToolCallContext& context) {
            return elicit(
                context, "Please choose",
                {{"type", "object"},
                 {"properties",
                  {{"untitledSingle",
                    {{"type", "string"}, {"enum", {"option1", "option2", "option3"}}}},
                   {"titledSingle",
                    {{"type", "string"},
                     {"oneOf", json::array({{{"const", "value1"}, {"title", "First Option"}},
                                            {{"const", "value2"}, {"title", "Second Option"}},
                                            {{"const", "value3"}, {"title", "Third Option"}}})}}},
                   {"legacyEnum",
                    {{"type", "string"},
                     {"enum", {"opt1", "opt2", "opt3"}},
                     {"enumNames", {"Option One", "Option Two", "Option Three"}}}},
                   {"untitledMulti",
                    {{"type", "array"},
                     {"items", {{"type", "string"}, {"enum", {"option1", "option2", "option3"}}}}}},
                   {"titledMulti",
                    {{"type", "array"},
                     {"items",
                      {{"anyOf",
                        json::array({{{"const", "value1"}, {"title", "First Choice"}},
                                     {{"const", "value2"}, {"title", "Second Choice"}},
                                     {{"const", "value3"}, {"title", "Third Choice"}}})}}}}}}}});
          });
  addTool(
      catalog, "json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features",
      {{"$schema", "https://json-schema.org/draft/2020-12/schema"},
       {"type", "object"},
       {"$defs",
        {{"address",
          {{"type", "object"},
           {"properties", {{"street", {{"type", "string"}}}, {"city", {{"type", "string"}}}}}}}}},
       {"properties", {{"name", {{"type", "string"}}}, {"address", {{"$ref", "#/$defs/address"}}}}},
       {"additionalProperties", false}},
      [](const json& arguments, ToolCallContext&) {
        return contentResult(json::array({text("Received: " + arguments.dump())}));
      });
  addTool(catalog, "test_reconnection",
          "Closes its stream mid-call; the result comes after the client reconnects.",
          noArguments(), [](const json&, ToolCallContext& context) {
            pause(50);
            context.closeStream();
            pause(200);
            return contentResult(json::array({text("Reconnection test completed")}));
          });
}

json textResource(const std::string& uri, const std::string& mime, const std::string& value) {
  return json::array({{{"uri", uri}, {"mimeType", mime}, {"text", value}}});
}

void addResources(McpCatalog& catalog) {
  catalog.resources.push_back({{{"uri", "test://static-text"},
                                {"name", "static-text"},
                                {"description", "A static text resource"},
                                {"mimeType", "text/plain"}},
                               [] {
                                 return textResource(
                                     "test://static-text", "text/plain",
                                     "This is the content of the static text resource.");
                               }});
  catalog.resources.push_back(
      {{{"uri", "test://static-binary"},
        {"name", "static-binary"},
        {"description", "A static binary resource"},
        {"mimeType", "image/png"}},
       [] {
         return json::array(
             {{{"uri", "test://static-binary"}, {"mimeType", "image/png"}, {"blob", kPng}}});
       }});
  catalog.resources.push_back(
      {{{"uri", "test://watched-resource"},
        {"name", "watched-resource"},
        {"description", "A resource to subscribe to"},
        {"mimeType", "text/plain"}},
       [] { return textResource("test://watched-resource", "text/plain", "watched"); }});
  catalog.templates.push_back(
      {{{"uriTemplate", "test://template/{id}/data"},
        {"name", "template"},
        {"description", "A resource template"},
        {"mimeType", "application/json"}},
       [](const std::string& uri) -> std::optional<json> {
         const std::string prefix = "test://template/", suffix = "/data";
         if (uri.rfind(prefix, 0) != 0 || uri.size() <= prefix.size() + suffix.size() ||
             uri.compare(uri.size() - suffix.size(), suffix.size(), suffix) != 0) {
           return std::nullopt;
         }
         const std::string id =
             uri.substr(prefix.size(), uri.size() - prefix.size() - suffix.size());
         return textResource(uri, "application/json",
                             json({{"id", id}, {"templateTest", true}}).dump());
       },
       [](const std::string&, const std::string&) { return std::vector<std::string>{}; }});
}

void addPrompt(McpCatalog& catalog, json definition, std::function<json(const json&)> get) {
  catalog.prompts.push_back(
      {std::move(definition), std::move(get),
       [](const std::string&, const std::string&) { return std::vector<std::string>{}; }});
}

json requireArgument(const json& arguments, const char* name) {
  if (!arguments.contains(name) || !arguments[name].is_string()) {
    throw RpcFailure(rpc_error::kInvalidParams, std::string("missing argument '") + name + "'");
  }
  return arguments[name];
}

void addPrompts(McpCatalog& catalog) {
  addPrompt(catalog, {{"name", "test_simple_prompt"}, {"description", "A simple prompt"}},
            [](const json&) {
              return json::array(
                  {{{"role", "user"}, {"content", text("This is a simple prompt for testing.")}}});
            });
  addPrompt(
      catalog,
      {{"name", "test_prompt_with_arguments"},
       {"description", "A prompt with arguments"},
       {"arguments",
        json::array(
            {{{"name", "arg1"}, {"description", "First test argument"}, {"required", true}},
             {{"name", "arg2"}, {"description", "Second test argument"}, {"required", true}}})}},
      [](const json& arguments) {
        const std::string arg1 = requireArgument(arguments, "arg1");
        const std::string arg2 = requireArgument(arguments, "arg2");
        return json::array({{{"role", "user"},
                             {"content", text("Prompt with arguments: arg1='" + arg1 + "', arg2='" +
                                              arg2 + "'")}}});
      });
  addPrompt(
      catalog,
      {{"name", "test_prompt_with_embedded_resource"},
       {"description", "A prompt with an embedded resource"},
       {"arguments", json::array({{{"name", "resourceUri"},
                                   {"description", "URI of the resource to embed"},
                                   {"required", true}}})}},
      [](const json& arguments) {
        const std::string uri = requireArgument(arguments, "resourceUri");
        return json::array(
            {{{"role", "user"},
              {"content",
               {{"type", "resource"},
                {"resource",
                 {{"uri", uri},
                  {"mimeType", "text/plain"},
                  {"text", "Embedded resource content for testing."}}}}}},
             {{"role", "user"}, {"content", text("Please process the embedded resource above.")}}});
      });
  addPrompt(catalog,
            {{"name", "test_prompt_with_image"}, {"description", "A prompt with an image"}},
            [](const json&) {
              return json::array(
                  {{{"role", "user"},
                    {"content", {{"type", "image"}, {"data", kPng}, {"mimeType", "image/png"}}}},
                   {{"role", "user"}, {"content", text("Please analyze the image above.")}}});
            });
}

}  // namespace

void addConformanceFixtures(McpCatalog& catalog) {
  addTools(catalog);
  addResources(catalog);
  addPrompts(catalog);
}

}  // namespace stickler
