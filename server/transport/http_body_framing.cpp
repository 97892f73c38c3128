#include "server/transport/http_body_framing.h"

#include <algorithm>
#include <cctype>

#include "simulator/support/text_format.h"

namespace stickler {
namespace {

// A chunk-size line, or a trailer line, longer than this is not one a client writes.
constexpr size_t kMaxLineBytes = 4096;

// What a chunk-size line, a trailer line, or a header value looks like in a message.
std::string shown(const std::string& text) {
  std::string out;
  for (char c : text.substr(0, 40)) {
    out += std::isprint(static_cast<unsigned char>(c)) ? c : '?';
  }
  return out;
}

}  // namespace

BodyFraming::BodyFraming(Kind kind, uint64_t length, uint64_t max_bytes)
    : state_(kind == Kind::kChunked                ? State::kSizeLine
             : kind == Kind::kLength && length > 0 ? State::kLength
                                                   : State::kDone),
      remaining_(length),
      max_bytes_(max_bytes) {}

BodyFraming BodyFraming::fromHeaders(const std::string& header_block, uint64_t max_bytes) {
  Kind kind = Kind::kNone;
  uint64_t length = 0;
  size_t start = header_block.find('\n');  // past the request line
  while (start != std::string::npos && start + 1 < header_block.size()) {
    size_t end = header_block.find('\n', start + 1);
    if (end == std::string::npos) end = header_block.size();
    const std::string line = header_block.substr(start + 1, end - start - 1);
    start = end < header_block.size() ? end : std::string::npos;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    const std::string name = asciiLower(trimmed(line.substr(0, colon)));
    std::string value = line.substr(colon + 1);
    if (!value.empty() && value.back() == '\r') value.pop_back();
    value = asciiLower(trimmed(value));
    if (name == "transfer-encoding" && value == "chunked") {
      kind = Kind::kChunked;
    } else if (name == "content-length" && kind != Kind::kChunked && !value.empty() &&
               value.size() <= 19 && std::all_of(value.begin(), value.end(), [](unsigned char c) {
                 return std::isdigit(c) != 0;
               })) {
      kind = Kind::kLength;
      length = std::stoull(value);
    }
  }
  return BodyFraming(kind, length, max_bytes);
}

// The error is the line it was found in: none of that line may be read.
void BodyFraming::fail(int status, std::string message) {
  state_ = State::kError;
  error_ = BodyFramingError{status, std::move(message)};
  error_at_ = line_start_;
}

// "1a;name=value" -> a chunk of 26 bytes. Hexadecimal digits only, at most 16 of them: "-5",
// "0x10" and an empty size are not sizes, whatever strtoul makes of them.
void BodyFraming::endSizeLine() {
  std::string size = line_;
  line_.clear();
  if (!size.empty() && size.back() == '\r') size.pop_back();
  size = trimmed(size.substr(0, size.find(';')));
  const bool hexadecimal =
      !size.empty() && size.size() <= 16 &&
      std::all_of(size.begin(), size.end(), [](unsigned char c) { return std::isxdigit(c) != 0; });
  if (!hexadecimal) {
    return fail(400, "chunk size '" + shown(size) + "' is not a hexadecimal number");
  }
  const uint64_t bytes = std::stoull(size, nullptr, 16);
  if (bytes > max_bytes_) {
    return fail(413, "a chunk of " + std::to_string(bytes) + " bytes is larger than the limit of " +
                         std::to_string(max_bytes_) + " bytes");
  }
  if (bytes == 0) {
    state_ = State::kTrailers;
    return;
  }
  remaining_ = bytes;
  state_ = State::kData;
}

void BodyFraming::endTrailerLine() {
  const bool blank = line_.empty() || line_ == "\r";
  line_.clear();
  if (blank) state_ = State::kDone;
}

size_t BodyFraming::feed(const char* data, size_t size) {
  size_t used = 0;
  while (used < size && state_ != State::kDone && state_ != State::kError) {
    if (state_ == State::kLength || state_ == State::kData) {
      const size_t take = static_cast<size_t>(std::min<uint64_t>(remaining_, size - used));
      remaining_ -= take;
      used += take;
      taken_ += take;
      if (remaining_ == 0) state_ = state_ == State::kLength ? State::kDone : State::kDataEnd;
      continue;
    }
    if (!in_line_) {
      in_line_ = true;
      line_start_ = taken_;
    }
    const char c = data[used++];
    ++taken_;
    if (state_ == State::kDataEnd) {
      // A chunk's data end with CRLF, as cpp-httplib reads them.
      line_ += c;
      if (line_.size() < 2) continue;
      if (line_ != "\r\n") {
        fail(400, "a chunk's data must end with CRLF");
        continue;
      }
      line_.clear();
      in_line_ = false;
      state_ = State::kSizeLine;
      continue;
    }
    if (c != '\n') {
      line_ += c;
      if (line_.size() > kMaxLineBytes) {
        fail(400, state_ == State::kSizeLine ? "a chunk-size line is too long"
                                             : "a trailer line is too long");
      }
      continue;
    }
    in_line_ = false;
    if (state_ == State::kSizeLine) {
      endSizeLine();
    } else {
      endTrailerLine();
    }
  }
  return used;
}

}  // namespace stickler
