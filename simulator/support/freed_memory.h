#pragma once

namespace stickler {

// Keeps the memory a process frees for its next allocations instead of giving it back to the
// kernel at once. glibc returns every freed block of more than 32 MiB (and any free space above
// a small threshold at the top of a heap) to the kernel, and the next such block comes back as
// fresh pages, each faulted in and zeroed on first touch: model runs allocate and free blocks of
// the same sizes operator after operator, and at 480M parameters the gate spent a fifth of its
// CPU time in those faults (docs/benchmarks.md). A block of more than 64 MiB asked for by a
// thread other than the main one still gets a mapping of its own (glibc's thread heaps are no
// larger). Called by setUpTensorMemory (simulator/interpreter/tensor_memory.h).
void keepFreedMemory();

// Gives back to the kernel what the process has freed (malloc_trim, and the large blocks kept by
// large_blocks.h): for a process that lives on after its work (a pooled worker between jobs,
// the server once no call runs), so that memory kept for reuse within a job is not held while
// idle, nor counted beside the next process's; and where a piece of work ends whose sizes what
// follows will not ask for (a load's example run, an equivalence check), so that it is not held
// through what follows. How much of the heap a process keeps depends on which of its threads'
// arenas served which piece of work: the review gate's worker at 110M parameters held 0.1 GB
// more in some runs than in others until it was given back at those points.
void releaseFreedMemory();

}  // namespace stickler
