#include "simulator/graph/shared_modules.h"

#include <filesystem>
#include <map>
#include <mutex>

namespace stickler {
namespace {

struct SharedModules {
  std::mutex mutex;
  // Weak: a module lives as long as the models made from it, not as long as the process.
  std::map<std::string, c10::weak_intrusive_ptr<c10::ivalue::Object>> by_archive;
};

SharedModules& sharedModules() {
  static SharedModules modules;
  return modules;
}

}  // namespace

torch::jit::Module sharedModule(const std::string& path, const std::string& sha256,
                                const std::function<torch::jit::Module()>& load) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  const std::string key = (error ? path : absolute.lexically_normal().string()) + "\n" + sha256;
  SharedModules& modules = sharedModules();
  {
    std::lock_guard<std::mutex> lock(modules.mutex);
    for (auto it = modules.by_archive.begin(); it != modules.by_archive.end();) {
      it = it->second.expired() ? modules.by_archive.erase(it) : std::next(it);
    }
    const auto found = modules.by_archive.find(key);
    if (found != modules.by_archive.end()) {
      if (c10::intrusive_ptr<c10::ivalue::Object> object = found->second.lock()) {
        return torch::jit::Module(std::move(object));
      }
    }
  }
  // Loaded outside the lock: another archive's load does not wait for this one. Two callers
  // loading one archive at once each keep their own module; the last is remembered.
  torch::jit::Module module = load();
  std::lock_guard<std::mutex> lock(modules.mutex);
  modules.by_archive.insert_or_assign(
      key, c10::weak_intrusive_ptr<c10::ivalue::Object>(module._ivalue()));
  return module;
}

}  // namespace stickler
