#include "adapters/engine/equivalence/equivalence.h"

#include <functional>
#include <mutex>
#include <optional>

#include "adapters/engine/equivalence/agreement.h"
#include "adapters/engine/equivalence/change_region.h"
#include "adapters/engine/equivalence/region_program.h"
#include "simulator/graph/example_inputs.h"
#include "simulator/graph/loaded_model.h"
#include "simulator/support/blas_library.h"
#include "simulator/support/concurrent_tasks.h"
#include "simulator/support/freed_memory.h"
#include "simulator/support/task_control.h"

namespace stickler {
namespace {

using Feeds = std::vector<c10::IValue>;  // the values captured for one input draw

// What feeds the region on each draw: `given` when it holds every draw, else captured from
// runs of `after`.
std::vector<Feeds> feedsFor(const LoadedModel& after, const ChangeRegion& region,
                            const CapturedDraws* given, int draws) {
  if (given != nullptr && given->draws.size() == static_cast<size_t>(draws)) return given->draws;
  return captureDraws(after, region.captured, 0, draws).draws;
}

Feeds select(const Feeds& captured, const std::vector<size_t>& slots) {
  Feeds selected;
  selected.reserve(slots.size());
  for (size_t slot : slots) selected.push_back(captured.at(slot));
  return selected;
}

// One side of the comparison: a model (before or after), the region's part of it, in one
// precision, run on every draw.
struct Side {
  const LoadedModel* model;
  const std::vector<const torch::jit::Node*>* nodes;
  const std::vector<const torch::jit::Value*>* inputs;
  const std::vector<const torch::jit::Value*>* outputs;
  const std::vector<size_t>* slots;
  Precision precision;
  bool itself;       // the whole model as it runs (float32): its own interpreter, no program
  bool given_truth;  // the original in float64, whose values on draw 0 the caller passed in
  std::optional<RegionProgram> program = std::nullopt;
  std::vector<c10::IValue> results = {};  // the compared values of the draw being compared
};

AgreementSummary compare(const LoadedModel& before, const LoadedModel& after,
                         const ChangeRegion& region, const std::vector<Feeds>& feeds,
                         const std::vector<c10::IValue>* truth = nullptr,
                         const std::atomic<bool>* cancelled = nullptr) {
  const bool whole = region.kind == ChangeRegion::Kind::kWholeModel;
  // Heaviest first (float64, the adapted side), so that the threads finish together.
  std::vector<Side> sides;
  for (Precision precision : {Precision::kFloat64, Precision::kFloat32}) {
    const bool itself = whole && precision == Precision::kFloat32;
    sides.push_back({&after, &region.after_nodes, &region.after_inputs, &region.after_outputs,
                     &region.after_feeds, precision, itself, /*given_truth=*/false});
    sides.push_back({&before, &region.before_nodes, &region.before_inputs, &region.before_outputs,
                     &region.before_feeds, precision, itself,
                     /*given_truth=*/truth != nullptr && precision == Precision::kFloat64});
  }
  // Widening buffers, a set per running task, handed from one task to the next.
  std::mutex buffers_mutex;
  std::vector<std::unique_ptr<WideningBuffers>> idle_buffers;
  auto withBuffers = [&](const std::function<void(WideningBuffers*)>& work) {
    std::unique_ptr<WideningBuffers> buffers;
    {
      std::lock_guard<std::mutex> lock(buffers_mutex);
      if (!idle_buffers.empty()) {
        buffers = std::move(idle_buffers.back());
        idle_buffers.pop_back();
      }
    }
    if (!buffers) buffers = std::make_unique<WideningBuffers>(c10::kDouble);
    work(buffers.get());
    std::lock_guard<std::mutex> lock(buffers_mutex);
    idle_buffers.push_back(std::move(buffers));
  };
  for (Side& side : sides) {
    if (!side.itself && !(side.given_truth && feeds.size() == 1)) {
      side.program.emplace(*side.model, *side.nodes, *side.inputs, *side.outputs, side.precision);
    }
  }
  // One draw at a time, its four runs side by side, compared and dropped before the next draw
  // runs: a check holds one draw's results, not every draw's (a region of every RMS norm of
  // Llama-3-8B's geometry is 0.8 GB of results a draw).
  Agreement agreement;
  for (size_t draw = 0; draw < feeds.size(); ++draw) {
    std::vector<std::function<void()>> tasks;
    for (Side& side : sides) {
      if (side.itself && draw == 0) {  // the model itself, on its example inputs: already known
        side.results = side.model->example_outputs;
        continue;
      }
      if (side.given_truth && draw == 0) {
        side.results = *truth;
        continue;
      }
      tasks.emplace_back([&side, &feeds, &withBuffers, draw, cancelled] {
        const Feeds fed = select(feeds[draw], *side.slots);
        if (side.itself) {
          side.results = side.model->interpreter->run(fed);
        } else {
          withBuffers([&](WideningBuffers* buffers) {
            side.results = side.program->run(fed, buffers, cancelled);
          });
        }
      });
    }
    runConcurrently(tasks);
    const std::vector<c10::IValue>& adapted64 = sides[0].results;
    const std::vector<c10::IValue>& original64 = sides[1].results;
    const std::vector<c10::IValue>& adapted32 = sides[2].results;
    const std::vector<c10::IValue>& original32 = sides[3].results;
    for (size_t i = 0; i < region.output_names.size(); ++i) {
      agreement.add(region.output_names[i], static_cast<int>(draw), original32.at(i),
                    adapted32.at(i), original64.at(i), adapted64.at(i));
    }
    for (Side& side : sides) side.results.clear();
  }
  // The draws reused one another's freed blocks; what follows a check (a run, another adapter's
  // check) allocates other sizes, and kept blocks are the process's to hold until then: at 480M
  // parameters the gate's worker kept 0.4 GB of them through the model host's runs. The heap's
  // free pages too (freed_memory.h).
  releaseFreedMemory();
  return agreement.summary();
}

EquivalenceResult judged(AgreementSummary agreement) {
  EquivalenceResult result;
  result.verdict = !agreement.same_math  ? EquivalenceResult::Verdict::kDifferentMath
                   : !agreement.no_worse ? EquivalenceResult::Verdict::kWorseInFloat32
                                         : EquivalenceResult::Verdict::kEquivalent;
  result.agreement = std::move(agreement);
  return result;
}

}  // namespace

int equivalenceDraws(const LoadedModel& model) {
  return model.unique_parameters > kManyParameters ? 2 : 3;
}

EquivalenceResult checkAdaptation(const LoadedModel& before, const LoadedModel& after,
                                  const ChangeRegion& region, const CapturedDraws* feeds) {
  if (region.kind == ChangeRegion::Kind::kUnchanged) return EquivalenceResult();
  const int draws = equivalenceDraws(before);
  EquivalenceResult in_region;
  if (region.kind == ChangeRegion::Kind::kRegion) {
    in_region = judged(compare(before, after, region, feedsFor(after, region, feeds, draws)));
    in_region.scope = "region";
    in_region.modules = region.modules;
    in_region.inputs_checked = draws;
    if (in_region.verdict != EquivalenceResult::Verdict::kDifferentMath) return in_region;
  }
  // The whole model decides: the changes reach its root, or the region's results differ.
  EquivalenceResult decided = checkWholeModel(before, after, draws);
  if (region.kind == ChangeRegion::Kind::kRegion) {
    decided.why_whole =
        "the changed modules' results differ; the whole model decides whether later layers "
        "absorb the difference exactly";
    decided.modules = in_region.modules;
    decided.region_problem = in_region.problem();
    if (!decided.accepted()) {
      // Where it starts, then what it does to the model's results.
      const std::string prefix = "not the same mathematics: ";
      std::string outputs = decided.agreement.problem;
      if (outputs.rfind(prefix, 0) == 0) outputs = outputs.substr(prefix.size());
      decided.agreement.problem = in_region.problem() + "; and in the model's results: " + outputs;
    }
  } else {
    decided.why_whole = region.why_whole;
  }
  return decided;
}

class Float64Truth {
 public:
  std::vector<c10::IValue> outputs;
};

std::shared_ptr<const Float64Truth> computeFloat64Truth(const LoadedModel& original,
                                                        const std::atomic<bool>* cancelled) {
  const ChangeRegion itself = wholeModelRegion(original, original);
  const RegionProgram program(original, itself.before_nodes, itself.before_inputs,
                              itself.before_outputs, Precision::kFloat64);
  auto truth = std::make_shared<Float64Truth>();
  try {
    truth->outputs = program.run(original.example_inputs, nullptr, cancelled);
  } catch (const Cancelled&) {
    return nullptr;
  }
  return truth;
}

EquivalenceResult checkWholeModel(const LoadedModel& original, const LoadedModel& adapted,
                                  int draws, const Float64Truth* truth,
                                  const std::atomic<bool>* cancelled) {
  const ChangeRegion everything = wholeModelRegion(original, adapted);
  EquivalenceResult result =
      judged(compare(original, adapted, everything, feedsFor(adapted, everything, nullptr, draws),
                     truth != nullptr ? &truth->outputs : nullptr, cancelled));
  result.scope = "whole model";
  result.inputs_checked = draws;
  return result;
}

std::string blasLibrary() {
  return blasLibraryPath();
}

}  // namespace stickler
