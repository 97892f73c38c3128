// A worker process: a fork of the fork server (fork_server.h), a single-threaded copy of this
// binary that runs nothing else, or else this binary again, started by exec (posix_spawn) in its
// worker mode; never a fork of the caller. A fork copies whatever locks the caller's other threads
// held at that moment (LibTorch's operator registry, its thread pool), and the child could wait on
// one forever; either way the worker starts clean. It inherits its channel, its progress block
// and a pipe for what it prints, and no other descriptor (listening sockets, SQLite, git stay
// here).
//
// A worker runs one job at a time and stays up between them: a model host serves many runs of
// its model (worker_pool.h). A job that crashes it, runs out of time or is cancelled ends it.
#pragma once

#include <sys/types.h>

#include <csignal>

#include <atomic>
#include <string>
#include <utility>
#include <vector>

#include "simulator/workers/job_outcome.h"

namespace stickler {

// The arguments that put the binary in worker mode: `<binary> __worker <label>`.
inline constexpr const char* kWorkerModeArgument = "__worker";
// The descriptors a worker finds its channel and its progress block on.
inline constexpr int kWorkerChannelFd = 3;
inline constexpr int kWorkerProgressFd = 4;
// The signals a worker starts with at their default actions, whatever the caller did with them.
inline constexpr int kWorkerDefaultSignals[] = {SIGPIPE, SIGCHLD, SIGINT,  SIGTERM, SIGHUP,
                                                SIGALRM, SIGXCPU, SIGABRT, SIGSEGV};
// A job shorter than this is followed by waiting awake, not asleep, on both ends of the channel
// for at most as long: the caller for its result, the worker for its next job. Waking from a
// sleep costs tens of microseconds, a good part of a model host's run of a small model.
inline constexpr double kShortJobSeconds = 0.001;

class WorkerProcess {
 public:
  // Starts the worker; `label` shows in `ps` (a model host's model, say). Throws
  // std::runtime_error when the system cannot start a process.
  explicit WorkerProcess(const std::string& label);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  // Gives the worker `job` (its header names the kind) and waits for the result, at most
  // `timeout_seconds`, killing the worker at once when `cancelled` becomes true.
  JobOutcome run(const WireMessage& job, double timeout_seconds,
                 const std::atomic<bool>* cancelled = nullptr);

  bool alive() const { return pid_ > 0; }
  // alive(), after reaping the process if it died while idle (killed for memory, say).
  bool checkAlive();
  pid_t pid() const { return pid_; }
  const std::string& label() const { return label_; }
  size_t jobsRun() const { return jobs_; }

 private:
  void kill();
  int reap(bool wait);  // the wait status, once the process is gone; -1 while it runs
  void readStderr();    // what is in the pipe now, without waiting
  // Prints the phase lines `text` completes from `from` on, with STICKLER_PHASE_TIMES.
  void forwardPhases(const std::string& text, size_t from) const;

  std::string label_;
  pid_t pid_ = -1;
  int channel_ = -1;
  int stderr_ = -1;
  bool stderr_ended_ = false;
  WorkerProgress* progress_ = nullptr;
  std::string stderr_text_;  // what the current job printed (its end, when long)
  size_t jobs_ = 0;
  double last_job_seconds_ = 0;  // how long the last job took, to its result (0: none yet)
};

// Starts this binary (/proc/self/exe) again with `arguments`, its signals at their defaults and
// only the descriptors given as (this process's, the new one's) pairs; standard ones not given
// are /dev/null. Throws std::runtime_error when the system cannot start it.
pid_t spawnThisBinary(const std::vector<std::string>& arguments,
                      const std::vector<std::pair<int, int>>& descriptors);

// `fd`, or a close-on-exec copy of it above the descriptors a new process's are dup2'd onto (it
// is closed then), so that no dup2 of a spawn overwrites a descriptor a later one still reads.
int raised(int fd);

// `job` in a fresh worker that ends with it: a sandbox, a sweep's probe.
JobOutcome runInFreshWorker(const std::string& label, const WireMessage& job,
                            double timeout_seconds, const std::atomic<bool>* cancelled = nullptr);

}  // namespace stickler
