// What crosses between Stickler and its worker processes: a job or a result is a JSON header
// with binary blobs beside it (pickled tensors, archives). Nothing else crosses: no closure, no
// pointer, no inherited memory (docs/architecture.md, "Processes"). A message may pass open
// files too: sealed memory files, which the receiver checks are sealed before it maps them.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace stickler {

// An open file passed with a message (SCM_RIGHTS over the channel's socket): closed when the
// last copy of the message holding it goes. A caller gives its model host the sealed memory
// files of the weights its adapters made (shared_weight_files.h) this way.
class PassedFile {
 public:
  explicit PassedFile(int fd);  // taken
  int fd() const { return *fd_; }

 private:
  std::shared_ptr<const int> fd_;
};

struct WireMessage {
  nlohmann::json header = nlohmann::json::object();
  std::vector<std::string> blobs;
  std::vector<PassedFile> files;
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
// The most files one message may pass: Linux's limit for one SCM_RIGHTS message (SCM_MAX_FD).
inline constexpr size_t kMaxPassedFiles = 253;

// A frame: "STKW", the header's length (u32) and text, the number of blobs (u32), each blob's
// length (u64) and bytes, and the number of files passed with it (u32); integers little-endian.
// The files themselves travel beside the frame's first byte (sendMessageBytes). Throws WireError
// for more than kMaxPassedFiles.
std::string encodeMessage(const WireMessage& message);

// Sends what is left of an encoded message from `offset` (as much as the socket takes), with
// the message's files beside its first byte; returns what send(2) returns. `flags` are send(2)'s.
ssize_t sendMessageBytes(int fd, const std::string& bytes, size_t offset,
                         const std::vector<PassedFile>& files, int flags);

// Reassembles frames from bytes as they arrive.
class WireDecoder {
 public:
  void feed(const char* data, size_t size);
  // Files that arrived beside the bytes fed (taken): the next messages' files, in order.
  void feedFiles(std::vector<PassedFile> files);
  // The next complete message, if one has arrived. Throws WireError on a malformed frame.
  std::optional<WireMessage> next();
  bool empty() const { return buffer_.size() == consumed_; }

 private:
  std::string buffer_;
  size_t consumed_ = 0;
  std::deque<PassedFile> files_;
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
