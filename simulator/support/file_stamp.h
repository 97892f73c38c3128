#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace stickler {

// What a regular file looked like at one stat(2): its times to the nanosecond, size, device and
// inode. A process that keeps what it made of a file (a parsed profile, a catalog entry, an
// archive's hash) uses it again only while a fresh stamp equals the one taken before it read.
struct FileStamp {
  int64_t modified_ns = 0;
  int64_t changed_ns = 0;
  int64_t size = 0;
  uint64_t device = 0;
  uint64_t inode = 0;
  // When the stamp was taken; not part of what the file looked like.
  int64_t taken_ns = 0;

  bool operator==(const FileStamp& other) const {
    return modified_ns == other.modified_ns && changed_ns == other.changed_ns &&
           size == other.size && device == other.device && inode == other.inode;
  }
  // The file's part as text ("device:inode:size:modified:changed"), for keys kept on disk.
  std::string text() const;
};

// The stamp of `path`, or nothing when it is not a regular file or cannot be stat'ed.
std::optional<FileStamp> stampOf(const std::string& path);

// Whether the file had been unwritten for two seconds when it was stamped. A file's times advance
// by the kernel's clock tick, not by the nanosecond, so a file written within the last tick may
// be written again without its stamp changing: what was made of it may be kept only once it is
// settled, as git treats a "racily clean" file.
bool settled(const FileStamp& stamp);

}  // namespace stickler
