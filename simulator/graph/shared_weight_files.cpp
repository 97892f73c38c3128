#include "simulator/graph/shared_weight_files.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ATen/Functions.h>
#include <torch/csrc/jit/ir/constants.h>
#include <torch/csrc/jit/ir/ir.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "simulator/graph/file_mapping.h"

namespace stickler {
namespace {

constexpr int kSeals = F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK;

bool isSealedMemoryFile(int fd) {
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode) || status.st_size <= 0) return false;
  const int seals = ::fcntl(fd, F_GET_SEALS);
  return seals >= 0 && (seals & kSeals) == kSeals;
}

// A tensor of `like`'s dtype and shape over the whole of `mapping`.
at::Tensor tensorOver(const std::shared_ptr<FileMapping>& mapping, const at::Tensor& like) {
  c10::Storage storage(c10::Storage::use_byte_size_t(), mapping->size(),
                       dataPointerInto(mapping, 0), /*allocator=*/nullptr, /*resizable=*/false);
  return at::empty({0}, like.options()).set_(storage, 0, like.sizes(), like.strides());
}

bool writeAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t written = ::write(fd, data, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0) return false;
    data += written;
    size -= static_cast<size_t>(written);
  }
  return true;
}

struct Offers {
  std::mutex mutex;
  std::vector<std::shared_ptr<FileMapping>> files;
};

Offers& offers() {
  static Offers offered;
  return offered;
}

}  // namespace

at::Tensor inSealedMemoryFile(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.device().is_cpu() || !tensor.is_contiguous() ||
      tensor.nbytes() == 0 || tensor.is_meta()) {
    return tensor;
  }
  const int fd = ::memfd_create("stickler-weight", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return tensor;
  if (!writeAll(fd, static_cast<const char*>(tensor.data_ptr()), tensor.nbytes()) ||
      ::fcntl(fd, F_ADD_SEALS, kSeals | F_SEAL_SEAL) != 0) {
    ::close(fd);
    return tensor;
  }
  // Mapped at once: the pages count as this process's from now on, not from their first read.
  auto mapping = std::make_shared<FileMapping>(fd, tensor.nbytes(), /*populate=*/true);
  if (!mapping->ok()) return tensor;
  return tensorOver(mapping, tensor);
}

std::vector<int> sealedMemoryFilesOf(const torch::jit::Graph& graph, size_t limit) {
  std::vector<std::pair<size_t, int>> files;  // size, the mapping's descriptor
  std::vector<const torch::jit::Block*> blocks{graph.block()};
  while (!blocks.empty()) {
    const torch::jit::Block* block = blocks.back();
    blocks.pop_back();
    for (const torch::jit::Node* node : block->nodes()) {
      for (const torch::jit::Block* inner : node->blocks()) blocks.push_back(inner);
      if (node->kind() != c10::prim::Constant || !node->output()->type()->cast<c10::TensorType>()) {
        continue;
      }
      const std::optional<c10::IValue> value = torch::jit::toIValue(node->output());
      if (!value || !value->isTensor() || !value->toTensor().has_storage()) continue;
      const FileMapping* mapping = mappingOf(value->toTensor().storage().data_ptr());
      if (mapping == nullptr || !isSealedMemoryFile(mapping->fd())) continue;
      files.emplace_back(mapping->size(), mapping->fd());
    }
  }
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  files.erase(std::unique(files.begin(), files.end()), files.end());
  std::vector<int> duplicates;
  for (const auto& [size, fd] : files) {
    if (duplicates.size() == limit) break;
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy >= 0) duplicates.push_back(copy);
  }
  return duplicates;
}

OfferedWeightFiles::OfferedWeightFiles(const std::vector<int>& fds) {
  Offers& offered = offers();
  std::lock_guard<std::mutex> lock(offered.mutex);
  for (const int fd : fds) {
    if (!isSealedMemoryFile(fd)) continue;
    const int copy = ::fcntl(fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) continue;
    struct stat status {};
    ::fstat(copy, &status);
    // Mapped as it is read, not at once: a page is read only to be compared with a weight of the
    // same size made here, so a file far larger than any weight (sparse, from a caller running
    // code no one reviewed) costs nothing but address space.
    auto mapping = std::make_shared<FileMapping>(copy, static_cast<size_t>(status.st_size));
    if (!mapping->ok()) continue;
    offered.files.push_back(mapping);
    mine_.push_back(std::move(mapping));
  }
}

OfferedWeightFiles::~OfferedWeightFiles() {
  Offers& offered = offers();
  std::lock_guard<std::mutex> lock(offered.mutex);
  // Those a weight took stay mapped as long as it lives; the rest are let go.
  offered.files.erase(std::remove_if(offered.files.begin(), offered.files.end(),
                                     [this](const std::shared_ptr<FileMapping>& file) {
                                       return std::find(mine_.begin(), mine_.end(), file) !=
                                              mine_.end();
                                     }),
                      offered.files.end());
}

at::Tensor offeredWeightLike(const at::Tensor& tensor) {
  if (!tensor.defined() || !tensor.device().is_cpu() || !tensor.is_contiguous()) return {};
  Offers& offered = offers();
  std::lock_guard<std::mutex> lock(offered.mutex);
  for (const std::shared_ptr<FileMapping>& file : offered.files) {
    if (file->size() != tensor.nbytes() ||
        std::memcmp(file->at(0), tensor.data_ptr(), tensor.nbytes()) != 0) {
      continue;
    }
    return tensorOver(file, tensor);
  }
  return {};
}

}  // namespace stickler
