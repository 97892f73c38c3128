#include "bench/bench_paths.h"

namespace stickler::bench {

const char* const kSourceDir = STICKLER_SOURCE_DIR;
const char* const kBuildDir = STICKLER_BUILD_DIR;
const char* const kZooDir = STICKLER_ZOO_DIR;
const char* const kBenchModelsDir = STICKLER_BUILD_DIR "/bench-models";
const char* const kPython = STICKLER_PYTHON;
const char* const kSticklerBinary = STICKLER_BINARY;

}  // namespace stickler::bench
