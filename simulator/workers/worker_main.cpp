#include "simulator/workers/worker_main.h"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "simulator/support/freed_memory.h"
#include "simulator/workers/fork_server.h"
#include "simulator/workers/job_registry.h"
#include "simulator/workers/worker_process.h"

namespace stickler {
namespace {

bool worker_process = false;
WorkerProgress* worker_progress = nullptr;

WireMessage reply(const JobHandler* handler, const WireMessage& job, WorkerProgress& progress) {
  const std::string kind = job.header.value("kind", "");
  if (handler == nullptr) {
    return {{{"ok", false}, {"error", "this worker has no job kind '" + kind + "'"}}, {}};
  }
  JobContext context{progress, job.header.value("seconds", 0.0)};
  try {
    WireMessage result = (*handler)(job, context);
    return {{{"ok", true}, {"result", std::move(result.header)}}, std::move(result.blobs)};
  } catch (const std::exception& e) {
    return {{{"ok", false}, {"error", std::string(e.what())}}, {}};
  } catch (...) {
    return {{{"ok", false}, {"error", "the job threw something that is not an exception"}}, {}};
  }
}

}  // namespace

bool inWorkerProcess() {
  return worker_process;
}

void setWorkerPhase(const std::string& phase) {
  if (worker_progress != nullptr) worker_progress->setPhase(phase);
}

std::optional<int> runWorkerIfAsked(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], kForkServerModeArgument) == 0) return serveForkRequests();
  if (argc < 2 || std::strcmp(argv[1], kWorkerModeArgument) != 0) return std::nullopt;
  return serveAsWorker(argc > 2 ? argv[2] : "worker");
}

int serveAsWorker(const std::string& label) {
  worker_process = true;
  // `ps` shows what the worker is for ("stickler-host"), not the /proc/self/exe it was run as.
  const std::string name = "stickler-" + label.substr(0, label.find(' '));
  ::prctl(PR_SET_NAME, name.substr(0, 15).c_str());
  void* shared = ::mmap(nullptr, sizeof(WorkerProgress), PROT_READ | PROT_WRITE, MAP_SHARED,
                        kWorkerProgressFd, 0);
  if (shared == MAP_FAILED) {
    std::fprintf(stderr, "stickler worker: no progress block on descriptor %d\n",
                 kWorkerProgressFd);
    return 3;
  }
  auto* progress = static_cast<WorkerProgress*>(shared);
  worker_progress = progress;
  WireDecoder decoder;
  WireMessage job;
  try {
    // After a short job (a model host's run of a small model, in a bisection) the next one
    // usually follows within a millisecond: wait for it awake, as the caller waits for results.
    double spin_seconds = 0;
    while (readMessage(kWorkerChannelFd, decoder, job, spin_seconds)) {
      const auto start = std::chrono::steady_clock::now();
      const JobHandler* handler = findJob(job.header.value("kind", ""));
      const WireMessage answer = reply(handler, job, *progress);
      // What the job buffered (files it wrote through stdio, its log) is out before the caller
      // reads the result.
      std::fflush(nullptr);
      writeMessage(kWorkerChannelFd, answer);
      job.files.clear();  // a file passed with a job is held no longer than the job
      const double took =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      spin_seconds = took < kShortJobSeconds ? kShortJobSeconds : 0;
      // A pooled worker waits for its next job holding nothing it freed (freed_memory.h); the
      // short jobs of a bisection keep theirs for the next one, due within a millisecond.
      if (took >= kShortJobSeconds) releaseFreedMemory();
    }
  } catch (const WireError& e) {
    std::fprintf(stderr, "stickler worker: %s\n", e.what());
    return 3;
  }
  return 0;
}

}  // namespace stickler
