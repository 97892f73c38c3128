// The HTTP server's connection loop, in front of cpp-httplib's request processing.
//
// cpp-httplib bounds each read of a connection, not a request: a client sending one byte every
// few seconds keeps a worker for ever (slowloris), and 32 such connections took every worker.
// This server keeps cpp-httplib's parsing, routing and handlers (process_request, which it
// offers to subclasses) and brings its own loop over a connection: a request's headers must
// arrive whole within a time limit before cpp-httplib reads them, its body within another.
//
// Workers are shared and reserved. A connection is served on the shared workers, kept alive
// between requests, while its address holds fewer than `per_address` of them and all addresses
// together fewer than that too. Beyond that, a reserved worker serves it one request, and only
// a request that arrives whole (headers and body) within `whole_seconds`; the connection then
// closes. Slow clients, one address's or many's, fill the shared workers at most: a complete
// request from anyone, the same local address included, still finds a worker.
#pragma once

#include "server/transport/http_body_framing.h"

#include <httplib.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>

namespace stickler {

struct ConnectionLimits {
  int header_seconds = 10;  // from a request's first byte to the end of its headers
  int idle_seconds = 5;     // waiting for the next request on a kept-alive connection
  int body_seconds = 60;    // from the end of the headers to the end of the body
  int io_seconds = 30;      // any one read or write
  int workers = 32;         // the pool's threads: per_address shared, the rest reserved
  int per_address = 24;     // shared workers, for one client address and for all together
  int whole_seconds = 2;    // a request served from the reserve must arrive whole within this
  int requests_per_connection = 100;
  uint64_t max_body_bytes = uint64_t{16} << 20;  // the most one chunk of a body may say it holds
};

// Called from a request's handler (or the pre-routing guard) on the worker serving it: the
// connection is closed once the response is written, as when the body was left unread.
void closeConnectionAfterResponse();

// The socket of the connection this worker serves (-1 outside a request), and whether its peer
// has closed it or shut its side: a handler's way to learn that its client left.
int servingSocket();
bool peerHungUp(int socket);

// Why the body of the request this worker serves could not be read, when its framing was wrong
// (a chunk size that is not one): the handler's answer says so, at once.
std::optional<BodyFramingError> requestBodyError();

class GatedHttpServer : public httplib::Server {
 public:
  // Also answers a handler's exception as a plain 500: without a handler of its own,
  // cpp-httplib would send the exception's text to the client in an EXCEPTION_WHAT header.
  explicit GatedHttpServer(const ConnectionLimits& limits);

 private:
  enum class Admission { kShared, kReserved, kRefused };

  // Called on a worker for each accepted connection (cpp-httplib's listen loop and pool).
  bool process_and_close_socket(socket_t sock) override;
  Admission admit(const std::string& address);
  void release(const std::string& address, Admission admission);

  ConnectionLimits limits_;
  std::mutex mutex_;                        // guards what follows
  std::map<std::string, int> connections_;  // on shared workers, per client address
  int shared_ = 0;                          // on shared workers, all addresses
  int reserved_ = 0;                        // on reserved workers
};

}  // namespace stickler
