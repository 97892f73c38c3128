// Worker processes: what a job that returns, throws, aborts or hangs looks like to its caller; that
// a worker is a fresh process (from the fork server or exec'd, inheriting no descriptor); and model
// hosts kept by key.
#include "simulator/workers/worker_process.h"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "simulator/support/task_control.h"
#include "simulator/workers/fork_server.h"
#include "simulator/workers/job_registry.h"
#include "simulator/workers/syscall_filter.h"
#include "simulator/workers/worker_pool.h"
#include "simulator/workers/worker_wire.h"

namespace stickler {
namespace {

// The tests' own job kinds, registered before main() in this binary and so in its workers.
const bool registered = [] {
  registerJob("test.echo", [](const WireMessage& job, JobContext& context) {
    context.progress.node = job.header.value("node", -1);
    WireMessage reply;
    reply.header = {{"echo", job.header.value("text", "")}, {"pid", ::getpid()}};
    reply.blobs = job.blobs;
    return reply;
  });
  registerJob("test.abort", [](const WireMessage&, JobContext& context) -> WireMessage {
    context.progress.node = 42;
    context.progress.module_call = 3;
    std::fprintf(stderr, "vendor.cpp:12: Assertion `x' failed.\n");
    std::abort();
  });
  registerJob("test.throw", [](const WireMessage&, JobContext&) -> WireMessage {
    throw std::runtime_error("no memory");
  });
  registerJob("test.sleep", [](const WireMessage& job, JobContext&) {
    std::this_thread::sleep_for(std::chrono::duration<double>(job.header.value("seconds", 60.0)));
    return WireMessage{};
  });
  registerJob("test.chatty", [](const WireMessage&, JobContext&) {
    for (int i = 0; i < 20000; ++i) std::fprintf(stderr, "log line %d\n", i);
    WireMessage reply;
    reply.blobs.push_back(std::string(8 << 20, 'x'));
    return reply;
  });
  // What the worker's descriptors beyond its standard ones, its channel and progress point to.
  registerJob("test.descriptors", [](const WireMessage&, JobContext&) {
    nlohmann::json open = nlohmann::json::array();
    for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
      const int fd = std::stoi(entry.path().filename().string());
      std::error_code error;
      const auto target = std::filesystem::read_symlink(entry.path(), error);
      if (fd > kWorkerProgressFd && !error) open.push_back(target.string());
    }
    return WireMessage{{{"open", open}}, {}};
  });
  // What each file passed with the job is: its inode and its first bytes.
  registerJob("test.files", [](const WireMessage& job, JobContext&) {
    nlohmann::json files = nlohmann::json::array();
    for (const PassedFile& file : job.files) {
      struct stat status {};
      char start[16] = {};
      const ssize_t got = ::pread(file.fd(), start, sizeof start, 0);
      files.push_back({{"inode", ::fstat(file.fd(), &status) == 0 ? status.st_ino : 0},
                       {"start", std::string(start, got > 0 ? static_cast<size_t>(got) : 0)}});
    }
    return WireMessage{{{"files", files}}, {}};
  });
  // Installs the adapter sandbox's system-call filter, then tries what it must refuse and what
  // it must still allow; says which succeeded.
  registerJob("test.syscalls", [](const WireMessage&, JobContext&) {
    denySystemCallsForAdapterCode();
    nlohmann::json tried;
    auto refused = [](bool failed) { return failed && errno == EPERM; };
    const std::string scratch = "/tmp/stickler-sandbox-" + std::to_string(::getpid());
    tried["write a new file"] = refused(::open(scratch.c_str(), O_WRONLY | O_CREAT, 0600) < 0);
    tried["append to a file"] = refused(::open("/dev/null", O_WRONLY | O_APPEND) < 0);
    tried["make a directory"] = refused(::mkdir(scratch.c_str(), 0700) < 0);
    tried["remove a file"] = refused(::unlink("/tmp/nothing-here") < 0);
    tried["fork"] = refused(::fork() < 0);
    char* const argv[] = {const_cast<char*>("/bin/true"), nullptr};
    tried["exec"] = refused(::execv("/bin/true", argv) < 0);
    tried["open an inet socket"] = refused(::socket(AF_INET, SOCK_STREAM, 0) < 0);
    tried["open a unix socket"] = refused(::socket(AF_UNIX, SOCK_STREAM, 0) < 0);
    tried["signal its caller"] = refused(::kill(::getppid(), 0) < 0);
    // Still allowed: reading, writing what it holds, threads.
    const int read_only = ::open("/proc/self/status", O_RDONLY);
    tried["read a file"] = read_only >= 0;
    if (read_only >= 0) ::close(read_only);
    tried["write to stderr"] = ::write(STDERR_FILENO, "sandboxed\n", 10) == 10;
    bool ran = false;
    std::thread([&ran] { ran = true; }).join();
    tried["start a thread"] = ran;
    return WireMessage{{{"tried", tried}}, {}};
  });
  // Who the worker is: its parent, whether it was exec'd, its directory and one variable.
  registerJob("test.identity", [](const WireMessage&, JobContext&) {
    std::ifstream file("/proc/self/cmdline");
    const std::string command_line((std::istreambuf_iterator<char>(file)), {});
    const char* mark = std::getenv("STICKLER_TEST_MARK");
    return WireMessage{{{"parent", ::getppid()},
                        {"exec", command_line.find(kWorkerModeArgument) != std::string::npos},
                        {"directory", std::filesystem::current_path().string()},
                        {"mark", mark ? mark : ""}},
                       {}};
  });
  return true;
}();

WireMessage job(const std::string& kind, nlohmann::json fields = nlohmann::json::object()) {
  fields["kind"] = kind;
  return {fields, {}};
}

TEST(Worker, ReturnsWhatTheJobReturns) {
  WireMessage echo = job("test.echo", {{"text", "hello"}, {"node", 7}});
  echo.blobs.push_back(std::string("bytes\0with a nul", 16));
  const JobOutcome outcome = runInFreshWorker("test", echo, 60);
  ASSERT_EQ(outcome.kind, JobOutcome::Kind::kCompleted) << outcome.message;
  EXPECT_EQ(outcome.result.header.value("echo", ""), "hello");
  ASSERT_EQ(outcome.result.blobs.size(), 1u);
  EXPECT_EQ(outcome.result.blobs[0], std::string("bytes\0with a nul", 16));
  EXPECT_EQ(outcome.progress.node, 7);
  EXPECT_NE(outcome.result.header.value("pid", 0), ::getpid());
}

TEST(Worker, AnAbortIsAResultWithWhereItHappened) {
  const JobOutcome outcome = runInFreshWorker("test", job("test.abort"), 60);
  EXPECT_EQ(outcome.kind, JobOutcome::Kind::kCrashed);
  EXPECT_EQ(outcome.signal, SIGABRT);
  EXPECT_EQ(outcome.progress.node, 42);
  EXPECT_EQ(outcome.progress.module_call, 3);
  EXPECT_NE(outcome.stderr_tail.find("Assertion `x' failed"), std::string::npos);
}

TEST(Worker, AnExceptionIsAFailureAndTheWorkerStaysUp) {
  WorkerProcess worker("test");
  const JobOutcome failed = worker.run(job("test.throw"), 60);
  EXPECT_EQ(failed.kind, JobOutcome::Kind::kFailed);
  EXPECT_EQ(failed.message, "no memory");
  EXPECT_TRUE(worker.alive());
  const JobOutcome next = worker.run(job("test.echo", {{"text", "still here"}}), 60);
  ASSERT_EQ(next.kind, JobOutcome::Kind::kCompleted) << next.message;
  EXPECT_EQ(next.result.header.value("echo", ""), "still here");
}

// After short jobs both ends wait for each other awake (kShortJobSeconds): what comes next,
// back to back, is still read whole and told apart: large results, an abort, an exception, a
// cancellation.
TEST(Worker, BackToBackJobsAfterShortOnesAreEachTheirOwn) {
  WorkerProcess worker("test");
  for (int i = 0; i < 200; ++i) {
    const JobOutcome echoed = worker.run(job("test.echo", {{"text", std::to_string(i)}}), 60);
    ASSERT_EQ(echoed.kind, JobOutcome::Kind::kCompleted) << echoed.message;
    ASSERT_EQ(echoed.result.header.value("echo", ""), std::to_string(i));
  }
  WireMessage large = job("test.echo", {{"text", "large"}});
  large.blobs.push_back(std::string(3 << 20, 'y'));  // read in many pieces
  const JobOutcome echoed = worker.run(large, 60);
  ASSERT_EQ(echoed.kind, JobOutcome::Kind::kCompleted) << echoed.message;
  ASSERT_EQ(echoed.result.blobs.size(), 1u);
  EXPECT_EQ(echoed.result.blobs[0], std::string(3 << 20, 'y'));
  worker.run(job("test.echo"), 60);
  EXPECT_EQ(worker.run(job("test.throw"), 60).kind, JobOutcome::Kind::kFailed);
  worker.run(job("test.echo"), 60);
  std::atomic<bool> cancelled{true};
  EXPECT_EQ(worker.run(job("test.sleep"), 60, &cancelled).kind, JobOutcome::Kind::kCancelled);
  EXPECT_FALSE(worker.alive());

  WorkerProcess second("test");
  second.run(job("test.echo"), 60);
  const JobOutcome aborted = second.run(job("test.abort"), 60);
  EXPECT_EQ(aborted.kind, JobOutcome::Kind::kCrashed);
  EXPECT_EQ(aborted.signal, SIGABRT);
  EXPECT_EQ(aborted.progress.node, 42);
}

TEST(Worker, AnUnknownKindIsAFailure) {
  const JobOutcome outcome = runInFreshWorker("test", job("no.such.kind"), 60);
  EXPECT_EQ(outcome.kind, JobOutcome::Kind::kFailed);
  EXPECT_NE(outcome.message.find("no job kind 'no.such.kind'"), std::string::npos);
}

TEST(Worker, AHangIsKilledAtTheTimeout) {
  WorkerProcess worker("test");
  const JobOutcome outcome = worker.run(job("test.sleep"), 1.0);
  EXPECT_EQ(outcome.kind, JobOutcome::Kind::kTimedOut);
  EXPECT_LT(outcome.seconds, 30.0);
  EXPECT_FALSE(worker.alive());
  EXPECT_EQ(worker.run(job("test.echo"), 60).kind, JobOutcome::Kind::kFailed);
}

TEST(Worker, LargeResultsAndLogsDoNotDeadlock) {
  const JobOutcome outcome = runInFreshWorker("test", job("test.chatty"), 120);
  ASSERT_EQ(outcome.kind, JobOutcome::Kind::kCompleted) << outcome.message;
  ASSERT_EQ(outcome.result.blobs.size(), 1u);
  EXPECT_EQ(outcome.result.blobs[0].size(), size_t{8} << 20);
  EXPECT_NE(outcome.stderr_tail.find("log line 19999"), std::string::npos);
}

TEST(Worker, ACancelledRunIsKilledAtOnce) {
  std::atomic<bool> cancelled{false};
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    cancelled = true;
  });
  const JobOutcome outcome = runInFreshWorker("test", job("test.sleep"), 60, &cancelled);
  canceller.join();
  EXPECT_EQ(outcome.kind, JobOutcome::Kind::kCancelled);
  EXPECT_LT(outcome.seconds, 10.0);
}

// A worker starts clean: it holds none of the caller's descriptors, not even one opened without
// O_CLOEXEC (a listening socket, a database), and none of a sibling worker's channels.
TEST(Worker, InheritsNoDescriptorOfTheCaller) {
  const int leaked = ::open("/dev/null", O_RDONLY);  // no O_CLOEXEC, on purpose
  int pair[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, pair), 0);
  WorkerProcess sibling("sibling");
  const JobOutcome outcome = runInFreshWorker("test", job("test.descriptors"), 60);
  ::close(leaked);
  ::close(pair[0]);
  ::close(pair[1]);
  ASSERT_EQ(outcome.kind, JobOutcome::Kind::kCompleted) << outcome.message;
  for (const auto& target : outcome.result.header["open"]) {
    const std::string what = target.get<std::string>();
    EXPECT_NE(what, "/dev/null");
    EXPECT_EQ(what.rfind("socket:", 0), std::string::npos) << what;
    EXPECT_EQ(what.rfind("pipe:", 0), std::string::npos) << what;
  }
}

// A job may pass open files (the weights' sealed memory files a model host is given): the worker
// gets the same files, not copies, and a frame that says it passes files that did not arrive
// is refused.
TEST(Worker, AJobsPassedFilesReachTheWorker) {
  WireMessage files = job("test.files");
  struct stat first {};
  struct stat second {};
  for (const char* text : {"first file", "second file"}) {
    const int fd = ::memfd_create("stickler-test", MFD_CLOEXEC);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::write(fd, text, std::strlen(text)), static_cast<ssize_t>(std::strlen(text)));
    ASSERT_EQ(::fstat(fd, files.files.empty() ? &first : &second), 0);
    files.files.emplace_back(fd);
  }
  const JobOutcome outcome = runInFreshWorker("test", files, 60);
  ASSERT_EQ(outcome.kind, JobOutcome::Kind::kCompleted) << outcome.message;
  const nlohmann::json& got = outcome.result.header["files"];
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0]["inode"], first.st_ino);
  EXPECT_EQ(got[0]["start"], "first file");
  EXPECT_EQ(got[1]["inode"], second.st_ino);
  EXPECT_EQ(got[1]["start"], "second file");

  // Without the files beside it, the frame is torn.
  WireDecoder decoder;
  const std::string bytes = encodeMessage(files);
  decoder.feed(bytes.data(), bytes.size());
  EXPECT_THROW(decoder.next(), WireError);
  WireMessage too_many = job("test.files");
  for (size_t i = 0; i <= kMaxPassedFiles; ++i) too_many.files.emplace_back(-1);
  EXPECT_THROW(encodeMessage(too_many), WireError);
}

// The live (not yet reaped) children of this process, each with the name it gives itself.
std::vector<std::pair<pid_t, std::string>> liveChildren() {
  std::vector<std::pair<pid_t, std::string>> children;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(entry.path() / "stat");
    std::string line;
    std::getline(stat, line);
    const size_t open = line.find('('), close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) continue;
    std::istringstream rest(line.substr(close + 2));
    std::string state;
    pid_t parent = 0;
    rest >> state >> parent;
    if (parent == ::getpid() && state != "Z") {
      children.emplace_back(std::stoi(name), line.substr(open + 1, close - open - 1));
    }
  }
  return children;
}

// The fork server's pid: the live child of this process that names itself so.
pid_t forkServerPid() {
  for (const auto& [pid, comm] : liveChildren()) {
    if (comm == "stickler-forks") return pid;
  }
  return -1;
}

// Workers come from the fork server, started on the first one: children of the process that
// asked (so it reaps them and sees how they died), not exec'd, in the directory and with the
// environment the asker has when it asks, not those it had when the fork server started.
TEST(Worker, TheForkServerMakesWorkersAsTheAskersChildrenInItsDirectoryAndEnvironment) {
  ASSERT_EQ(runInFreshWorker("test", job("test.echo"), 60).kind, JobOutcome::Kind::kCompleted);
  const pid_t server = forkServerPid();
  ASSERT_GT(server, 0);
  const std::filesystem::path before = std::filesystem::current_path();
  const std::filesystem::path directory =
      std::filesystem::temp_directory_path() / ("stickler-fork-" + std::to_string(::getpid()));
  std::filesystem::create_directories(directory);
  const std::string resolved = std::filesystem::canonical(directory).string();  // as getcwd says
  std::filesystem::current_path(directory);
  ::setenv("STICKLER_TEST_MARK", "set later", 1);
  const JobOutcome outcome = runInFreshWorker("test", job("test.identity"), 60);
  ::unsetenv("STICKLER_TEST_MARK");
  std::filesystem::current_path(before);
  std::filesystem::remove_all(directory);
  ASSERT_EQ(outcome.kind, JobOutcome::Kind::kCompleted) << outcome.message << outcome.stderr_tail;
  EXPECT_EQ(outcome.result.header.value("parent", 0), ::getpid());
  EXPECT_FALSE(outcome.result.header.value("exec", true));
  EXPECT_EQ(outcome.result.header.value("directory", ""), resolved);
  EXPECT_EQ(outcome.result.header.value("mark", ""), "set later");
  EXPECT_EQ(forkServerPid(), server);  // the same fork server made both
}

// A fork server that is gone (killed for memory, say) is replaced at the next worker; with
// STICKLER_FORK_SERVER=0 workers are exec'd, and are the same processes.
TEST(Worker, AForkServerThatDiedIsReplacedAndWithoutOneWorkersAreExecd) {
  ASSERT_EQ(runInFreshWorker("test", job("test.echo"), 60).kind, JobOutcome::Kind::kCompleted);
  const pid_t first = forkServerPid();
  ASSERT_GT(first, 0);
  ASSERT_EQ(::kill(first, SIGKILL), 0);
  ASSERT_EQ(::waitpid(first, nullptr, 0), first);
  const JobOutcome replaced = runInFreshWorker("test", job("test.identity"), 60);
  ASSERT_EQ(replaced.kind, JobOutcome::Kind::kCompleted) << replaced.message;
  EXPECT_FALSE(replaced.result.header.value("exec", true));
  EXPECT_EQ(replaced.result.header.value("parent", 0), ::getpid());
  EXPECT_GT(forkServerPid(), 0);
  EXPECT_NE(forkServerPid(), first);

  ::setenv("STICKLER_FORK_SERVER", "0", 1);
  const JobOutcome execd = runInFreshWorker("test", job("test.identity"), 60);
  ::unsetenv("STICKLER_FORK_SERVER");
  ASSERT_EQ(execd.kind, JobOutcome::Kind::kCompleted) << execd.message;
  EXPECT_TRUE(execd.result.header.value("exec", false));
  EXPECT_EQ(execd.result.header.value("parent", 0), ::getpid());
}

// A process that knows it will ask for a worker starts the fork server ahead (its exec takes
// about a second): it is there before any worker is asked for, the next worker is made by it,
// and asking ahead again, or with STICKLER_FORK_SERVER=0, starts no other.
TEST(Worker, AForkServerStartedAheadMakesTheNextWorker) {
  if (const pid_t old = forkServerPid(); old > 0) {
    ASSERT_EQ(::kill(old, SIGKILL), 0);
    ASSERT_EQ(::waitpid(old, nullptr, 0), old);
  }
  ::setenv("STICKLER_FORK_SERVER", "0", 1);
  // A spawn is synchronous: a child it made is listed at once.
  const size_t before = liveChildren().size();
  startForkServerAhead();
  EXPECT_EQ(liveChildren().size(), before);
  ::unsetenv("STICKLER_FORK_SERVER");

  startForkServerAhead();  // the dead one is replaced now, not at the next worker
  EXPECT_EQ(liveChildren().size(), before + 1);
  pid_t ahead = -1;
  for (int waited = 0; waited < 600 && (ahead = forkServerPid()) <= 0; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GT(ahead, 0) << "no fork server started ahead within a minute";
  startForkServerAhead();
  EXPECT_EQ(liveChildren().size(), before + 1);

  const JobOutcome outcome = runInFreshWorker("test", job("test.identity"), 60);
  ASSERT_EQ(outcome.kind, JobOutcome::Kind::kCompleted) << outcome.message;
  EXPECT_FALSE(outcome.result.header.value("exec", true));
  EXPECT_EQ(outcome.result.header.value("parent", 0), ::getpid());
  EXPECT_EQ(forkServerPid(), ahead);
}

// A fork server that stops answering (stopped, or stuck) is not waited for: the worker asked of
// it fails with a message that says so, within seconds, and the next one gets a new fork server.
TEST(Worker, AForkServerThatStopsAnsweringFailsThatWorkerAndIsReplaced) {
  ASSERT_EQ(runInFreshWorker("test", job("test.echo"), 60).kind, JobOutcome::Kind::kCompleted);
  const pid_t stuck = forkServerPid();
  ASSERT_GT(stuck, 0);
  ASSERT_EQ(::kill(stuck, SIGSTOP), 0);
  const JobOutcome failed = runInFreshWorker("test", job("test.echo"), 60);
  EXPECT_EQ(failed.kind, JobOutcome::Kind::kFailed);
  EXPECT_NE(failed.message.find("fork server"), std::string::npos) << failed.message;
  EXPECT_EQ(::kill(stuck, 0), -1);  // killed and reaped, not left stopped
  const JobOutcome next = runInFreshWorker("test", job("test.identity"), 60);
  ASSERT_EQ(next.kind, JobOutcome::Kind::kCompleted) << next.message;
  EXPECT_FALSE(next.result.header.value("exec", true));
  EXPECT_NE(forkServerPid(), stuck);
}

// Runs go on side by side (localization, a server's concurrent calls): one run's worker must
// not keep another run's channel open, or that run would wait for its worker's end.
TEST(Worker, ConcurrentRunsFinishWhenTheirOwnWorkerDoes) {
  std::atomic<bool> stop{false};
  std::vector<std::thread> long_runs;
  for (int i = 0; i < 2; ++i) {
    long_runs.emplace_back([&stop] {
      while (!stop) runInFreshWorker("slow", job("test.sleep", {{"seconds", 3.0}}), 60, &stop);
    });
  }
  std::atomic<int> timed_out{0};
  std::atomic<int> completed{0};
  std::vector<std::thread> quick_runs;
  for (int i = 0; i < 3; ++i) {
    quick_runs.emplace_back([&] {
      WorkerProcess worker("quick");
      for (int run = 0; run < 15; ++run) {
        // Far longer than a job that returns at once needs, far shorter than the slow jobs.
        const JobOutcome outcome = worker.run(job("test.echo", {{"text", "quick"}}), 20.0);
        if (outcome.kind == JobOutcome::Kind::kTimedOut) ++timed_out;
        if (outcome.completed() && outcome.result.header.value("echo", "") == "quick") ++completed;
      }
    });
  }
  for (auto& thread : quick_runs) thread.join();
  stop = true;
  for (auto& thread : long_runs) thread.join();
  EXPECT_EQ(timed_out.load(), 0);
  EXPECT_EQ(completed.load(), 45);
}

// The adapter sandbox's filter: each thing adapter code must not do is refused, and what a
// worker needs still works.
TEST(Worker, TheSandboxFilterDeniesWritesProcessesSocketsAndSignals) {
  const JobOutcome outcome = runInFreshWorker("sandbox", job("test.syscalls"), 60);
  ASSERT_EQ(outcome.kind, JobOutcome::Kind::kCompleted) << outcome.message << outcome.stderr_tail;
  const nlohmann::json& tried = outcome.result.header.at("tried");
  for (const char* denied :
       {"write a new file", "append to a file", "make a directory", "remove a file", "fork", "exec",
        "open an inet socket", "open a unix socket", "signal its caller"}) {
    EXPECT_TRUE(tried.value(denied, false)) << denied << " was not refused with EPERM";
  }
  for (const char* allowed : {"read a file", "write to stderr", "start a thread"}) {
    EXPECT_TRUE(tried.value(allowed, false)) << allowed << " failed";
  }
}

TEST(WorkerPool, AWorkerServesItsKeyAgainAndAnotherKeyGetsItsOwn) {
  WorkerPool pool(uint64_t{64} << 30);
  int first_pid = 0;
  {
    WorkerPool::Lease lease = pool.acquire("model-a", 1000, "a");
    EXPECT_TRUE(lease.fresh());
    const JobOutcome outcome = lease.worker().run(job("test.echo"), 60);
    ASSERT_TRUE(outcome.completed()) << outcome.message;
    first_pid = outcome.result.header.value("pid", 0);
  }
  {
    WorkerPool::Lease again = pool.acquire("model-a", 1000, "a");
    EXPECT_FALSE(again.fresh());
    EXPECT_EQ(again.worker().run(job("test.echo"), 60).result.header.value("pid", 0), first_pid);
    WorkerPool::Lease other = pool.acquire("model-b", 1000, "b");
    EXPECT_TRUE(other.fresh());
  }
  EXPECT_EQ(pool.stats().started, 2u);
  EXPECT_EQ(pool.stats().reused, 1u);
  EXPECT_EQ(pool.stats().idle, 2u);
}

TEST(WorkerPool, ACrashedWorkerIsNotGivenOutAgain) {
  WorkerPool pool(uint64_t{64} << 30);
  {
    WorkerPool::Lease lease = pool.acquire("model", 0, "m");
    EXPECT_EQ(lease.worker().run(job("test.abort"), 60).kind, JobOutcome::Kind::kCrashed);
  }
  EXPECT_EQ(pool.stats().idle, 0u);
  WorkerPool::Lease next = pool.acquire("model", 0, "m");
  EXPECT_TRUE(next.fresh());
  EXPECT_TRUE(next.worker().run(job("test.echo"), 60).completed());
}

TEST(WorkerPool, IdleWorkersMakeRoomLeastRecentlyUsedFirst) {
  const uint64_t model = uint64_t{1} << 30;
  // Room for two workers of this size, not three.
  WorkerPool pool(2 * (model + kWorkerBaseBytes) + (model / 2));
  { WorkerPool::Lease a = pool.acquire("a", model, "a"); }
  { WorkerPool::Lease b = pool.acquire("b", model, "b"); }
  { WorkerPool::Lease a = pool.acquire("a", model, "a"); }  // b is now the least recently used
  { WorkerPool::Lease c = pool.acquire("c", model, "c"); }
  EXPECT_EQ(pool.stats().ended_idle, 1u);
  EXPECT_EQ(pool.stats().idle, 2u);
  EXPECT_FALSE(pool.acquire("a", model, "a").fresh());
  EXPECT_TRUE(pool.acquire("b", model, "b").fresh());
}

// A model host larger than the whole budget (an 8B model's 16 GB against half of a 24 GiB
// machine) runs alone; given back, it stays warm for the next run of its model, and is ended
// only when another worker needs the room.
TEST(WorkerPool, AWorkerLargerThanTheBudgetStaysIdleUntilAnotherNeedsTheRoom) {
  const uint64_t budget = uint64_t{1} << 30;
  WorkerPool pool(budget);
  { EXPECT_TRUE(pool.acquire("large", 2 * budget, "large").fresh()); }
  EXPECT_EQ(pool.stats().idle, 1u);
  { EXPECT_FALSE(pool.acquire("large", 2 * budget, "large").fresh()); }
  EXPECT_EQ(pool.stats().ended_idle, 0u);
  EXPECT_TRUE(pool.acquire("small", 0, "small").fresh());
  EXPECT_EQ(pool.stats().ended_idle, 1u);
}

TEST(WorkerPool, WhenEveryWorkerIsBusyTheNextWaitsForOne) {
  const uint64_t model = uint64_t{1} << 30;
  WorkerPool pool(model + kWorkerBaseBytes);  // room for one
  std::optional<WorkerPool::Lease> held(pool.acquire("a", model, "a"));
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    WorkerPool::Lease second = pool.acquire("b", model, "b");
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(got.load());
  held.reset();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(pool.stats().started, 2u);
}

TEST(WorkerPool, OneKeyGetsAFewWorkersAndTheRestWait) {
  WorkerPool::Bounds bounds;
  bounds.max_per_key = 2;
  WorkerPool pool(uint64_t{64} << 30, bounds);
  WorkerPool::Lease first = pool.acquire("model", 0, "m");
  std::optional<WorkerPool::Lease> second(pool.acquire("model", 0, "m"));
  std::atomic<bool> got{false};
  std::thread third([&] {
    WorkerPool::Lease lease = pool.acquire("model", 0, "m");
    got = true;
    EXPECT_FALSE(lease.fresh());  // the second one, given back
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(got.load());
  // Another model is not held up.
  EXPECT_TRUE(pool.acquire("other", 0, "o").fresh());
  second.reset();
  third.join();
  EXPECT_EQ(pool.stats().started, 3u);
}

TEST(WorkerPool, NoMoreWorkersThanTheBoundIdleOnesMakeRoom) {
  WorkerPool::Bounds bounds;
  bounds.max_workers = 2;
  WorkerPool pool(uint64_t{64} << 30, bounds);
  { WorkerPool::Lease a = pool.acquire("a", 0, "a"); }
  { WorkerPool::Lease b = pool.acquire("b", 0, "b"); }
  { WorkerPool::Lease c = pool.acquire("c", 0, "c"); }
  const WorkerPool::Stats stats = pool.stats();
  EXPECT_EQ(stats.started, 3u);
  EXPECT_EQ(stats.ended_idle, 1u);
  EXPECT_EQ(stats.idle, 2u);
}

TEST(WorkerPool, ARepurposingPoolHandsAnIdleWorkerToTheNextKey) {
  WorkerPool pool(uint64_t{64} << 30);
  pool.repurposeIdle(true);
  int pid = 0;
  {
    WorkerPool::Lease a = pool.acquire("model-a", 0, "a");
    pid = a.worker().run(job("test.echo"), 60).result.header.value("pid", 0);
  }
  WorkerPool::Lease b = pool.acquire("model-b", 0, "b");
  EXPECT_TRUE(b.fresh());  // it must be given its model
  EXPECT_EQ(b.worker().run(job("test.echo"), 60).result.header.value("pid", 0), pid);
  EXPECT_EQ(pool.stats().started, 1u);
  EXPECT_EQ(pool.stats().repurposed, 1u);
}

// The graphs of one archive (a decode's prefill and step) share a host: an idle host of the
// family is taken over by another key of it, never by another family's.
TEST(WorkerPool, AnIdleWorkerIsTakenOverWithinItsFamilyOnly) {
  WorkerPool pool(uint64_t{64} << 30);
  int pid = 0;
  {
    WorkerPool::Lease prefill = pool.acquire("prefill", 0, "p", nullptr, "archive-a");
    pid = prefill.worker().run(job("test.echo"), 60).result.header.value("pid", 0);
  }
  {
    WorkerPool::Lease other = pool.acquire("forward", 0, "f", nullptr, "archive-b");
    EXPECT_NE(other.worker().run(job("test.echo"), 60).result.header.value("pid", 0), pid);
  }
  WorkerPool::Lease step = pool.acquire("step", 0, "s", nullptr, "archive-a");
  EXPECT_TRUE(step.fresh());  // it must be given its model
  EXPECT_EQ(step.worker().run(job("test.echo"), 60).result.header.value("pid", 0), pid);
  EXPECT_EQ(pool.stats().started, 2u);
  EXPECT_EQ(pool.stats().repurposed, 1u);
  // Without a family nothing is taken over.
  WorkerPool::Lease plain = pool.acquire("plain", 0, "x");
  EXPECT_EQ(pool.stats().started, 3u);
}

TEST(WorkerPool, AWaitIsCancelled) {
  const uint64_t model = uint64_t{1} << 30;
  WorkerPool pool(model + kWorkerBaseBytes);
  WorkerPool::Lease held = pool.acquire("a", model, "a");
  std::atomic<bool> cancelled{true};
  EXPECT_THROW(pool.acquire("b", model, "b", &cancelled), Cancelled);
}

TEST(WorkerPool, ParsesByteSizes) {
  EXPECT_EQ(parseByteSize("8G"), uint64_t{8} << 30);
  EXPECT_EQ(parseByteSize("512M"), uint64_t{512} << 20);
  EXPECT_EQ(parseByteSize("1024"), 1024u);
  EXPECT_FALSE(parseByteSize("lots").has_value());
  EXPECT_FALSE(parseByteSize("8X").has_value());
  EXPECT_FALSE(parseByteSize("").has_value());
}

}  // namespace
}  // namespace stickler
