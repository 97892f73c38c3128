#include "simulator/workers/worker_wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstring>

namespace stickler {
namespace {

constexpr char kMagic[4] = {'S', 'T', 'K', 'W'};

void putInteger(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

// Reads a little-endian integer of `bytes` at `at`, or nullopt when the buffer ends first.
std::optional<uint64_t> getInteger(const std::string& buffer, size_t at, int bytes) {
  if (buffer.size() < at + static_cast<size_t>(bytes)) return std::nullopt;
  uint64_t value = 0;
  for (int i = 0; i < bytes; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(buffer[at + i])) << (8 * i);
  }
  return value;
}

}  // namespace

std::string encodeMessage(const WireMessage& message) {
  const std::string header =
      message.header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  size_t size = sizeof kMagic + 4 + header.size() + 4;
  for (const std::string& blob : message.blobs) size += 8 + blob.size();
  std::string out;
  out.reserve(size);
  out.append(kMagic, sizeof kMagic);
  putInteger(out, header.size(), 4);
  out += header;
  putInteger(out, message.blobs.size(), 4);
  for (const std::string& blob : message.blobs) {
    putInteger(out, blob.size(), 8);
    out += blob;
  }
  return out;
}

void WireDecoder::feed(const char* data, size_t size) {
  // Drop what earlier messages used before growing: a long-lived channel stays small.
  if (consumed_ > 0 && consumed_ == buffer_.size()) {
    buffer_.clear();
    consumed_ = 0;
  } else if (consumed_ > (size_t{1} << 20)) {
    buffer_.erase(0, consumed_);
    consumed_ = 0;
  }
  buffer_.append(data, size);
}

std::optional<WireMessage> WireDecoder::next() {
  size_t at = consumed_;
  if (buffer_.size() < at + sizeof kMagic) return std::nullopt;
  if (std::memcmp(buffer_.data() + at, kMagic, sizeof kMagic) != 0) {
    throw WireError("a worker's message does not start with the frame's mark");
  }
  at += sizeof kMagic;
  const auto header_size = getInteger(buffer_, at, 4);
  if (!header_size) return std::nullopt;
  if (*header_size > kMaxWireHeaderBytes) throw WireError("a worker's message header is too large");
  at += 4;
  if (buffer_.size() < at + *header_size) return std::nullopt;
  const size_t header_at = at;
  at += *header_size;
  const auto blob_count = getInteger(buffer_, at, 4);
  if (!blob_count) return std::nullopt;
  if (*blob_count > kMaxWireBlobs) throw WireError("a worker's message has too many parts");
  at += 4;
  std::vector<std::pair<size_t, size_t>> spans;
  uint64_t total = *header_size;
  for (uint64_t i = 0; i < *blob_count; ++i) {
    const auto blob_size = getInteger(buffer_, at, 8);
    if (!blob_size) return std::nullopt;
    total += *blob_size;
    if (*blob_size > kMaxWireBytes || total > kMaxWireBytes) {
      throw WireError("a worker's message is too large");
    }
    at += 8;
    if (buffer_.size() < at + *blob_size) return std::nullopt;
    spans.emplace_back(at, *blob_size);
    at += *blob_size;
  }
  WireMessage message;
  try {
    message.header = nlohmann::json::parse(
        buffer_.begin() + static_cast<ptrdiff_t>(header_at),
        buffer_.begin() + static_cast<ptrdiff_t>(header_at) + static_cast<ptrdiff_t>(*header_size));
  } catch (const nlohmann::json::exception& e) {
    throw WireError(std::string("a worker's message header is not JSON: ") + e.what());
  }
  for (const auto& [start, size] : spans) message.blobs.emplace_back(buffer_, start, size);
  consumed_ = at;
  return message;
}

bool readMessage(int fd, WireDecoder& decoder, WireMessage& message, double spin_seconds) {
  char buffer[1 << 16];
  const auto spin_until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(spin_seconds);
  bool spinning = spin_seconds > 0;
  while (true) {
    if (auto complete = decoder.next()) {
      message = std::move(*complete);
      return true;
    }
    ssize_t got;
    if (spinning && std::chrono::steady_clock::now() < spin_until) {
      got = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
      if (got < 0 && errno == EAGAIN) {
        ::sched_yield();
        continue;
      }
      if (got < 0 && errno == ENOTSOCK) {
        spinning = false;
        continue;
      }
    } else {
      got = ::read(fd, buffer, sizeof buffer);
    }
    if (got > 0) {
      decoder.feed(buffer, static_cast<size_t>(got));
    } else if (got == 0) {
      if (decoder.empty()) return false;
      throw WireError("the channel closed in the middle of a message");
    } else if (errno != EINTR) {
      throw WireError(std::string("reading the channel failed: ") + std::strerror(errno));
    }
  }
}

void writeMessage(int fd, const WireMessage& message) {
  const std::string bytes = encodeMessage(message);
  const char* data = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    // send(), not write(): a caller that went away is an error here, not a SIGPIPE.
    ssize_t written = ::send(fd, data, left, MSG_NOSIGNAL);
    if (written < 0 && errno == ENOTSOCK) written = ::write(fd, data, left);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw WireError(std::string("writing the channel failed: ") + std::strerror(errno));
    }
    data += written;
    left -= static_cast<size_t>(written);
  }
}

}  // namespace stickler
