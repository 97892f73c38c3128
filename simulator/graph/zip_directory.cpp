#include "simulator/graph/zip_directory.h"

#include <algorithm>
#include <fstream>

#include "simulator/support/errors.h"

namespace stickler {
namespace {

uint64_t little(const std::string& bytes, size_t at, size_t width) {
  uint64_t value = 0;
  for (size_t i = 0; i < width; ++i) {
    value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes.at(at + i))) << (8 * i);
  }
  return value;
}

std::string readAt(std::ifstream& in, uint64_t offset, uint64_t size) {
  std::string bytes(size, '\0');
  in.seekg(static_cast<std::streamoff>(offset));
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<uint64_t>(in.gcount()) != size) bytes.clear();
  return bytes;
}

}  // namespace

std::vector<ZipEntry> readZipDirectory(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw UserError(path + ": cannot be read");
  const auto file_size = static_cast<uint64_t>(in.tellg());
  const auto corrupt = [&](const std::string& why) {
    return UserError(path + ": truncated or corrupt zip archive (" + why + ")");
  };
  // The end-of-directory record: 22 bytes and a comment of up to 65,535.
  const uint64_t tail_size = std::min<uint64_t>(file_size, 22 + 65535);
  const std::string tail = readAt(in, file_size - tail_size, tail_size);
  size_t end = std::string::npos;
  for (size_t i = tail.size() >= 22 ? tail.size() - 22 + 1 : 0; i-- > 0;) {
    if (tail.compare(i, 4, "PK\x05\x06") == 0) {
      end = i;
      break;
    }
  }
  if (end == std::string::npos) throw corrupt("no end of central directory");
  uint64_t count = little(tail, end + 10, 2);
  uint64_t directory_size = little(tail, end + 12, 4);
  uint64_t directory_offset = little(tail, end + 16, 4);
  if (count == 0xFFFF || directory_size == 0xFFFFFFFF || directory_offset == 0xFFFFFFFF) {
    // ZIP64: a locator just before the record points at the 64-bit record.
    if (end < 20 || tail.compare(end - 20, 4, "PK\x06\x07") != 0) {
      throw corrupt("no ZIP64 locator");
    }
    const uint64_t record_offset = little(tail, end - 20 + 8, 8);
    const std::string record = readAt(in, record_offset, 56);
    if (record.size() != 56 || record.compare(0, 4, "PK\x06\x06") != 0) {
      throw corrupt("no ZIP64 end of central directory");
    }
    count = little(record, 32, 8);
    directory_size = little(record, 40, 8);
    directory_offset = little(record, 48, 8);
  }
  if (directory_offset > file_size || directory_size > file_size - directory_offset) {
    throw corrupt("the central directory lies beyond the end of the file");
  }
  const std::string directory = readAt(in, directory_offset, directory_size);
  if (directory.size() != directory_size) throw corrupt("short central directory");

  std::vector<ZipEntry> entries;
  size_t at = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (at + 46 > directory.size() || directory.compare(at, 4, "PK\x01\x02") != 0) {
      throw corrupt("central directory entry " + std::to_string(i) + " is damaged");
    }
    ZipEntry entry;
    entry.method = static_cast<uint16_t>(little(directory, at + 10, 2));
    entry.compressed = little(directory, at + 20, 4);
    entry.uncompressed = little(directory, at + 24, 4);
    entry.header_offset = little(directory, at + 42, 4);
    const size_t name_length = little(directory, at + 28, 2);
    const size_t extra_length = little(directory, at + 30, 2);
    const size_t comment_length = little(directory, at + 32, 2);
    if (at + 46 + name_length + extra_length + comment_length > directory.size()) {
      throw corrupt("central directory entry " + std::to_string(i) + " runs past the directory");
    }
    entry.name = directory.substr(at + 46, name_length);
    // 32-bit sizes and offsets of 0xFFFFFFFF are in the ZIP64 extra field, in this order.
    const size_t extra_end = at + 46 + name_length + extra_length;
    for (size_t extra = at + 46 + name_length; extra + 4 <= extra_end;) {
      const uint64_t id = little(directory, extra, 2);
      const size_t size = little(directory, extra + 2, 2);
      if (extra + 4 + size > extra_end) {
        throw corrupt("central directory entry " + std::to_string(i) +
                      " has a damaged extra field");
      }
      if (id == 0x0001) {
        size_t field = extra + 4;
        if (entry.uncompressed == 0xFFFFFFFF && field + 8 <= extra + 4 + size) {
          entry.uncompressed = little(directory, field, 8);
          field += 8;
        }
        if (entry.compressed == 0xFFFFFFFF && field + 8 <= extra + 4 + size) {
          entry.compressed = little(directory, field, 8);
          field += 8;
        }
        if (entry.header_offset == 0xFFFFFFFF && field + 8 <= extra + 4 + size) {
          entry.header_offset = little(directory, field, 8);
        }
      }
      extra += 4 + size;
    }
    entries.push_back(std::move(entry));
    at += 46 + name_length + extra_length + comment_length;
  }
  return entries;
}

void checkZipSizes(const std::vector<ZipEntry>& entries, const std::string& path) {
  for (const ZipEntry& entry : entries) {
    if (entry.method == 0 && entry.uncompressed != entry.compressed) {
      throw UserError(path + ": corrupt archive (entry " + entry.name + " is stored, yet says " +
                      std::to_string(entry.compressed) + " bytes hold " +
                      std::to_string(entry.uncompressed) + ")");
    }
    const uint64_t bound = std::max(entry.compressed * kMaxInflation, kInflationFloor);
    if (entry.uncompressed > bound) {
      throw UserError(path + ": entry " + entry.name + " would inflate from " +
                      std::to_string(entry.compressed) + " to " +
                      std::to_string(entry.uncompressed) + " bytes (more than " +
                      std::to_string(kMaxInflation) +
                      "x): refused as a zip bomb; torch.jit.save stores entries uncompressed");
    }
  }
}

bool isTensorRecord(const std::string& name) {
  const size_t slash = name.rfind('/');
  if (slash == std::string::npos || slash + 1 == name.size()) return false;
  for (size_t i = slash + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return false;
  }
  const std::string directory = name.substr(0, slash);
  const auto endsWith = [&](const std::string& suffix) {
    return directory.size() >= suffix.size() &&
           directory.compare(directory.size() - suffix.size(), suffix.size(), suffix) == 0 &&
           (directory.size() == suffix.size() ||
            directory[directory.size() - suffix.size() - 1] == '/');
  };
  return endsWith("data") || endsWith("constants");
}

bool isMappableRecord(const ZipEntry& entry) {
  return entry.method == 0 && entry.uncompressed >= kSmallestMappedRecord &&
         isTensorRecord(entry.name);
}

}  // namespace stickler
