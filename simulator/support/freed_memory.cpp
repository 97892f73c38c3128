#include "simulator/support/freed_memory.h"

#include <malloc.h>

#include <climits>

#include "simulator/support/large_blocks.h"

namespace stickler {

void keepFreedMemory() {
  // Both are needed: without mmap, large blocks come from the heap, and without trimming the
  // heap keeps them once freed. Either alone left the gate's time as it was.
  ::mallopt(M_MMAP_MAX, 0);
  ::mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

void releaseFreedMemory() {
  releaseLargeBlocks();
  ::malloc_trim(0);
}

}  // namespace stickler
