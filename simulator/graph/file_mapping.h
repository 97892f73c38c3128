// A file mapped privately into memory, and the tensors that lie in it: an archive's weights
// (mapped_archive.h) and the weights adapters make, in sealed memory files shared with model
// hosts (shared_weight_files.h). A tensor in one is copied on write from the same pages again.
#pragma once

#include <c10/core/Allocator.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace stickler {

class FileMapping {
 public:
  // Takes `fd`: a copy on write maps the same pages again from it. `populate`: the pages are
  // mapped now rather than as they are read (so that they count as this process's from the start).
  FileMapping(int fd, size_t size, bool populate = false);
  ~FileMapping();
  FileMapping(const FileMapping&) = delete;
  FileMapping& operator=(const FileMapping&) = delete;

  char* at(uint64_t offset) const { return base_ + offset; }
  bool ok() const { return base_ != nullptr; }
  bool holds(const void* data, size_t bytes) const {
    const auto* begin = static_cast<const char*>(data);
    return base_ != nullptr && begin >= base_ && bytes <= size_ &&
           begin - base_ <= static_cast<std::ptrdiff_t>(size_ - bytes);
  }
  uint64_t offsetOf(const void* data) const { return static_cast<const char*>(data) - base_; }
  size_t size() const { return size_; }
  int fd() const { return fd_; }
  // The buffers LibTorch allocated for the records, never written past their marker's page, and
  // read by nothing once the load is done. A large one (a record of 1 MiB or more) is a mapping
  // of its own (large_blocks.h), unmapped here: it was on huge pages, where the marker's write
  // made 2 MiB resident (580 MB per process at 8B when they were kept). The others are kept, so
  // resident one page each, as long as the mapping. A precaution: those malloc served from its
  // heap would, freed, become free space there that a run's temporaries fill page by page, each
  // page resident from then on (a 480M model's CPU run grew by 650 MB on some runs while its
  // temporaries were fragmenting the heap).
  void keep(c10::DataPtr untouched);

 private:
  int fd_;
  char* base_ = nullptr;
  size_t size_;
  std::vector<c10::DataPtr> untouched_;
};

// A storage's data at `offset` in `mapping`, which it keeps alive.
c10::DataPtr dataPointerInto(const std::shared_ptr<FileMapping>& mapping, uint64_t offset);

// The mapping a storage's data lie in, or null when they are not in one.
const FileMapping* mappingOf(const c10::DataPtr& data);

}  // namespace stickler
