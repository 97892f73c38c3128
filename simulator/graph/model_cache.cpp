#include "simulator/graph/model_cache.h"

#include <sys/stat.h>

#include "simulator/graph/loaded_model.h"

namespace stickler {
namespace {

bool fileStamp(const std::string& path, int64_t& size, int64_t& modified) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return false;
  size = info.st_size;
  modified = static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  return true;
}

}  // namespace

namespace {
std::string cacheKey(const std::string& path, const std::vector<std::string>& input_flags) {
  std::string key = path;
  for (const auto& flag : input_flags) key += '\n' + flag;
  return key;
}
}  // namespace

std::shared_ptr<const LoadedModel> ModelCache::get(const std::string& path,
                                                   const std::vector<std::string>& input_flags,
                                                   ModelNeeds needs) {
  auto model = original(path, input_flags, needs);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(cacheKey(path, input_flags));
  if (it != entries_.end() && it->second.model == model && it->second.adapted) {
    return it->second.adapted;
  }
  return model;
}

void ModelCache::setAdapted(const std::string& path, const std::vector<std::string>& input_flags,
                            std::shared_ptr<const LoadedModel> original,
                            std::shared_ptr<const LoadedModel> adapted) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(cacheKey(path, input_flags));
  if (it == entries_.end() || it->second.model != original) return;  // reloaded meanwhile
  it->second.adapted = std::move(adapted);
}

namespace {
LoadOptions optionsFor(const std::vector<std::string>& input_flags, ModelNeeds needs) {
  LoadOptions options = loadOptionsFromFlags(input_flags);
  options.shapes_only = needs == ModelNeeds::kShapes;
  return options;
}
}  // namespace

std::shared_ptr<const LoadedModel> ModelCache::original(const std::string& path,
                                                        const std::vector<std::string>& input_flags,
                                                        ModelNeeds needs) {
  const std::string key = cacheKey(path, input_flags);
  int64_t size = 0, modified = 0;
  const bool exists = fileStamp(path, size, modified);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (exists && it != entries_.end() && it->second.file_size == size &&
        it->second.modified == modified &&
        (needs == ModelNeeds::kShapes || !it->second.model->shapes_only)) {
      it->second.last_used = ++clock_;
      return it->second.model;
    }
  }
  // Load outside the lock: loading takes time and other calls may use other models.
  std::shared_ptr<const LoadedModel> model = loadModel(path, optionsFor(input_flags, needs));
  std::lock_guard<std::mutex> lock(mutex_);
  ++loads_;
  entries_[key] = Entry{model, nullptr, size, modified, ++clock_};
  // Adapted models stay: their adapters would be lost with them.
  while (entries_.size() > capacity_) {
    auto oldest = entries_.end();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.adapted) continue;
      if (oldest == entries_.end() || it->second.last_used < oldest->second.last_used) oldest = it;
    }
    if (oldest == entries_.end()) break;
    entries_.erase(oldest);
  }
  return model;
}

size_t ModelCache::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_.size();
}

size_t ModelCache::loads() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return loads_;
}

std::shared_ptr<const LoadedModel> obtainModel(const std::string& path,
                                               const std::vector<std::string>& input_flags,
                                               ModelCache* cache, ModelNeeds needs) {
  if (cache != nullptr) return cache->get(path, input_flags, needs);
  return loadModel(path, optionsFor(input_flags, needs));
}

std::shared_ptr<const LoadedModel> loadModelSeeded(const std::string& path, uint64_t seed) {
  LoadOptions options;
  options.seed = seed;
  return loadModel(path, options);
}

std::shared_ptr<const LoadedModel> loadBesideReference(const std::string& path,
                                                       const std::vector<std::string>& input_flags,
                                                       const BeforeReference& before_reference) {
  LoadOptions options = loadOptionsFromFlags(input_flags);
  options.records_from_shapes = true;
  std::shared_ptr<const LoadedModel> shaped = loadModel(path, options);
  if (!shaped->records_from_shapes) return shaped;
  before_reference(shaped);
  return withExampleInputs(*shaped, shaped->example_inputs);
}

}  // namespace stickler
