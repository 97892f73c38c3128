#pragma once

#include <cstddef>

namespace stickler {

// Memory for a process's large blocks (tensors of 1 MiB and more, tensor_memory.h), each on a
// mapping of its own that starts on a 2 MiB boundary and is advised for transparent huge pages,
// apart from malloc's heap. Inside the heap, small blocks shared the advised ranges, and a huge
// page stays resident whole while any of it is live: at Llama-3-8B's geometry that held 1.5 GB
// more per process (docs/benchmarks.md). A freed block is kept for the next one of its size, as
// runs free and allocate the same sizes operator after operator, and a fresh mapping costs a
// fault and a zeroing per page; what is kept is bounded (kLargeBlocksKeptAtMost) and given back
// by releaseFreedMemory (freed_memory.h; also where a load's example run or an equivalence check
// ends), and by releaseLargeBlocks before a caller waits on a model host's run.

// Every block starts on a boundary of this many bytes (a transparent huge page's size).
constexpr size_t kLargeBlockAlignment = size_t{2} << 20;

// At most this many bytes of freed blocks are kept; a block freed beyond it gives back the ones
// freed longest ago. The largest run's working set of distinct large sizes (a layer of an 8B
// model widened to float32 for one operator at a time: 224, 64 and 16 MiB) fits in it.
constexpr size_t kLargeBlocksKeptAtMost = size_t{512} << 20;

// A block of at least `bytes`, 2 MiB-aligned; nullptr when the kernel has no memory for it.
void* allocateLargeBlock(size_t bytes);

// Frees a block of allocateLargeBlock; false (and nothing done) when `data` is not one.
bool freeLargeBlock(void* data);

// Unmaps a block of allocateLargeBlock at once, not kept for reuse: for a block whose owner lets
// go of it without freeing it (which it must then never do). False, and nothing done, when
// `data` is not a live block.
bool discardLargeBlock(void* data);

// The bytes of freed blocks kept for reuse.
size_t largeBlocksKept();

// The bytes of blocks in use (tensors of 1 MiB and more that are alive).
size_t largeBlocksLive();

// The most bytes in use at once since the process started or the last reset: what a piece of
// work held at its peak, measured without sampling.
size_t largeBlocksLivePeak();
void resetLargeBlocksLivePeak();

// Gives every kept block back to the kernel.
void releaseLargeBlocks();

}  // namespace stickler
