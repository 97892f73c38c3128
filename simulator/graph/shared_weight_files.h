// Weights an adapter makes, held once by a caller and its model host.
//
// `pad-attention-heads` makes a model's padded q/k/v/o weights in every process that makes the
// adapted model: in the caller, which checks the adapters and runs the CPU reference, and in its
// model host, which runs the device. At 480M that was 0.30 GB in each, beside 0.97 GB of archive.
// Made in a sealed memory file instead (shared_constants.h puts every weight it interns in one),
// the caller's copy goes to the host with the model's recipe (host_load passes the files); the
// host, making the same weight again, maps the file whose bytes are the ones it made, and lets
// its own go. One copy of the pages then serves both. The file is sealed against writing,
// growing and shrinking before it is passed, and the host maps only a file so sealed: its bytes
// cannot change under the host after the host compared them, whatever code the caller runs.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <memory>
#include <vector>

namespace torch::jit {
struct Graph;
}  // namespace torch::jit

namespace stickler {

class FileMapping;

// `tensor`'s bytes in a sealed memory file, mapped privately (a write to it is the writer's own
// copy of the page), as a tensor of the same dtype and shape. `tensor` itself when it is not a
// contiguous CPU tensor or no file can be made.
at::Tensor inSealedMemoryFile(const at::Tensor& tensor);

// The sealed memory files of the tensors `graph` holds as constants (its blocks' too), largest
// first and at most `limit`: new descriptors of them, for a message to pass.
std::vector<int> sealedMemoryFilesOf(const torch::jit::Graph& graph, size_t limit);

// Files another process passed, offered to offeredWeightLike while this object lives. Only
// sealed memory files are taken (each descriptor is duplicated; the caller keeps its own).
class OfferedWeightFiles {
 public:
  explicit OfferedWeightFiles(const std::vector<int>& fds);
  ~OfferedWeightFiles();
  OfferedWeightFiles(const OfferedWeightFiles&) = delete;
  OfferedWeightFiles& operator=(const OfferedWeightFiles&) = delete;
  size_t size() const { return mine_.size(); }

 private:
  std::vector<std::shared_ptr<FileMapping>> mine_;
};

// The offered file whose bytes are `tensor`'s, as a tensor of `tensor`'s dtype and shape over
// its pages; undefined when none is (or `tensor` is not contiguous).
at::Tensor offeredWeightLike(const at::Tensor& tensor);

}  // namespace stickler
