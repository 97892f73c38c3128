#include "server/transport/http_connection_gate.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "server/transport/http_body_framing.h"

namespace stickler {
namespace {

using Clock = std::chrono::steady_clock;

// Set by closeConnectionAfterResponse() on the worker thread that runs the request.
thread_local bool close_after_response = false;
thread_local int serving_socket = -1;
// Why the body of the request this worker serves could not be read, when its framing was wrong.
thread_local std::optional<BodyFramingError> body_error;

int millisecondsUntil(Clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
  return static_cast<int>(std::max<int64_t>(0, left.count()));
}

bool waitFor(int fd, short events, int timeout_ms) {
  pollfd ready{fd, events, 0};
  while (true) {
    const int result = ::poll(&ready, 1, timeout_ms);
    if (result > 0) return true;
    if (result == 0 || errno != EINTR) return false;
  }
}

std::string addressOf(const sockaddr_storage& address) {
  char text[INET6_ADDRSTRLEN] = "";
  if (address.ss_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in&>(address).sin_addr, text,
                sizeof text);
  } else if (address.ss_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6&>(address).sin6_addr, text,
                sizeof text);
  }
  return text;
}

int portOf(const sockaddr_storage& address) {
  if (address.ss_family == AF_INET) {
    return ntohs(reinterpret_cast<const sockaddr_in&>(address).sin_port);
  }
  if (address.ss_family == AF_INET6) {
    return ntohs(reinterpret_cast<const sockaddr_in6&>(address).sin6_port);
  }
  return 0;
}

// A connection as cpp-httplib's request processing reads and writes it, with what it has read
// ahead kept here: the connection loop fills it while it waits for a request's headers.
class ConnectionStream : public httplib::Stream {
 public:
  ConnectionStream(socket_t sock, int io_seconds) : sock_(sock), io_ms_(io_seconds * 1000) {}

  // Reads until the buffered bytes hold the end of a request's headers (or as many bytes as a
  // request's headers may take; cpp-httplib then refuses them). False when the client closed
  // or `deadline` passed first.
  bool waitForHeaders(Clock::time_point first_byte_deadline, int header_seconds) {
    Clock::time_point deadline = first_byte_deadline;
    bool started = pending() > 0;
    if (started) deadline = Clock::now() + std::chrono::seconds(header_seconds);
    while (true) {
      const std::string_view buffered(buffer_.data() + offset_, pending());
      if (buffered.find("\r\n\r\n") != std::string_view::npos ||
          buffered.find("\n\n") != std::string_view::npos || pending() >= kMaxHeaderBytes) {
        return true;
      }
      if (!waitFor(sock_, POLLIN, millisecondsUntil(deadline))) return false;
      if (fill() <= 0) return false;
      if (!started) {
        started = true;
        deadline = Clock::now() + std::chrono::seconds(header_seconds);
      }
    }
  }
  bool startedRequest() const { return pending() > 0; }
  void setReadDeadline(Clock::time_point deadline) { read_deadline_ = deadline; }

  // Once a request's headers are buffered: follows its body from here on, as its bytes arrive.
  void beginRequest(uint64_t max_body_bytes) {
    const std::string_view buffered(buffer_.data() + offset_, pending());
    size_t end = buffered.find("\r\n\r\n");
    end = end == std::string_view::npos ? buffered.find("\n\n") : end;
    if (end == std::string_view::npos) {  // too large: cpp-httplib refuses the headers
      framing_.emplace(BodyFraming::Kind::kNone, 0, max_body_bytes);
      body_start_ = consumed_ + pending();
      return;
    }
    const size_t header_bytes = end + (buffered[end] == '\r' ? 4 : 2);
    framing_.emplace(
        BodyFraming::fromHeaders(std::string(buffered.substr(0, header_bytes)), max_body_bytes));
    body_start_ = consumed_ + header_bytes;
    framing_->feed(buffered.data() + header_bytes, buffered.size() - header_bytes);
  }
  // Whether the request begun has arrived whole (or its body's framing is known to be wrong,
  // which is answered as soon as it is read).
  bool requestArrived() const {
    return framing_ && (framing_->complete() || framing_->error().has_value());
  }
  // Reads until the request begun has arrived, or `deadline`.
  bool waitForRequest(Clock::time_point deadline) {
    while (!requestArrived()) {
      if (!waitFor(sock_, POLLIN, millisecondsUntil(deadline))) return false;
      if (fill() <= 0) return false;
    }
    return true;
  }

  bool is_readable() const override {
    return pending() > 0 || waitFor(sock_, POLLIN, readTimeout());
  }
  bool is_writable() const override { return waitFor(sock_, POLLOUT, io_ms_); }

  ssize_t read(char* ptr, size_t size) override {
    // A body whose framing is wrong is read up to the line that is wrong, then reading fails:
    // the handler answers with the reason at once instead of waiting for bytes never coming.
    uint64_t readable = UINT64_MAX;
    if (framing_ && framing_->error()) {
      const uint64_t error_at = body_start_ + framing_->bytesBeforeError();
      readable = error_at > consumed_ ? error_at - consumed_ : 0;
      if (readable == 0) {
        body_error = framing_->error();
        return -1;
      }
    }
    if (pending() == 0) {
      if (!waitFor(sock_, POLLIN, readTimeout())) return -1;
      const ssize_t got = fill();
      if (got <= 0) return got;
      return read(ptr, size);  // the bytes received may have shown the framing wrong
    }
    const size_t n = static_cast<size_t>(std::min<uint64_t>({size, pending(), readable}));
    std::memcpy(ptr, buffer_.data() + offset_, n);
    offset_ += n;
    consumed_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    while (true) {
      const ssize_t sent = ::send(sock_, ptr, size, MSG_NOSIGNAL);
      if (sent >= 0 || errno != EINTR) return sent;
    }
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    endpoint(::getpeername, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    endpoint(::getsockname, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  static constexpr size_t kMaxHeaderBytes = size_t{64} * 1024;

  size_t pending() const { return buffer_.size() - offset_; }
  void endpoint(int (*name)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage address{};
    socklen_t length = sizeof address;
    if (name(sock_, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
      ip = addressOf(address);
      port = portOf(address);
    }
  }
  int readTimeout() const { return std::min(io_ms_, millisecondsUntil(read_deadline_)); }
  // One recv into the buffer; what was read before is dropped once consumed.
  ssize_t fill() {
    if (offset_ == buffer_.size()) {
      buffer_.clear();
      offset_ = 0;
    }
    char chunk[16 * 1024];
    while (true) {
      const ssize_t got = ::recv(sock_, chunk, sizeof chunk, 0);
      if (got > 0) {
        buffer_.append(chunk, static_cast<size_t>(got));
        if (framing_) framing_->feed(chunk, static_cast<size_t>(got));
      }
      if (got >= 0 || errno != EINTR) return got;
    }
  }

  socket_t sock_;
  int io_ms_;
  Clock::time_point read_deadline_ = Clock::time_point::max();
  std::string buffer_;
  size_t offset_ = 0;
  uint64_t consumed_ = 0;               // bytes read out of the connection so far
  std::optional<BodyFraming> framing_;  // the body of the request being served
  uint64_t body_start_ = 0;             // where it starts, counted as consumed_ is
};

void answerAndClose(socket_t sock, const char* status, const std::string& message) {
  const std::string body =
      R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":")" + message + "\"}}";
  const std::string response =
      std::string("HTTP/1.1 ") + status +
      "\r\nContent-Type: application/json\r\nConnection: close\r\n"
      "Referrer-Policy: same-origin\r\nRetry-After: 1\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  (void)::send(sock, response.data(), response.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

}  // namespace

void closeConnectionAfterResponse() {
  close_after_response = true;
}

int servingSocket() {
  return serving_socket;
}

std::optional<BodyFramingError> requestBodyError() {
  return body_error;
}

bool peerHungUp(int socket) {
  if (socket < 0) return false;
  pollfd ready{socket, POLLRDHUP, 0};
  return ::poll(&ready, 1, 0) > 0 && (ready.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

GatedHttpServer::GatedHttpServer(const ConnectionLimits& limits) : limits_(limits) {
  // The review page's addresses name proposals and may carry a one-time token: a link
  // followed from it must not tell the next site where it came from. Not no-referrer: with it
  // Chromium sends a form post's Origin as "null", and the page's own posts would be refused.
  set_default_headers({{"Referrer-Policy", "same-origin"}});
  // What went wrong goes to the server's log; the client learns only that it did.
  set_exception_handler([](const httplib::Request& request, httplib::Response& response,
                           std::exception_ptr error) {
    std::string what = "an exception that is not a std::exception";
    try {
      std::rethrow_exception(std::move(error));
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    std::fprintf(stderr, "stickler serve: %s %s failed: %s\n", request.method.c_str(),
                 request.path.c_str(), what.c_str());
    response.status = 500;
    response.set_header("Connection", "close");
    response.set_content(
        R"({"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error; the server's log says more"}})",
        "application/json");
  });
}

GatedHttpServer::Admission GatedHttpServer::admit(const std::string& address) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto held = connections_.find(address);
  const int by_address = held == connections_.end() ? 0 : held->second;
  if (by_address < limits_.per_address && shared_ < limits_.per_address) {
    ++connections_[address];
    ++shared_;
    return Admission::kShared;
  }
  if (reserved_ < limits_.workers - limits_.per_address) {
    ++reserved_;
    return Admission::kReserved;
  }
  return Admission::kRefused;
}

void GatedHttpServer::release(const std::string& address, Admission admission) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (admission == Admission::kReserved) {
    --reserved_;
    return;
  }
  --shared_;
  if (--connections_[address] <= 0) connections_.erase(address);
}

bool GatedHttpServer::process_and_close_socket(socket_t sock) {
  ConnectionStream stream(sock, limits_.io_seconds);
  serving_socket = sock;
  std::string address;
  int port = 0;
  stream.get_remote_ip_and_port(address, port);
  bool served = false;
  const Admission admission = admit(address);
  if (admission == Admission::kRefused) {
    answerAndClose(sock, "503 Service Unavailable",
                   "too many connections from " + address + "; retry when one ends");
  } else if (admission == Admission::kReserved) {
    // One request, whole within whole_seconds, then the connection closes: a reserved worker
    // is never held by a client that sends slowly.
    const auto deadline = Clock::now() + std::chrono::seconds(limits_.whole_seconds);
    bool arrived = stream.waitForHeaders(deadline, limits_.whole_seconds);
    if (arrived) {
      stream.beginRequest(limits_.max_body_bytes);
      arrived = stream.waitForRequest(deadline);
    }
    if (!arrived) {
      if (stream.startedRequest()) {
        answerAndClose(sock, "503 Service Unavailable",
                       "the workers for slow requests are all taken: send the request whole, "
                       "or retry when one is free");
      }
    } else {
      stream.setReadDeadline(Clock::now() + std::chrono::seconds(limits_.io_seconds));
      close_after_response = false;
      body_error.reset();
      bool closed = false;
      served = process_request(stream, /*close_connection=*/true, closed, nullptr);
    }
    release(address, admission);
  } else {
    auto first_byte_deadline = Clock::now() + std::chrono::seconds(limits_.header_seconds);
    bool closed = false;
    for (int request = 0; request < limits_.requests_per_connection && !closed; ++request) {
      if (!stream.waitForHeaders(first_byte_deadline, limits_.header_seconds)) {
        if (stream.startedRequest()) {
          answerAndClose(sock, "408 Request Timeout",
                         "the request's headers did not arrive within " +
                             std::to_string(limits_.header_seconds) + " s");
        }
        break;
      }
      stream.beginRequest(limits_.max_body_bytes);
      stream.setReadDeadline(Clock::now() + std::chrono::seconds(limits_.body_seconds));
      const bool last = request + 1 == limits_.requests_per_connection;
      close_after_response = false;
      body_error.reset();
      if (!process_request(stream, last, closed, nullptr)) break;
      served = true;
      if (close_after_response) break;
      first_byte_deadline = Clock::now() + std::chrono::seconds(limits_.idle_seconds);
    }
    release(address, admission);
  }
  serving_socket = -1;
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return served;
}

}  // namespace stickler
