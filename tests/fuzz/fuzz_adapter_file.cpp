// libFuzzer target: an adapter file as draft_adapter receives it. Whatever the bytes, the
// parser returns an AdapterFile or throws a UserError with a position; anything else (a crash,
// another exception, a sanitizer report) is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include "adapters/engine/adapter_file.h"
#include "simulator/support/errors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const stickler::AdapterFile file = stickler::parseAdapterFile(text, "fuzz.py");
    (void)file.metadata.name.size();
  } catch (const stickler::UserError&) {
  }
  return 0;
}
