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

std::shared_ptr<const LoadedModel> ModelCache::get(const std::string& path,
                                                   const std::vector<std::string>& input_flags) {
  std::string key = path;
  for (const auto& flag : input_flags) key += '\n' + flag;
  int64_t size = 0, modified = 0;
  const bool exists = fileStamp(path, size, modified);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (exists && it != entries_.end() && it->second.file_size == size &&
        it->second.modified == modified) {
      it->second.last_used = ++clock_;
      return it->second.model;
    }
  }
  // Load outside the lock: loading takes time and other calls may use other models.
  std::shared_ptr<const LoadedModel> model = loadModel(path, loadOptionsFromFlags(input_flags));
  std::lock_guard<std::mutex> lock(mutex_);
  ++loads_;
  entries_[key] = Entry{model, size, modified, ++clock_};
  while (entries_.size() > capacity_) {
    auto oldest = entries_.begin();
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->second.last_used < oldest->second.last_used) oldest = it;
    }
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
                                               ModelCache* cache) {
  if (cache != nullptr) return cache->get(path, input_flags);
  return loadModel(path, loadOptionsFromFlags(input_flags));
}

}  // namespace stickler
