// What crosses between Stickler and its worker processes: a job or a result is a JSON header
// with binary blobs beside it (pickled tensors, archives). Nothing else crosses: no closure, no
// pointer, no inherited memory (docs/architecture.md, "Processes").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stickler {

struct WireMessage {
  nlohmann::json header = nlohmann::json::object();
  std::vector<std::string> blobs;
};

// A frame that is not one: a torn or oversized message, or a header that is not JSON.
class WireError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What one frame may hold. Both ends are Stickler's own, but a sandboxed worker runs code no one
// reviewed: the caller bounds what it will read from it.
inline constexpr uint64_t kMaxWireHeaderBytes = uint64_t{256} << 20;
inline constexpr uint64_t kMaxWireBlobs = 4096;
inline constexpr uint64_t kMaxWireBytes = uint64_t{64} << 30;

// A frame: "STKW", the header's length (u32) and text, the number of blobs (u32), and each
// blob's length (u64) and bytes; integers little-endian.
std::string encodeMessage(const WireMessage& message);

// Reassembles frames from bytes as they arrive.
class WireDecoder {
 public:
  void feed(const char* data, size_t size);
  // The next complete message, if one has arrived. Throws WireError on a malformed frame.
  std::optional<WireMessage> next();
  bool empty() const { return buffer_.size() == consumed_; }

 private:
  std::string buffer_;
  size_t consumed_ = 0;
};

// Blocking I/O for the worker's side of its channel, `decoder` keeping what arrived beyond one
// message. readMessage returns false at a clean end of input (the caller closed the channel);
// both throw WireError otherwise.
// With `spin_seconds`, the channel is polled (yielding the core between tries) that long before
// the read sleeps: a worker that has just answered a short job catches the next one without the
// cost of waking up.
bool readMessage(int fd, WireDecoder& decoder, WireMessage& message, double spin_seconds = 0);
void writeMessage(int fd, const WireMessage& message);

}  // namespace stickler
