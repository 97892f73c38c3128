// Where this build keeps what the tests read and run. Defined in build_paths.cpp, the only test
// source compiled with the clone's absolute paths: every other test file (and the precompiled
// header) has the same command line in any clone, so a clean clone's build takes them from the
// compiler cache instead of compiling them again.
#pragma once

namespace stickler::testing {

extern const char* const kSourceDir;     // the source tree
extern const char* const kBuiltZooDir;   // build/zoo, unless $STICKLER_ZOO_DIR says otherwise
extern const char* const kTestProfiles;  // tests/profiles
extern const char* const kSticklerBinary;

}  // namespace stickler::testing
