// The central directory of a zip file (a TorchScript archive is one), read without inflating
// anything: what each entry says it holds, so that an entry which would inflate to gigabytes is
// refused before LibTorch reads it into memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace stickler {

struct ZipEntry {
  std::string name;
  uint16_t method = 0;  // 0: stored (what torch.jit.save writes), 8: deflated
  uint64_t compressed = 0;
  uint64_t uncompressed = 0;
  uint64_t header_offset = 0;  // of the entry's local header; its data follow that header
};

// Throws UserError naming `path` when the directory cannot be read (truncated, not a zip).
std::vector<ZipEntry> readZipDirectory(const std::string& path);

// An entry may inflate to at most this many times its compressed size (and at least 1 MiB):
// torch.jit.save stores entries uncompressed, and deflate's own limit is about 1000x, which only
// a zip bomb reaches.
inline constexpr uint64_t kMaxInflation = 16;
inline constexpr uint64_t kInflationFloor = uint64_t{1} << 20;

// Throws UserError naming the entry when one says it holds more than it can: a stored entry
// whose sizes differ, or an entry that would inflate past the bound above.
void checkZipSizes(const std::vector<ZipEntry>& entries, const std::string& path);

// Whether an entry of a TorchScript archive is a stored tensor's bytes: `<archive>/data/N` (the
// module's weights and buffers) or `<archive>/constants/N` (its code's tensor constants).
bool isTensorRecord(const std::string& name);

// Records smaller than this are read rather than mapped (simulator/graph/mapped_archive.h):
// they weigh nothing, and a small constant may be dropped during the load (its storage then
// found nowhere), which would cost the mapping of the whole archive.
inline constexpr uint64_t kSmallestMappedRecord = uint64_t{64} << 10;

// Whether a load may map `entry` from the file instead of copying it: a stored tensor record
// of at least kSmallestMappedRecord (its alignment is checked where it is mapped).
bool isMappableRecord(const ZipEntry& entry);

}  // namespace stickler
