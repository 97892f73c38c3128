// The HTTP server's connection loop, in front of cpp-httplib's request processing.
//
// cpp-httplib bounds each read of a connection, not a request: a client sending one byte every
// few seconds keeps a worker for ever (slowloris), and 32 such connections took every worker.
// This server keeps cpp-httplib's parsing, routing and handlers (process_request, which it
// offers to subclasses) and brings its own loop over a connection: a request's headers must
// arrive whole within a time limit before cpp-httplib reads them, its body within another,
// and one client address may hold only so many connections, so that a reserve of workers is
// always left to everyone else.
#pragma once

#include <httplib.h>

#include <map>
#include <mutex>
#include <string>

namespace stickler {

struct ConnectionLimits {
  int header_seconds = 10;  // from a request's first byte to the end of its headers
  int idle_seconds = 5;     // waiting for the next request on a kept-alive connection
  int body_seconds = 60;    // from the end of the headers to the end of the body
  int io_seconds = 30;      // any one read or write
  int per_address = 24;     // connections one client address may hold at once
  int requests_per_connection = 100;
};

// Called from a request's handler (or the pre-routing guard) on the worker serving it: the
// connection is closed once the response is written, as when the body was left unread.
void closeConnectionAfterResponse();

// The socket of the connection this worker serves (-1 outside a request), and whether its peer
// has closed it or shut its side: a handler's way to learn that its client left.
int servingSocket();
bool peerHungUp(int socket);

class GatedHttpServer : public httplib::Server {
 public:
  // Also answers a handler's exception as a plain 500: without a handler of its own,
  // cpp-httplib would send the exception's text to the client in an EXCEPTION_WHAT header.
  explicit GatedHttpServer(const ConnectionLimits& limits);

 private:
  // Called on a worker for each accepted connection (cpp-httplib's listen loop and pool).
  bool process_and_close_socket(socket_t sock) override;
  bool admit(const std::string& address);
  void release(const std::string& address);

  ConnectionLimits limits_;
  std::mutex mutex_;
  std::map<std::string, int> connections_;  // per client address, guarded by mutex_
};

}  // namespace stickler
