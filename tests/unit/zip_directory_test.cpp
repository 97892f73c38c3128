// The zip directory is read without inflating anything, ZIP64 included (an 8B model's archive
// is over 4 GB), and an entry that would inflate past its bound is refused.
#include "simulator/graph/zip_directory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

#include "simulator/support/errors.h"

namespace stickler {
namespace {

void put(std::string& out, uint64_t value, int width) {
  for (int i = 0; i < width; ++i) out += static_cast<char>((value >> (8 * i)) & 0xFF);
}

// One central-directory entry whose sizes live in the ZIP64 extra field, then the ZIP64 end
// record, its locator and the classic end record pointing at them (0xFFFF... everywhere).
// With `header_offset`, the entry's local header offset lives there too, after the sizes.
std::string zip64With(const std::string& name, uint16_t method, uint64_t compressed,
                      uint64_t uncompressed, std::optional<uint64_t> header_offset = {}) {
  std::string file = "local data stands here";
  const uint64_t directory_offset = file.size();
  std::string entry = "PK\x01\x02";
  put(entry, 45, 2), put(entry, 45, 2), put(entry, 0, 2), put(entry, method, 2);
  put(entry, 0, 4), put(entry, 0, 4);  // time, date, then the CRC
  put(entry, 0xFFFFFFFF, 4), put(entry, 0xFFFFFFFF, 4);
  put(entry, name.size(), 2), put(entry, header_offset ? 28 : 20, 2), put(entry, 0, 2);
  put(entry, 0, 2), put(entry, 0, 2), put(entry, 0, 4),
      put(entry, header_offset ? 0xFFFFFFFF : 0, 4);
  entry += name;
  put(entry, 0x0001, 2), put(entry, header_offset ? 24 : 16, 2), put(entry, uncompressed, 8);
  put(entry, compressed, 8);
  if (header_offset) put(entry, *header_offset, 8);
  file += entry;
  const uint64_t record_offset = file.size();
  std::string record = "PK\x06\x06";
  put(record, 44, 8), put(record, 45, 2), put(record, 45, 2), put(record, 0, 4), put(record, 0, 4);
  put(record, 1, 8), put(record, 1, 8), put(record, entry.size(), 8),
      put(record, directory_offset, 8);
  file += record;
  file += "PK\x06\x07";
  put(file, 0, 4), put(file, record_offset, 8), put(file, 1, 4);
  file += "PK\x05\x06";
  put(file, 0, 2), put(file, 0, 2), put(file, 0xFFFF, 2), put(file, 0xFFFF, 2);
  put(file, 0xFFFFFFFF, 4), put(file, 0xFFFFFFFF, 4), put(file, 0, 2);
  return file;
}

class ZipDirectory : public ::testing::Test {
 protected:
  std::string write(const std::string& bytes) {
    std::ofstream(path_, std::ios::binary) << bytes;
    return path_;
  }
  ~ZipDirectory() override { std::remove(path_.c_str()); }
  std::string path_ = ::testing::TempDir() + "zip-directory-" + std::to_string(::getpid());
};

TEST_F(ZipDirectory, Zip64SizesAreReadFromTheExtraField) {
  const uint64_t five_gb = uint64_t{5} << 30;
  const auto entries = readZipDirectory(write(zip64With("big/data/0", 0, five_gb, five_gb)));
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].name, "big/data/0");
  EXPECT_EQ(entries[0].compressed, five_gb);
  EXPECT_EQ(entries[0].uncompressed, five_gb);
  EXPECT_NO_THROW(checkZipSizes(entries, path_));  // a stored 5 GB tensor is a real model's
  EXPECT_EQ(entries[0].header_offset, 0u);
}

// Past 4 GB (an 8B model's later weights) the local header's offset is in the extra field:
// mapping a record's data from the file needs it.
TEST_F(ZipDirectory, Zip64HeaderOffsetsAreReadFromTheExtraField) {
  const uint64_t six_gb = uint64_t{6} << 30;
  const auto entries = readZipDirectory(write(zip64With("big/data/7", 0, 4096, 4096, six_gb)));
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].uncompressed, 4096u);
  EXPECT_EQ(entries[0].compressed, 4096u);
  EXPECT_EQ(entries[0].header_offset, six_gb);
}

TEST_F(ZipDirectory, AnEntryThatWouldInflatePastItsBoundIsRefused) {
  const auto bomb =
      readZipDirectory(write(zip64With("m/constants.pkl", 8, 4096, uint64_t{4} << 30)));
  try {
    checkZipSizes(bomb, path_);
    FAIL() << "a 4 GB entry deflated into 4 KB was accepted";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("m/constants.pkl would inflate from 4096 to 4294967296"),
              std::string::npos)
        << e.what();
  }
  const auto lying = readZipDirectory(write(zip64With("m/data/0", 0, 10, 20)));
  EXPECT_THROW(checkZipSizes(lying, path_), UserError);  // stored, yet sizes differ
  // Text compresses 10x: well within the bound.
  EXPECT_NO_THROW(
      checkZipSizes(readZipDirectory(write(zip64With("m/code", 8, 200000, 2000000))), path_));
}

TEST_F(ZipDirectory, DamagedDirectoriesAreErrorsNotReadsPastTheEnd) {
  std::string file = zip64With("m/x", 0, 1, 1);
  EXPECT_THROW(readZipDirectory(write(file.substr(0, file.size() - 30))), UserError);
  std::string shifted = file;
  shifted.replace(shifted.size() - 22 - 20 + 8, 8,
                  std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8));
  EXPECT_THROW(readZipDirectory(write(shifted)), UserError);
  EXPECT_THROW(readZipDirectory(write("PK\x05\x06")), UserError);
  // An extra field that says it is longer than the room it has.
  std::string long_extra = file;
  const size_t extra_size = long_extra.find(std::string("\x01\x00\x10\x00", 4)) + 2;
  long_extra[extra_size] = '\x40';
  EXPECT_THROW(readZipDirectory(write(long_extra)), UserError);
}

}  // namespace
}  // namespace stickler
