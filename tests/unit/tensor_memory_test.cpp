// How the test binaries, as the stickler binary, allocate tensors (test_main.cpp calls
// setUpTensorMemory): large tensors on huge-page boundaries with the advice to use them, and
// freed memory kept for reuse until the process gives it back.
#include "simulator/interpreter/tensor_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <torch/script.h>

#include "simulator/support/freed_memory.h"

namespace stickler {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

uintptr_t addressOf(const at::Tensor& tensor) {
  return reinterpret_cast<uintptr_t>(tensor.data_ptr());
}

// The VmFlags line of the mapping in /proc/self/smaps that holds `address`.
std::string mappingFlags(uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t start = 0;
    uintptr_t end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> start >> dash >> end && dash == '-') {
      inside = start <= address && address < end;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return line;
    }
  }
  return "";
}

int64_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t size = 0;
  int64_t resident = 0;
  statm >> size >> resident;
  return resident * ::sysconf(_SC_PAGESIZE);
}

TEST(TensorMemory, LargeTensorsStartOnAHugePageAndSmallOnesWhereLibTorchPutsThem) {
  const at::Tensor large = at::empty({int64_t{6} << 20}, at::kByte);
  const at::Tensor small = at::empty({1000}, at::kFloat);
  EXPECT_EQ(addressOf(large) % kHugePage, 0u);
  EXPECT_EQ(addressOf(small) % 64, 0u);
}

TEST(TensorMemory, LargeTensorsAreAdvisedForHugePages) {
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  }
  const at::Tensor large = at::zeros({int64_t{8} << 20}, at::kByte);
  const std::string flags = mappingFlags(addressOf(large));
  ASSERT_FALSE(flags.empty()) << "no mapping in /proc/self/smaps holds the tensor";
  EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
}

TEST(TensorMemory, FreedMemoryIsKeptForReuseUntilGivenBack) {
  constexpr int64_t kBytes = int64_t{256} << 20;
  releaseFreedMemory();
  int64_t with_it = 0;
  {
    const at::Tensor touched = at::ones({kBytes}, at::kByte);
    with_it = residentBytes();
  }
  // glibc alone would have unmapped a block this large as it was freed.
  EXPECT_GT(residentBytes(), with_it - kBytes / 8);
  releaseFreedMemory();
  EXPECT_LT(residentBytes(), with_it - kBytes * 3 / 4);
}

}  // namespace
}  // namespace stickler
