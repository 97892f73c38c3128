// Round trips of `stickler serve`, over stdio and over HTTP, measured as a client sees them:
// ping (the baseline: the protocol and nothing else), tools/list, and cheap tool calls; then
// HTTP throughput with several clients at once.
//
//   build/bench/mcp_bench [--seconds S] [--clients N]
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/bench_paths.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double median(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  return samples[samples.size() / 2];
}

// A `stickler serve` child with its stdin and stdout (stdio) or its port (HTTP).
struct Server {
  pid_t pid = -1;
  FILE* in = nullptr;   // what we write to its stdin
  FILE* out = nullptr;  // what we read from its stdout
  int port = 0;

  static Server start(const std::vector<std::string>& extra, bool http) {
    int to_child[2], from_child[2], err[2];
    if (::pipe(to_child) || ::pipe(from_child) || ::pipe(err)) throw std::runtime_error("pipe");
    Server server;
    server.pid = ::fork();
    if (server.pid == 0) {
      ::dup2(to_child[0], STDIN_FILENO);
      ::dup2(from_child[1], STDOUT_FILENO);
      ::dup2(err[1], STDERR_FILENO);
      std::vector<std::string> args = {stickler::bench::kSticklerBinary, "serve", "--root",
                                       stickler::bench::kZooDir};
      args.insert(args.end(), extra.begin(), extra.end());
      std::vector<char*> argv;
      argv.reserve(args.size() + 1);
      for (auto& arg : args) argv.push_back(arg.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(to_child[0]);
    ::close(from_child[1]);
    ::close(err[1]);
    server.in = ::fdopen(to_child[1], "w");
    server.out = ::fdopen(from_child[0], "r");
    std::string log;
    char buffer[256];
    const std::regex ready(http ? "http://127\\.0\\.0\\.1:([0-9]+)/mcp" : "MCP over stdio");
    std::smatch match;
    while (!std::regex_search(log, match, ready)) {
      const ssize_t got = ::read(err[0], buffer, sizeof buffer);
      if (got <= 0) throw std::runtime_error("stickler serve did not start: " + log);
      log.append(buffer, static_cast<size_t>(got));
    }
    if (http) server.port = std::stoi(match[1]);
    return server;
  }
  void stop() {
    ::kill(pid, SIGTERM);
    ::waitpid(pid, nullptr, 0);
  }
};

class StdioClient {
 public:
  explicit StdioClient(Server& server) : server_(server) {}
  json call(const std::string& method, json params) {
    const json request{{"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method}, {"params", params}};
    std::fprintf(server_.in, "%s\n", request.dump().c_str());
    std::fflush(server_.in);
    char* line = nullptr;
    size_t size = 0;
    for (;;) {
      if (::getline(&line, &size, server_.out) < 0)
        throw std::runtime_error("the server closed stdout");
      json message = json::parse(line);
      if (message.contains("id") && message["id"] == id_) {
        std::free(line);
        return message;
      }
    }
  }

 private:
  Server& server_;
  int id_ = 0;
};

class HttpClient {
 public:
  explicit HttpClient(int port) : client_("127.0.0.1", port) {
    client_.set_keep_alive(true);
    client_.set_tcp_nodelay(true);
    auto response = client_.Post("/mcp", {{"Accept", "application/json, text/event-stream"}},
                                 json{{"jsonrpc", "2.0"},
                                      {"id", 0},
                                      {"method", "initialize"},
                                      {"params", {{"protocolVersion", "2025-11-25"}}}}
                                     .dump(),
                                 "application/json");
    if (!response || response->status != 200) throw std::runtime_error("HTTP initialize failed");
    session_ = response->get_header_value("Mcp-Session-Id");
  }
  json call(const std::string& method, json params) {
    const json request{{"jsonrpc", "2.0"}, {"id", ++id_}, {"method", method}, {"params", params}};
    auto response =
        client_.Post("/mcp", {{"Mcp-Session-Id", session_}, {"Accept", "application/json"}},
                     request.dump(), "application/json");
    if (!response || response->status != 200) throw std::runtime_error("HTTP call failed");
    return json::parse(response->body);
  }

 private:
  httplib::Client client_;
  std::string session_;
  int id_ = 0;
};

template <typename Client>
void measure(const char* transport, Client& client, double seconds) {
  const json cheap_tool{{"name", "inspect_model"},
                        {"arguments", {{"model", "vit-tiny.pt"}, {"include_nodes", false}}}};
  const json fixture{{"name", "test_simple_text"}, {"arguments", json::object()}};
  const json profiles{{"name", "list_profiles"}, {"arguments", json::object()}};
  client.call("tools/call", cheap_tool);  // the session loads the model once
  struct Case {
    const char* name;
    const char* method;
    json params;
  };
  const Case cases[] = {{"ping (baseline)", "ping", json::object()},
                        {"tools/list", "tools/list", json::object()},
                        {"tools/call test_simple_text", "tools/call", fixture},
                        {"tools/call list_profiles", "tools/call", profiles},
                        {"tools/call inspect_model", "tools/call", cheap_tool}};
  double baseline = 0;
  for (const Case& c : cases) {
    std::vector<double> samples;
    const auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
    while (Clock::now() < deadline || samples.size() < 20) {
      const auto start = Clock::now();
      const json response = client.call(c.method, c.params);
      samples.push_back(std::chrono::duration<double>(Clock::now() - start).count());
      if (response.contains("error")) throw std::runtime_error(response.dump());
    }
    const double value = median(samples);
    if (baseline == 0) baseline = value;
    std::printf("  %-5s %-30s median %8.3f ms  %6.2fx ping  (%zu calls)\n", transport, c.name,
                value * 1e3, value / baseline, samples.size());
  }
}

// tools/list answered per second with `clients` clients, each waiting for its answer.
double throughput(int port, int clients, double seconds) {
  std::atomic<long> done{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(clients));
  for (int i = 0; i < clients; ++i) {
    threads.emplace_back([&] {
      HttpClient client(port);
      while (!stop) {
        client.call("tools/list", json::object());
        ++done;
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds * 2));
  stop = true;
  for (auto& thread : threads) thread.join();
  return static_cast<double>(done.load()) / (seconds * 2);
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 1.0;
  int clients = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--seconds") seconds = std::stod(argv[i + 1]);
    if (flag == "--clients") clients = std::stoi(argv[i + 1]);
  }
  try {
    std::printf(
        "Round trips as a client sees them (target: tools/list and a cheap tool under 1 ms)\n");
    Server stdio_server = Server::start({"--conformance-fixtures"}, false);
    {
      StdioClient stdio(stdio_server);
      stdio.call("initialize", {{"protocolVersion", "2025-11-25"}});
      measure("stdio", stdio, seconds);
    }
    stdio_server.stop();

    Server http_server = Server::start({"--http", "127.0.0.1:0", "--conformance-fixtures"}, true);
    {
      HttpClient http(http_server.port);
      measure("http", http, seconds);
    }
    // Throughput with one client first: the baseline for several.
    const double one = throughput(http_server.port, 1, seconds);
    const double many = throughput(http_server.port, clients, seconds);
    std::printf(
        "HTTP throughput: %.0f tools/list per second with %d clients, %.2fx one client "
        "(%.0f per second)\n",
        many, clients, many / one, one);
    http_server.stop();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mcp_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
