#include "simulator/workers/worker_wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <sched.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "simulator/workers/passed_descriptors.h"

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

// recv(2) that takes the files passed beside the bytes (SCM_RIGHTS) into `decoder`.
ssize_t receiveWithFiles(int fd, char* buffer, size_t size, int flags, WireDecoder& decoder) {
  DescriptorMessage message(buffer, size, kMaxPassedFiles);
  const ssize_t got = ::recvmsg(fd, message.header(), flags | MSG_CMSG_CLOEXEC);
  if (got < 0) return got;
  std::vector<PassedFile> files;
  for (const int passed : passedDescriptors(*message.header())) files.emplace_back(passed);
  if (message.header()->msg_flags & MSG_CTRUNC) {
    throw WireError("a message passed more files than one message may (" +
                    std::to_string(kMaxPassedFiles) + ")");
  }
  decoder.feedFiles(std::move(files));
  return got;
}

}  // namespace

PassedFile::PassedFile(int fd)
    : fd_(new int(fd), [](const int* owned) {
        if (*owned >= 0) ::close(*owned);
        delete owned;
      }) {}

std::string encodeMessage(const WireMessage& message) {
  if (message.files.size() > kMaxPassedFiles) {
    throw WireError("a message passes " + std::to_string(message.files.size()) +
                    " files, more than " + std::to_string(kMaxPassedFiles));
  }
  const std::string header =
      message.header.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  size_t size = sizeof kMagic + 4 + header.size() + 4 + 4;
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
  putInteger(out, message.files.size(), 4);
  return out;
}

ssize_t sendMessageBytes(int fd, const std::string& bytes, size_t offset,
                         const std::vector<PassedFile>& files, int flags) {
  // send(), not write(): a caller that went away is an error here, not a SIGPIPE.
  if (offset > 0 || files.empty()) {
    const ssize_t sent = ::send(fd, bytes.data() + offset, bytes.size() - offset, flags);
    if (sent < 0 && errno == ENOTSOCK) {
      return ::write(fd, bytes.data() + offset, bytes.size() - offset);
    }
    return sent;
  }
  std::vector<int> fds(files.size());
  for (size_t i = 0; i < files.size(); ++i) fds[i] = files[i].fd();
  DescriptorMessage message(bytes.data(), bytes.size(), fds);
  return ::sendmsg(fd, message.header(), flags);
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

void WireDecoder::feedFiles(std::vector<PassedFile> files) {
  for (PassedFile& file : files) files_.push_back(std::move(file));
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
  const auto file_count = getInteger(buffer_, at, 4);
  if (!file_count) return std::nullopt;
  at += 4;
  // A sender's files travel beside its message's first byte: all of them are here by its end.
  if (*file_count > files_.size()) {
    throw WireError("a worker's message passes " + std::to_string(*file_count) +
                    " files, of which " + std::to_string(files_.size()) + " arrived");
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
  for (uint64_t i = 0; i < *file_count; ++i) {
    message.files.push_back(std::move(files_.front()));
    files_.pop_front();
  }
  consumed_ = at;
  return message;
}

bool readMessage(int fd, WireDecoder& decoder, WireMessage& message, double spin_seconds) {
  char buffer[1 << 16];
  const auto spin_until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(spin_seconds);
  bool spinning = spin_seconds > 0;
  bool socket = true;
  while (true) {
    if (auto complete = decoder.next()) {
      message = std::move(*complete);
      return true;
    }
    ssize_t got;
    if (!socket) {
      got = ::read(fd, buffer, sizeof buffer);
    } else if (spinning && std::chrono::steady_clock::now() < spin_until) {
      got = receiveWithFiles(fd, buffer, sizeof buffer, MSG_DONTWAIT, decoder);
      if (got < 0 && errno == EAGAIN) {
        ::sched_yield();
        continue;
      }
    } else {
      got = receiveWithFiles(fd, buffer, sizeof buffer, 0, decoder);
    }
    if (got < 0 && errno == ENOTSOCK) {
      socket = false;
      continue;
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
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t written = sendMessageBytes(fd, bytes, sent, message.files, MSG_NOSIGNAL);
    if (written < 0) {
      if (errno == EINTR) continue;
      throw WireError(std::string("writing the channel failed: ") + std::strerror(errno));
    }
    sent += static_cast<size_t>(written);
  }
}

}  // namespace stickler
