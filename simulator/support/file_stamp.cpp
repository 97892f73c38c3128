#include "simulator/support/file_stamp.h"

#include <sys/stat.h>
#include <time.h>

namespace stickler {
namespace {

constexpr int64_t kSettledNanoseconds = int64_t{2} * 1000 * 1000 * 1000;

int64_t nanoseconds(const timespec& time) {
  return static_cast<int64_t>(time.tv_sec) * 1000 * 1000 * 1000 + time.tv_nsec;
}

}  // namespace

std::string FileStamp::text() const {
  return std::to_string(device) + ":" + std::to_string(inode) + ":" + std::to_string(size) + ":" +
         std::to_string(modified_ns) + ":" + std::to_string(changed_ns);
}

std::optional<FileStamp> stampOf(const std::string& path) {
  timespec now{};
  ::clock_gettime(CLOCK_REALTIME, &now);
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0 || !S_ISREG(info.st_mode)) return std::nullopt;
  return FileStamp{nanoseconds(info.st_mtim),          nanoseconds(info.st_ctim),
                   static_cast<int64_t>(info.st_size), static_cast<uint64_t>(info.st_dev),
                   static_cast<uint64_t>(info.st_ino), nanoseconds(now)};
}

// The modification time alone: a write sets it to the current tick, so a stamp whose
// modification time is older is changed by any later write (a time set back by utimensat
// included), whatever its change time says.
bool settled(const FileStamp& stamp) {
  return stamp.taken_ns - stamp.modified_ns > kSettledNanoseconds;
}

}  // namespace stickler
