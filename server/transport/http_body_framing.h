// One HTTP request's body, followed as its bytes arrive: whether the request has arrived whole,
// and for a chunked body whether its framing holds. The connection loop uses it to serve a
// request from the reserved workers only once it is whole, and to refuse a chunk size such as
// `-5` at once (cpp-httplib reads it as 2^64 - 5 and waits for that many bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace stickler {

struct BodyFramingError {
  int status = 400;  // 413 for a chunk larger than the body may be
  std::string message;
};

class BodyFraming {
 public:
  enum class Kind { kNone, kLength, kChunked };

  // The body of a request whose headers said `kind` (with `length` bytes for kLength); a chunk
  // may hold at most `max_bytes`, the limit on a whole body.
  BodyFraming(Kind kind, uint64_t length, uint64_t max_bytes);

  // The body's framing from a request's header block (up to and including its blank line):
  // chunked when Transfer-Encoding says so, else Content-Length when it is a plain decimal,
  // else none. The header checks refuse the ambiguous cases; this only follows the body.
  static BodyFraming fromHeaders(const std::string& header_block, uint64_t max_bytes);

  // Takes received bytes in order; returns how many belong to this body (the rest, if any, are
  // the next request's). Nothing more is taken once the body is complete or an error is found.
  size_t feed(const char* data, size_t size);

  bool complete() const { return state_ == State::kDone; }
  const std::optional<BodyFramingError>& error() const { return error_; }
  // The body's bytes before the error: what may be read of it before reading fails.
  uint64_t bytesBeforeError() const { return error_at_; }

 private:
  enum class State { kLength, kSizeLine, kData, kDataEnd, kTrailers, kDone, kError };

  void fail(int status, std::string message);
  void endSizeLine();
  void endTrailerLine();

  State state_;
  uint64_t remaining_ = 0;  // of the body (kLength) or of the chunk (kData, kDataEnd)
  uint64_t max_bytes_;
  uint64_t taken_ = 0;  // bytes of the body taken so far
  std::string line_;    // the size or trailer line being read
  bool in_line_ = false;
  uint64_t line_start_ = 0;  // where in the body that line began
  std::optional<BodyFramingError> error_;
  uint64_t error_at_ = 0;
};

}  // namespace stickler
