// How the test binaries, as the stickler binary, allocate tensors (test_main.cpp calls
// setUpTensorMemory): large tensors on mappings of their own, on huge-page boundaries with the
// advice to use them, and freed memory kept for reuse (within a bound for large blocks) until
// the process gives it back.
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
#include "simulator/support/large_blocks.h"

namespace stickler {
namespace {

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;

uintptr_t addressOf(const at::Tensor& tensor) {
  return reinterpret_cast<uintptr_t>(tensor.data_ptr());
}

struct Mapping {
  uintptr_t start = 0;
  std::string name;   // "[heap]", a file's path, or empty for an anonymous mapping
  std::string flags;  // its VmFlags line
};

// The mapping in /proc/self/smaps that holds `address` (start 0 when none does).
Mapping mappingOf(uintptr_t address) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  Mapping found;
  bool inside = false;
  while (std::getline(smaps, line)) {
    uintptr_t start = 0;
    uintptr_t end = 0;
    char dash = 0;
    std::istringstream range(line);
    if (range >> std::hex >> start >> dash >> end && dash == '-') {
      if (inside) break;
      inside = start <= address && address < end;
      if (inside) {
        std::string permissions, offset, device, inode;
        range >> permissions >> offset >> device >> inode;
        found.start = start;
        std::getline(range >> std::ws, found.name);
      }
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      found.flags = line;
    }
  }
  return found;
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
  // Llama-3-8B's hidden state for 128 tokens: 2 MiB, out of the never-trimmed heap.
  const at::Tensor hidden = at::empty({128, 4096}, at::kFloat);
  const at::Tensor one_mebibyte = at::empty({int64_t{1} << 20}, at::kByte);
  const at::Tensor small = at::empty({1000}, at::kFloat);
  EXPECT_EQ(addressOf(large) % kHugePage, 0u);
  EXPECT_EQ(addressOf(hidden) % kHugePage, 0u);
  EXPECT_EQ(addressOf(one_mebibyte) % kHugePage, 0u);
  EXPECT_EQ(addressOf(small) % 64, 0u);
}

TEST(TensorMemory, LargeTensorsAreAdvisedForHugePages) {
  if (!std::filesystem::exists("/sys/kernel/mm/transparent_hugepage/enabled")) {
    GTEST_SKIP() << "this kernel has no transparent huge pages";
  }
  const at::Tensor large = at::zeros({int64_t{8} << 20}, at::kByte);
  const Mapping mapping = mappingOf(addressOf(large));
  ASSERT_FALSE(mapping.flags.empty()) << "no mapping in /proc/self/smaps holds the tensor";
  EXPECT_NE(mapping.flags.find(" hg"), std::string::npos) << mapping.flags;
}

// Not in malloc's heap, where small blocks would share its huge pages and keep them resident.
TEST(TensorMemory, LargeTensorsHaveMappingsOfTheirOwn) {
  const at::Tensor small = at::zeros({1000}, at::kFloat);
  const at::Tensor large = at::zeros({int64_t{8} << 20}, at::kByte);
  const at::Tensor other = at::zeros({int64_t{5} << 20}, at::kByte);
  const Mapping mapping = mappingOf(addressOf(large));
  EXPECT_NE(mapping.name, "[heap]");
  EXPECT_NE(mappingOf(addressOf(small)).start, mapping.start);
  EXPECT_NE(mappingOf(addressOf(other)).start, mapping.start);
}

TEST(TensorMemory, AFreedLargeTensorsMemoryServesTheNextOfItsSize) {
  releaseFreedMemory();
  uintptr_t first = 0;
  {
    const at::Tensor freed = at::ones({int64_t{24} << 20}, at::kByte);
    first = addressOf(freed);
  }
  EXPECT_EQ(largeBlocksKept(), size_t{24} << 20);
  const at::Tensor next = at::empty({int64_t{6} << 20}, at::kFloat);  // the same 24 MiB
  EXPECT_EQ(addressOf(next), first);
  EXPECT_EQ(largeBlocksKept(), 0u);
  // Much smaller: a block of its own rather than most of a kept one wasted.
  uintptr_t kept = 0;
  {
    const at::Tensor freed = at::empty({int64_t{48} << 20}, at::kByte);
    kept = addressOf(freed);
  }
  const at::Tensor smaller = at::empty({int64_t{8} << 20}, at::kByte);
  EXPECT_NE(addressOf(smaller), kept);
  EXPECT_EQ(largeBlocksKept(), size_t{48} << 20);
  releaseFreedMemory();
  EXPECT_EQ(largeBlocksKept(), 0u);
}

TEST(TensorMemory, WhatIsKeptOfFreedLargeTensorsIsBounded) {
  releaseFreedMemory();
  // Untouched, these cost address space only.
  for (int64_t mebibytes = 40; mebibytes < 400; mebibytes += 40) {
    at::empty({mebibytes << 20}, at::kByte);
  }
  EXPECT_LE(largeBlocksKept(), kLargeBlocksKeptAtMost);
  EXPECT_GE(largeBlocksKept(), kLargeBlocksKeptAtMost / 2);
  // The most recently freed are the ones kept.
  const size_t before = largeBlocksKept();
  const at::Tensor last = at::empty({int64_t{360} << 20}, at::kByte);
  EXPECT_EQ(largeBlocksKept(), before - (size_t{360} << 20));
  // A block larger than the bound is given back as it is freed, and takes nothing kept with it.
  at::empty({static_cast<int64_t>(kLargeBlocksKeptAtMost) + (int64_t{2} << 20)}, at::kByte);
  EXPECT_EQ(largeBlocksKept(), before - (size_t{360} << 20));
  releaseFreedMemory();
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
