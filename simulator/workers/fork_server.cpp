#include "simulator/workers/fork_server.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "simulator/support/blas_threads.h"
#include "simulator/workers/passed_descriptors.h"
#include "simulator/workers/worker_main.h"
#include "simulator/workers/worker_process.h"

extern char** environ;

namespace stickler {
namespace {

// A request is one datagram: the label, the working directory and the environment, each ended
// by a NUL, with the worker's three descriptors attached. Larger environments than this are
// rare enough to be exec'd instead.
constexpr size_t kMaxRequest = size_t{96} * 1024;
constexpr int kRequestFds = 3;  // output, channel, progress

constexpr int kForkServerFd = 3;
constexpr int kMaxServerStarts = 4;
// How long the fork server may take to start (an exec of the binary: about a second) and to
// make a worker (a fork: milliseconds), with room for a machine under load.
constexpr int kStartTimeoutMs = 60'000;
constexpr int kForkTimeoutMs = 5'000;

std::mutex server_mutex;
int server_socket = -1;  // this process's end; -1 when no fork server serves it
pid_t server_pid = -1;
int servers_started = 0;
bool server_ready = false;  // it said it is ready (its start is an exec: it may still be starting)

// In the new worker: its descriptors where worker_process.h says, everything else closed, the
// asker's directory and environment; then the worker's loop. Never returns.
[[noreturn]] void becomeWorker(const std::string& label, const std::string& directory,
                               std::vector<std::string>& environment, const int fds[kRequestFds]) {
  int moved[kRequestFds];
  for (int i = 0; i < kRequestFds; ++i) {
    // Above the numbers they are dup2'd onto, so no dup2 overwrites one a later one reads.
    moved[i] = ::fcntl(fds[i], F_DUPFD, 10);
    if (moved[i] < 0) ::_exit(127);
  }
  const int null = ::open("/dev/null", O_RDONLY);
  if (null < 0 || ::dup2(null, STDIN_FILENO) < 0 || ::dup2(moved[0], STDOUT_FILENO) < 0 ||
      ::dup2(moved[0], STDERR_FILENO) < 0 || ::dup2(moved[1], kWorkerChannelFd) < 0 ||
      ::dup2(moved[2], kWorkerProgressFd) < 0) {
    ::_exit(127);
  }
  ::close_range(kWorkerProgressFd + 1, ~0U, 0);
  if (::chdir(directory.c_str()) != 0) {
    std::fprintf(stderr, "stickler worker: cannot enter %s: %s\n", directory.c_str(),
                 std::strerror(errno));
    ::_exit(127);
  }
  static std::vector<char*> entries;
  entries.clear();
  entries.reserve(environment.size() + 1);
  for (std::string& entry : environment) entries.push_back(entry.data());
  entries.push_back(nullptr);
  environ = entries.data();
  const int status = serveAsWorker(label);
  std::fflush(nullptr);
  ::_exit(status);
}

// Splits a request's text into its NUL-ended fields.
std::vector<std::string> fieldsOf(const char* data, size_t size) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] != '\0') continue;
    fields.emplace_back(data + start, i - start);
    start = i + 1;
  }
  return fields;
}

// Whether this process has one thread: the only kind a fork copies whole (no lock held by a
// thread the copy lacks).
bool singleThreaded() {
  int threads = 0;
  if (DIR* tasks = ::opendir("/proc/self/task")) {
    while (const dirent* entry = ::readdir(tasks)) threads += entry->d_name[0] != '.';
    ::closedir(tasks);
  }
  return threads == 1;
}

// The fork server's loop: one worker per request, until the process it serves closes its end.
[[noreturn]] void serveForks(int socket) {
  std::vector<char> buffer(kMaxRequest);
  while (true) {
    DescriptorMessage message(buffer.data(), buffer.size(), kRequestFds);
    const ssize_t got = ::recvmsg(socket, message.header(), MSG_CMSG_CLOEXEC);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) ::_exit(0);  // the process it serves is gone

    const std::vector<int> fds = passedDescriptors(*message.header());
    std::vector<std::string> fields = fieldsOf(buffer.data(), static_cast<size_t>(got));
    int64_t answer;
    if (fds.size() != kRequestFds || fields.size() < 2 ||
        (message.header()->msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
      answer = -EINVAL;
    } else if (!singleThreaded()) {
      answer = -EDEADLK;  // checked at every fork, not only at the start: the asker execs instead
    } else {
      // The new process is the asker's child, a sibling of this one (fork_server.h). glibc's
      // fork() cannot ask for that, so this is the system call itself: no atfork handlers run
      // (with one thread and no pools here, they have nothing to do), and glibc's cached thread
      // id in the child stays this process's, which nothing here compares with the kernel's
      // (raise() and abort() ask the kernel for it).
      const long pid = ::syscall(SYS_clone, CLONE_PARENT | SIGCHLD, 0, 0, 0, 0);
      if (pid == 0) {
        ::close(socket);
        const std::string label = fields[0], directory = fields[1];
        std::vector<std::string> environment(fields.begin() + 2, fields.end());
        becomeWorker(label, directory, environment, fds.data());
      }
      answer = pid > 0 ? pid : -errno;
    }
    for (int fd : fds) ::close(fd);
    while (::send(socket, &answer, sizeof answer, MSG_NOSIGNAL) < 0 && errno == EINTR) {
    }
  }
}

// The fork server's next answer (a worker's pid, or 0 when it is ready), waiting at most
// `timeout_ms`: a fork server that does not answer is treated as gone, never waited for.
bool receiveAnswer(int64_t& answer, int timeout_ms) {
  pollfd ready{server_socket, POLLIN, 0};
  int polled;
  while ((polled = ::poll(&ready, 1, timeout_ms)) < 0 && errno == EINTR) {
  }
  if (polled <= 0) return false;
  ssize_t got;
  while ((got = ::recv(server_socket, &answer, sizeof answer, MSG_DONTWAIT)) < 0 &&
         errno == EINTR) {
  }
  return got == static_cast<ssize_t>(sizeof answer);
}

// Ends the fork server this process talks to, gone or not (killed first if it is alive but broke
// the protocol), and reaps it. Called with server_mutex held.
void reapForkServer() {
  ::close(server_socket);
  server_socket = -1;
  if (::waitpid(server_pid, nullptr, WNOHANG) == 0) {
    ::kill(server_pid, SIGKILL);
    ::waitpid(server_pid, nullptr, 0);
  }
}

// Starts the fork server without waiting for it; false when the system refuses. Called with
// server_mutex held.
bool spawnForkServer() {
  int ends[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ends) != 0) return false;
  try {
    ends[1] = raised(ends[1]);
    server_pid = spawnThisBinary({kForkServerModeArgument}, {{ends[1], kForkServerFd}});
  } catch (const std::exception&) {
    ::close(ends[0]);
    ::close(ends[1]);
    return false;
  }
  ::close(ends[1]);
  server_socket = ends[0];
  server_ready = false;
  ++servers_started;
  return true;
}

// Waits until the fork server started is ready; false when it does not serve (then none is
// started again). Called with server_mutex held.
bool awaitForkServer() {
  if (server_ready) return true;
  int64_t ready = -1;
  if (receiveAnswer(ready, kStartTimeoutMs) && ready == 0) return server_ready = true;
  reapForkServer();
  servers_started = kMaxServerStarts;
  return false;
}

bool forkServerWanted() {
  const char* wanted = std::getenv("STICKLER_FORK_SERVER");
  return wanted == nullptr || std::strcmp(wanted, "0") != 0;
}

}  // namespace

int serveForkRequests() {
  ::prctl(PR_SET_NAME, "stickler-forks");
  stopBlasThreads();  // the threads OpenBLAS started when it was loaded
  if (!singleThreaded()) return 3;
  const int64_t ready = 0;
  if (::send(kForkServerFd, &ready, sizeof ready, MSG_NOSIGNAL) != sizeof ready) return 3;
  serveForks(kForkServerFd);
}

std::optional<pid_t> forkWorker(const std::string& label, int output_fd, int channel_fd,
                                int progress_fd) {
  if (!forkServerWanted()) return std::nullopt;
  std::string request = label + '\0';
  char directory[4096];
  if (::getcwd(directory, sizeof directory) == nullptr) return std::nullopt;
  request += std::string(directory) + '\0';
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
    request += *entry;
    request += '\0';
  }
  if (request.size() > kMaxRequest) return std::nullopt;

  DescriptorMessage message(request.data(), request.size(), {output_fd, channel_fd, progress_fd});

  std::lock_guard<std::mutex> lock(server_mutex);
  for (int attempt = 0; attempt < 2; ++attempt) {
    // Started again after it died (killed for memory, say), but not forever: a fork server that
    // keeps dying leaves workers to exec.
    if (server_socket < 0 && (servers_started >= kMaxServerStarts || !spawnForkServer())) {
      return std::nullopt;
    }
    if (!awaitForkServer()) return std::nullopt;
    ssize_t sent;
    while ((sent = ::sendmsg(server_socket, message.header(), MSG_NOSIGNAL)) < 0 &&
           errno == EINTR) {
    }
    if (sent < 0 && errno == EMSGSIZE) return std::nullopt;
    if (sent < 0) {  // it died before this request: another gets it
      reapForkServer();
      continue;
    }
    int64_t answer = 0;
    if (!receiveAnswer(answer, kForkTimeoutMs)) {
      // It died with the request, or stopped answering: a worker it may have made holds these
      // descriptors, so they are not given to another.
      reapForkServer();
      throw std::runtime_error("the fork server ended or stopped answering while it made a worker");
    }
    if (answer <= 0) return std::nullopt;  // it could not fork: exec instead
    return static_cast<pid_t>(answer);
  }
  return std::nullopt;
}

void startForkServerAhead() {
  if (!forkServerWanted()) return;
  std::lock_guard<std::mutex> lock(server_mutex);
  if (server_socket >= 0) {
    if (::waitpid(server_pid, nullptr, WNOHANG) == 0) return;  // alive, or still starting
    ::close(server_socket);  // gone: replaced now rather than at the next worker
    server_socket = -1;
  }
  if (servers_started < kMaxServerStarts) spawnForkServer();
}

}  // namespace stickler
