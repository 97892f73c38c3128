#pragma once

namespace stickler {

// How a Stickler process allocates its tensors; call once, first thing in main (the binary, the
// test binaries and the benchmarks alike, so that every figure is measured the same way).
// Freed memory is kept for reuse (freed_memory.h), and a tensor of 1 MiB or more gets a mapping
// of its own on a 2 MiB boundary advised for transparent huge pages (large_blocks.h): a model's
// activations, the widened slices of its weights and an adapter's padded weights are that large,
// and on 4 KiB pages each one first touched cost a page fault per 4 KiB (a fifth of the review
// gate's CPU time at 480M parameters, docs/benchmarks.md). A huge page costs one fault per 2 MiB;
// it is used where the machine has them (transparent_hugepage "madvise" or "always"), and
// nothing changes where not.
void setUpTensorMemory();

}  // namespace stickler
