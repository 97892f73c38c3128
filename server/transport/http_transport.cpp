#include "server/transport/http_transport.h"

#include "server/transport/review_page.h"

#include <httplib.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

#include "server/mcp/json_rpc.h"
#include "server/mcp/task_pool.h"
#include "server/transport/http_connection_gate.h"
#include "server/transport/http_request_guard.h"
#include "simulator/support/text_format.h"
#include "simulator/support/untrusted_json.h"

namespace stickler {

using nlohmann::json;

namespace {

constexpr int kRetryMilliseconds = 1000;

// The messages of one SSE response, kept so that a client can resume it (GET with
// Last-Event-ID) after the stream closed before its response.
class EventStream : public std::enable_shared_from_this<EventStream> {
 public:
  explicit EventStream(std::string id) : id_(std::move(id)) {}
  const std::string& id() const { return id_; }

  // What to do when no client has read the unfinished stream for `grace`: cancel its request.
  // A disconnection is not a cancellation by itself (the client may resume the stream, as the
  // MCP transport says), but a client that never comes back must not leave its call running.
  void whenAbandoned(std::function<void()> cancel, std::chrono::seconds grace) {
    std::lock_guard<std::mutex> lock(mutex_);
    abandon_ = std::move(cancel);
    grace_ = grace;
  }

  void push(const json& message) {
    std::lock_guard<std::mutex> lock(mutex_);
    events_.push_back(message.dump(-1, ' ', false, json::error_handler_t::replace));
    changed_.notify_all();
  }
  void finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    changed_.notify_all();
  }
  void detach() {
    std::lock_guard<std::mutex> lock(mutex_);
    detached_ = true;
    changed_.notify_all();
  }
  bool finished() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return finished_;
  }

  // Writes the events after `next` (1-based) to the sink as they come, until the stream is
  // finished (true), detached (true: the client resumes later), or the client left (false):
  // its write failed, or it closed `socket`, the connection the sink writes to.
  bool relay(httplib::DataSink& sink, size_t next, bool priming, int socket) {
    Reading reading(*this);
    if (priming) {
      // An event with an id and no data first, so that the client can resume from it.
      const std::string event =
          "id: " + id_ + ":0\nretry: " + std::to_string(kRetryMilliseconds) + "\ndata: \n\n";
      if (!sink.write(event.data(), event.size())) return false;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      while (next <= events_.size()) {
        const std::string event = "id: " + id_ + ":" + std::to_string(next) +
                                  "\nevent: message\ndata: " + events_[next - 1] + "\n\n";
        ++next;
        lock.unlock();
        const bool written = sink.write(event.data(), event.size());
        lock.lock();
        if (!written) return false;
      }
      if (finished_) return true;
      if (detached_ && !resumed_) return true;
      changed_.wait_for(lock, std::chrono::milliseconds(500));
      if (!sink.is_writable() || peerHungUp(socket)) return false;
      // A stream that may stay quiet for long (the standalone one) writes a comment now and
      // then: a client that went away is found when the write fails, and its worker freed.
      if (++quiet_ticks_ % kKeepAliveTicks == 0) {
        lock.unlock();
        const bool written = sink.write(": keep-alive\n\n", 14);
        lock.lock();
        if (!written) return false;
      }
    }
  }
  // A GET with Last-Event-ID takes the stream over.
  void resume() {
    std::lock_guard<std::mutex> lock(mutex_);
    resumed_ = true;
  }

 private:
  // A client reading the stream, for as long as relay() runs.
  class Reading {
   public:
    explicit Reading(EventStream& stream) : stream_(stream) {
      std::lock_guard<std::mutex> lock(stream_.mutex_);
      ++stream_.readers_;
    }
    ~Reading() { stream_.readerLeft(); }
    Reading(const Reading&) = delete;
    Reading& operator=(const Reading&) = delete;

   private:
    EventStream& stream_;
  };

  // The last reader gone before the end: after the grace, unless one came back, cancel.
  void readerLeft() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--readers_ > 0 || finished_ || !abandon_) return;
    const auto left = ++departures_;
    std::thread([weak = weak_from_this(), left, grace = grace_] {
      std::this_thread::sleep_for(grace);
      if (auto stream = weak.lock()) stream->abandonIfStillLeft(left);
    }).detach();
  }
  void abandonIfStillLeft(uint64_t left) {
    std::function<void()> abandon;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (readers_ > 0 || finished_ || departures_ != left) return;
      abandon = abandon_;
    }
    abandon();
  }

  std::string id_;
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<std::string> events_;
  bool finished_ = false;
  bool detached_ = false;
  bool resumed_ = false;
  size_t quiet_ticks_ = 0;
  static constexpr size_t kKeepAliveTicks = 30;  // of 500 ms
  int readers_ = 0;
  uint64_t departures_ = 0;  // the last reader's departure this stream has seen
  std::function<void()> abandon_;
  std::chrono::seconds grace_{30};
};

class SseChannel : public ClientChannel {
 public:
  explicit SseChannel(std::shared_ptr<EventStream> stream) : stream_(std::move(stream)) {}
  void send(const json& message) override { stream_->push(message); }
  void closeStream() override { stream_->detach(); }

 private:
  std::shared_ptr<EventStream> stream_;
};

// While a request is handled for a JSON answer, watches its connection: when the client closes
// it, `on_hang_up` runs (once), so that the call stops instead of running to its timeout.
class HangUpWatch {
 public:
  HangUpWatch(int socket, std::function<void()> on_hang_up)
      : thread_([this, socket, on_hang_up = std::move(on_hang_up)] {
          std::unique_lock<std::mutex> lock(mutex_);
          while (!done_) {
            if (peerHungUp(socket)) {
              on_hang_up();
              return;
            }
            ended_.wait_for(lock, std::chrono::milliseconds(200));
          }
        }) {}
  ~HangUpWatch() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    ended_.notify_all();
    thread_.join();
  }
  HangUpWatch(const HangUpWatch&) = delete;
  HangUpWatch& operator=(const HangUpWatch&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable ended_;
  bool done_ = false;
  std::thread thread_;  // last: started once the members it reads exist
};

// A JSON response cannot carry notifications or requests: they are dropped.
class NoChannel : public ClientChannel {
 public:
  void send(const json&) override {}
  bool carriesRequests() const override { return false; }
};

class HttpTransport {
 public:
  HttpTransport(McpServer& server, const HttpOptions& options)
      : server_(server), options_(options), guard_(options) {}

  int run(const std::function<void(int)>& on_listening) {
    // All workers but a reserve (a quarter, at least 2) are shared, by one client address and
    // by all together; the reserve serves requests that arrive whole (http_connection_gate.h),
    // so that clients holding connections (slow headers, long streams) cannot shut others out.
    const int threads = options_.threads;
    ConnectionLimits limits;
    limits.header_seconds = options_.header_seconds;
    limits.body_seconds = options_.body_seconds;
    limits.workers = threads;
    limits.per_address = std::max(1, threads - std::max(2, threads / 4));
    limits.max_body_bytes = options_.max_request_bytes;
    GatedHttpServer http(limits);
    http.new_task_queue = [threads] {
      return new httplib::ThreadPool(static_cast<size_t>(threads));
    };
    http.set_payload_max_length(options_.max_request_bytes);
    http.set_tcp_nodelay(true);  // a round trip is one small request and one small answer
    http.set_keep_alive_max_count(static_cast<size_t>(limits.requests_per_connection));
    http.set_keep_alive_timeout(limits.idle_seconds);  // what its Keep-Alive header says
    http.set_read_timeout(limits.io_seconds, 0);
    http.set_write_timeout(limits.io_seconds, 0);
    http.set_pre_routing_handler(
        [this](const httplib::Request& request, httplib::Response& response) {
          const auto answer = guard_.beforeRouting(request);
          if (!answer) return httplib::Server::HandlerResponse::Unhandled;
          writeGuardAnswer(*answer, response);
          return httplib::Server::HandlerResponse::Handled;
        });
    if (!options_.review_root.empty()) {
      const auto page = [this](const httplib::Request& request, httplib::Response& response) {
        servePage(request, response);
      };
      http.Get(R"(/review(/.*)?)", page);
      http.Post(R"(/review(/.*)?)", page);
    }
    if (options_.mcp_endpoint) routeMcp(http);
    const int port = options_.port == 0
                         ? http.bind_to_any_port(options_.host)
                         : (http.bind_to_port(options_.host, options_.port) ? options_.port : -1);
    if (port <= 0) {
      std::fprintf(stderr, "stickler serve: cannot listen on %s:%d\n", options_.host.c_str(),
                   options_.port);
      return 1;
    }
    guard_.listeningOn(port);  // before any request is read
    if (on_listening) on_listening(port);
    return http.listen_after_bind() ? 0 : 1;
  }

  void routeMcp(GatedHttpServer& http) {
    http.Post("/mcp", [this](const httplib::Request& request, httplib::Response& response,
                             const httplib::ContentReader& reader) {
      std::string body;
      if (readBody(reader, body, response)) post(request, body, response);
    });
    http.Get("/mcp", [this](const httplib::Request& request, httplib::Response& response) {
      get(request, response);
    });
    http.Delete("/mcp", [this](const httplib::Request& request, httplib::Response& response) {
      remove(request, response);
    });
    http.Put("/mcp",
             [](const httplib::Request&, httplib::Response& response) { response.status = 405; });
    http.Patch("/mcp",
               [](const httplib::Request&, httplib::Response& response) { response.status = 405; });
  }

 private:
  static void jsonError(httplib::Response& response, int status, int code,
                        const std::string& message, const json& id = nullptr) {
    response.status = status;
    response.set_content(rpcError(id, code, message).dump(), "application/json");
  }

  void servePage(const httplib::Request& request, httplib::Response& response) {
    PageRequest page;
    page.method = request.method;
    page.path = request.path;
    for (const auto& [name, value] : request.params) page.params[name] = value;
    const PageResponse answer = handleReviewPage(options_.review_root, page);
    response.status = answer.status;
    if (!answer.location.empty()) response.set_header("Location", answer.location);
    // The page runs no script and embeds nothing: say so to the browser.
    response.set_header("Content-Security-Policy",
                        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                        "frame-ancestors 'none'");
    response.set_header("X-Content-Type-Options", "nosniff");
    response.set_content(answer.body, answer.content_type);
  }

  // The response is `events` from its first one, as they come.
  static void streamFromStart(httplib::Response& response,
                              const std::shared_ptr<EventStream>& events) {
    response.set_header("Cache-Control", "no-cache");
    response.set_chunked_content_provider(
        "text/event-stream", [events, socket = servingSocket()](size_t, httplib::DataSink& sink) {
          if (events->relay(sink, 1, /*priming=*/true, socket)) sink.done();
          return true;
        });
  }

  static bool checkVersion(const httplib::Request& request, httplib::Response& response) {
    const auto refused = HttpRequestGuard::protocolVersion(request);
    if (refused) writeGuardAnswer(*refused, response);
    return !refused;
  }

  std::shared_ptr<McpSession> sessionOf(const httplib::Request& request,
                                        httplib::Response& response) {
    if (!request.has_header(kSessionHeader)) {
      jsonError(response, 400, rpc_error::kInvalidRequest,
                "missing Mcp-Session-Id: send initialize first");
      return nullptr;
    }
    auto session = server_.findSession(request.get_header_value(kSessionHeader));
    if (!session) jsonError(response, 404, rpc_error::kInvalidRequest, "unknown or ended session");
    return session;
  }

  // Reads a POST body within the size limit. cpp-httplib enforces the limit on a declared
  // Content-Length only; a chunked body is counted here as it arrives.
  bool readBody(const httplib::ContentReader& reader, std::string& body,
                httplib::Response& response) {
    const size_t limit = options_.max_request_bytes;
    bool too_large = false;
    const bool complete = reader([&](const char* data, size_t length) {
      if (body.size() + length > limit) {
        too_large = true;
        return false;
      }
      body.append(data, length);
      return true;
    });
    if (complete) return true;
    response.set_header("Connection", "close");  // the rest of the body is not read
    closeConnectionAfterResponse();
    if (const auto framing = requestBodyError()) {
      jsonError(response, framing->status, rpc_error::kInvalidRequest, framing->message);
    } else if (too_large || response.status == 413) {
      jsonError(response, 413, rpc_error::kInvalidRequest,
                "request body larger than the limit of " + std::to_string(limit) + " bytes");
    } else {
      jsonError(response, 400, rpc_error::kInvalidRequest, "could not read the request body");
    }
    return false;
  }

  void post(const httplib::Request& request, const std::string& body, httplib::Response& response) {
    const std::string type = asciiLower(request.get_header_value("Content-Type"));
    if (type.rfind("application/json", 0) != 0) {
      jsonError(response, 415, rpc_error::kInvalidRequest, "Content-Type must be application/json");
      return;
    }
    json message;
    try {
      message = parseUntrustedJson(body);
    } catch (const JsonInputError& e) {
      jsonError(response, 400, rpc_error::kParseError, std::string("parse error: ") + e.what());
      return;
    }
    const RpcMessage parsed = classifyMessage(message);
    if (parsed.kind == RpcMessage::Kind::kInvalid) {
      jsonError(response, 400, rpc_error::kInvalidRequest, "invalid request: " + parsed.problem,
                parsed.id);
      return;
    }
    if (!checkVersion(request, response)) return;
    std::shared_ptr<McpSession> session;
    if (parsed.kind == RpcMessage::Kind::kRequest && parsed.method == "initialize") {
      if (request.has_header(kSessionHeader)) {
        jsonError(response, 400, rpc_error::kInvalidRequest,
                  "initialize starts a session: send it without Mcp-Session-Id", parsed.id);
        return;
      }
      session = server_.createSession();
      if (!session) {
        response.set_header("Retry-After", "10");
        jsonError(response, 503, rpc_error::kInvalidRequest,
                  "too many sessions, all of them busy: try again shortly", parsed.id);
        return;
      }
      response.set_header(kSessionHeader, session->id());
    } else {
      session = sessionOf(request, response);
      if (!session) return;
    }
    if (parsed.kind != RpcMessage::Kind::kRequest) {
      NoChannel channel;
      server_.handle(*session, message, channel);
      response.status = 202;
      return;
    }
    const std::string accept = asciiLower(request.get_header_value("Accept"));
    if (McpServer::mayStream(message) && accept.find("text/event-stream") != std::string::npos) {
      stream(session, message, response);
      return;
    }
    NoChannel channel;
    // A tool call's JSON answer cannot be resumed: a client that leaves has given up on it.
    std::optional<HangUpWatch> watch;
    if (McpServer::mayStream(message)) {
      watch.emplace(servingSocket(), [&session, id = parsed.id] { session->cancelRequest(id); });
    }
    const auto answer = server_.handle(*session, message, channel);
    watch.reset();  // before the answer is written
    if (!answer) {
      jsonError(response, 200, rpc_error::kInternalError, "request cancelled", parsed.id);
      return;
    }
    response.set_content(answer->dump(-1, ' ', false, json::error_handler_t::replace),
                         "application/json");
  }

  // Answers a request with an SSE stream: the handling runs on its own thread, so that it can
  // go on after the stream closes early; its messages are kept for a resumed stream.
  void stream(const std::shared_ptr<McpSession>& session, const json& message,
              httplib::Response& response) {
    auto events =
        std::make_shared<EventStream>(session->id().substr(0, 8) + std::to_string(next_stream_++));
    events->whenAbandoned([session, id = message.at("id")] { session->cancelRequest(id); },
                          std::chrono::seconds(options_.resume_grace_seconds));
    {
      std::lock_guard<std::mutex> lock(streams_mutex_);
      streams_[events->id()] = events;
    }
    calls_.submit([this, session, events, message] {
      SseChannel channel(events);
      if (auto answer = server_.handle(*session, message, channel)) events->push(*answer);
      events->finish();
      forgetLater(events);
    });
    streamFromStart(response, events);
  }

  // GET resumes a stream after the event the client saw last; without Last-Event-ID there is
  // no stream to offer.
  void get(const httplib::Request& request, httplib::Response& response) {
    if (!checkVersion(request, response)) return;
    auto session = sessionOf(request, response);
    if (!session) return;
    if (!request.has_header("Last-Event-ID")) {
      standalone(session, request, response);
      return;
    }
    const std::string last = request.get_header_value("Last-Event-ID");
    const auto colon = last.rfind(':');
    std::shared_ptr<EventStream> events;
    size_t next = 0;
    if (colon != std::string::npos) {
      std::lock_guard<std::mutex> lock(streams_mutex_);
      auto it = streams_.find(last.substr(0, colon));
      if (it != streams_.end() && it->first.rfind(session->id().substr(0, 8), 0) == 0)
        events = it->second;
      try {
        next = std::stoul(last.substr(colon + 1)) + 1;
      } catch (const std::exception&) {
        events = nullptr;
      }
    }
    if (!events) {
      jsonError(response, 404, rpc_error::kInvalidRequest,
                "no stream to resume from Last-Event-ID '" + last + "'");
      return;
    }
    events->resume();
    response.set_header("Cache-Control", "no-cache");
    response.set_chunked_content_provider(
        "text/event-stream",
        [events, next, socket = servingSocket()](size_t, httplib::DataSink& sink) {
          if (events->relay(sink, next, /*priming=*/false, socket)) sink.done();
          return true;
        });
  }

  // GET without Last-Event-ID: the session's standalone stream, which carries what answers no
  // request (notifications/resources/updated for subscribed reviews). A second GET replaces it.
  void standalone(const std::shared_ptr<McpSession>& session, const httplib::Request& request,
                  httplib::Response& response) {
    if (request.get_header_value("Accept").find("text/event-stream") == std::string::npos) {
      response.status = 405;
      response.set_header("Allow", "POST, DELETE");
      return;
    }
    auto events = std::make_shared<EventStream>(session->id().substr(0, 8) + "-standalone");
    {
      std::lock_guard<std::mutex> lock(streams_mutex_);
      auto& current = standalone_[session->id()];
      if (current) current->finish();
      current = events;
      std::erase(standalone_order_, session->id());
      standalone_order_.push_back(session->id());
      // Each open stream holds a worker: at most a quarter of them, the oldest let go first
      // (its client may open it again; clients that never close their sessions cost nothing).
      const size_t cap = static_cast<size_t>(std::max(2, options_.threads / 4));
      while (standalone_.size() > cap && !standalone_order_.empty()) {
        const std::string oldest = standalone_order_.front();
        standalone_order_.pop_front();
        auto it = standalone_.find(oldest);
        if (it == standalone_.end()) continue;
        it->second->finish();
        standalone_.erase(it);
      }
    }
    session->setNotifier([events](const json& message) { events->push(message); });
    streamFromStart(response, events);
  }

  void remove(const httplib::Request& request, httplib::Response& response) {
    auto session = sessionOf(request, response);
    if (!session) return;
    session->setNotifier(nullptr);
    {
      std::lock_guard<std::mutex> lock(streams_mutex_);
      auto it = standalone_.find(session->id());
      if (it != standalone_.end()) {
        it->second->finish();
        standalone_.erase(it);
      }
      std::erase(standalone_order_, session->id());
    }
    session->cancelAll();
    server_.closeSession(session->id());
    response.status = 200;
  }

  // A finished stream stays resumable for a while, then goes.
  void forgetLater(const std::shared_ptr<EventStream>& events) {
    std::lock_guard<std::mutex> lock(streams_mutex_);
    finished_.emplace_back(events->id(), std::chrono::steady_clock::now());
    const auto cutoff = std::chrono::steady_clock::now() - std::chrono::minutes(5);
    while (!finished_.empty() && finished_.front().second < cutoff) {
      streams_.erase(finished_.front().first);
      finished_.pop_front();
    }
  }

  McpServer& server_;
  const HttpOptions& options_;
  HttpRequestGuard guard_;
  std::mutex streams_mutex_;
  std::map<std::string, std::shared_ptr<EventStream>> streams_;
  std::map<std::string, std::shared_ptr<EventStream>> standalone_;  // by session id
  std::deque<std::string> standalone_order_;                        // oldest first
  std::deque<std::pair<std::string, std::chrono::steady_clock::time_point>> finished_;
  std::atomic<uint64_t> next_stream_{1};
  TaskPool calls_;  // tool calls answered over SSE run here, apart from the HTTP threads
};

}  // namespace

int serveHttp(McpServer& server, const HttpOptions& options,
              const std::function<void(int port)>& on_listening) {
  HttpTransport transport(server, options);
  return transport.run(on_listening);
}

}  // namespace stickler
