#include "simulator/support/new_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "simulator/support/errors.h"

namespace stickler {
namespace {

// Unnamed files made ahead of need, one per directory, by one thread started at the first
// save. Never destroyed: the thread may be inside open(2) when the process exits.
class SpareFiles {
 public:
  static SpareFiles& instance() {
    static auto* spares = new SpareFiles;
    return *spares;
  }

  // A spare made for `directory` (or -1), and a new one asked for in its place.
  int take(const std::string& directory) {
    const std::lock_guard<std::mutex> lock(mutex_);
    int fd = -1;
    if (auto found = ready_.find(directory); found != ready_.end()) {
      fd = found->second;
      ready_.erase(found);
    }
    wanted_.insert(directory);
    if (!started_) {
      std::thread([this] { makeSpares(); }).detach();
      started_ = true;
    }
    wake_.notify_one();
    return fd;
  }

 private:
  // A process writes into one or two workspaces; a spare per directory for the most recent few.
  static constexpr size_t kDirectoriesKept = 8;

  void makeSpares() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
      wake_.wait(lock, [this] { return !wanted_.empty(); });
      const std::string directory = *wanted_.begin();
      wanted_.erase(wanted_.begin());
      if (ready_.count(directory) != 0) continue;
      lock.unlock();
      const int fd = ::open(directory.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
      lock.lock();
      if (fd < 0) continue;  // asked again at the next save; that save makes its own
      if (ready_.size() >= kDirectoriesKept || ready_.count(directory) != 0) {
        ::close(fd);
        continue;
      }
      ready_.emplace(directory, fd);
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::map<std::string, int> ready_;
  std::set<std::string> wanted_;
  bool started_ = false;
};

bool writeAll(int fd, const std::string& text) {
  size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    written += static_cast<size_t>(n);
  }
  return true;
}

std::string inDirectory(const std::string& directory, const std::string& name) {
  return directory + "/" + name;
}

// Links the written file `from` (a path: the named temporary, or /proc/self/fd/N) under the
// first free name; the name, or nothing with errno set when a link fails for another reason.
std::optional<std::string> linkUnderFreeName(const std::string& from, const std::string& directory,
                                             const NameForAttempt& name_for, int attempts,
                                             int flags) {
  for (int attempt = 1; attempt <= attempts; ++attempt) {
    const std::string name = name_for(attempt);
    if (::linkat(AT_FDCWD, from.c_str(), AT_FDCWD, inDirectory(directory, name).c_str(), flags) ==
        0) {
      return name;
    }
    if (errno != EEXIST) return std::nullopt;
  }
  errno = EEXIST;
  return std::nullopt;
}

[[noreturn]] void cannotWrite(const std::string& directory, const NameForAttempt& name_for,
                              int error) {
  if (error == EEXIST) {
    throw UserError("cannot find a free name for " + inDirectory(directory, name_for(1)));
  }
  throw UserError("cannot write " + inDirectory(directory, name_for(1)) + ": " +
                  std::strerror(error));
}

}  // namespace

std::string writeNewFileThroughTemporary(const std::string& directory, const std::string& text,
                                         const NameForAttempt& name_for, int attempts) {
  // Unique per process and per write: two threads writing the same name must not share one.
  static std::atomic<unsigned long> writes{0};
  const std::string temporary =
      inDirectory(directory, "." + name_for(1) + "." + std::to_string(::getpid()) + "." +
                                 std::to_string(writes.fetch_add(1)) + ".tmp");
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) cannotWrite(directory, name_for, errno);
  const bool written = writeAll(fd, text);
  const int write_error = errno;
  ::close(fd);
  std::optional<std::string> name;
  if (written) name = linkUnderFreeName(temporary, directory, name_for, attempts, 0);
  const int link_error = errno;
  ::unlink(temporary.c_str());
  if (!written) cannotWrite(directory, name_for, write_error);
  if (!name) cannotWrite(directory, name_for, link_error);
  return *name;
}

std::string writeNewFile(const std::string& directory, const std::string& text,
                         const NameForAttempt& name_for, int attempts) {
  int fd = SpareFiles::instance().take(directory);
  if (fd < 0) fd = ::open(directory.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0) return writeNewFileThroughTemporary(directory, text, name_for, attempts);
  if (!writeAll(fd, text)) {
    const int error = errno;
    ::close(fd);
    cannotWrite(directory, name_for, error);
  }
  // An unnamed file is linked through its /proc entry: AT_EMPTY_PATH would need a capability.
  const std::optional<std::string> name = linkUnderFreeName(
      "/proc/self/fd/" + std::to_string(fd), directory, name_for, attempts, AT_SYMLINK_FOLLOW);
  const int error = errno;
  ::close(fd);
  if (name) return *name;
  if (error == EEXIST) cannotWrite(directory, name_for, error);
  // No /proc, or a spare left from a directory since moved to another file system.
  return writeNewFileThroughTemporary(directory, text, name_for, attempts);
}

}  // namespace stickler
