#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "simulator/graph/before_reference.h"

namespace stickler {

struct LoadedModel;

// What a caller does with a model: run it (values), or only read what each node sees
// (inspecting or lowering it), for which a model loaded for its shapes only will do
// (LoadOptions::shapes_only: its weights never read).
enum class ModelNeeds { kValues, kShapes };

// Models loaded in one session (an MCP session, say), kept across calls: a model is loaded
// once and reloaded when its file changes (size or modification time) or its inputs differ.
class ModelCache {
 public:
  explicit ModelCache(size_t capacity = 8) : capacity_(capacity) {}
  // The model at `path` with these --input flags (empty: the card's inputs): the adapted
  // model when adapters are applied to it in this session (see setAdapted), else as loaded.
  // A model kept for its shapes only is loaded again, with values, when values are needed.
  std::shared_ptr<const LoadedModel> get(const std::string& path,
                                         const std::vector<std::string>& input_flags,
                                         ModelNeeds needs = ModelNeeds::kValues);
  // The model as loaded from its file, whatever is applied to it.
  std::shared_ptr<const LoadedModel> original(const std::string& path,
                                              const std::vector<std::string>& input_flags,
                                              ModelNeeds needs = ModelNeeds::kValues);
  // What get() returns for the model from now on, until the file changes; nullptr goes back
  // to the loaded model. `original` is the model the adaptation started from.
  void setAdapted(const std::string& path, const std::vector<std::string>& input_flags,
                  std::shared_ptr<const LoadedModel> original,
                  std::shared_ptr<const LoadedModel> adapted);
  size_t size() const;
  size_t loads() const;  // how many times a model was actually loaded

 private:
  struct Entry {
    std::shared_ptr<const LoadedModel> model;
    std::shared_ptr<const LoadedModel> adapted;  // adapters applied to `model`, or null
    int64_t file_size = 0;
    int64_t modified = 0;
    uint64_t last_used = 0;
  };
  mutable std::mutex mutex_;
  std::map<std::string, Entry> entries_;
  size_t capacity_;
  uint64_t clock_ = 0;
  size_t loads_ = 0;
};

// The model from `cache` when there is one, else freshly loaded.
std::shared_ptr<const LoadedModel> obtainModel(const std::string& path,
                                               const std::vector<std::string>& input_flags,
                                               ModelCache* cache,
                                               ModelNeeds needs = ModelNeeds::kValues);

// The model loaded afresh with its example inputs drawn from `seed` (an equivalence check's
// further draws from the seeds after it): the review gate's draws, never the ones every tool
// uses (seed 0).
std::shared_ptr<const LoadedModel> loadModelSeeded(const std::string& path, uint64_t seed);

// A command line's model for a diagnosis, which keeps no session: loaded recording from shapes
// and shown to `before_reference` first, then recorded again from values for the reference
// (shapes that do not carry the model through record from values at once, unseen).
std::shared_ptr<const LoadedModel> loadBesideReference(const std::string& path,
                                                       const std::vector<std::string>& input_flags,
                                                       const BeforeReference& before_reference);

}  // namespace stickler
