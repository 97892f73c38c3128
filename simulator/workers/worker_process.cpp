#include "simulator/workers/worker_process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "simulator/support/phase_times.h"
#include "simulator/workers/fork_server.h"

extern char** environ;

namespace stickler {
namespace {

using Clock = std::chrono::steady_clock;

// How much of what a worker prints a caller keeps: the end of it, where an assertion is.
constexpr size_t kStderrKept = size_t{64} * 1024;

std::runtime_error systemError(const std::string& what) {
  return std::runtime_error(what + ": " + std::strerror(errno));
}

void keepTail(std::string& text) {
  if (text.size() > 2 * kStderrKept) text.erase(0, text.size() - kStderrKept);
}

std::string secondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

std::string signalName(int signal) {
  const char* name = ::strsignal(signal);
  return name ? name : "signal " + std::to_string(signal);
}

}  // namespace

int raised(int fd) {
  if (fd > kWorkerProgressFd) return fd;
  const int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, 10);
  if (moved < 0) throw systemError("fcntl");
  ::close(fd);
  return moved;
}

std::string jobOutcomeName(JobOutcome::Kind kind) {
  switch (kind) {
    case JobOutcome::Kind::kCompleted:
      return "completed";
    case JobOutcome::Kind::kCrashed:
      return "crashed";
    case JobOutcome::Kind::kTimedOut:
      return "timed_out";
    case JobOutcome::Kind::kCancelled:
      return "cancelled";
    case JobOutcome::Kind::kFailed:
      return "failed";
  }
  return "failed";
}

WorkerProcess::WorkerProcess(const std::string& label) : label_(label) {
  int channel[2] = {-1, -1};
  int err[2] = {-1, -1};
  int progress_fd = -1;
  auto cleanUp = [&] {
    for (int fd : {channel[0], channel[1], err[0], err[1], progress_fd}) {
      if (fd >= 0) ::close(fd);
    }
    if (progress_) ::munmap(progress_, sizeof(WorkerProgress));
    progress_ = nullptr;
  };
  try {
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, channel) != 0) {
      throw systemError("socketpair for a worker");
    }
    if (::pipe2(err, O_CLOEXEC) != 0) throw systemError("pipe for a worker");
    progress_fd = ::memfd_create("stickler-progress", MFD_CLOEXEC);
    if (progress_fd < 0) throw systemError("memfd_create for a worker");
    if (::ftruncate(progress_fd, sizeof(WorkerProgress)) != 0) throw systemError("ftruncate");
    void* shared =
        ::mmap(nullptr, sizeof(WorkerProgress), PROT_READ | PROT_WRITE, MAP_SHARED, progress_fd, 0);
    if (shared == MAP_FAILED) throw systemError("mmap for a worker's progress");
    progress_ = new (shared) WorkerProgress();
    channel[1] = raised(channel[1]);
    err[1] = raised(err[1]);
    progress_fd = raised(progress_fd);

    if (const auto forked = forkWorker(label_, err[1], channel[1], progress_fd)) {
      pid_ = *forked;
    } else {
      pid_ = spawnThisBinary({kWorkerModeArgument, label_}, {{err[1], STDOUT_FILENO},
                                                             {err[1], STDERR_FILENO},
                                                             {channel[1], kWorkerChannelFd},
                                                             {progress_fd, kWorkerProgressFd}});
    }
  } catch (...) {
    cleanUp();
    throw;
  }
  ::close(channel[1]);
  ::close(err[1]);
  ::close(progress_fd);
  channel_ = channel[0];
  stderr_ = err[0];
  ::fcntl(stderr_, F_SETFL, ::fcntl(stderr_, F_GETFL) | O_NONBLOCK);
}

pid_t spawnThisBinary(const std::vector<std::string>& arguments,
                      const std::vector<std::pair<int, int>>& descriptors) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  int highest = STDERR_FILENO;
  for (int standard : {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO}) {
    const bool given = std::any_of(descriptors.begin(), descriptors.end(),
                                   [&](const auto& fd) { return fd.second == standard; });
    if (!given) {
      posix_spawn_file_actions_addopen(&actions, standard, "/dev/null",
                                       standard == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0);
    }
  }
  for (const auto& [from, to] : descriptors) {
    posix_spawn_file_actions_adddup2(&actions, from, to);
    highest = std::max(highest, to);
  }
  // Whatever this process opened without O_CLOEXEC (a library's descriptor) stays here too.
  posix_spawn_file_actions_addclosefrom_np(&actions, highest + 1);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int signal : kWorkerDefaultSignals) sigaddset(&defaults, signal);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &defaults);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  std::vector<std::string> words = {"stickler"};
  words.insert(words.end(), arguments.begin(), arguments.end());
  std::vector<char*> argv;
  argv.reserve(words.size() + 1);
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  pid_t pid = -1;
  const int spawned =
      ::posix_spawn(&pid, "/proc/self/exe", &actions, &attributes, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (spawned != 0) {
    errno = spawned;
    throw systemError("starting a process of this binary");
  }
  return pid;
}

WorkerProcess::~WorkerProcess() {
  kill();
  if (stderr_ >= 0) ::close(stderr_);
  if (progress_) ::munmap(progress_, sizeof(WorkerProgress));
}

// Ends the worker. Its stderr stays open until this object goes, so that what it printed last
// can still be read.
void WorkerProcess::kill() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    reap(/*wait=*/true);
  }
  if (channel_ >= 0) ::close(channel_);
  channel_ = -1;
  pid_ = -1;
}

bool WorkerProcess::checkAlive() {
  if (pid_ > 0 && reap(/*wait=*/false) >= 0) kill();
  return alive();
}

int WorkerProcess::reap(bool wait) {
  if (pid_ <= 0) return -1;
  int status = 0;
  while (true) {
    const pid_t got = ::waitpid(pid_, &status, wait ? 0 : WNOHANG);
    if (got == pid_) {
      pid_ = -1;
      return status;
    }
    if (got == 0) return -1;
    if (errno == EINTR) continue;
    pid_ = -1;  // ECHILD: someone else reaped it
    return 0;
  }
}

// A worker's phases, printed by the command that started it: where a gate check or a model
// host spends its time is most of a command's. Lines are whole when a worker prints them (one
// write each), so those that begin in the new text are passed on, tagged with the worker.
void WorkerProcess::forwardPhases(const std::string& text, size_t from) const {
  static const std::string kPrefix = "stickler phase";
  size_t start = text.rfind('\n', from == 0 ? 0 : from - 1);
  start = start == std::string::npos || from == 0 ? 0 : start + 1;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) return;
    if (end >= from && text.compare(start, kPrefix.size(), kPrefix) == 0) {
      std::fprintf(stderr, "%s [%s]\n", text.substr(start, end - start).c_str(), label_.c_str());
    }
    start = end + 1;
  }
}

void WorkerProcess::readStderr() {
  if (stderr_ < 0 || stderr_ended_) return;
  char buffer[1 << 16];
  while (true) {
    const ssize_t got = ::read(stderr_, buffer, sizeof buffer);
    if (got > 0) {
      const size_t before = stderr_text_.size();
      stderr_text_.append(buffer, static_cast<size_t>(got));
      if (phaseTimesWanted()) forwardPhases(stderr_text_, before);
      keepTail(stderr_text_);
      continue;
    }
    if (got < 0 && errno == EINTR) continue;
    if (got == 0) stderr_ended_ = true;
    // At the end (0), or nothing more for now (EAGAIN): once the worker is gone, what it wrote
    // is in the pipe already, and a process it started that still holds the pipe is not waited
    // for.
    return;
  }
}

JobOutcome WorkerProcess::run(const WireMessage& job, double timeout_seconds,
                              const std::atomic<bool>* cancelled) {
  JobOutcome outcome;
  const auto start = Clock::now();
  const auto deadline = start + std::chrono::duration<double>(timeout_seconds);
  auto finish = [&](JobOutcome::Kind kind, std::string message) {
    outcome.kind = kind;
    outcome.message = std::move(message);
    outcome.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (progress_) outcome.progress = snapshotOf(*progress_);
    readStderr();
    outcome.stderr_tail = stderr_text_.size() > kStderrKept
                              ? stderr_text_.substr(stderr_text_.size() - kStderrKept)
                              : stderr_text_;
    return outcome;
  };
  if (!alive()) return finish(JobOutcome::Kind::kFailed, "the worker process is gone");
  ++jobs_;
  readStderr();  // what it printed while idle (starting up) is not this job's
  stderr_text_.clear();
  progress_->reset();

  // The worker died: how, from its wait status.
  auto died = [&](int status) {
    const std::string what = label_.empty() ? "the worker" : "the worker (" + label_ + ")";
    kill();
    if (status >= 0 && WIFSIGNALED(status)) {
      outcome.signal = WTERMSIG(status);
      return finish(JobOutcome::Kind::kCrashed, what + " died of " + signalName(outcome.signal));
    }
    outcome.exit_status = status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : 0;
    return finish(
        JobOutcome::Kind::kCrashed,
        what + " exited with status " + std::to_string(outcome.exit_status) + " without a result");
  };
  // The worker's end closed: reap it, waiting a little for it to be gone.
  auto reapDead = [&] {
    for (int i = 0; i < 200; ++i) {
      const int status = reap(false);
      if (status >= 0) return status;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ::kill(pid_, SIGKILL);
    return reap(true);
  };
  auto stopped = [&]() -> std::optional<JobOutcome> {
    if (cancelled != nullptr && cancelled->load()) {
      kill();
      return finish(JobOutcome::Kind::kCancelled, "the job was cancelled");
    }
    if (Clock::now() >= deadline) {
      kill();
      return finish(JobOutcome::Kind::kTimedOut,
                    "the job did not finish within " + secondsText(timeout_seconds) + " s");
    }
    return std::nullopt;
  };
  auto waitMs = [&] {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    return static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left, 50)));
  };

  const std::string bytes = encodeMessage(job);
  // Most jobs fit the socket's buffer: sent at once, without waiting to be told there is room.
  ssize_t first = sendMessageBytes(channel_, bytes, 0, job.files, MSG_NOSIGNAL | MSG_DONTWAIT);
  size_t sent = first > 0 ? static_cast<size_t>(first) : 0;
  if (first < 0 && errno != EINTR && errno != EAGAIN) return died(reapDead());
  while (sent < bytes.size()) {
    if (auto done = stopped()) return *done;
    pollfd fds[2] = {{channel_, POLLOUT, 0}, {stderr_ended_ ? -1 : stderr_, POLLIN, 0}};
    if (::poll(fds, 2, waitMs()) < 0 && errno != EINTR) {
      kill();
      return finish(JobOutcome::Kind::kFailed, std::string("poll: ") + std::strerror(errno));
    }
    if (fds[1].revents & (POLLIN | POLLHUP)) readStderr();
    if (fds[0].revents & (POLLERR | POLLHUP)) return died(reapDead());
    if (!(fds[0].revents & POLLOUT)) continue;
    const ssize_t written =
        sendMessageBytes(channel_, bytes, sent, job.files, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (written > 0) {
      sent += static_cast<size_t>(written);
    } else if (written < 0 && errno != EINTR && errno != EAGAIN) {
      return died(reapDead());
    }
  }

  WireDecoder decoder;
  char buffer[1 << 16];
  // A job this worker's last one says is short is waited for by polling the channel, yielding
  // the core between tries, before sleeping in poll(2) (kShortJobSeconds). Bounded, so that a
  // long job, or one that is not what its predecessor was, costs at most that much of a core.
  const bool spin = last_job_seconds_ > 0 && last_job_seconds_ < kShortJobSeconds;
  const auto spin_until = Clock::now() + std::chrono::duration<double>(kShortJobSeconds);
  while (true) {
    if (auto done = stopped()) return *done;
    const bool spinning = spin && Clock::now() < spin_until;
    if (!spinning) {
      pollfd fds[2] = {{channel_, POLLIN, 0}, {stderr_ended_ ? -1 : stderr_, POLLIN, 0}};
      if (::poll(fds, 2, waitMs()) < 0 && errno != EINTR) {
        kill();
        return finish(JobOutcome::Kind::kFailed, std::string("poll: ") + std::strerror(errno));
      }
      if (fds[1].revents & (POLLIN | POLLHUP)) readStderr();
      if (!(fds[0].revents & (POLLIN | POLLHUP | POLLERR))) continue;
    }
    const ssize_t got = ::recv(channel_, buffer, sizeof buffer, MSG_DONTWAIT);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) {
      if (spinning) ::sched_yield();
      continue;
    }
    if (got <= 0) return died(reapDead());
    decoder.feed(buffer, static_cast<size_t>(got));
    std::optional<WireMessage> reply;
    try {
      reply = decoder.next();
    } catch (const WireError& e) {
      kill();
      return finish(JobOutcome::Kind::kFailed, e.what());
    }
    if (!reply) continue;
    last_job_seconds_ = std::chrono::duration<double>(Clock::now() - start).count();
    if (reply->header.value("ok", false)) {
      outcome.result.header = reply->header.value("result", nlohmann::json::object());
      outcome.result.blobs = std::move(reply->blobs);
      return finish(JobOutcome::Kind::kCompleted, "");
    }
    return finish(JobOutcome::Kind::kFailed, reply->header.value("error", "the job failed"));
  }
}

JobOutcome runInFreshWorker(const std::string& label, const WireMessage& job,
                            double timeout_seconds, const std::atomic<bool>* cancelled) {
  std::unique_ptr<WorkerProcess> worker;
  try {
    worker = std::make_unique<WorkerProcess>(label);
  } catch (const std::exception& e) {
    JobOutcome outcome;
    outcome.kind = JobOutcome::Kind::kFailed;
    outcome.message = e.what();
    return outcome;
  }
  return worker->run(job, timeout_seconds, cancelled);
}

}  // namespace stickler
