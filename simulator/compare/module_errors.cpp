#include "simulator/compare/module_errors.h"

#include <algorithm>
#include <cmath>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <fstream>
#include <functional>
#include <limits>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "simulator/graph/loaded_model.h"
#include "simulator/support/errors.h"

namespace stickler {

std::vector<at::Tensor> floatOutputs(const MutableValueView& outputs) {
  std::vector<at::Tensor> tensors;
  std::vector<c10::IValue> work;
  for (size_t i = 0; i < outputs.size(); ++i) work.push_back(outputs[i]);
  while (!work.empty()) {
    const c10::IValue value = work.back();
    work.pop_back();
    if (value.isTensor()) {
      const at::Tensor& tensor = value.toTensor();
      if (!at::isFloatingType(tensor.scalar_type()) || tensor.numel() == 0) continue;
      // The common case, a contiguous fp32 tensor, is read as it is.
      const bool as_is = tensor.scalar_type() == at::kFloat && tensor.is_contiguous();
      tensors.push_back(as_is ? tensor : tensor.detach().to(at::kFloat).contiguous());
    } else if (value.isTuple()) {
      for (const auto& element : value.toTupleRef().elements()) work.push_back(element);
    } else if (value.isTensorList()) {
      for (const at::Tensor& tensor : value.toTensorVector()) work.emplace_back(tensor);
    }
  }
  return tensors;
}

ModuleErrors compareActivations(const std::vector<at::Tensor>& reference,
                                const std::vector<at::Tensor>& observed) {
  // One pass over the values in double precision, no tensor operations: this runs at every
  // module boundary of a device run, and the dispatch of a dozen ATen calls per boundary would
  // cost more than the arithmetic.
  ModuleErrors errors;
  if (reference.empty() || reference.size() != observed.size()) return errors;
  double ref_sq = 0, obs_sq = 0, diff_sq = 0, dot = 0, abs_sum = 0, max_abs = 0;
  int64_t count = 0;
  for (size_t t = 0; t < reference.size(); ++t) {
    const at::Tensor ref = reference[t].to(at::kFloat).contiguous();
    const at::Tensor obs = observed[t].to(at::kFloat).contiguous();
    if (ref.numel() != obs.numel()) return errors;
    const float* r = ref.data_ptr<float>();
    const float* o = obs.data_ptr<float>();
    for (int64_t i = 0; i < ref.numel(); ++i) {
      if (!std::isfinite(r[i])) continue;  // nothing to measure against
      const double x = r[i];
      if (!std::isfinite(o[i])) {
        errors.non_finite = true;
        continue;
      }
      const double y = o[i];
      const double d = std::abs(y - x);
      ref_sq += x * x;
      obs_sq += y * y;
      diff_sq += d * d;
      dot += x * y;
      abs_sum += d;
      max_abs = std::max(max_abs, d);
      ++count;
    }
  }
  const double ref_norm = std::sqrt(ref_sq);
  const double diff_norm = std::sqrt(diff_sq);
  errors.max_abs = max_abs;
  errors.mean_abs = count > 0 ? abs_sum / static_cast<double>(count) : 0.0;
  errors.rel_l2 = ref_norm > 0 ? diff_norm / ref_norm : diff_norm;
  errors.cosine = ref_sq > 0 && obs_sq > 0 ? dot / (ref_norm * std::sqrt(obs_sq)) : 1.0;
  errors.sqnr_db = diff_norm > 0 ? 20.0 * std::log10(ref_norm / diff_norm)
                                 : std::numeric_limits<double>::infinity();
  if (errors.non_finite) {
    errors.rel_l2 = std::numeric_limits<double>::infinity();
    errors.max_abs = std::numeric_limits<double>::infinity();
    errors.cosine = 0.0;
  }
  return errors;
}

// The hand-over: the reference queues each module call's outputs, up to kLockstepDepth calls
// ahead of the compared run, and waits when it is that far ahead; the compared run takes the
// oldest and releases it when compared. Closing releases whichever side waits.
class LockstepChannel {
 public:
  // Reference side. False when the compared run has gone (stop feeding).
  bool handOver(int64_t call, std::vector<at::Tensor> tensors) {
    awhile([&] { return pending_.load(std::memory_order_acquire) < kLockstepDepth; });
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return queue_.size() < kLockstepDepth || closed_; });
    if (closed_) return false;
    queue_.push_back({call, std::move(tensors)});
    pending_.store(queue_.size(), std::memory_order_release);
    changed_.notify_all();
    return true;
  }
  // Compared side. False when the reference finished or the channel closed.
  bool take(int64_t* call, std::vector<at::Tensor>* tensors) {
    awhile([&] { return pending_.load(std::memory_order_acquire) > 0; });
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return !queue_.empty() || closed_ || finished_; });
    if (queue_.empty() || closed_) return false;
    *call = queue_.front().call;
    *tensors = std::move(queue_.front().tensors);
    return true;
  }
  // Compared side, after comparing: the reference may go on.
  void release() {
    const std::lock_guard<std::mutex> lock(mutex_);
    if (!queue_.empty()) queue_.pop_front();
    pending_.store(queue_.size(), std::memory_order_release);
    changed_.notify_all();
  }
  void finish() {
    const std::lock_guard<std::mutex> lock(mutex_);
    finished_ = true;
    pending_.store(1, std::memory_order_release);
    changed_.notify_all();
  }
  void waitFinished() {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [&] { return finished_; });
  }
  void close() {
    const std::lock_guard<std::mutex> lock(mutex_);
    closed_ = true;
    queue_.clear();
    pending_.store(1, std::memory_order_release);  // nothing to wait for any more
    changed_.notify_all();
  }

 private:
  // The other side is usually a few microseconds away: waiting for it briefly awake costs less
  // than a sleep and a wake-up at every module boundary. Then the caller waits asleep.
  template <typename Ready>
  static void awhile(Ready ready) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
    while (!ready() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  }

  struct Entry {
    int64_t call;
    std::vector<at::Tensor> tensors;
  };
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Entry> queue_;
  // queue_.size(), or 1 once finished or closed (the compared side stops waiting; closing
  // also empties the queue, so the reference side stops waiting too).
  std::atomic<size_t> pending_{0};
  bool closed_ = false, finished_ = false;
};

namespace {

// One long-lived thread per process that runs reference runs, one after another: a new thread
// per run would pay LibTorch's per-thread set-up (thread-local state, kernel caches) every time.
class ReferenceThread {
 public:
  static ReferenceThread& forThisProcess() {
    static ReferenceThread* instance = new ReferenceThread();  // never destroyed: serves until exit
    return *instance;
  }

  void submit(std::function<void()> job) {
    const std::lock_guard<std::mutex> lock(mutex_);
    jobs_.push_back(std::move(job));
    ready_.notify_one();
  }

 private:
  ReferenceThread() : thread_([this] { serve(); }) { thread_.detach(); }

  void serve() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [&] { return !jobs_.empty(); });
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> jobs_;
  std::thread thread_;
};

// The reference run's side: hands each module call's outputs over.
class ReferenceFeeder : public ExecutionObserver {
 public:
  ReferenceFeeder(const std::vector<ModuleCall>& calls, LockstepChannel& channel)
      : calls_(calls), channel_(channel) {}
  void onModuleExit(const ModuleCall& call, const MutableValueView& outputs) override {
    if (!feeding_) return;
    // Copies: the reference run goes on while they wait in the queue, and may write into its
    // own tensors in place.
    std::vector<at::Tensor> tensors = floatOutputs(outputs);
    for (at::Tensor& tensor : tensors) tensor = tensor.clone();
    feeding_ = channel_.handOver(&call - calls_.data(), std::move(tensors));
  }
  bool seesShapeArithmetic() const override { return false; }

 private:
  const std::vector<ModuleCall>& calls_;
  LockstepChannel& channel_;
  bool feeding_ = true;
};

}  // namespace

LockstepComparer::LockstepComparer(const Interpreter& reference, std::vector<c10::IValue> inputs)
    : reference_(reference),
      inputs_(std::move(inputs)),
      channel_(std::make_unique<LockstepChannel>()) {}

LockstepComparer::~LockstepComparer() {
  channel_->close();
  if (started_) channel_->waitFinished();  // the reference run must not outlive its inputs
}

void LockstepComparer::start() {
  started_ = true;
  ReferenceThread::forThisProcess().submit([this] {
    try {
      ReferenceFeeder feeder(reference_.moduleCalls(), *channel_);
      reference_.run(inputs_, &feeder);
    } catch (...) {
      // A reference that fails to run compares nothing; the device run goes on alone.
    }
    channel_->finish();
  });
}

void LockstepComparer::onModuleEnter(const ModuleCall& /*call*/, const ValueView& /*inputs*/) {
  if (!started_) start();
}

void LockstepComparer::onModuleExit(const ModuleCall& call, const MutableValueView& outputs) {
  if (!started_) start();
  if (!in_step_) return;
  int64_t index = -1;
  std::vector<at::Tensor> reference;
  if (!channel_->take(&index, &reference)) {
    in_step_ = false;
    return;
  }
  const auto& calls = reference_.moduleCalls();
  if (index != &call - calls.data()) {
    in_step_ = false;  // the runs took different paths: nothing after this compares
    channel_->close();
    return;
  }
  const std::vector<at::Tensor> observed = floatOutputs(outputs);
  if (!reference.empty() && observed.size() == reference.size()) {
    ModuleErrors errors = compareActivations(reference, observed);
    errors.call = index;
    record_.modules.push_back(errors);
  }
  channel_->release();
}

namespace {

// The number of NaN (or, with !nan, non-finite) elements among a value's float tensors.
int64_t nonFiniteElements(const c10::IValue& value, bool nan) {
  if (value.isTensor()) {
    const at::Tensor& tensor = value.toTensor();
    if (!tensor.defined() || !at::isFloatingType(tensor.scalar_type()) || tensor.numel() == 0) {
      return 0;
    }
    return (nan ? tensor.isnan() : tensor.isfinite().logical_not()).sum().item<int64_t>();
  }
  int64_t count = 0;
  if (value.isList()) {
    for (const c10::IValue& element : value.toListRef()) count += nonFiniteElements(element, nan);
  } else if (value.isTuple()) {
    for (const c10::IValue& element : value.toTupleRef().elements()) {
      count += nonFiniteElements(element, nan);
    }
  }
  return count;
}

template <typename View>
int64_t nonFiniteIn(const View& values, bool nan) {
  int64_t count = 0;
  for (size_t i = 0; i < values.size(); ++i) count += nonFiniteElements(values[i], nan);
  return count;
}

}  // namespace

void LockstepComparer::onNode(const torch::jit::Node& node, const ModuleCall* /*module*/,
                              const ValueView& inputs, const MutableValueView& outputs) {
  if (record_.non_finite.size() >= static_cast<size_t>(kNonFiniteCandidates)) return;
  const int64_t non_finite = nonFiniteIn(outputs, /*nan=*/false);
  if (non_finite == 0) return;
  const int64_t nan = nonFiniteIn(outputs, /*nan=*/true);
  NonFiniteMark mark;
  if (nan > 0 && nonFiniteIn(inputs, /*nan=*/true) == 0) {
    mark.nan = true;
    mark.elements = nan;
  } else if (nonFiniteIn(inputs, /*nan=*/false) == 0) {
    mark.elements = non_finite;
  } else {
    return;
  }
  // Nodes are named by position: the compared run may be a model host's, of the same graph.
  if (positions_.empty()) {
    const auto nodes = allNodes(*node.owningGraph());
    for (size_t i = 0; i < nodes.size(); ++i) positions_[nodes[i]] = static_cast<int64_t>(i);
  }
  const auto position = positions_.find(&node);
  if (position == positions_.end()) return;
  mark.position = position->second;
  record_.non_finite.push_back(mark);
}

std::vector<NonFiniteCandidate> nonFiniteCandidates(const LockstepRecord& record,
                                                    const torch::jit::Graph& graph) {
  const std::vector<const torch::jit::Node*> nodes = allNodes(graph);
  std::vector<NonFiniteCandidate> candidates;
  for (const NonFiniteMark& mark : record.non_finite) {
    if (mark.position < 0 || mark.position >= static_cast<int64_t>(nodes.size())) continue;
    candidates.push_back({nodes[static_cast<size_t>(mark.position)], mark.nan, mark.elements});
  }
  return candidates;
}

}  // namespace stickler
