// A request's body followed as its bytes arrive: when it is whole, where the next request
// starts, and a chunked body's framing judged before cpp-httplib reads it (issue 34 items 7, 8).
#include "server/transport/http_body_framing.h"

#include <gtest/gtest.h>

#include <string>

namespace stickler {
namespace {

constexpr uint64_t kLimit = 1000;

BodyFraming chunked() {
  return BodyFraming(BodyFraming::Kind::kChunked, 0, kLimit);
}

// Feeds `bytes` one at a time, as the slowest client sends them; returns how many it took.
size_t feedByteByByte(BodyFraming& framing, const std::string& bytes) {
  size_t taken = 0;
  for (char c : bytes) taken += framing.feed(&c, 1);
  return taken;
}

TEST(BodyFraming, ALengthBodyIsWholeAtItsLastByteAndLeavesTheNextRequest) {
  BodyFraming framing(BodyFraming::Kind::kLength, 5, kLimit);
  EXPECT_EQ(framing.feed("hel", 3), 3u);
  EXPECT_FALSE(framing.complete());
  EXPECT_EQ(framing.feed("loGET / HTTP/1.1", 16), 2u);
  EXPECT_TRUE(framing.complete());
  EXPECT_TRUE(BodyFraming(BodyFraming::Kind::kNone, 0, kLimit).complete());
  EXPECT_TRUE(BodyFraming(BodyFraming::Kind::kLength, 0, kLimit).complete());
}

TEST(BodyFraming, AChunkedBodyIsWholeAfterItsLastChunkAndTrailers) {
  const std::string body = "5;note=first\r\nhello\r\nA\r\n0123456789\r\n0\r\nX-Trailer: 1\r\n\r\n";
  for (bool slowly : {false, true}) {
    BodyFraming framing = chunked();
    const std::string sent = body + "GET / HTTP/1.1\r\n";
    const size_t taken =
        slowly ? feedByteByByte(framing, sent) : framing.feed(sent.data(), sent.size());
    EXPECT_EQ(taken, body.size()) << slowly;
    EXPECT_TRUE(framing.complete()) << slowly;
    EXPECT_FALSE(framing.error().has_value());
  }
  BodyFraming unfinished = chunked();
  unfinished.feed("5\r\nhello\r\n", 10);
  EXPECT_FALSE(unfinished.complete());
}

TEST(BodyFraming, AChunkSizeThatIsNotOneIsAnErrorAtItsLine) {
  // What is wrong, and the bytes before the line found wrong after a first chunk of 7.
  const struct {
    std::string bytes, message;
    uint64_t readable;
  } wrong[] = {
      {"-5\r\nabc\r\n", "chunk size '-5' is not a hexadecimal number", 7},
      {"0x10\r\n", "chunk size '0x10' is not a hexadecimal number", 7},
      {"\r\n", "chunk size '' is not a hexadecimal number", 7},
      {"12345678901234567\r\n", "chunk size '12345678901234567' is not a hexadecimal number", 7},
      {"3\r\nabcX\r\n", "a chunk's data must end with CRLF", 13},  // its data may be read
      {std::string(5000, '1'), "a chunk-size line is too long", 7},
  };
  for (const auto& [bytes, message, readable] : wrong) {
    for (bool slowly : {false, true}) {
      BodyFraming framing = chunked();
      const std::string sent = "2\r\n{}\r\n" + bytes;
      if (slowly) {
        feedByteByByte(framing, sent);
      } else {
        framing.feed(sent.data(), sent.size());
      }
      ASSERT_TRUE(framing.error().has_value()) << bytes;
      EXPECT_EQ(framing.error()->status, 400);
      EXPECT_EQ(framing.error()->message, message);
      EXPECT_EQ(framing.bytesBeforeError(), readable) << bytes;
      EXPECT_FALSE(framing.complete());
    }
  }
}

TEST(BodyFraming, AChunkLargerThanTheBodyLimitIsRefusedBeforeItArrives) {
  BodyFraming framing = chunked();
  framing.feed("3e9\r\n", 5);  // 1001 bytes
  ASSERT_TRUE(framing.error().has_value());
  EXPECT_EQ(framing.error()->status, 413);
  EXPECT_EQ(framing.error()->message,
            "a chunk of 1001 bytes is larger than the limit of 1000 bytes");
  BodyFraming at_limit = chunked();
  at_limit.feed("3e8\r\n", 5);
  EXPECT_FALSE(at_limit.error().has_value());
}

TEST(BodyFraming, TheFramingIsReadFromTheHeaders) {
  const auto take = [](const std::string& headers, const std::string& body) {
    BodyFraming framing =
        BodyFraming::fromHeaders("POST /mcp HTTP/1.1\r\n" + headers + "\r\n", kLimit);
    return framing.feed(body.data(), body.size());
  };
  EXPECT_EQ(take("Host: x\r\nContent-Length: 2\r\n", "{}GET"), 2u);
  EXPECT_EQ(take("transfer-encoding:  Chunked \r\n", "2\r\n{}\r\n0\r\n\r\nGET"), 12u);
  EXPECT_EQ(take("Host: x\r\n", "GET / HTTP/1.1"), 0u);  // no body
  EXPECT_EQ(take("Content-Length: -2\r\n", "{}"), 0u);   // the header checks refuse it
}

}  // namespace
}  // namespace stickler
