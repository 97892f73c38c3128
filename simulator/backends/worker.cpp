#include "simulator/backends/worker.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>

#include <ATen/Parallel.h>

namespace stickler {
namespace {

constexpr char kOk = 'O';
constexpr char kError = 'E';

void writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0) {
      if (errno == EINTR) continue;
      return;
    }
    data += written;
    size -= static_cast<size_t>(written);
  }
}

// Runs go on side by side (localization's probes, a server's concurrent calls), each forking
// from its own thread. Creating a run's pipes, forking and closing the parent's write ends
// happen under one lock, so that no sibling's fork copies a write end into a worker that would
// hold it open. The read ends of the runs in flight are listed under the same lock, and each
// new worker closes those of its siblings: it has no business with them.
std::mutex& forkMutex() {
  static std::mutex mutex;
  return mutex;
}
std::set<int>& readEndsInFlight() {  // guarded by forkMutex()
  static std::set<int> fds;
  return fds;
}

// Reads what is left in a pipe whose writer has exited, without waiting for a sibling's worker
// that might (before this lock existed, or through a descriptor passed on) still hold it open.
void drain(int fd, std::string& into) {
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  char buffer[1 << 16];
  while (true) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got > 0) {
      into.append(buffer, static_cast<size_t>(got));
    } else if (got < 0 && errno == EINTR) {
      continue;
    } else {
      return;
    }
  }
}

// The address space the worker inherited (its parent's models included), in bytes.
uint64_t inheritedAddressSpace() {
  unsigned long long pages = 0;
  if (FILE* statm = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(statm, "%llu", &pages) != 1) pages = 0;
    std::fclose(statm);
  }
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
}

void applyLimits(const WorkerLimits& limits) {
  if (limits.cpu_seconds > 0) {
    const auto seconds = static_cast<rlim_t>(limits.cpu_seconds) + 1;
    const rlimit cpu = {seconds, seconds + 1};  // SIGXCPU at the soft limit, SIGKILL after
    ::setrlimit(RLIMIT_CPU, &cpu);
  }
  if (limits.extra_address_bytes > 0) {
    const auto bytes = static_cast<rlim_t>(inheritedAddressSpace() + limits.extra_address_bytes);
    const rlimit address_space = {bytes, bytes};
    ::setrlimit(RLIMIT_AS, &address_space);
  }
}

[[noreturn]] void runChild(const std::function<std::string(WorkerProgress&)>& job,
                           WorkerProgress* progress, int out_fd, int err_fd,
                           const WorkerLimits& limits) {
  ::dup2(err_fd, STDERR_FILENO);
  applyLimits(limits);
  // OpenMP's thread pool does not survive fork(); one thread never touches it. A worker forked
  // from a worker already runs one thread, and must not set it again: set_num_threads reaches
  // LibTorch's pthreadpool, whose mutex another thread of the parent (a float64 check beside an
  // adapter's sandboxed condition) may have held at fork(), and the child would wait forever.
  if (at::get_num_threads() != 1) at::set_num_threads(1);
  std::string reply;
  try {
    reply = std::string(1, kOk) + job(*progress);
  } catch (const std::exception& e) {
    reply = std::string(1, kError) + e.what();
  } catch (...) {
    reply = std::string(1, kError) + "unknown exception";
  }
  // What observers of the run buffered in files (lockstep errors) reaches them; _exit alone
  // would drop it.
  std::fflush(nullptr);
  writeAll(out_fd, reply.data(), reply.size());
  ::_exit(0);
}

}  // namespace

WorkerOutcome runInWorker(const std::function<std::string(WorkerProgress& progress)>& job,
                          double timeout_seconds, const std::atomic<bool>* cancelled,
                          const WorkerLimits& limits) {
  void* shared = ::mmap(nullptr, sizeof(WorkerProgress), PROT_READ | PROT_WRITE,
                        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (shared == MAP_FAILED) throw std::runtime_error("mmap for the worker's progress failed");
  auto* progress = new (shared) WorkerProgress();
  int out_pipe[2], err_pipe[2];
  std::unique_lock<std::mutex> forking(forkMutex());
  if (::pipe(out_pipe) != 0) {
    ::munmap(shared, sizeof(WorkerProgress));
    throw std::runtime_error(std::string("pipe for the worker failed: ") + std::strerror(errno));
  }
  if (::pipe(err_pipe) != 0) {
    const int error = errno;
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    ::munmap(shared, sizeof(WorkerProgress));
    throw std::runtime_error(std::string("pipe for the worker failed: ") + std::strerror(error));
  }
  // Not fflush(nullptr): another thread may hold stdin's lock, waiting for input.
  std::fflush(stdout);
  std::fflush(stderr);
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int error = errno;
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1]}) ::close(fd);
    ::munmap(shared, sizeof(WorkerProgress));
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(error));
  }
  if (pid == 0) {
    // The lock is this process's copy, held by this thread: the list is as the fork found it.
    for (int fd : readEndsInFlight()) ::close(fd);
    readEndsInFlight().clear();
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    // A worker may start workers of its own (the review gate's worker runs the device in one):
    // its copy of the lock must be free for them.
    forking.unlock();
    runChild(job, progress, out_pipe[1], err_pipe[1], limits);
  }
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  readEndsInFlight().insert(out_pipe[0]);
  readEndsInFlight().insert(err_pipe[0]);
  forking.unlock();

  WorkerOutcome outcome;
  std::string reply;
  const auto deadline = start + std::chrono::duration<double>(timeout_seconds);
  bool out_open = true, err_open = true, timed_out = false, was_cancelled = false;
  char buffer[1 << 16];
  // The run is over when its worker exits, whatever else holds its pipes.
  bool exited = false;
  int status = 0;
  while (out_open || err_open) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      timed_out = true;
      break;
    }
    if (cancelled != nullptr && cancelled->load()) {
      was_cancelled = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0},
                     {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    // Wake up now and then to notice a cancellation.
    const int ready = ::poll(fds, 2, static_cast<int>(std::min<int64_t>(left, 50)));
    if (ready < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
      if (got > 0) {
        (i == 0 ? reply : outcome.stderr_text).append(buffer, static_cast<size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
    if ((out_open || err_open) && ::waitpid(pid, &status, WNOHANG) == pid) {
      exited = true;
      if (out_open) drain(out_pipe[0], reply);
      if (err_open) drain(err_pipe[0], outcome.stderr_text);
      break;
    }
  }
  if (!exited) {
    if (timed_out || was_cancelled) ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  {
    std::lock_guard<std::mutex> lock(forkMutex());
    readEndsInFlight().erase(out_pipe[0]);
    readEndsInFlight().erase(err_pipe[0]);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
  }
  outcome.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  outcome.node = progress->node.load();
  outcome.module_call = progress->module_call.load();
  outcome.last_entered = progress->last_entered.load();
  outcome.nodes_run = progress->nodes_run.load();
  ::munmap(shared, sizeof(WorkerProgress));

  if (was_cancelled) {
    outcome.status = WorkerOutcome::Status::kCancelled;
    outcome.message = "the device run was cancelled";
  } else if (timed_out) {
    outcome.status = WorkerOutcome::Status::kTimedOut;
    outcome.message =
        "the device run did not finish within " + std::to_string(timeout_seconds) + " s";
  } else if (WIFSIGNALED(status)) {
    outcome.status = WorkerOutcome::Status::kAborted;
    outcome.signal = WTERMSIG(status);
    outcome.message = std::string("the device process died of ") + ::strsignal(outcome.signal);
  } else if (!reply.empty() && reply[0] == kOk) {
    outcome.status = WorkerOutcome::Status::kCompleted;
    outcome.payload = reply.substr(1);
  } else {
    outcome.status = WorkerOutcome::Status::kFailed;
    outcome.message =
        reply.empty() ? "the device process exited without a result" : reply.substr(1);
  }
  return outcome;
}

}  // namespace stickler
