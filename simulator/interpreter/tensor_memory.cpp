#include "simulator/interpreter/tensor_memory.h"

#include <sys/mman.h>

#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>

#include <cstdlib>

#include "simulator/support/freed_memory.h"

namespace stickler {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kOnHugePagesFrom = size_t{4} << 20;
constexpr size_t kAlignment = 64;  // LibTorch's own (c10::alloc_cpu), for vectorized kernels

void freeTensorMemory(void* data) {
  std::free(data);
}

// LibTorch's CPU allocator but for the placement of large tensors. Every block comes from
// malloc and goes back with free, whatever its size, so raw_deleter holds for all.
class TensorAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t bytes) const override {
    const bool large = bytes >= kOnHugePagesFrom;
    void* data = nullptr;
    // As LibTorch's own allocator says it (a c10::Error naming the size), which is what a
    // sandboxed adapter that asks for too much is told.
    TORCH_CHECK(bytes == 0 || ::posix_memalign(&data, large ? kHugePage : kAlignment, bytes) == 0,
                "not enough memory: you tried to allocate ", bytes, " bytes for a tensor");
    // The whole huge pages the block spans; its last part, shorter than one, stays on small
    // pages. Advice only: where it is refused the block is as good on small pages.
    if (large) ::madvise(data, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
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
