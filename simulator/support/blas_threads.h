#pragma once

namespace stickler {

// Runs OpenBLAS on one thread unless the user chose (OPENBLAS_NUM_THREADS or OMP_NUM_THREADS
// set). Stickler runs small models many times, and OpenBLAS's idle threads spin with
// sched_yield between calls, taking the CPU from the server's own threads and the device
// workers: on this project's 2-core machine a cheap tool call took twice as long.
void limitBlasThreads();

// Ends OpenBLAS's threads, as OpenBLAS itself does before a fork; it starts them again when it
// next needs them. For a process that forks: the copy has only the thread that forked.
void stopBlasThreads();

}  // namespace stickler
