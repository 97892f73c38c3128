// Operators that compute nothing, as traces record them: a full-range slice for every `:` before
// the one that cuts (`x[:, :, :16]` traces as two slices from 0 to 2^63-1 and one to 16), a
// `contiguous` of a value that already is, a `to` its own dtype, a `detach`, a `view` to the
// same shape. A pattern written like the model's Python does not spell them, so matching looks
// through them on both sides: the pattern loses those it can tell are no-ops by themselves, and
// the model's are set aside (bypassed) while a rewrite matches, then put back where nothing
// rewrote them.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include <torch/csrc/jit/ir/subgraph_matcher.h>
#include <torch/script.h>

namespace stickler {

class GraphEdit;

// Removes from a pattern what is a no-op whatever it is applied to: full-range slices (start 0
// or None, end None or 2^63-1, step 1) and `detach`.
void removeStaticNoOps(torch::jit::Graph& pattern);

// What a match must also find in the model for it to stand for a match of the pattern as
// written: that an operator left out of the pattern is a no-op on the value the model has there,
// or that a slice's argument the pattern compares by meaning (a parameter in its place) means
// what the pattern wrote.
struct MatchCheck {
  enum class Kind {
    kContiguous,  // `value` is contiguous
    kDtype,       // `value` has `dtype`
    kShape,       // `value` has `sizes` (-1 for one inferred size)
    kSliceDim,    // `value` (the slice's dim) names the dimension `expected` does of `sliced`
    kSliceStart,  // `value` is the start `expected` is (None and 0 alike)
    kSliceEnd     // `value` is the end `expected` is (None and 2^63-1 alike)
  };
  Kind kind;
  const torch::jit::Value* value;             // in the pattern's graph
  const torch::jit::Value* sliced = nullptr;  // the slice's input: its rank, for kSliceDim
  c10::ScalarType dtype = c10::ScalarType::Undefined;
  std::vector<int64_t> sizes;
  c10::IValue expected;
};

// A form of a pattern that is matched: its graph (whose first `parameters` inputs are the
// pattern's; any after them stand for slice arguments) and the checks a match must pass.
struct MatchablePattern {
  std::shared_ptr<torch::jit::Graph> graph;
  size_t parameters = 0;
  std::vector<MatchCheck> checks;
};

// The forms of `pattern` to match, in order: the pattern with its slices' dim, start and end
// compared by meaning (a trace writes dim 2 and start 0 where TorchScript writes -1 and None);
// then, when it has operators that are no-ops only on some values (`contiguous`, `to` a constant
// dtype, `view` or `reshape` to constant sizes), the pattern without them, checked to be no-ops.
std::vector<MatchablePattern> matchableForms(torch::jit::Graph& pattern);

// Whether every check of `form` holds for what `match` found in `edit`'s model.
bool checksHold(const MatchablePattern& form, const torch::jit::Match& match,
                const GraphEdit& edit);

// The model's no-ops set aside for matching: each no-op's readers read its input instead, and it
// stays in its place without inputs. Put back by restore() (or the destructor) for readers a
// rewrite left in place; a no-op nothing reads any more (a match took its readers) is removed
// and recorded as removed.
class NoOpBypass {
 public:
  explicit NoOpBypass(GraphEdit& edit);
  ~NoOpBypass();
  NoOpBypass(const NoOpBypass&) = delete;
  NoOpBypass& operator=(const NoOpBypass&) = delete;

  void restore();

 private:
  struct Bypassed {
    torch::jit::Node* node;
    std::vector<torch::jit::Value*> inputs;  // input 0 is what its readers read meanwhile
    std::vector<torch::jit::Use> readers;    // each reader and the input it read it at
  };
  GraphEdit& edit_;
  std::vector<Bypassed> bypassed_;
};

}  // namespace stickler
