#include "server/transport/stdio_transport.h"

#include "server/mcp/task_pool.h"
#include "simulator/support/untrusted_json.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

namespace stickler {

using nlohmann::json;

namespace {

// stdout, shared by the reader and the threads running tool calls.
class StdoutChannel : public ClientChannel {
 public:
  explicit StdoutChannel(std::FILE* out) : out_(out) {}
  void send(const json& message) override {
    const std::string line = message.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
    std::lock_guard<std::mutex> lock(mutex_);
    std::fwrite(line.data(), 1, line.size(), out_);
    std::fflush(out_);
  }

 private:
  std::FILE* out_;
  std::mutex mutex_;
};

constexpr size_t kReservedWholeFrom = size_t{64} * 1024;

// Reads one line; false at the end of input. A line longer than `limit` is consumed to its end
// and reported through `too_long` with its length, keeping only `limit` bytes in memory.
bool readLine(std::FILE* in, size_t limit, std::string& line, bool& too_long, size_t& length) {
  line.clear();
  too_long = false;
  length = 0;
  int c;
  bool any = false;
  while ((c = getc_unlocked(in)) != EOF) {  // only this thread reads `in`
    any = true;
    if (c == '\n') return true;
    ++length;
    if (line.size() < limit) {
      // A long line's buffer is reserved whole (only the pages written are ever touched):
      // grown by doubling it was copied at each step, and the copies' memory is kept for reuse
      // (freed_memory.h), so a line at the limit held about three times the limit.
      if (line.size() == line.capacity() && line.size() >= kReservedWholeFrom) {
        line.reserve(limit);
      }
      line.push_back(static_cast<char>(c));
    } else {
      too_long = true;
    }
  }
  return any;
}

}  // namespace

int serveStdio(McpServer& server, std::FILE* in, std::FILE* out, size_t max_message_bytes) {
  auto session = server.createSession();
  // Shared with the session's notifier, which the resource watch may be calling as this ends.
  auto stdout_channel = std::make_shared<StdoutChannel>(out);
  StdoutChannel& channel = *stdout_channel;
  session->setNotifier([stdout_channel](const json& message) { stdout_channel->send(message); });
  TaskPool calls;
  std::string line;
  bool too_long = false;
  size_t length = 0;
  while (readLine(in, max_message_bytes, line, too_long, length)) {
    if (too_long) {
      channel.send(rpcError(nullptr, rpc_error::kInvalidRequest,
                            "message too large: " + std::to_string(length) + " bytes (limit " +
                                std::to_string(max_message_bytes) + ")"));
      continue;
    }
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    json message;
    try {
      message = parseUntrustedJson(line);
    } catch (const JsonInputError& e) {
      channel.send(
          rpcError(nullptr, rpc_error::kParseError, std::string("parse error: ") + e.what()));
      continue;
    }
    if (McpServer::mayStream(message)) {
      // Tool calls run beside the reader, which must stay free for cancellations and for the
      // client's answers to requests the tool sends.
      calls.submit([&server, session, &channel, message] {
        if (auto response = server.handle(*session, message, channel)) channel.send(*response);
      });
    } else if (auto response = server.handle(*session, message, channel)) {
      channel.send(*response);
    }
  }
  session->cancelAll();
  calls.drain();
  session->setNotifier(nullptr);
  server.closeSession(session->id());
  return 0;
}

}  // namespace stickler
