// Where a job in a worker process had got to, written by the worker as it goes and read by the
// caller after the worker died. Lives in memory the two processes share (a memfd the worker
// inherits), so it survives the worker's death and costs an atomic store per update.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

namespace stickler {

struct WorkerProgress {
  std::atomic<int64_t> node{-1};          // position in allNodes() of the node running
  std::atomic<int64_t> module_call{-1};   // innermost module call of that node (-1: root)
  std::atomic<int64_t> last_entered{-1};  // the last module call entered
  std::atomic<int64_t> nodes_run{0};
  // What the job was doing, in words ("condition", "the adapted model"): written by the worker
  // before each part, read by the caller once the worker is gone.
  char phase[96] = {};

  void reset() {
    node = -1;
    module_call = -1;
    last_entered = -1;
    nodes_run = 0;
    phase[0] = '\0';
  }
  void setPhase(const std::string& text) {
    const size_t size = std::min(text.size(), sizeof phase - 1);
    std::memcpy(phase, text.data(), size);
    phase[size] = '\0';
  }
};

// The same, read once.
struct ProgressSnapshot {
  int64_t node = -1;
  int64_t module_call = -1;
  int64_t last_entered = -1;
  int64_t nodes_run = 0;
  std::string phase;
};

inline ProgressSnapshot snapshotOf(const WorkerProgress& progress) {
  return {progress.node.load(), progress.module_call.load(), progress.last_entered.load(),
          progress.nodes_run.load(),
          std::string(progress.phase, strnlen(progress.phase, sizeof progress.phase))};
}

}  // namespace stickler
