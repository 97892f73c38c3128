#include "simulator/support/large_blocks.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace stickler {
namespace {

struct Block {
  void* data;
  size_t length;
};

struct LargeBlocks {
  std::mutex mutex;
  std::unordered_map<void*, size_t> live;  // data -> length of its mapping
  size_t live_bytes = 0;
  size_t live_peak = 0;
  std::list<Block> kept;  // most recently freed first
  size_t kept_bytes = 0;
};

LargeBlocks& largeBlocks() {
  static auto* blocks = new LargeBlocks;  // never destroyed: tensors may outlive static teardown
  return *blocks;
}

// Notes a block as in use, under the lock.
void* markLive(LargeBlocks& blocks, void* data, size_t length) {
  blocks.live.emplace(data, length);
  blocks.live_bytes += length;
  blocks.live_peak = std::max(blocks.live_peak, blocks.live_bytes);
  return data;
}

// The length of live block `data`, no longer in use; 0 when `data` is not one. Under the lock.
size_t takeLive(LargeBlocks& blocks, void* data) {
  const auto live = blocks.live.find(data);
  if (live == blocks.live.end()) return 0;
  const size_t length = live->second;
  blocks.live.erase(live);
  blocks.live_bytes -= length;
  return length;
}

size_t lockedRead(size_t LargeBlocks::*field) {
  LargeBlocks& blocks = largeBlocks();
  std::lock_guard<std::mutex> lock(blocks.mutex);
  return blocks.*field;
}

size_t pageRounded(size_t bytes) {
  const auto page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

// A mapping of `length` bytes starting on a huge-page boundary: map a huge page more than asked
// and give back the parts before and after the boundary.
void* mapAligned(size_t length) {
  void* raw = ::mmap(nullptr, length + kLargeBlockAlignment, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  // Pointer arithmetic rather than casts back from integers, so the compiler keeps track of it.
  auto* start = static_cast<char*>(raw);
  const size_t before =
      (kLargeBlockAlignment - reinterpret_cast<uintptr_t>(start) % kLargeBlockAlignment) %
      kLargeBlockAlignment;
  char* data = start + before;
  if (before > 0) ::munmap(start, before);
  const size_t after = kLargeBlockAlignment - before;  // the mapping's end is data + length + after
  if (after > 0) ::munmap(data + length, after);
  // Advice only: where refused, the block is as good on small pages. The last part of the
  // mapping, shorter than a huge page, stays on small ones.
  ::madvise(data, length, MADV_HUGEPAGE);
  return data;
}

void unmapAll(const std::vector<Block>& blocks) {
  for (const Block& block : blocks) ::munmap(block.data, block.length);
}

}  // namespace

void* allocateLargeBlock(size_t bytes) {
  const size_t length = pageRounded(bytes);
  LargeBlocks& blocks = largeBlocks();
  {
    // The smallest kept block that holds it, if it wastes no more than an eighth.
    std::lock_guard<std::mutex> lock(blocks.mutex);
    auto best = blocks.kept.end();
    for (auto it = blocks.kept.begin(); it != blocks.kept.end(); ++it) {
      if (it->length >= length && it->length <= length + length / 8 &&
          (best == blocks.kept.end() || it->length < best->length)) {
        best = it;
      }
    }
    if (best != blocks.kept.end()) {
      const Block reused = *best;
      blocks.kept.erase(best);
      blocks.kept_bytes -= reused.length;
      return markLive(blocks, reused.data, reused.length);
    }
  }
  void* data = mapAligned(length);
  if (data == nullptr) {
    // What is kept may be what the kernel is short of.
    releaseLargeBlocks();
    data = mapAligned(length);
    if (data == nullptr) return nullptr;
  }
  std::lock_guard<std::mutex> lock(blocks.mutex);
  return markLive(blocks, data, length);
}

bool freeLargeBlock(void* data) {
  LargeBlocks& blocks = largeBlocks();
  std::vector<Block> given_back;
  {
    std::lock_guard<std::mutex> lock(blocks.mutex);
    const Block freed{data, takeLive(blocks, data)};
    if (freed.length == 0) return false;
    if (freed.length > kLargeBlocksKeptAtMost) {
      given_back.push_back(freed);
    } else {
      blocks.kept.push_front(freed);
      blocks.kept_bytes += freed.length;
      while (blocks.kept_bytes > kLargeBlocksKeptAtMost) {
        given_back.push_back(blocks.kept.back());
        blocks.kept_bytes -= blocks.kept.back().length;
        blocks.kept.pop_back();
      }
    }
  }
  unmapAll(given_back);  // outside the lock: unmapping a large block takes a while
  return true;
}

bool discardLargeBlock(void* data) {
  LargeBlocks& blocks = largeBlocks();
  size_t length = 0;
  {
    std::lock_guard<std::mutex> lock(blocks.mutex);
    length = takeLive(blocks, data);
  }
  if (length == 0) return false;
  ::munmap(data, length);
  return true;
}

size_t largeBlocksKept() {
  return lockedRead(&LargeBlocks::kept_bytes);
}

size_t largeBlocksLive() {
  return lockedRead(&LargeBlocks::live_bytes);
}

size_t largeBlocksLivePeak() {
  return lockedRead(&LargeBlocks::live_peak);
}

void resetLargeBlocksLivePeak() {
  LargeBlocks& blocks = largeBlocks();
  std::lock_guard<std::mutex> lock(blocks.mutex);
  blocks.live_peak = blocks.live_bytes;
}

void releaseLargeBlocks() {
  LargeBlocks& blocks = largeBlocks();
  std::vector<Block> given_back;
  {
    std::lock_guard<std::mutex> lock(blocks.mutex);
    given_back.assign(blocks.kept.begin(), blocks.kept.end());
    blocks.kept.clear();
    blocks.kept_bytes = 0;
  }
  unmapAll(given_back);
}

}  // namespace stickler
