// Where this build keeps what the benchmarks read and run. Defined in bench_paths.cpp, the only
// benchmark source compiled with the clone's absolute paths, so that the others come from the
// compiler cache in any clone.
#pragma once

namespace stickler::bench {

extern const char* const kSourceDir;
extern const char* const kBuildDir;
extern const char* const kZooDir;          // build/zoo
extern const char* const kBenchModelsDir;  // build/bench-models, generated on first use
extern const char* const kPython;          // the Python with python3-torch
extern const char* const kSticklerBinary;

}  // namespace stickler::bench
