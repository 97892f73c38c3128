// pad_attention_heads: RoPE as a matmul needs head_dim/2 to fill whole sticks, so heads of 32
// or 64 values are zero-padded (Granite 3.3 2B: 64 -> 128, FACTS.md). Each half of a query or
// key head gets zeros after it, so rotate_half still swaps the model's own halves; the rotary
// frequencies get zero entries (cos 1, sin 0) for the padding, value heads get zeros at their
// end, and o_proj reads those positions with zero columns. Scores and outputs are the same sums
// with zero terms added. Partial rotary (Phi, GPT-NeoX: only the first rotary_ndims values of
// a head turn) pads each rotated half and the pass-through part to whole sticks and moves the cut
// between them. Without RoPE, heads are padded to whole sticks: every q, k and v head
// gets zeros at its end, and the view that merges the heads back is widened. The projections
// and the rotary frequencies are found by what they compute (attention_structure.h), so one
// adapter pads Llama's q_proj ... o_proj, BERT's query ... output.dense and GPT-2's c_attn.
#include <algorithm>
#include <limits>
#include <set>
#include <sstream>

#include "adapters/engine/graph_edit.h"
#include "adapters/engine/transforms/attention_structure.h"
#include "adapters/engine/transforms/builtin_transform.h"
#include "adapters/engine/transforms/head_padding.h"
#include "adapters/engine/transforms/interleaved_rotary.h"
#include "simulator/faults/fault_rule.h"
#include "simulator/graph/module_inliner.h"
#include "simulator/support/errors.h"

namespace stickler {
namespace {

using torch::jit::Node;
using torch::jit::Value;
namespace aten = torch::jit::aten;
namespace prim = torch::jit::prim;

class HeadPadder {
 public:
  HeadPadder(const nlohmann::json& arguments, GraphEdit& edit, const DeviceProfile& profile)
      : edit_(edit), profile_(profile), stick_(profile.stickElements()) {
    module_ = arguments.at("module");
    target_ = arguments.at("head_dim");
  }

  void run() {
    for (const FoundAttention& attention : findAttention(edit_, nullptr)) {
      if (!globMatch(module_, attention.module)) continue;
      // A fused projection without RoPE is GPT-2's, split three ways before its heads; with
      // RoPE it is viewed per head ([q | k | v] per head, GPT-NeoX), padded here.
      if (attention.fused() && attention.rotary.empty()) {
        padFusedAttentionHeads(attention, target_, edit_, profile_);
        continue;
      }
      pad(attention);
    }
  }

 private:
  at::Tensor tensorOf(const Value* read) const {
    const auto value = edit_.constantOrWeight(read);
    if (!value || !value->isTensor()) {
      throw UserError("pad_attention_heads: " + modulePathOf(*read->node()) +
                      " reads a weight that is not a tensor of the model");
    }
    return value->toTensor();
  }

  // With RoPE, how many values of each head turn (all of them, or the first rotary_ndims under
  // partial rotary); 0 without RoPE.
  int64_t rotatedValues(const FoundAttention& attention) const {
    int64_t rotated = 0;
    for (const Value* table : attention.rotary) {
      // A table replaced with an earlier layer's padded one is gone from the graph: the same
      // rotation, whose original width that layer recorded. Frequencies turn two values each;
      // a table of sines and cosines is as wide as what turns.
      const auto known = rotated_widths_.find(table);
      int64_t width = 0;
      if (known != rotated_widths_.end()) {
        width = known->second;
      } else {
        const at::Tensor values = tensorOf(table);
        width = values.dim() == 1 ? values.numel() * 2 : values.size(-1);
      }
      if (rotated != 0 && width != rotated) {
        throw UserError("pad_attention_heads: the rotary frequencies of " + attention.module +
                        " turn " + std::to_string(rotated) + " and " + std::to_string(width) +
                        " values of each head: not padded");
      }
      rotated = width;
    }
    return rotated;
  }

  // The pieces of a head as RoPE reads them, each padded to whole sticks: the two rotated halves
  // (rotate_half swaps them) and, under partial rotary, the values passed through.
  std::vector<HeadSegment> ropeSegments(int64_t head_dim, int64_t rotated, int64_t padded) const {
    const auto sticks = [&](int64_t size) { return (size + stick_ - 1) / stick_ * stick_; };
    const int64_t half = rotated / 2;
    if (rotated == head_dim) return {{half, padded / 2}, {half, padded / 2}};
    return {{half, sticks(half)},
            {half, sticks(half)},
            {head_dim - rotated, sticks(head_dim - rotated)}};
  }

  // The interleaved rotations of the queries and keys (interleaved_rotary.h), checked: one for
  // each, and no strided slice left that is not one of them.
  InterleavedRotations interleavedRotations(const FoundAttention& attention,
                                            const std::map<const Node*, char>& role_of) {
    // A table an earlier layer padded is gone from the graph (its repeats with it, rewritten
    // then): only the tables still read are followed.
    std::vector<Value*> live;
    for (Value* table : attention.rotary) {
      if (!padded_tables_.count(table)) live.push_back(table);
    }
    InterleavedRotations found =
        findInterleavedRotations(edit_, attention.module, live, activations_);
    if (!found.unrecognised.empty()) {
      throw UserError("pad_attention_heads: " + modulePathOf(*found.unrecognised.front()) +
                      " takes every second value of a head in a way not recognised as "
                      "rotate_every_two (stack((-x[..., 1::2], x[..., ::2]), -1).flatten(-2)): "
                      "not padded");
    }
    if (found.rotations.empty()) return found;
    std::set<char> roles;
    for (const PairRotation& rotation : found.rotations) {
      roles.insert(projectionFeeding(rotation.rotated, role_of, attention.module));
    }
    if (attention.fused() || roles != std::set<char>{'q', 'k'}) {
      throw UserError("pad_attention_heads: " + attention.module +
                      " rotates pairs of values (interleaved rotary) other than those of "
                      "separate query and key projections: not rewritten");
    }
    return found;
  }

  void pad(const FoundAttention& attention) {
    activations_ = computedFromProjections(edit_.graph());
    const std::string& module = attention.module;
    const bool rope = !attention.rotary.empty();
    const int64_t heads = attention.heads;
    const int64_t head_dim = attention.head_dim;
    const int64_t rotated = rope ? rotatedValues(attention) : 0;
    const bool partial = rope && rotated != head_dim;
    const std::map<const Node*, char> role_of = {
        {attention.q, 'q'}, {attention.k, 'k'}, {attention.v, 'v'}};
    const InterleavedRotations interleaved =
        rope ? interleavedRotations(attention, role_of) : InterleavedRotations{};
    const bool pairs = !interleaved.rotations.empty();
    // RoPE as a matmul needs each half of a head in whole sticks; partial rotary its pass-through
    // part on a stick too; otherwise all heads together must fill whole sticks (3 heads of 32
    // become 3 of 64; 2 heads of 32 already do).
    const auto fits = [&](int64_t size) {
      return rope ? size % (2 * stick_) == 0 : heads * size % stick_ == 0;
    };
    int64_t padded = target_;
    if (partial && rotated % (2 * stick_) == 0 && head_dim % stick_ == 0) {
      padded = head_dim;  // the halves and the pass-through already start on sticks
    } else if (partial) {
      int64_t smallest = 0;
      for (const HeadSegment& segment : ropeSegments(head_dim, rotated, 0)) {
        smallest += segment.padded;
      }
      if (padded != 0 && padded != smallest) {
        throw UserError("pad_attention_heads: " + module + " rotates " + std::to_string(rotated) +
                        " of each head's " + std::to_string(head_dim) +
                        " values (partial rotary): its heads are padded to " +
                        std::to_string(smallest) + ", not " + std::to_string(padded) +
                        " (leave head_dim 0)");
      }
      padded = smallest;
    } else {
      if (padded == 0) {
        padded = rope ? (head_dim + 2 * stick_ - 1) / (2 * stick_) * 2 * stick_
                      : paddedHeadSize(edit_, module, heads, head_dim, stick_);
      }
      if (!fits(padded) || padded < head_dim) {
        throw UserError("pad_attention_heads: head_dim " + std::to_string(padded) +
                        " must be at least " + std::to_string(head_dim) +
                        (rope ? " and a multiple of two sticks (" + std::to_string(2 * stick_) + ")"
                              : " and fill whole sticks with the " + std::to_string(heads) +
                                    " heads (" + std::to_string(stick_) + " values each)"));
      }
    }
    const bool dropped = rope && !partial && dropEmptyPassThrough(module, role_of);
    if (padded == head_dim && !pairs) {  // the heads fit: nothing more to do here
      if (dropped) ++edit_.change().rewrites;
      return;
    }
    if (padded != head_dim && attention.o == nullptr) {
      throw UserError("pad_attention_heads: no projection reads the merged heads of " + module +
                      ": the padding would reach what follows");
    }
    const std::vector<HeadSegment> segments =
        rope ? ropeSegments(head_dim, rotated, padded) : std::vector<HeadSegment>{};
    // Interleaved rotary's pairs move apart first (the queries' and keys' rotated rows, first
    // values then second ones); the padding then sees rotate_half's halves.
    const auto layout = [&](const at::Tensor& tensor, int64_t dim) {
      return pairs ? deinterleaveHeads(tensor, dim, head_dim, rotated) : tensor.detach();
    };
    const at::TensorOptions options = tensorOf(projectionWeight(*attention.k)).options();
    // Read before any is replaced: a weight read may feed more than one of them.
    std::vector<std::pair<Value*, at::Tensor>> replacements;
    for (const auto& [projection, role] : role_of) {
      const int64_t dim = projectionOutputDim(*projection);
      const bool rotates = rope && role != 'v';
      const auto padding = [&](const at::Tensor& tensor, int64_t along) {
        if (!rotates) return padHeadsAlong(tensor, along, head_dim, padded);
        const at::Tensor moved = layout(tensor, along);
        return padded == head_dim ? moved : padSegmentsAlong(moved, along, segments);
      };
      Value* weight = projectionWeight(*projection);
      if (rotates || padded != head_dim) {
        replacements.emplace_back(weight, padding(tensorOf(weight), dim));
      }
      Value* bias = projectionBias(*projection);
      if (bias != nullptr && (rotates || padded != head_dim)) {
        replacements.emplace_back(bias, padding(tensorOf(bias), 0));
      }
    }
    const bool fused = attention.fused();
    // What gives the tables' halves (GPT-J splits its table of sines and cosines), read before
    // the tables are replaced.
    std::vector<Node*> table_splits;
    if (padded != head_dim) {
      // A fused projection's values are padded as its queries and keys are (one layout for every
      // part of a head): the output projection reads them in that layout.
      Value* o_weight = projectionWeight(*attention.o);
      const int64_t o_in = 1 - projectionOutputDim(*attention.o);
      replacements.emplace_back(o_weight,
                                fused ? padSegmentsAlong(tensorOf(o_weight), o_in, segments)
                                      : padHeadsAlong(tensorOf(o_weight), o_in, head_dim, padded));
      for (Value* table : attention.rotary) {
        // Tables shared by every layer (a model-level rotary embedding) are padded once.
        if (!padded_tables_.insert(table).second) continue;
        rotated_widths_[table] = rotated;
        replacements.emplace_back(table, padTable(tensorOf(table), segments[0]));
        if (tensorOf(table).dim() == 2) {
          for (Node* split : tableReaders({table}, aten::split, activations_)) {
            table_splits.push_back(split);
          }
        }
      }
    }
    for (auto& [read, tensor] : replacements) replaceWeightRead(edit_, read, tensor);
    for (Node* split : table_splits) {
      const auto size = edit_.constantOrWeight(split->input(1));
      if (size && size->isInt() && size->toInt() == segments[0].size) {
        setIntInput(edit_, *split, 1, segments[0].padded);
      }
    }
    if (padded != head_dim) widenHeads(attention, role_of, padded);
    if (partial && padded != head_dim) {
      moveRotaryCuts(module, role_of, rotated, 2 * segments[0].padded);
    }
    // After the cuts move: a half of rotated values can end where the rotated part once did.
    if (pairs) {
      rewriteAsHalves(edit_, interleaved, padded == head_dim ? rotated / 2 : segments[0].padded);
    }
    const std::vector<int64_t> moved =
        pairs ? deinterleavedPositions(head_dim, rotated) : std::vector<int64_t>{};
    keepCachesUnpadded(edit_, module, options, head_dim, padded, stick_, [&](const Node& write) {
      const char role = projectionFeeding(write.input(3), role_of, module);
      if (!fused && role != 'k' && role != 'v') {
        throw UserError("pad_attention_heads: the cache write at " + modulePathOf(write) +
                        " is fed by neither the key nor the value projection");
      }
      // Keys under RoPE sit in their padded segments (padSegmentsAlong), and so do a fused
      // projection's values; interleaved rotary's pairs are apart in them.
      std::vector<int64_t> at(head_dim);
      for (int64_t i = 0; i < head_dim; ++i) at[i] = i;
      if (rope && (role == 'k' || fused)) {
        if (pairs) at = moved;
        if (padded != head_dim) {
          std::vector<int64_t> padded_at(head_dim);
          int64_t from = 0;
          int64_t to = 0;
          for (const HeadSegment& segment : segments) {
            for (int64_t i = 0; i < segment.size; ++i) padded_at[from + i] = to + i;
            from += segment.size;
            to += segment.padded;
          }
          for (int64_t& position : at) position = padded_at[position];
        }
      }
      return at;
    });
    ++edit_.change().rewrites;
  }

  // A rotation over whole heads written for partial rotary (Phi-3's and GPT-NeoX's
  // `cat([rotated, q[..., rotary_dim:]], -1)`) still cuts off a pass-through part, which is empty:
  // zero-length tensors crash the device, so each empty part of queries or keys is dropped from
  // the cat joining it back (a cat of one value is that value). Whether any was.
  bool dropEmptyPassThrough(const std::string& module, const std::map<const Node*, char>& role_of) {
    bool dropped = false;
    for (const Node* found : allNodes(edit_.graph())) {
      if (found->kind() != aten::cat || !isWithin(modulePathOf(*found), module)) continue;
      Node* cat = const_cast<Node*>(found);  // this edit owns the graph
      Node* list = cat->input(0)->node();
      if (list->kind() != prim::ListConstruct || cat->input(0)->uses().size() != 1) continue;
      for (size_t i = list->inputs().size(); i-- > 0 && list->inputs().size() > 1;) {
        Node* piece = list->input(i)->node();
        const auto shape = edit_.describe(list->input(i));
        if (piece->kind() != aten::slice || !namesLastDim(edit_, *piece, 1, piece->input(0)) ||
            !shape || shape->shape.empty() || shape->shape.back() != 0) {
          continue;
        }
        const char role = projectionFeeding(piece->output(), role_of, module);
        if (role != 'q' && role != 'k') continue;
        list->removeInput(i);
        edit_.destroyIfUnused(piece);
        dropped = true;
      }
      if (list->inputs().size() == 1) {
        cat->output()->replaceAllUsesWith(list->input(0));
        edit_.destroy(cat);
        edit_.destroyIfUnused(list);
      }
    }
    return dropped;
  }

  // 1-D frequencies get zero entries (cos 1, sin 0) for each half's padding; a table of sines
  // and cosines zero columns after each half. The padded queries and keys are zeros, which any
  // value of them leaves zero.
  static at::Tensor padTable(const at::Tensor& table, const HeadSegment& half) {
    if (table.dim() == 1) {
      return at::constant_pad_nd(table.detach(), {0, half.padded - half.size}, 0);
    }
    return padSegmentsAlong(table, table.dim() - 1, {half, half});
  }

  // The head split and merge views take the padded size.
  void widenHeads(const FoundAttention& attention, const std::map<const Node*, char>& role_of,
                  int64_t padded) {
    const std::string& module = attention.module;
    const int64_t heads = attention.heads;
    const int64_t head_dim = attention.head_dim;
    const bool rope = !attention.rotary.empty();
    // The merge first: once split, a padded head can have the merged width (2 x 32 -> 64).
    if (!rope) widenHeadMerge(module, role_of, head_dim, heads * head_dim, heads * padded);
    // Read before the splits change: the views that follow them.
    const std::vector<Node*> later_views =
        rope ? viewsOfHeads(module, *attention.o, role_of, head_dim) : std::vector<Node*>{};
    for (const auto& [projection, role] : role_of) {
      widenHeadSplit(module, *projection, head_dim, padded, attention.fused());
    }
    for (Node* shape : later_views) {
      const size_t last = shape->inputs().size() - 1;
      if (lastInt(edit_, *shape) == head_dim) {
        setIntInput(edit_, *shape, last, padded);
      } else if (lastInt(edit_, *shape) == heads * head_dim) {
        setIntInput(edit_, *shape, last, heads * padded);
      }
    }
  }

  // Partial rotary cuts each query and key head at rotary_ndims (`q[..., :rotary_ndims]`,
  // `q[..., rotary_ndims:]`): in the padded head the pass-through part starts after both padded
  // halves. rotate_half's own cut, taken from the width it is given, follows by itself.
  void moveRotaryCuts(const std::string& module, const std::map<const Node*, char>& role_of,
                      int64_t rotated, int64_t padded_rotated) {
    int cuts = 0;
    for (const Node* found : allNodes(edit_.graph())) {
      if (found->kind() != aten::slice || !isWithin(modulePathOf(*found), module)) continue;
      Node* slice = const_cast<Node*>(found);  // this edit owns the graph
      const auto start = edit_.constantOrWeight(slice->input(2));
      const auto end = edit_.constantOrWeight(slice->input(3));
      // A cut at the tables' own width (GPT-NeoX's `q[..., :cos.shape[-1]]`) moves with them.
      if (!end && isRotaryWidth(slice->input(3))) ++cuts;
      if (!start && isRotaryWidth(slice->input(2))) ++cuts;
      if (!start || !end || !start->isInt() || !end->isInt()) continue;
      // Along the heads' last dimension only (not a cut of the positions that happens to match).
      const auto dim = edit_.constantOrWeight(slice->input(1));
      const auto input = edit_.describe(slice->input(0));
      if (!dim || !dim->isInt() || !input || input->shape.empty()) continue;
      const auto rank = static_cast<int64_t>(input->shape.size());
      if (dim->toInt() != -1 && dim->toInt() != rank - 1) continue;
      const bool rotary_part = start->toInt() == 0 && end->toInt() == rotated;
      const bool pass_part = start->toInt() == rotated && end->toInt() > rotated;
      if (!rotary_part && !pass_part) continue;
      const char role = projectionFeeding(slice->input(0), role_of, module);
      if (role != 'q' && role != 'k') continue;
      setIntInput(edit_, *slice, rotary_part ? 3 : 2, padded_rotated);
      ++cuts;
    }
    if (cuts == 0) {
      throw UserError("pad_attention_heads: found no cut of the heads of " + module + " at " +
                      std::to_string(rotated) + " (partial rotary's rotated part)");
    }
  }

  // Whether `bound` is the last size of the cos or sin table (through the views and casts
  // between them): it is the rotated width, padded with the tables.
  bool isRotaryWidth(const Value* bound) const {
    const Node* size = bound->node();
    // A traced size comes back as int(NumToTensor(size(x, d))).
    while ((size->kind() == aten::Int || size->kind() == prim::NumToTensor) &&
           !size->inputs().empty()) {
      size = size->input(0)->node();
    }
    if (size->kind() != aten::size || size->inputs().size() != 2) return false;
    const auto dim = torch::jit::toIValue(size->input(1));
    const auto table = edit_.describe(size->input(0));
    if (!dim || !dim->isInt() || !table || table->shape.empty()) return false;
    const auto rank = static_cast<int64_t>(table->shape.size());
    if (dim->toInt() != -1 && dim->toInt() != rank - 1) return false;
    const Node* node = size->input(0)->node();
    for (int hops = 0; hops < 8 && node->kind() != prim::Param; ++hops) {
      if (node->kind() == aten::cos || node->kind() == aten::sin) return true;
      if (node->inputs().empty()) return false;
      node = node->input(0)->node();
    }
    return false;
  }

  // Which of q, k and v feeds `value` within the attention module (metadata reads such as a
  // dtype taken from the values do not count): 0 when none or several.
  static char projectionFeeding(const Value* value, const std::map<const Node*, char>& role_of,
                                const std::string& module) {
    std::set<char> found;
    std::set<const Node*> seen;
    std::vector<const Value*> pending = {value};
    while (!pending.empty()) {
      const Value* current = pending.back();
      const Node* node = current->node();
      pending.pop_back();
      // A scripted helper's returned (q, k, v) are unpacked from the tuple it built: follow
      // only the element this value is.
      if (node->kind() == prim::TupleUnpack &&
          node->input()->node()->kind() == prim::TupleConstruct) {
        const auto outputs = node->outputs();
        const size_t index = std::find(outputs.begin(), outputs.end(), current) - outputs.begin();
        pending.push_back(node->input()->node()->input(index));
        continue;
      }
      if (!seen.insert(node).second || !isWithin(modulePathOf(*node), module)) continue;
      if (auto role = role_of.find(node); role != role_of.end()) {
        found.insert(role->second);
        continue;
      }
      if (node->kind() == prim::dtype || node->kind() == aten::size ||
          node->kind() == prim::device) {
        continue;
      }
      for (const Value* input : node->inputs()) pending.push_back(input);
    }
    return found.size() == 1 ? *found.begin() : 0;
  }

  // The context's view back to [..., heads * head_dim] inside the attention module. With one
  // head the projections' own split views end in that width too: they are widenHeadSplit's.
  void widenHeadMerge(const std::string& module, const std::map<const Node*, char>& role_of,
                      int64_t head_dim, int64_t width, int64_t padded_width) {
    std::set<const Node*> splits;
    for (const auto& [projection, role] : role_of) {
      splits.insert(headSplitShape(*projection, head_dim));
    }
    for (const Node* node : allNodes(edit_.graph())) {
      Node* shape = viewShapeList(*node);
      if (shape == nullptr || !isWithin(modulePathOf(*node), module)) continue;
      if (splits.count(shape)) continue;
      if (lastInt(edit_, *shape) == width) {
        setIntInput(edit_, *shape, shape->inputs().size() - 1, padded_width);
      }
    }
  }

  // The shape lists of the views after the head splits that name a head's size, or the merged
  // width, as constants: Falcon's `reshape(batch, heads, length, self.head_dim)` of each split
  // part and `reshape(batch, length, heads * head_dim)` of the context (Llama's take theirs from
  // sizes, which follow the padding by themselves). They are found by following the heads from
  // the splits through every value whose last dimension is a head's, within the module; a
  // product whose first operand is a head computes scores, not heads, and ends the walk.
  std::vector<Node*> viewsOfHeads(const std::string& module, const Node& o_projection,
                                  const std::map<const Node*, char>& role_of,
                                  int64_t head_dim) const {
    std::set<const Node*> splits;
    std::vector<const Value*> pending;
    for (const auto& [projection, role] : role_of) {
      const Node* split = headSplitShape(*projection, head_dim);
      if (split == nullptr || !splits.insert(split).second) continue;
      for (const auto& use : split->output()->uses()) pending.push_back(use.user->output(0));
    }
    const std::string o_module = modulePathOf(o_projection);
    std::vector<Node*> views;
    std::set<const Value*> seen;
    while (!pending.empty()) {
      const Value* value = pending.back();
      pending.pop_back();
      if (!seen.insert(value).second) continue;
      for (const auto& use : value->uses()) {
        Node* user = use.user;
        const std::string path = modulePathOf(*user);
        if (!isWithin(path, module) || isWithin(path, o_module)) continue;
        if (isProduct(*user) && use.offset == 0) continue;
        Node* shape = viewShapeList(*user);
        const bool new_view = shape != nullptr && !splits.count(shape) &&
                              std::find(views.begin(), views.end(), shape) == views.end();
        if (new_view) views.push_back(shape);
        for (const Value* output : user->outputs()) {
          const auto recorded = edit_.describe(output);
          if (recorded && recorded->shape.size() >= 3 && recorded->shape.back() == head_dim) {
            pending.push_back(output);
          }
        }
      }
    }
    return views;
  }

  // The shape lists of the views splitting the projection's output into heads, and the cuts
  // (slices along its last dimension) that come before them. The views may come after what acts
  // on each value alone: OPT scales its queries first (`q_proj(x) * scaling`), and a cast or a
  // contiguous copy changes no position either. A fused projection may be cut into its queries,
  // keys and values first (Phi-3's `qkv[..., :query_pos]`), each part viewed on its own.
  struct HeadSplits {
    std::vector<Node*> shapes;
    std::vector<Node*> cuts;
  };
  HeadSplits headSplits(const Node& projection, int64_t head_dim) const {
    HeadSplits found;
    std::vector<const Value*> pending = {projectionResult(projection)};
    while (!pending.empty()) {
      const Value* value = pending.back();
      pending.pop_back();
      for (const auto& use : value->uses()) {
        Node* user = use.user;
        const auto kind = user->kind();
        if (use.offset == 0 &&
            (kind == aten::mul || kind == aten::div || kind == aten::to ||
             kind == aten::contiguous) &&
            (user->inputs().size() < 2 || !isTensor(user->input(1)) ||
             isScalarConstant(user->input(1)))) {
          pending.push_back(user->output());
          continue;
        }
        if (kind == aten::slice && use.offset == 0 &&
            namesLastDim(edit_, *user, 1, user->input(0))) {
          found.cuts.push_back(user);
          pending.push_back(user->output());
          continue;
        }
        Node* shape = viewShapeList(*user);
        // A constant when traced, an int attribute (self.head_dim) when scripted.
        if (shape != nullptr && lastInt(edit_, *shape) == head_dim &&
            std::find(found.shapes.begin(), found.shapes.end(), shape) == found.shapes.end()) {
          found.shapes.push_back(shape);
        }
      }
    }
    return found;
  }

  // The first of them; null when none.
  Node* headSplitShape(const Node& projection, int64_t head_dim) const {
    const HeadSplits found = headSplits(projection, head_dim);
    return found.shapes.empty() ? nullptr : found.shapes.front();
  }

  // The projection's output is viewed as [batch, length, heads, head_dim]: the constant
  // head_dim in that shape becomes the padded one. A fused projection cut into its parts before
  // its views has each view widened, and each cut at a whole number of heads moves with them.
  // A fused projection may also be viewed as [..., heads, 3 x head_dim] (GPT-NeoX's q, k and v of
  // a head side by side, chunked after).
  void widenHeadSplit(const std::string& module, const Node& projection, int64_t head_dim,
                      int64_t padded, bool fused) {
    const HeadSplits found = headSplits(projection, head_dim);
    if (!found.shapes.empty()) {
      for (Node* shape : found.shapes) {
        setIntInput(edit_, *shape, shape->inputs().size() - 1, padded);
      }
      for (Node* cut : fused ? found.cuts : std::vector<Node*>{}) {
        for (size_t bound : {2, 3}) {
          const auto at = edit_.constantOrWeight(cut->input(bound));
          if (at && at->isInt() && at->toInt() % head_dim == 0 &&
              at->toInt() < std::numeric_limits<int64_t>::max() / padded) {
            setIntInput(edit_, *cut, bound, at->toInt() / head_dim * padded);
          }
        }
      }
      return;
    }
    if (Node* shape = fused ? headSplitShape(projection, 3 * head_dim) : nullptr) {
      setIntInput(edit_, *shape, shape->inputs().size() - 1, 3 * padded);
      return;
    }
    throw UserError("pad_attention_heads: found no [..., heads, " + std::to_string(head_dim) +
                    "] view of " + modulePathOf(projection) + " in " + module);
  }

  static bool isTensor(const Value* value) {
    return value->type()->kind() == c10::TypeKind::TensorType;
  }

  // A one-value tensor constant (a traced `* scaling`): it scales every position alike.
  bool isScalarConstant(const Value* value) const {
    const auto constant = edit_.constantOrWeight(value);
    return constant && constant->isTensor() && constant->toTensor().numel() == 1;
  }

  GraphEdit& edit_;
  const DeviceProfile& profile_;
  int64_t stick_;
  std::string module_;
  int64_t target_ = 0;
  std::set<const Value*> padded_tables_;
  std::map<const Value*, int64_t> rotated_widths_;  // of the tables padded already
  std::set<const Value*> activations_;  // computedFromProjections, for the attention padded
};

}  // namespace

void padAttentionHeads(const nlohmann::json& arguments, GraphEdit& edit,
                       const DeviceProfile& profile) {
  torch::NoGradGuard no_grad;
  HeadPadder(arguments, edit, profile).run();
}

}  // namespace stickler
