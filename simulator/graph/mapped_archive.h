// Loading a TorchScript archive with its weights mapped from the file instead of copied.
//
// torch::jit::load reads every tensor record into memory of its own: each process that loads a
// model holds a private copy of its weights, and the CLI beside the model host it starts held
// the model twice (16 GB twice for an 8B model in bfloat16). Mapped, the weights are the file's
// pages in the page cache: one copy however many processes load the model, read only as they are
// used (inspecting a model touches none of them), and given back by the kernel under pressure.
// The mapping is private: a weight written in place is copied on write, never into the file.
#pragma once

#include <torch/script.h>

#include <string>

namespace stickler {

struct MappedLoad {
  torch::jit::Module module;
  // Whether the weights are the file's pages. False when some tensor record could not be
  // mapped (not stored, misaligned, or a storage the load left nowhere to find): the archive
  // was then loaded the ordinary way, every record copied.
  bool mapped = false;
  size_t mapped_records = 0;
};

// Loads the archive at `path` on the CPU. Throws what torch::jit::load throws for a malformed
// archive, and UserError when the file cannot be opened or mapped.
MappedLoad loadArchiveMapped(const std::string& path);

// A tensor with `tensor`'s values, to be written in place. For a contiguous weight mapped from
// its archive, a second private mapping of the same pages: only the pages then written become
// its own (the device's copy of a weight its format rounds in a few places costs those pages).
// Otherwise a clone.
at::Tensor copyOnWrite(const at::Tensor& tensor);

}  // namespace stickler
