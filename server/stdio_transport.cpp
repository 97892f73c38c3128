#include "server/stdio_transport.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

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

// Reads one line; false at the end of input. A line longer than `limit` is consumed to its end
// and reported through `too_long` with its length, keeping only `limit` bytes in memory.
bool readLine(std::FILE* in, size_t limit, std::string& line, bool& too_long, size_t& length) {
  line.clear();
  too_long = false;
  length = 0;
  int c;
  bool any = false;
  while ((c = std::fgetc(in)) != EOF) {
    any = true;
    if (c == '\n') return true;
    ++length;
    if (line.size() < limit) {
      line.push_back(static_cast<char>(c));
    } else {
      too_long = true;
    }
  }
  return any;
}

// Tool calls running beside the reader; finished ones are joined as new ones start.
class CallThreads {
 public:
  template <typename F>
  void start(F&& body) {
    reap();
    auto done = std::make_shared<std::atomic<bool>>(false);
    calls_.push_back({std::thread([body = std::forward<F>(body), done] {
                        body();
                        done->store(true);
                      }),
                      done});
  }
  void joinAll() {
    for (auto& call : calls_) call.thread.join();
    calls_.clear();
  }

 private:
  struct Call {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };
  void reap() {
    for (auto it = calls_.begin(); it != calls_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = calls_.erase(it);
      } else {
        ++it;
      }
    }
  }
  std::vector<Call> calls_;
};

}  // namespace

int serveStdio(McpServer& server, std::FILE* in, std::FILE* out, size_t max_message_bytes) {
  auto session = server.createSession();
  StdoutChannel channel(out);
  CallThreads calls;
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
      message = json::parse(line);
    } catch (const json::parse_error& e) {
      channel.send(
          rpcError(nullptr, rpc_error::kParseError, std::string("parse error: ") + e.what()));
      continue;
    }
    if (McpServer::mayStream(message)) {
      // Tool calls run beside the reader, which must stay free for cancellations and for the
      // client's answers to requests the tool sends.
      calls.start([&server, session, &channel, message] {
        if (auto response = server.handle(*session, message, channel)) channel.send(*response);
      });
    } else if (auto response = server.handle(*session, message, channel)) {
      channel.send(*response);
    }
  }
  session->cancelAll();
  calls.joinAll();
  server.closeSession(session->id());
  return 0;
}

}  // namespace stickler
