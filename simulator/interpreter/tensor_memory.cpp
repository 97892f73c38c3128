#include "simulator/interpreter/tensor_memory.h"

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <cstdlib>

#include "simulator/support/freed_memory.h"
#include "simulator/support/large_blocks.h"

namespace stickler {
namespace {

// From 1 MiB: malloc's heap is never trimmed (freed_memory.h), so it stays as large as everything
// below this size ever held at once; at 4 MiB, Llama-3-8B's 2 MiB hidden states and their
// captured copies made the review gate's worker's heap 1.3 GB (0.2 GB from 1 MiB).
constexpr size_t kOnHugePagesFrom = size_t{1} << 20;
constexpr size_t kAlignment = 64;  // LibTorch's own (c10::alloc_cpu), for vectorized kernels

// One deleter for both kinds of block, so that raw_deleter holds for all. Only a large block
// starts on a huge-page boundary as a rule; a small one that does by chance is looked up and
// not found.
void freeTensorMemory(void* data) {
  if (reinterpret_cast<uintptr_t>(data) % kLargeBlockAlignment == 0 && freeLargeBlock(data)) return;
  std::free(data);
}

// LibTorch's CPU allocator but for large tensors, which get mappings of their own
// (large_blocks.h); small ones come from malloc as with LibTorch's.
class TensorAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) const override {
    void* data = nullptr;
    const bool allocated =
        bytes == 0 || (bytes >= kOnHugePagesFrom ? (data = allocateLargeBlock(bytes)) != nullptr
                                                 : ::posix_memalign(&data, kAlignment, bytes) == 0);
    // As LibTorch's own allocator says it (a c10::Error naming the size), which is what a
    // sandboxed adapter that asks for too much is told.
    TORCH_CHECK(allocated, "not enough memory: you tried to allocate ", bytes,
                " bytes for a tensor");
    return {data, data, &freeTensorMemory, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &freeTensorMemory; }
};

}  // namespace

void setUpTensorMemory() {
  keepFreedMemory();
  static TensorAllocator allocator;
  c10::SetCPUAllocator(&allocator, /*priority=*/1);
}

}  // namespace stickler
