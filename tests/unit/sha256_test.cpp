#include "simulator/support/sha256.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "simulator/support/errors.h"

namespace stickler {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256Bytes(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Bytes("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, FileMatchesBytesAcrossBufferBoundaries) {
  std::string content(200000, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 31 + 7);
  const std::string path = ::testing::TempDir() + "/sha256_test.bin";
  std::ofstream(path, std::ios::binary) << content;
  EXPECT_EQ(sha256File(path), sha256Bytes(content));
  std::remove(path.c_str());
}

TEST(Sha256, MissingFileIsAUserError) {
  EXPECT_THROW(sha256File("/nonexistent/stickler/file.pt"), UserError);
}

}  // namespace
}  // namespace stickler
