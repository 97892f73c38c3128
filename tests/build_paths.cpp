#include "tests/build_paths.h"

namespace stickler::testing {

const char* const kSourceDir = STICKLER_SOURCE_DIR;
const char* const kBuiltZooDir = STICKLER_ZOO_DIR;
const char* const kTestProfiles = STICKLER_TEST_PROFILES;
const char* const kSticklerBinary = STICKLER_BINARY;

}  // namespace stickler::testing
